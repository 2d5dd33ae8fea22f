#!/usr/bin/env bash
# Compile time (docs/performance.md): g++ -O2 on one TU with a 256/1024/4096-step plan, with 1, 2 or 5
# kernels run (with and without PTPU_SEPARATE_RUNTIME), against the same TU without a
# pallas_call (the cost of the headers alone). Prints the median of
# RUNS user+system CPU seconds per configuration (CPU time, not wall: these machines are shared).
# Usage: benchmarks/compile_time/run.sh [RUNS]   (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-3}
cxx=${CXX:-g++}
src=benchmarks/compile_time/plan.cpp
flags=(-std=c++20 -O2 -Iinclude -isystem /usr/include/eigen3 -c -o /dev/null)
measure() {  # prints the median CPU seconds of compiling with the given -D flags
    local t=()
    for ((r = 0; r < runs; ++r)); do
        t+=("$( { /usr/bin/time -f '%U %S' "$cxx" "${flags[@]}" "$@" "$src" >/dev/null; } 2>&1 | tail -n 1 |
                awk '{printf "%.2f", $1 + $2}')")
    done
    printf '%s\n' "${t[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}
printf '%-34s %8s\n' "translation unit" "seconds"
base=$(measure -DPTPU_BASELINE=1)
printf '%-34s %8s\n' "headers only (no pallas_call)" "$base"
for k in 1 2 5; do
    printf '%-34s %8s\n' "$k kernel(s) run, 16 steps" "$(measure -DPTPU_STEPS=16 -DPTPU_EXEC=1 -DPTPU_KERNELS=$k)"
done
# PTPU_SEPARATE_RUNTIME: the shared machinery compiled once elsewhere (ptpu::runtime).
for k in 1 2 5; do
    printf '%-34s %8s\n' "$k kernel(s), separate runtime" \
        "$(measure -DPTPU_STEPS=16 -DPTPU_EXEC=1 -DPTPU_KERNELS=$k -DPTPU_SEPARATE_RUNTIME)"
done
printf '%-34s %8s\n' "the runtime's own TU (once)" "$(measure -DPTPU_BASELINE=1 -DPTPU_RUNTIME_IMPLEMENTATION)"
for steps in 256 1024 4096; do
    printf '%-34s %8s\n' "plan, $steps steps" "$(measure -DPTPU_STEPS=$steps)"
done
for steps in 1024 4096; do
    printf '%-34s %8s\n' "plan + event list, $steps steps" "$(measure -DPTPU_STEPS=$steps -DPTPU_EVENTS=1)"
done
for steps in 1024 4096; do
    printf '%-34s %8s\n' "plan + runner, $steps steps" "$(measure -DPTPU_STEPS=$steps -DPTPU_EXEC=1)"
done
