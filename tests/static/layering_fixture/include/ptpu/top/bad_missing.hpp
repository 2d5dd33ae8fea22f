#pragma once
#include "ptpu/mid/no_such.hpp"
