#pragma once
#include <guarded/allowed/x.hpp>
