// Compile-fail cases for the compile-time rules of ops/: memory spaces of loads and stores (S3,
// S4), dot operand dtypes (OP2), dtypes of the other ops (OP3), constant charges (C1).
//! ko 1 S4
//! ko 2 S3
//! ko 3 S3
//! ko 4 S4
//! ko 5 OP2
//! ko 6 OP2
//! ko 7 OP2
//! ko 8 OP3
//! ko 9 OP3
//! ko 10 OP3
//! ko 11 S4
//! ko 12 C1
//! ko 13 OP3
//! ko 14 OP3
//! ko 15 OP3
//! ko 16 OP3
//! ko 17 S3
//! ko 18 OP3
//! ko 19 OP3
//! ko 20 C1
#include <ptpu/ops/ops.hpp>

#include <cstdint>
#include <limits>

using namespace ptpu;

[[maybe_unused]] void body(vmem_ref<float, 2> x, vmem_ref<bf16, 2> h, smem_ref<float, 1> s,
                           [[maybe_unused]] any_ref<float, 2> a, [[maybe_unused]] ref<float, hbm, 2> hb,
                           vmem_ref<const float, 2> in) {
    const vec<float> v = load(x);
    const vec<bf16> w = load(h);
    const vec<std::int32_t> n = cast<std::int32_t>(v);
    const vec<bool> m = v > 0.0f;
#if !defined(PTPU_KO)
    // The ok twin: each line below is the fixed form of one ko case.
    store(x, dot(v, v, {.transpose_b = true}) + sload(s, 0) + load(in));
    store(h, cast<bf16>(exp(v) + cast<float>(w)));
    sstore(s, sum(cast<std::int32_t>(m))(0, 0), 0);
    charge_seconds(1_us);
    (void)where(m, n * 2, -n);
#elif PTPU_KO == 1
    (void)load(s);  // S4: SMEM holds scalars only
#elif PTPU_KO == 2
    (void)load(hb);  // S3: HBM is DMA-only
#elif PTPU_KO == 3
    store(a, v);  // S3: ANY is DMA-only
#elif PTPU_KO == 4
    store(s, load(x, ds(0, 1), ds(0, 8)));  // S4: no vector stores to SMEM
#elif PTPU_KO == 5
    (void)dot(m, m);  // OP2: masks do not go through the MXU
#elif PTPU_KO == 6
    (void)dot(v, w);  // OP2: f32 × bf16
#elif PTPU_KO == 7
    (void)dot(n, n);  // OP2: no int32 MXU
#elif PTPU_KO == 8
    (void)(v + w);  // OP3: no implicit promotion
#elif PTPU_KO == 9
    (void)exp(n);  // OP3: exp needs a floating-point vec
#elif PTPU_KO == 10
    store(h, v);  // OP3: f32 value into a bf16 ref
#elif PTPU_KO == 11
    sstore(x, 1.0f, 0, 0);  // S4: no scalar stores to VMEM
#elif PTPU_KO == 12
    charge_seconds(-1.5_us);  // C1: a negative constant time
#elif PTPU_KO == 13
    (void)(m + m);  // OP3: arithmetic on masks
#elif PTPU_KO == 14
    (void)(n * 0.5f);  // OP3: float scalar with an integer vec
#elif PTPU_KO == 15
    (void)where(n, v, v);  // OP3: the condition must be a mask
#elif PTPU_KO == 16
    (void)sum(m);  // OP3: masks are not reduced
#elif PTPU_KO == 17
    (void)sload(a, 0, 0);  // S3: no scalar loads from ANY
#elif PTPU_KO == 18
    store(in, v);  // OP3: the ref is read-only
#elif PTPU_KO == 19
    (void)(v % v);  // OP3: % is for integers
#elif PTPU_KO == 20
    charge_seconds(constant_seconds(std::numeric_limits<double>::infinity()));  // C1
#endif
}

int main() {}
