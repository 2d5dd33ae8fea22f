// Invalid vocabulary is a compile error where static.
//! ko 1 V1
//! ko 2 V1
//! ko 3 V2
//! ko 4 V1
#include <ptpu/core/shape.hpp>

using namespace ptpu;

#if !defined(PTPU_KO)
constexpr sshape<8, 128> ok{};
static_assert(ok.size() == 1024);
constexpr bounded<8> b(5);
static_assert(b.value() == 5);
#elif PTPU_KO == 1
constexpr sshape<8, 0> zero{};  // V1: a zero extent
#elif PTPU_KO == 2
constexpr sshape<-1, 128> neg{};  // V1: a negative extent
#elif PTPU_KO == 3
constexpr bounded<8> b(9);  // V2: above the bound, evaluated at compile time
#elif PTPU_KO == 4
constexpr bounded<0> b0{};  // V1: a bound must be positive
#endif

int main() {}
