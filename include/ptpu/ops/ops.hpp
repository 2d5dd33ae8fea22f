// Defines nothing itself: includes every op a kernel body calls (ops/), as one header.
#pragma once

#include "ptpu/ops/cast.hpp"
#include "ptpu/ops/charge.hpp"
#include "ptpu/ops/create.hpp"
#include "ptpu/ops/dot.hpp"
#include "ptpu/ops/elementwise.hpp"
#include "ptpu/ops/layout.hpp"
#include "ptpu/ops/load_store.hpp"
#include "ptpu/ops/reduce.hpp"
#include "ptpu/ops/vec.hpp"
#include "ptpu/ops/where.hpp"
