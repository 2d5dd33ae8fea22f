// Compile-fail cases for R3: the Eigen views of a ref that computed without charging TPU work
// (x[all], x.mat(), the window x(ds, ds)) do not compile; the charged ops and the named escape
// hatch (uncharged_array / uncharged_matrix) do (the ok twin). Code written for the old views
// (ko 6-8, bodies written with raw views) gets the one R3 message, no cascade.
//! ko 1 R3
//! ko 2 R3
//! ko 3 R3
//! ko 4 R3
//! ko 5 R3
//! ko 6 R3
//! ko 7 R3
//! ko 8 R3
#include <ptpu/ptpu.hpp>

using namespace ptpu;

[[maybe_unused]] void body(vmem_ref<float, 2> x, vmem_ref<const float, 2> in,
                           ref<float, vmem, 2, extents<8, 128>> s) {
#if !defined(PTPU_KO)
    // The ok twin: the charged spellings, then the escape hatch named for what it skips.
    store(x, load(in) + dot(load(in), load(in), {.transpose_b = true}));
    store(s, load(s, ds(0, c<8>), ds(0, c<128>)) * 2.0f);
    x.uncharged_array() = in.uncharged_array() + 1.0f;
    x.uncharged_matrix().noalias() = in.uncharged_matrix() * in.uncharged_matrix().transpose();
#elif PTPU_KO == 1
    (void)x[all];  // R3: an uncharged Eigen view; load(x) / store(x, v)
#elif PTPU_KO == 2
    (void)in[all];  // R3, on a read-only ref too
#elif PTPU_KO == 3
    (void)x.mat();  // R3: dot(load(a), load(b))
#elif PTPU_KO == 4
    (void)x(ds(0, 8), ds(0, 128));  // R3: load(x, ds(..), ds(..))
#elif PTPU_KO == 5
    (void)s(ds(0, c<8>), ds(0, c<128>));  // R3, with static window sizes
#elif PTPU_KO == 6
    x[all] = in[all] + in[all] * 2.0f;  // R3 once, for both refs
#elif PTPU_KO == 7
    x.mat().noalias() += in.mat() * in.mat();  // R3 once
#elif PTPU_KO == 8
    x[all].setZero();  // R3 once, however many refs and lines use it
    s[all] = -x[all];
    x[all](1, 2) = 0.0f;
#endif
}

int main() {}
