#pragma once
#include <guarded/allowed/x.hpp>
#include <other/free.hpp>
