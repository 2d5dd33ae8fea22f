// The ops reference (docs/ops.md), checked: how ptpu's ops differ from their jnp / lax twins (values
// are 2-D, reductions keep the reduced dim, no dtype promotion, integer / and % truncate, dot
// returns f32) and what each charges, measured on a real pallas_call. Exits 1 on any mismatch.
#include <ptpu/ptpu.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <type_traits>

using namespace ptpu;

namespace {

int failures = 0;
void expect(bool ok, const char* what) {
    if (ok) return;
    std::printf("FAILED: %s\n", what);
    ++failures;
}

template <class V, class T, index_t R, index_t C>
constexpr bool is = std::is_same_v<std::remove_cvref_t<V>, vec<T, R, C>>;

// One (16, 256) f32 block, 2 x 2 = 4 vregs: the body loads it, runs `op` on it, stores it.
using X = Array<float, 16, 256>;
using One = pallas_call<In<Arg<X>>, Out<Arg<X>>, Chip<tpu::v5e>>;  // grid-free, whole arrays in VMEM

// The work `op` charged: the body's total minus the load and the store around it.
template <class Op>
work charged(Op op) {
    host_array<X> x;
    std::ranges::fill(x, 0.5f);
    auto run = [&](auto body) { return std::get<1>(One{}(body, x)).stats.total_work; };
    const work all = run([&](auto in, auto out) {
        const auto v = load(in);
        op(v);
        store(out, v);
    });
    const work base = run([](auto in, auto out) { store(out, load(in)); });
    work w = all;
    w.vreg_cheap -= base.vreg_cheap;
    w.vector_loads -= base.vector_loads;
    w.vector_stores -= base.vector_stores;
    return w;
}

void shapes_and_values() {
    // Values are 2-D: a rank-1 ref loads as one row; rank >= 3 collapses leading dims into rows.
    float buf[2 * 8 * 128] = {};
    const auto row = load(ref<float, vmem, 1, extents<256>>(buf, {256}));
    static_assert(is<decltype(row), float, 1, 256>);
    const auto planes = load(ref<float, vmem, 3, extents<2, 8, 128>>(buf, {2, 8, 128}));
    static_assert(is<decltype(planes), float, 16, 128>);

    const auto v = iota<float>(c<16>, c<256>, 1);  // v(i, j) = j
    // Reductions keep the reduced dim with size 1 (jnp's keepdims=True).
    static_assert(is<decltype(sum(v, c<1>)), float, 16, 1>);
    static_assert(is<decltype(sum(v, c<0>)), float, 1, 256>);
    static_assert(is<decltype(sum(v)), float, 1, 1>);
    expect(sum(v, c<1>)(3, 0) == 255.0f * 256.0f / 2.0f, "sum along axis 1");
    expect(max(v, c<0>)(0, 7) == 7.0f && mean(v)(0, 0) == 127.5f, "max along axis 0, mean over all");
    // ... so they broadcast straight back: v - mean(v, axis) needs no reshape.
    expect((v - mean(v, c<1>))(0, 0) == -127.5f, "a reduction broadcasts back against its input");

    // Comparisons give masks; where selects; no implicit promotion (cast first).
    const auto m = v > 100.0f;
    static_assert(is<decltype(m), bool, 16, 256>);
    expect(where(m, v, 0.0f)(0, 101) == 101.0f && where(m, v, 0.0f)(0, 100) == 0.0f, "where");
    static_assert(is<decltype(cast<std::int32_t>(v)), std::int32_t, 16, 256>);

    // Integer / and % truncate toward zero (lax.div, lax.rem), unlike jnp's // and %.
    const auto k = iota<std::int32_t>(c<1>, c<1>, 0) - 7;  // -7
    expect((k / 2)(0, 0) == -3 && (k % 2)(0, 0) == -1, "integer / and % truncate");

    // dot accumulates in f32 and returns f32 whatever the operand type (bf16 in, f32 out).
    const auto a = cast<bf16>(full<float>(c<8>, c<301>, 3.0f));
    const auto b = cast<bf16>(full<float>(c<301>, c<128>, 1.0f));
    static_assert(is<decltype(dot(a, b)), float, 8, 128>);
    expect(dot(a, b)(0, 0) == 903.0f, "dot sums in f32");
    // preferred<bf16> rounds the f32 sums to bf16 once; the vec stays f32-typed (cast<bf16> next).
    const auto p = dot(a, b, {.preferred = preferred<bf16>});
    expect(p(0, 0) == 904.0f, "preferred<bf16> rounds once");
}

void charges() {
    // Elementwise: one op of its class per output vreg (here 4).
    expect(charged([](const auto& v) { (void)(v + v); }).vreg_cheap == 4, "a + b: 4 cheap");
    expect(charged([](const auto& v) { (void)exp(v); }).vreg_medium == 4, "exp: 4 medium");
    expect(charged([](const auto& v) { (void)sin(v); }).vreg_expensive == 4, "sin: 4 expensive");
    expect(charged([](const auto& v) { (void)where(v > 0.0f, v, 1.0f); }).vreg_cheap == 8,
           "compare + select: 8 cheap");
    expect(charged([](const auto& v) { (void)cast<float>(v); }).vreg_cheap == 0,
           "cast to its own type: free");
    expect(charged([](const auto& v) { (void)cast<bf16>(v); }).vreg_cheap == 4, "cast: 4 cheap");
    // Reductions: the input's vregs, then 7 steps per output vreg across lanes (axis 1) or 3
    // across the 8 sublanes of a 32-bit vreg (axis 0); mean adds one multiply per output vreg.
    expect(charged([](const auto& v) { (void)sum(v, c<1>); }).vreg_cheap == 4 + 7 * 2, "sum axis 1");
    expect(charged([](const auto& v) { (void)sum(v, c<0>); }).vreg_cheap == 4 + 3 * 2, "sum axis 0");
    expect(charged([](const auto& v) { (void)sum(v); }).vreg_cheap == 4 + 7 + 3, "sum over all");
    expect(charged([](const auto& v) { (void)mean(v, c<1>); }).vreg_cheap == 4 + 7 * 2 + 2, "mean axis 1");
    // Layout: one op per output vreg when data moves; nothing when vregs are only renamed.
    // A transpose moves vregs through the XLU, one per output vreg (docs/model.md §5).
    const work t = charged([](const auto& v) { (void)transpose(v); });
    expect(t.xlu_vregs == 32 * 1 && t.vreg_cheap == 0, "transpose");
    expect(charged([](const auto& v) { (void)v(ds(0, c<8>), ds(128, c<128>)); }).vreg_cheap == 0,
           "an aligned window: free");
    expect(charged([](const auto& v) { (void)concatenate(v, v, c<0>); }).vreg_cheap == 0,
           "concatenate at a tile boundary: free");
    // dot: 2 M' N' K' FLOPs per pass, K and N padded to the MXU (128 on v5e), M to the sublane
    // tile (8 rows for f32), operands as vector loads; the f32 result leaves through the MXU's
    // pop slot, no vector store.
    const work d = charged([](const auto& v) { (void)dot<dot_options{.transpose_b = true}>(v, v); });
    expect(d.mxu_passes_flops == 2.0 * 16 * 128 * 256, "dot: padded MXU FLOPs");
    expect(d.vector_loads == 4 + 4 && d.vector_stores == 0, "dot: operand loads, no result stores");
    const work h = charged(
        [](const auto& v) { (void)dot<dot_options{.transpose_b = true, .prec = precision::high}>(v, v); });
    expect(h.mxu_passes_flops == 3 * d.mxu_passes_flops, "precision::high: 3 passes");
    // A vector op reading a dot's result waits for the MXU to drain: one work.mxu_drains
    // (docs/model.md §5); a result nothing reads waits for nothing.
    expect(d.mxu_drains == 0, "dot: no drain unless read");
    const work e = charged([](const auto& v) { (void)exp(dot<dot_options{.transpose_b = true}>(v, v)); });
    expect(e.mxu_drains == 1, "exp(dot(a, b)): one MXU drain");
    // Loads and stores: the block's vregs (the base the charges above are measured against).
    const work base =
        std::get<1>(One{}([](auto in, auto out) { store(out, load(in)); }, host_array<X>{})).stats.total_work;
    expect(base.vector_loads == 4 && base.vector_stores == 4 && base.vreg_cheap == 0, "load and store");
}

}  // namespace

int main() {
    shapes_and_values();
    charges();
    if (failures == 0) std::printf("ops reference: every claim holds\n");
    return failures == 0 ? 0 : 1;
}
