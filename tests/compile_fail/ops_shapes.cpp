// Compile-fail cases for rule OP1 where shapes are static: refs with static extents (what
// pallas_call hands a body) load as statically shaped vecs, and every op checks its operands'
// static shapes at compile time, through whole chains of ops and windows of static size
// (ds(start, c<N>)). Also the static forms of DMA1 (sync_copy) and R1 (ref conversions).
//! ko 1 OP1 do not broadcast. a .8, 128., b .16, 128.. make each dim equal
//! ko 2 OP1
//! ko 3 OP1
//! ko 4 OP1
//! ko 5 OP1 a .8, 128., b .transposed. .128, 256.. contract a
//! ko 6 OP1 vec .1, 128., target .8, 256.. make each dim
//! ko 7 OP1
//! ko 8 OP1
//! ko 9 OP1
//! ko 10 OP1
//! ko 11 OP1
//! ko 12 OP1
//! ko 13 OP1
//! ko 14 OP1
//! ko 15 OP1
//! ko 16 OP1
//! ko 17 OP1
//! ko 18 OP1
//! ko 19 DMA1
//! ko 20 R1
//! ko 21 OP1
//! ko 22 OP1
//! ko 23 OP1
//! ko 24 OP1
//! ko 25 DMA1
//! ko 26 OP1
#include <ptpu/ptpu.hpp>

using namespace ptpu;

template <index_t R, index_t C>
using block = vmem_ref<float, 2, extents<R, C>>;

