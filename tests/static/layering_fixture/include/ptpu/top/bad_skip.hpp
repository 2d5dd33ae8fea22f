#pragma once
#include "ptpu/mid/ok_mid.hpp"
#include <ptpu/base/ok_b.hpp>
