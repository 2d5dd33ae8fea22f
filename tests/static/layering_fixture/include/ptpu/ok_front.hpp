#pragma once
#include "ptpu/top/ok_top.hpp"
#include "ptpu/base/ok_b.hpp"
