#pragma once
#include <vector>
#include "ptpu/base/ok_b2.hpp"
// #include "ptpu/top/ok_top.hpp"  (a comment, not an include)
