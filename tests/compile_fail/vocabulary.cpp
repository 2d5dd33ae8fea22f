// Invalid vocabulary is a compile error where static: extents, Array dims (and their element
// count and bytes, V3), bounded values.
//! ko 1 V1
//! ko 2 V1
//! ko 3 V2
//! ko 4 V1
//! ko 5 V3
//! ko 6 V3
#include <ptpu/core/extents.hpp>
#include <ptpu/core/integers.hpp>
#include <ptpu/spec/call.hpp>

using namespace ptpu;

#if !defined(PTPU_KO)
static_assert(extents<8, 128>::is_static && extents<dyn, 128>::values[1] == 128);
static_assert(Array<float, 8, 128>::size == 1024);
static_assert(Array<std::int8_t, index_t{1} << 31, index_t{1} << 31>::size == index_t{1} << 62);  // fits
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
#elif PTPU_KO == 5
using big = Array<float, index_t{1} << 31, index_t{1} << 31, 4>::value_type;  // V3: 2^64 elements
#elif PTPU_KO == 6
using bytes = Array<float, index_t{1} << 31, index_t{1} << 31>::value_type;  // V3: 2^62 elements, 2^64 bytes
#endif

int main() {}
