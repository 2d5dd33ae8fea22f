#pragma once
#include "ptpu/base/ok_b.hpp"
