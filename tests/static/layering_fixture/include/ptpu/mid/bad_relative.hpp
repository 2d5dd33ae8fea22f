#pragma once
#include "../base/ok_b.hpp"
