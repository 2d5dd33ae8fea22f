#!/usr/bin/env bash
# Compile time of a dynamic_call against the equal static pallas_calls (benchmarks/compile_time/
# dynamic.cpp): g++ -O1, a blocked matmul predicted at 1 and 3 block sizes, static (one type per
# point) and dynamic (one instantiation, sizes set in a loop), interleaved. Prints the median of
# RUNS user+system CPU seconds per configuration.
# Usage: benchmarks/compile_time/dynamic.sh [RUNS]   (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-3}
cxx=${CXX:-g++}
src=benchmarks/compile_time/dynamic.cpp
flags=(-std=c++20 -O1 -Iinclude -I/usr/include/eigen3 -c -o /dev/null)
configs=("-DPTPU_DYNAMIC=0 -DPTPU_POINTS=1" "-DPTPU_DYNAMIC=1 -DPTPU_POINTS=1"
         "-DPTPU_DYNAMIC=0 -DPTPU_POINTS=3" "-DPTPU_DYNAMIC=1 -DPTPU_POINTS=3")
declare -A times
for ((r = 0; r < runs; ++r)); do
    for c in "${configs[@]}"; do
        # shellcheck disable=SC2086
        t=$( { /usr/bin/time -f '%U %S' "$cxx" "${flags[@]}" $c "$src" >/dev/null; } 2>&1 | tail -n 1 |
             awk '{printf "%.2f", $1 + $2}')
        times[$c]+="$t "
    done
done
for c in "${configs[@]}"; do
    printf '%-36s %s\n' "$c" "$(printf '%s\n' ${times[$c]} | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')"
done
