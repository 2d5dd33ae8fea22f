// The long run of the extents fuzz driver (tests/runtime/extents_fuzz.hpp): by default 1,000,000
// random cases of extreme extents (grids, shapes, blocks, paddings, scratch, slices and block
// indices from host state near the integer limits), each of which must succeed or be a
// ptpu::error, overflows always errors (V3 or an earlier rule) and V3 never a false alarm. Not a
// benchmark: a separate target to run under ASan+UBSan, e.g. (one line)
//   g++ -std=c++20 -O1 -fsanitize=address,undefined -fno-sanitize-recover=all -Iinclude -Itests
//       -I/usr/include/eigen3 benchmarks/fuzz_extents.cpp -o fuzz_extents && ./fuzz_extents
// Usage: fuzz_extents [cases] [seed]. Exit status 1 on the first failing case, which it prints.
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "runtime/extents_fuzz.hpp"

int main(int argc, char** argv) {
    const long cases = argc > 1 ? std::atol(argv[1]) : 1000000;
    const std::uint64_t seed = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1;
    constexpr long chunk = 100000;  // a seed per chunk, so a failure is reproduced from its chunk
    const auto t0 = std::chrono::steady_clock::now();
    ptpu_extents_fuzz::totals all;
    for (long done = 0; done < cases; done += chunk) {
        const long n = cases - done < chunk ? cases - done : chunk;
        const ptpu_extents_fuzz::totals t =
            ptpu_extents_fuzz::fuzz(seed + static_cast<std::uint64_t>(done / chunk), n);
        all.cases += t.cases;
        all.planned += t.planned;
        all.ran += t.ran;
        all.errors += t.errors;
        all.v3 += t.v3;
        if (!t.failure.empty()) {
            std::printf("FAILED: %s\n", t.failure.c_str());
            return 1;
        }
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("fuzz_extents: %ld cases passed (%ld planned, %ld run with data; %ld ptpu::error outcomes, %ld of "
                "them V3), seed %llu, %.1f s\n",
                all.cases, all.planned, all.ran, all.errors, all.v3, static_cast<unsigned long long>(seed), s);
    return 0;
}
