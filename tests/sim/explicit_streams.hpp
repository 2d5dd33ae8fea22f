// Defines what the tests that write core streams by hand share (tests/sim/steady_test.cpp,
// tests/sim/fold_test.cpp): compute ops that name explicit seconds, and a source handing out
// each core's ops from a vector.
#pragma once

#include <ptpu/core/work.hpp>
#include <ptpu/sim/engine.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace stream_test {

/// The works the streams' compute ops name: explicit seconds, which the model turns back into
/// exactly those seconds (sim::options::works).
inline ptpu::stream::work_table& works() {
    static ptpu::stream::work_table t;
    return t;
}
inline std::uint32_t work_of(double seconds) {
    return works().number(ptpu::work{.explicit_seconds = seconds});
}

/// Each core's ops (up to max_cores), handed out one at a time.
struct vec_source {
    std::vector<ptpu::sim::op> ops[ptpu::max_cores];
    std::size_t pos[ptpu::max_cores] = {};
    bool next(int core, ptpu::sim::op& out) {
        const auto c = static_cast<std::size_t>(core);
        if (pos[c] == ops[c].size()) return false;
        out = ops[c][pos[c]++];
        return true;
    }
};

}  // namespace stream_test
