// Invalid vocabulary is a compile error where static: extents, Array dims, bounded values.
//! ko 1 V1
//! ko 2 V1
//! ko 3 V2
//! ko 4 V1
#include <ptpu/core/extents.hpp>
#include <ptpu/core/integers.hpp>
#include <ptpu/spec/call.hpp>

using namespace ptpu;

#if !defined(PTPU_KO)
static_assert(extents<8, 128>::is_static && extents<dyn, 128>::values[1] == 128);
static_assert(Array<float, 8, 128>::size == 1024);
constexpr bounded<8> b(5);
static_assert(b.value() == 5);
#elif PTPU_KO == 1
using zero = Array<float, 8, 0>::value_type;  // V1: a zero array dim
#elif PTPU_KO == 2
constexpr auto neg = extents<-2, 128>::rank;  // V1: a negative extent that is not dyn
#elif PTPU_KO == 3
constexpr bounded<8> b(9);  // V2: above the bound, evaluated at compile time
#elif PTPU_KO == 4
constexpr bounded<0> b0{};  // V1: a bound must be positive
#endif

int main() {}
