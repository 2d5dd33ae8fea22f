// Defines the timing model's engine (declared through simulate_source in sim/engine.hpp): the
// event simulation of the cores' op streams and the DMA channels, with the steady-state fast
// lane. Read by every translation unit in the header-only mode, and only by the one that defines
// PTPU_RUNTIME_IMPLEMENTATION (ptpu::runtime) with PTPU_SEPARATE_RUNTIME.
#pragma once

#include <string>

#include "ptpu/core/error.hpp"
#include "ptpu/hw/chip.hpp"
#include "ptpu/sim/engine.hpp"
#include "ptpu/sim/engine_class.hpp"
#include "ptpu/sim/engine_events_impl.hpp"

namespace ptpu::sim {

/// simulate() on a type-erased source. (A template only so that the engine is instantiated in
/// the translation units that simulate, not in every one that includes this header.)
template <class Ref>
result simulate_source(const chip& c, int cores, Ref& src, const options& opt) {
    ptpu::validate(c);
    validate(opt.costs);
    if (cores < 1 || cores > c.cores_per_chip)
        throw error("SIM3", "simulate",
                    "cores is " + std::to_string(cores) + " but chip " +
                        std::string(ptpu::detail::name_of(c)) + " has " + std::to_string(c.cores_per_chip) +
                        " TensorCore(s)",
                    "simulate 1 core, or up to the chip's cores_per_chip");
    return detail::engine<Ref>(c, cores, src, opt).run();
}

// The one translation unit that compiles the engine for the program (ptpu::runtime).
#if defined(PTPU_RUNTIME_IMPLEMENTATION)
template result simulate_source<source_ref>(const chip&, int, source_ref&, const options&);
#endif

}  // namespace ptpu::sim
