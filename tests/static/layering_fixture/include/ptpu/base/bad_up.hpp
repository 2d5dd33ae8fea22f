#pragma once
#include "ptpu/base/ok_b.hpp"
#  include "ptpu/mid/ok_mid.hpp"
