// Defines sim::work_times: the time of each work a call's compute ops name (stream::op::work, a
// number in the call's stream::work_table), each converted once with time_of on the chip. Ops
// carry work, not time: this is where the timing model turns the one into the other.
#pragma once

#include <bit>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "ptpu/core/error.hpp"
#include "ptpu/hw/chip.hpp"
#include "ptpu/sim/cost.hpp"
#include "ptpu/stream/op.hpp"

namespace ptpu::sim {

class work_times {
public:
    /// The works of `works` (none: only work 0, no work) on chip `c` with cost model `m`.
    work_times(const chip& c, const cost_model& m, const stream::work_table* works)
        : chip_(c), costs_(m), works_(works) {}

    /// The time of work number k, seconds.
    double seconds(std::uint32_t k) {
        if (k < seconds_.size()) [[likely]] {
            const double s = seconds_[k];
            if (s >= 0) return s;  // (not yet converted: -1)
        }
        convert(k);
        return seconds_[k];
    }
    /// A number standing for work k's time: two works of equal time get the same (the first of
    /// them converted), so that whoever compares ops by time (the lane) compares these.
    std::uint32_t canonical(std::uint32_t k) {
        if (k >= canonical_.size() || canonical_[k] == none) convert(k);
        return canonical_[k];
    }

private:
    static constexpr std::uint32_t none = ~std::uint32_t{0};  // not converted yet

    // Converts work number k: SIM2 when the table holds no work k, or the work is malformed (a
    // negative or non-finite field) or takes a negative or non-finite time.
    [[gnu::noinline]] void convert(std::uint32_t k) {
        const std::size_t have = works_ != nullptr ? works_->size() : 1;
        if (k >= have)
            throw error("SIM2", "simulate",
                        "a compute op names work " + std::to_string(k) + ", and the work table holds " +
                            std::to_string(have) + " works",
                        "number compute ops' work in options::works (0: none)");
        double s = 0;
        if (k > 0) try {
                s = time_of((*works_)[k], chip_, costs_).total;
            } catch (const error& e) {
                if (e.rule() != "C1") throw;
                throw error("SIM2", "simulate", std::string("a compute op's work is malformed: ") + e.what(),
                            "charge finite, non-negative work");
            }
        if (!ptpu::detail::finite_non_negative(s))
            throw error("SIM2", "simulate",
                        "a compute op's work takes negative or non-finite seconds (" + std::to_string(s) + ")",
                        "charge finite, non-negative work");
        if (k >= canonical_.size()) {
            seconds_.resize(k + 1, -1.0);
            canonical_.resize(k + 1, none);
        }
        seconds_[k] = s;
        canonical_[k] = by_time_.try_emplace(std::bit_cast<std::uint64_t>(s + 0.0), k).first->second;
    }

    const chip& chip_;
    cost_model costs_;
    const stream::work_table* works_;
    std::vector<double> seconds_;           // work number -> its time (-1: not converted)
    std::vector<std::uint32_t> canonical_;  // work number -> its time's number (none: not converted)
    std::unordered_map<std::uint64_t, std::uint32_t> by_time_;  // a time's bits -> its first number
};

}  // namespace ptpu::sim
