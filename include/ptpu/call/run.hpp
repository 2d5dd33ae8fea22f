// Defines how one pallas_call runs once its operands are bound: the HBM aliases (S50), one arena
// and one runner per TensorCore (S44: each core runs its own pipeline), the timing model pulling
// the runners' op streams, and the report. Nothing here depends on the kernel body or on the
// option types: the body arrives as a body_call, so this code is compiled once per translation
// unit however many kernels it runs, and with PTPU_SEPARATE_RUNTIME once per program: a kernel's
// translation unit then sees run_call's declaration only (call/run_impl.hpp defines it).
#pragma once

#include <array>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ptpu/call/options.hpp"
#include "ptpu/core/linkage.hpp"
#include "ptpu/report/report.hpp"
#include "ptpu/runtime/arena.hpp"
#include "ptpu/runtime/body.hpp"
#include "ptpu/runtime/context.hpp"
#include "ptpu/schedule/plan.hpp"
#include "ptpu/sim/cost.hpp"
#include "ptpu/spec/describe.hpp"

namespace ptpu::detail {

/// ARG2: the buffers an `into()` call writes must not share memory with each other, nor with an
/// input, unless that input is aliased to the output (Alias<in, out>, S50) and passes the very
/// same buffer: the kernel would read an input while overwriting it, or two outputs would
/// overwrite each other. Checked before any byte moves.
/// (Without data, predict(), nothing to check.)
PTPU_COMPILED void check_distinct_buffers(const call_desc& desc, const std::array<void*, max_operands>& hbm,
                                   const char* call);
#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED void check_distinct_buffers(const call_desc& desc, const std::array<void*, max_operands>& hbm,
                                   const char* call) {
    auto range = [&](int k) {
        const operand_desc& o = desc.ops[static_cast<std::size_t>(k)];
        const auto* lo = static_cast<const std::byte*>(hbm[static_cast<std::size_t>(k)]);
        return std::pair{lo, lo == nullptr ? lo : lo + o.array_elems() * itemsize(o.type)};
    };
    auto name = [&](int k) {
        return k < desc.n_in ? std::string(call) + " input " + std::to_string(k)
                             : std::string(call) + "::into output " + std::to_string(k - desc.n_in);
    };
    for (int out = 0; out < desc.n_out; ++out) {
        const int k = desc.n_in + out;
        const auto [lo, hi] = range(k);
        if (lo == nullptr || lo == hi) continue;
        for (int j = 0; j < k; ++j) {
            const auto [l2, h2] = range(j);
            if (l2 == nullptr || !(l2 < hi && lo < h2)) continue;
            bool aliased = false;
            for (int a = 0; a < desc.n_alias; ++a)
                aliased = aliased || (desc.aliases[static_cast<std::size_t>(a)].first == j &&
                                      desc.aliases[static_cast<std::size_t>(a)].second == out);
            if (aliased && l2 == lo) continue;  // the input's own buffer, updated in place
            const bool input = j < desc.n_in;
            throw error("ARG2", name(k),
                        "its buffer shares memory with " + name(j) +
                            (input ? " (no Alias declares that input as this output): the kernel would read the input "
                                     "while overwriting it"
                                   : ": the two outputs would overwrite each other"),
                        input ? "pass a separate output buffer, or declare Alias<" + std::to_string(j) + ", " +
                                    std::to_string(out) + "> to update the input in place"
                              : "give each output its own buffer");
        }
    }
}
#endif

/// S50: an aliased output starts as a copy of its input, and the input then reads the output's
/// buffer. (Without data, predict(), nothing to copy.)
PTPU_COMPILED void alias_hbm(const call_desc& desc, std::array<void*, max_operands>& hbm);
#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED void alias_hbm(const call_desc& desc, std::array<void*, max_operands>& hbm) {
    for (int k = 0; k < desc.n_alias; ++k) {
        const auto [in, out] = desc.aliases[static_cast<std::size_t>(k)];
        void*& src = hbm[static_cast<std::size_t>(in)];
        void* const dst = hbm[static_cast<std::size_t>(desc.n_in + out)];
        if (src == nullptr || dst == nullptr) continue;
        const auto& o = desc.ops[static_cast<std::size_t>(desc.n_in + out)];
        if (src != dst)  // into() may pass the input's own buffer as its aliased output
            std::memcpy(dst, src, static_cast<std::size_t>(o.array_elems() * itemsize(o.type)));
        src = dst;
    }
}
#endif

/// The run-time plan of a call: the same planner as at compile time, its checks raised as
/// ptpu::error before any byte moves (S51). Compiled machinery, as run_call.
PTPU_COMPILED plan_tables plan_call(const call_desc& desc, const block_fn* maps, const void* ctx,
                                    const scan_fn* scans, index_t budget);
#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED plan_tables plan_call(const call_desc& desc, const block_fn* maps, const void* ctx,
                                    const scan_fn* scans, index_t budget) {
    plan_tables tables = analyze(desc, maps, ctx, scans, budget);
    raise(tables.info.problem, desc);
    return tables;
}
#endif

/// Runs call `desc` (analyzed as `tables`; block indices from `maps` with `ctx`) on the HBM arrays
/// `hbm`, with the scalar-prefetch data `prefetch`, calling `body` for each grid step, and
/// predicts its time on the call's chip: one runner per core, the timing model pulling their op
/// streams, the report. Nothing in it depends on the body or on the option types, so it is
/// compiled machinery (core/linkage.hpp): with PTPU_SEPARATE_RUNTIME once per program, in
/// ptpu::runtime, runners, the model and the report with it, and a kernel's translation unit
/// compiles only its bodies and calls; call/run_impl.hpp holds the definition.
PTPU_COMPILED report run_call(const call_desc& desc, const plan_tables& tables, const block_fn* maps,
                              const void* ctx, const std::array<void*, max_operands>& hbm,
                              const std::array<const void*, max_operands>& prefetch, body_call body,
                              const run_options& opt);

}  // namespace ptpu::detail

// The definitions, where this translation unit compiles them (core/linkage.hpp).
#if defined(PTPU_DEFINE_COMPILED)
#include "ptpu/call/run_impl.hpp"
#endif
