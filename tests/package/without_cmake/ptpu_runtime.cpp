// ptpu's shared machinery (runners, timing model, report), compiled here and nowhere else.
#define PTPU_RUNTIME_IMPLEMENTATION
#include <ptpu/ptpu.hpp>
