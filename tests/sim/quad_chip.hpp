// A synthetic chip with four TensorCores acting as one device (no preset has more than two), for
// tests showing that planning, running and predicting take the chip's core count.
#pragma once

#include <ptpu/ptpu.hpp>

#include <cstddef>

namespace quad_test {

// v5p with four TensorCores.
constexpr ptpu::chip quad = [] {
    ptpu::chip c = ptpu::tpu::v5p;
    c.cores_per_chip = 4;
    c.megacore = true;
    const char name[] = "quad";
    for (std::size_t k = 0; k < sizeof c.name; ++k) c.name[k] = k < sizeof name ? name[k] : '\0';
    return c;
}();
static_assert(quad.pallas_cores() == 4 && static_cast<std::size_t>(quad.cores_per_chip) <= ptpu::max_cores);

}  // namespace quad_test