[[maybe_unused]] void body(block<8, 128> x, block<16, 128> y, block<128, 256> w, block<8, 256> o,
                           [[maybe_unused]] ref<float, any, 2, extents<64, 128>> hb,
                           [[maybe_unused]] vmem_ref<float, 2> d) {
    auto v = load(x);
    const auto m = v > 0.0f;
    const auto row = sum(v, c<0>);  // (1, 128)
#if !defined(PTPU_KO)
    // The ok twin: each line below is the fixed form of one ko case.
    store(x, v + row);
    (void)(v < load(x));
    store(x, load(y, ds(0, 8), ds(0, 128)));
    store(o, dot(v, load(w)));
    (void)dot<dot_options{.transpose_b = true}>(v, load(x));
    (void)broadcast_to(row, c<8>, c<128>);
    (void)concatenate(v, load(y), c<0>);
    (void)where(m, v, row);
    v += row;
    store(x, sum(v, c<1>) * v);
    (void)max(v, c<-1>);
    [[maybe_unused]] const vec<float, 8, 128> same = v;
    [[maybe_unused]] const vec<float> any_shape = v;
    store(x, transpose(load(w, ds(0, 128), ds(0, 8))) + v);
    store(x, zeros_like(x) + broadcast_to(load(d), 8, 128));
    (void)(load(d) + v);  // mixed static/dynamic: checked at run time
    store(o, dot(v, load(w), {.transpose_a = false}));
    (void)concatenate(v, load(o), 1);
    sync_copy(hb.at(ds(0, 8), ds(0, 128)), x);
    store(y, ds(8, c<8>), ds(0, c<128>), v);  // static window sizes: checked at compile time
    sync_copy(hb.at(ds(8, c<8>), ds(0, c<128>)), x);
    (void)(v(ds(0, c<8>), ds(0, c<128>)) + v);
    [[maybe_unused]] const vmem_ref<const float, 2> dyn_ref = x;
    (void)(cast<bf16>(v) + cast<bf16>(row));
    (void)(full<float>(c<8>, c<128>, 1.0f) - iota<float>(c<8>, c<128>, 1));
#elif PTPU_KO == 1
    (void)(v + load(y));  // OP1: (8, 128) + (16, 128)
#elif PTPU_KO == 2
    (void)(v < load(w));  // OP1: comparisons broadcast too
#elif PTPU_KO == 3
    store(x, load(y));  // OP1: a (16, 128) value into an (8, 128) ref
#elif PTPU_KO == 4
    store(o, dot(v, load(x)));  // OP1: contracting dims 128 and 8
#elif PTPU_KO == 5
    (void)dot<dot_options{.transpose_b = true}>(v, load(w));  // OP1: contracting dims 128 and 256
#elif PTPU_KO == 6
    (void)broadcast_to(row, c<8>, c<256>);  // OP1: 128 does not broadcast to 256
#elif PTPU_KO == 7
    (void)concatenate(v, load(o), c<0>);  // OP1: along rows the cols must agree (128 vs 256)
#elif PTPU_KO == 8
    (void)where(m, v, load(y));  // OP1: mask (8, 128), a (8, 128), b (16, 128)
#elif PTPU_KO == 9
    v += load(o);  // OP1: b (8, 256) does not broadcast to a (8, 128)
#elif PTPU_KO == 10
    auto r = row;
    r *= v;  // OP1: compound assignment would broadcast a (1, 128) to (8, 128)
#elif PTPU_KO == 11
    store(x, sum(v, c<1>));  // OP1: (8, 1) into an (8, 128) ref
#elif PTPU_KO == 12
    (void)max(v, c<2>);  // OP1: a static axis out of range
#elif PTPU_KO == 13
    [[maybe_unused]] const vec<float, 16, 128> other = v;  // OP1: two static shapes
#elif PTPU_KO == 14
    store(x, transpose(v));  // OP1: (128, 8) into (8, 128)
#elif PTPU_KO == 15
    store(x, zeros_like(o) + v);  // OP1: (8, 256) + (8, 128)
#elif PTPU_KO == 16
    store(o, exp(dot(v, load(w)) * 2.0f) - v);  // OP1 at the end of a chain: (8, 256) - (8, 128)
#elif PTPU_KO == 17
    (void)where(m, load(o), 0.0f);  // OP1: mask (8, 128) and a (8, 256)
#elif PTPU_KO == 18
    (void)(cast<bf16>(v) * cast<bf16>(sum(v, c<1>)) + cast<bf16>(load(w)));  // (8, 128) + (128, 256)
#elif PTPU_KO == 19
    sync_copy(hb, x);  // DMA1: (64, 128) into (8, 128)
#elif PTPU_KO == 20
    [[maybe_unused]] const block<16, 128> wrong(x);  // R1: two static extents
#elif PTPU_KO == 24
    store(y, ds(8, c<8>), ds(0, c<64>), v);  // OP1: an (8, 64) window and an (8, 128) value
#elif PTPU_KO == 25
    sync_copy(hb.at(ds(0, c<16>), ds(0, c<128>)), x);  // DMA1: (16, 128) into (8, 128)
#elif PTPU_KO == 26
    (void)(v(ds(0, c<8>), ds(0, c<64>)) + v);  // OP1: (8, 64) + (8, 128)
#elif PTPU_KO == 21
    (void)(full<float>(c<8>, c<128>, 1.0f) - iota<float>(c<8>, c<256>, 1));  // OP1: static extents
#endif
}

// A chain inside a real pallas_call body: the refs carry their block shapes, so a wrong block
// shape of one operand is a compile error at the op that meets it.
using X = Array<float, 64, 512>;
using W = Array<float, 512, 256>;
#if PTPU_KO == 23
using B = Array<float, 1, 128>;  // a bias of the wrong width: (8, 256) + (1, 128) in the chain
#else
using B = Array<float, 1, 256>;
#endif
using O = Array<float, 64, 256>;
using Call =
    pallas_call<Grid<8>,
                In<Arg<X, BlockSpec<Block<8, 512>, [](auto i) { return idx(i, 0); }>>, Arg<W>, Arg<B>>,
#if PTPU_KO == 22  // output blocks of (8, 128): the end of the chain does not fit
                Out<Arg<O, BlockSpec<Block<8, 128>, [](auto i) { return idx(i, 0); }>>>>;
#else
                Out<Arg<O, BlockSpec<Block<8, 256>, [](auto i) { return idx(i, 0); }>>>>;
#endif

int main() {
    host_array<X> x;
    host_array<W> w;
    host_array<B> b;
    // store(o, x W + b): (8, 512) · (512, 256) + (1, 256) → (8, 256), checked against o's block.
    auto [o, rep] = Call{}(
        [](auto xr, auto wr, auto br, auto or_) { store(or_, dot(load(xr), load(wr)) + load(br)); }, x, w, b);
    (void)o;
    (void)rep;
}
