# ptpu's source tree in ./ptpu; Eigen where Debian puts it. The same flags for every file.
flags="-std=c++20 -O2 -pthread -DPTPU_SEPARATE_RUNTIME -Iptpu/include -isystem /usr/include/eigen3"
g++ $flags -c ptpu_runtime.cpp  # once per program
g++ $flags -c main.cpp          # each of your files
g++ -pthread main.o ptpu_runtime.o -o app
