// Compile-fail cases for rule T1 (dtype_of an unsupported element type) and rule H1 (an invalid
// user chip checked in a constant expression).
//! ko 1 T1
//! ko 2 T1
//! ko 3 T1
//! ko 4 H1
//! ko 5 H1
#include <ptpu/core/dtype.hpp>
#include <ptpu/hw/presets.hpp>

#include <cstdint>

namespace {

// A user chip built from a preset, as users are told to do; PTPU_KO 4 and 5 break one field.
constexpr ptpu::chip my_chip = [] {
    ptpu::chip c = ptpu::tpu::v5e;
#if defined(PTPU_KO) && PTPU_KO == 4
    c.vmem_limit_bytes = 2 * c.vmem_bytes;  // more scoped VMEM than the core has
#elif defined(PTPU_KO) && PTPU_KO == 5
    c.megacore = true;                             // v5e has one TensorCore
#endif
    return c;
}();

}  // namespace

#if !defined(PTPU_KO)
static_assert(ptpu::dtype_of<float> == ptpu::dtype::f32);
static_assert(ptpu::dtype_of<ptpu::bf16> == ptpu::dtype::bf16);
[[maybe_unused]] constexpr bool validated = (ptpu::validate(my_chip), true);
#elif PTPU_KO == 1
constexpr ptpu::dtype d = ptpu::dtype_of<double>;  // double is not a TPU element type
#elif PTPU_KO == 2
constexpr ptpu::dtype d = ptpu::dtype_of<std::int64_t>;  // no 64-bit integers
#elif PTPU_KO == 3
constexpr ptpu::dtype d = ptpu::dtype_of<const float>;  // cv-qualified: strip it first
#elif PTPU_KO == 4 || PTPU_KO == 5
[[maybe_unused]] constexpr bool validated = (ptpu::validate(my_chip), true);
#endif

int main() {}
