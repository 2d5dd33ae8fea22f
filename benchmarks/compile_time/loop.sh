#!/usr/bin/env bash
# The edit-run loop's compile time: CPU seconds (user + system, median of RUNS) to compile, with
# -std=c++20 -O2 as kernels that link ptpu::runtime do (PTPU_SEPARATE_RUNTIME), each of
#   floor      #include <Eigen/Core> and <iostream>: the least any data-path kernel file costs
#   headers    #include <ptpu/ptpu.hpp> alone
#   quickstart examples/quickstart.cpp
#   emit       examples/emit_pipeline.cpp (inner pipelines, core_axis, lookahead)
#   sweep      examples/sweep.cpp (a run-time configured sweep: dynamic_call, sweep::run)
#   deep       examples/deep_buffering_sweep.cpp (a grouped matmul over tiles x buffer counts 1-4 x
#              lookahead x chips: scalar prefetch, custom_buffered)
#   kernels1   benchmarks/compile_time/kernels.cpp with one static matmul kernel
#   kernels9   the same file with nine (one per block configuration)
# and the ratios to the floor and to headers; "per kernel" is (kernels9 - kernels1) / 8. With
# g++ and clang++ (CXXS="g++ clang++"). With OLD=<a checkout of another revision>, each file is
# also compiled against that revision's include/, interleaved with this one's, and both columns
# are printed (these machines are shared: compare only figures of one run). With INSTALLED=1 this
# revision is first installed (headers and libptpu_runtime.a, cmake --install) into a temporary
# prefix, and its column compiles against that prefix's include/, as a project using the
# installed package with ptpu::runtime linked does.
# Usage: benchmarks/compile_time/loop.sh [RUNS]   (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-3}
read -r -a cxxs <<<"${CXXS:-g++ clang++}"
old=${OLD:-}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf '#include <Eigen/Core>\n#include <iostream>\nint main() {}\n' >"$dir/floor.cpp"
printf '#include <ptpu/ptpu.hpp>\nint main() {}\n' >"$dir/headers.cpp"
names=(floor headers quickstart emit sweep deep kernels1 kernels9)
declare -A src=([floor]="$dir/floor.cpp" [headers]="$dir/headers.cpp" [quickstart]=examples/quickstart.cpp
                [emit]=examples/emit_pipeline.cpp [sweep]=examples/sweep.cpp [deep]=examples/deep_buffering_sweep.cpp
                [kernels1]=benchmarks/compile_time/kernels.cpp [kernels9]=benchmarks/compile_time/kernels.cpp)
declare -A defs=([kernels1]=-DPTPU_KERNELS=1 [kernels9]=-DPTPU_KERNELS=9)
this_inc="$PWD/include"
if [ "${INSTALLED:-0}" = 1 ]; then
    cmake -S . -B "$dir/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPTPU_BUILD_TESTS=OFF \
        -DPTPU_BUILD_EXAMPLES=OFF -DPTPU_BUILD_BENCHMARKS=OFF -DPTPU_INSTALL=ON >/dev/null
    cmake --build "$dir/build" >/dev/null
    cmake --install "$dir/build" --prefix "$dir/prefix" >/dev/null
    this_inc="$dir/prefix/include"
    echo "this revision: installed into a temporary prefix; compiling against its include/"
fi
trees=("$PWD")
[ -n "$old" ] && trees+=("$old")
declare -A t
cpu() {  # cpu <compiler> <tree> <name>: one compile's user+system seconds
    local inc="$2/include" s="${src[$3]}"
    [ "$2" = "$PWD" ] && inc="$this_inc"
    # The examples and the kernel file are each tree's own (this one's where the other has none).
    if [[ "$s" == examples/* || "$s" == benchmarks/* ]] && [ -f "$2/$s" ]; then s="$2/$s"; fi
    # shellcheck disable=SC2086
    { /usr/bin/time -f '%U %S' "$1" -std=c++20 -O2 -DPTPU_SEPARATE_RUNTIME ${defs[$3]:-} -I"$inc" \
        -isystem /usr/include/eigen3 -c "$s" -o /dev/null >/dev/null; } 2>&1 | tail -n 1 |
        awk '{printf "%.2f", $1 + $2}'
}
for ((r = 0; r < runs; ++r)); do
    for cxx in "${cxxs[@]}"; do
        for n in "${names[@]}"; do
            for tree in "${trees[@]}"; do
                [ "$n" = floor ] && [ "$tree" != "$PWD" ] && continue
                # An example the other revision does not have is compiled against this one only.
                [ "$tree" != "$PWD" ] && [[ "${src[$n]}" == examples/* ]] && [ ! -f "$tree/${src[$n]}" ] && continue
                t["$cxx|$tree|$n"]+="$(cpu "$cxx" "$tree" "$n") "
            done
        done
    done
done
median() { printf '%s\n' $1 | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for cxx in "${cxxs[@]}"; do
    floor=$(median "${t["$cxx|$PWD|floor"]}")
    head=$(median "${t["$cxx|$PWD|headers"]}")
    echo "== $cxx -O2, CPU seconds (median of $runs), PTPU_SEPARATE_RUNTIME"
    if [ -n "$old" ]; then
        printf '%-12s %8s %8s %8s %10s\n' "file" "this" "x floor" "x headers" "other rev"
    else
        printf '%-12s %8s %8s %8s\n' "file" "this" "x floor" "x headers"
    fi
    for n in "${names[@]}"; do
        v=$(median "${t["$cxx|$PWD|$n"]}")
        line=$(awk -v v="$v" -v f="$floor" -v h="$head" 'BEGIN {printf "%8.2f %8.2f %8.2f", v, v / f, v / h}')
        if [ -n "$old" ] && [ "$n" != floor ] && [ -n "${t["$cxx|$old|$n"]:-}" ]; then
            printf '%-12s %s %10.2f\n' "$n" "$line" "$(median "${t["$cxx|$old|$n"]}")"
        else
            printf '%-12s %s\n' "$n" "$line"
        fi
    done
    k1=$(median "${t["$cxx|$PWD|kernels1"]}")
    k9=$(median "${t["$cxx|$PWD|kernels9"]}")
    awk -v a="$k1" -v b="$k9" 'BEGIN {printf "%-12s %8.2f (each further static kernel in one file)\n", "per kernel", (b - a) / 8}'
done
