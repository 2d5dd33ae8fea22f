#!/usr/bin/env bash
# Compile time of including one header (docs/performance.md): g++ -std=c++20 -fsyntax-only on a translation
# unit that includes only that header, against an empty one. The runs of all headers are
# interleaved (these machines are shared); prints the median of RUNS per header, user+system CPU
# seconds and wall seconds.
# Usage: benchmarks/compile_time/headers.sh [RUNS] [HEADER...]   (from the repository root;
# default headers: the sweep/ ones, what they are built on, and ptpu.hpp)
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-5}
shift || true
headers=("$@")
if [ ${#headers[@]} -eq 0 ]; then
    headers=(ptpu/sweep/static_space.hpp ptpu/sweep/space.hpp boost/hana.hpp ranges ptpu/ptpu.hpp)
fi
cxx=${CXX:-g++}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
names=(empty)
echo 'int main() {}' >"$dir/0.cpp"
for i in "${!headers[@]}"; do
    printf '#include <%s>\nint main() {}\n' "${headers[$i]}" >"$dir/$((i + 1)).cpp"
    names+=("${headers[$i]}")
done
declare -A cpu wall
for ((r = 0; r < runs; ++r)); do
    for i in "${!names[@]}"; do
        /usr/bin/time -o "$dir/t" -f '%U %S %e' "$cxx" -std=c++20 -fsyntax-only -Iinclude \
            -isystem /usr/include/eigen3 "$dir/$i.cpp"
        read -r u s e <"$dir/t"
        cpu[$i]+="$(awk -v u="$u" -v s="$s" 'BEGIN {printf "%.2f", u + s}') "
        wall[$i]+="$e "
    done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf '%-30s %8s %8s\n' "translation unit" "cpu s" "wall s"
for i in "${!names[@]}"; do
    printf '%-30s %8s %8s\n' "${names[$i]}" "$(echo "${cpu[$i]}" | median)" "$(echo "${wall[$i]}" | median)"
done
