// Defines nothing itself: includes ptpu's whole public surface.
#pragma once

#include "ptpu/core/dtype.hpp"
#include "ptpu/core/error.hpp"
#include "ptpu/core/index.hpp"
#include "ptpu/core/integers.hpp"
#include "ptpu/core/shape.hpp"
#include "ptpu/hw/chip.hpp"
#include "ptpu/hw/presets.hpp"
#include "ptpu/memory/rules.hpp"
#include "ptpu/memory/space.hpp"
