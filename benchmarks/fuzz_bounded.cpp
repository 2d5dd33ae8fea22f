// The long run of the bounded-slice fuzz driver (tests/runtime/bounded_fuzz.hpp): by default
// 1,000,000 random cases (valid slices compared with a plain reference, invalid ones expecting
// their S38 error with nothing written, plans whose maps then answer other slices staying inside
// every buffer). Not a benchmark: a separate target to run under ASan+UBSan, e.g. (one line)
//   g++ -std=c++20 -O1 -fsanitize=address,undefined -fno-sanitize-recover=all -Iinclude -Itests
//       -I/usr/include/eigen3 benchmarks/fuzz_bounded.cpp -o fuzz_bounded && ./fuzz_bounded
// Usage: fuzz_bounded [cases] [seed]. Exit status 1 on the first failing case, which it prints.
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "runtime/bounded_fuzz.hpp"

int main(int argc, char** argv) {
    const long cases = argc > 1 ? std::atol(argv[1]) : 1000000;
    const std::uint64_t seed = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1;
    constexpr long chunk = 100000;  // a seed per chunk, so a failure is reproduced from its chunk
    const auto t0 = std::chrono::steady_clock::now();
    ptpu_fuzz::fuzz_totals all;
    for (long done = 0; done < cases; done += chunk) {
        const long n = cases - done < chunk ? cases - done : chunk;
        const ptpu_fuzz::fuzz_totals t = ptpu_fuzz::fuzz(seed + static_cast<std::uint64_t>(done / chunk), n);
        all.valid += t.valid;
        all.invalid += t.invalid;
        all.unplanned += t.unplanned;
        if (!t.failure.empty()) {
            std::printf("FAILED: %s\n", t.failure.c_str());
            return 1;
        }
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("fuzz_bounded: %ld cases passed (%ld valid, %ld invalid, %ld unplanned), seed %llu, %.1f s\n",
                all.valid + all.invalid + all.unplanned, all.valid, all.invalid, all.unplanned,
                static_cast<unsigned long long>(seed), s);
    return 0;
}
