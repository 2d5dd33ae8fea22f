#pragma once
// mid includes base; that does not let top include base (only base/ok_single.hpp).
#include "ptpu/mid/ok_mid.hpp"
#include "ptpu/base/ok_single.hpp"
