// Run-time rules of the runtime layer, each pinned by its id: operands (ARG1), refs (R1, R2),
// copies (DMA1, PRED1), the kernel context (K1, 22), charges (C1), aliases (11), inner grids (25)
// and the exporters (REP2). Each message names what it is about: the operand, the dim, the step.
#include <gtest/gtest.h>

#include <ptpu/ptpu.hpp>

#include <algorithm>
#include <cfloat>
#include <numeric>
#include <string>
#include <vector>

using namespace ptpu;

namespace {
template <class F>
std::string rule_of(F&& fn) {
    try {
        fn();
    } catch (const ptpu::error& e) {
        return e.rule();
    }
    return "no error";
}
// The whole message of the ptpu::error fn throws ("no error" when it throws none).
template <class F>
std::string message_of(F&& fn) {
    try {
        fn();
    } catch (const ptpu::error& e) {
        return e.what();
    }
    return "no error";
}
bool has(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

using X = Array<float, 16, 128>;
using Blk = BlockSpec<Block<8, 128>, [](auto i) { return idx(i, 0); }>;
using Copy = pallas_call<Grid<2>, In<Arg<X, Blk>>, Out<Arg<X, Blk>>>;
constexpr auto copy_body = [](auto a, auto b) { store(b, load(a)); };
}  // namespace

TEST(RuntimeErrors, OperandOfTheWrongSizeIsARG1) {
    EXPECT_EQ(rule_of([] { host_array<X> a(std::vector<float>(7)); }), "ARG1");
    const std::vector<float> short_input(16 * 128 - 1);
    EXPECT_EQ(rule_of([&] { (void)Copy{}(copy_body, short_input); }), "ARG1");
    host_array<X> z;
    const host_view<float> wrong{z.data(), 2, {8, 256}};
    EXPECT_EQ(rule_of([&] { (void)Copy{}.into(std::tuple{wrong}, copy_body, host_array<X>{}); }), "ARG1");
    // Nothing was written through the rejected view.
    for (float v : z.vector()) ASSERT_EQ(v, 0.0f);
}

// ARG1 names the operand: inputs and scalar-prefetch arrays by their index, into()'s outputs too.
using Add2 = pallas_call<Grid<2>, In<Arg<X, Blk>, Arg<X, Blk>>, Out<Arg<X, Blk>>>;
constexpr auto add_body = [](auto a, auto b, auto c) { store(c, load(a) + load(b)); };

TEST(RuntimeErrors, ARG1NamesTheOperand) {
    const host_array<X> x;
    const std::vector<float> short_input(16 * 128 - 1);
    std::string m = message_of([&] { (void)Add2{}(add_body, x, short_input); });
    EXPECT_TRUE(has(m, "ptpu[ARG1] pallas_call input 1:")) << m;
    m = message_of([&] { (void)Add2{}(add_body, short_input, x); });
    EXPECT_TRUE(has(m, "ptpu[ARG1] pallas_call input 0:")) << m;
    float raw[8 * 128] = {};
    const host_view<const float> half{raw, 2, {8, 128}};
    m = message_of([&] { (void)Add2{}(add_body, x, half); });
    EXPECT_TRUE(has(m, "ptpu[ARG1] pallas_call input 1:")) << m;
    std::vector<float> out(16 * 128 + 1);
    m = message_of([&] { (void)Add2{}.into(std::tie(out), add_body, x, x); });
    EXPECT_TRUE(has(m, "ptpu[ARG1] pallas_call::into output 0:")) << m;
    m = message_of([&] {
        (void)Add2{}.into(std::tuple{host_view<float>{raw, 2, {8, 128}}}, add_body, x, x);
    });
    EXPECT_TRUE(has(m, "ptpu[ARG1] pallas_call::into output 0:")) << m;
    using Pf =
        pallas_call<Grid<2>, ScalarPrefetch<Array<std::int32_t, 2>>,
                    In<Arg<X, BlockSpec<Block<8, 128>, [](auto i, const auto& s) { return idx(s[i], 0); }>>>,
                    Out<Arg<X, BlockSpec<Block<8, 128>, [](auto i, const auto&) { return idx(i, 0); }>>>>;
    const std::vector<std::int32_t> three_indices = {0, 1, 0};
    m = message_of([&] { (void)Pf{}([](auto, auto a, auto b) { store(b, load(a)); }, three_indices, x); });
    EXPECT_TRUE(has(m, "ptpu[ARG1] pallas_call scalar-prefetch 0:")) << m;
}

// R2 names the ref: which operand of the call a body indexed out of range.
TEST(RuntimeErrors, R2InABodyNamesTheOperand) {
    const host_array<X> x;
    std::string m = message_of([&] {
        (void)Add2{}([](auto a, auto b, auto c) { store(c, load(a) + load(b, ds(4, 8), ds(0, 128))); }, x, x);
    });
    EXPECT_TRUE(has(m, "ptpu[R2] ref of input 1: slice ds(4, 8) is outside dim 0 of extent 8")) << m;
    m = message_of([&] { (void)Add2{}([](auto, auto, auto c) { (void)c.at(8); }, x, x); });
    EXPECT_TRUE(has(m, "ptpu[R2] ref of output 0: index 8")) << m;
    using WithScratch =
        pallas_call<Grid<2>, In<Arg<X, Blk>>, Out<Arg<X, Blk>>, Scratch<smem, std::int32_t, 4>>;
    m = message_of([&] {
        (void)WithScratch{}(
            [](auto a, auto b, auto s) {
                store(b, load(a));
                s[program_id(0) + 3] = 1;
            },
            x);
    });
    EXPECT_TRUE(has(m, "ptpu[R2] ref of scratch 0: index 4 is outside dim 0 of extent 4")) << m;
    // A ref made outside a call has no operand to name.
    std::vector<float> buf(8 * 128);
    const vmem_ref<float, 2> r(buf.data(), {8, 128});
    m = message_of([&] { (void)r(8, 0); });
    EXPECT_TRUE(has(m, "ptpu[R2] ref: index 8")) << m;
}

// R2 in an index map reading scalar-prefetch values: the prefetch ref, the operand whose map read
// it, and the grid iteration.
TEST(RuntimeErrors, R2InAnIndexMapNamesTheOperandAndTheIteration) {
    using Shifted =
        pallas_call<Grid<2>, ScalarPrefetch<Array<std::int32_t, 2>>,
                    In<Arg<X, BlockSpec<Block<8, 128>, [](auto i, const auto&) { return idx(i, 0); }>>,
                       Arg<X, BlockSpec<Block<8, 128>,
                                        [](auto i, const auto& s) {
                                            return idx(s[i + 1], 0);  // reads s[2] at i = 1
                                        }>>>,
                    Out<Arg<X, BlockSpec<Block<8, 128>, [](auto i, const auto&) { return idx(i, 0); }>>>>;
    const host_array<X> x;
    const std::vector<std::int32_t> s = {0, 1};
    const std::string m = message_of([&] { (void)Shifted{}([](auto, auto, auto, auto) {}, s, x, x); });
    EXPECT_TRUE(has(m, "ptpu[R2] ref of scalar-prefetch 0: index 2 is outside dim 0 of extent 2")) << m;
    EXPECT_TRUE(has(m, "(in the index map of input 1 at iteration (1))")) << m;
}

TEST(RuntimeErrors, RefIndexAndWindowOutOfRangeIsR2) {
    std::vector<float> buf(8 * 128);
    const vmem_ref<float, 2> r(buf.data(), {8, 128});
    EXPECT_EQ(rule_of([&] { (void)r(8, 0); }), "R2");
    EXPECT_EQ(rule_of([&] { (void)load(r, ds(4, 8), ds(0, 128)); }), "R2");
    EXPECT_EQ(rule_of([&] { (void)r.at(-1); }), "R2");
}

TEST(RuntimeErrors, NonContiguousCollapseIsR1) {
    std::vector<float> buf(4 * 8 * 128);
    const vmem_ref<float, 3> r(buf.data(), {4, 8, 128});
    // Rows 0..3 of each of the 4 planes: the leading dims no longer collapse into one.
    const auto part = r.at(ds(0, 4), ds(0, 4), ds(0, 128));
    EXPECT_EQ(rule_of([&] { (void)load(part); }), "R1");
    EXPECT_EQ(rule_of([&] { (void)part.uncharged_array(); }), "R1");
    EXPECT_EQ(rule_of([&] { (void)load(r); }), "no error");
}

TEST(RuntimeErrors, ContextOutsideABodyIsK1) {
    EXPECT_EQ(rule_of([] { (void)program_id(0); }), "K1");
    EXPECT_EQ(rule_of([] { (void)num_programs(0); }), "K1");
    EXPECT_EQ(rule_of([] { (void)core_index(); }), "K1");
}

TEST(RuntimeErrors, GridFreeProgramIdIs22) {
    using One = pallas_call<In<Arg<X>>, Out<Arg<X>>>;
    EXPECT_EQ(rule_of([] { (void)One{}([](auto, auto) { (void)program_id(0); }, host_array<X>{}); }), "22");
}

TEST(RuntimeErrors, PredictCopyIntoSmemWithoutDataIsPRED1) {
    using AnyIn = pallas_call<Grid<2>, In<Arg<X, BlockSpec<Full, zero_map, any>>>, Out<Arg<X, Blk>>,
                              Scratch<smem, float, 8, 128>>;
    const auto body = [](auto x, auto, auto s) { sync_copy(x.at(ds(0, 8), ds(0, 128)), s); };
    EXPECT_EQ(rule_of([&] { (void)AnyIn{}.predict(body); }), "PRED1");
    // With data, the same timing-only run copies into SMEM (scalar code may read it).
    AnyIn timing{{.timing_only = true}};
    EXPECT_EQ(rule_of([&] { (void)timing(body, host_array<X>{}); }), "no error");
}

TEST(RuntimeErrors, UnwritableTracePathIsREP2) {
    Copy traced{{.timeline = true}};
    const report rep =
        std::get<1>(traced(copy_body, host_array<X>{}));  // (clang 14 cannot capture a binding)
    EXPECT_EQ(rule_of([&] { write_chrome_trace(rep, "/nonexistent-dir/trace.json"); }), "REP2");
    EXPECT_EQ(rule_of([&] { write_svg(rep, "/nonexistent-dir/t.svg"); }), "REP2");
}

namespace {
// A call rejected at run time (here S34: a prefetched block index out of bounds) leaves the
// caller's buffers as they were, aliased output included: S50's copy happens only once the plan
// holds.
using AX = Array<float, 16, 128>;
using AliasedGather =
    pallas_call<Grid<2>, ScalarPrefetch<Array<std::int32_t, 2>>, Alias<0, 0>,
                In<Arg<AX, BlockSpec<Block<8, 128>, [](auto i, const auto& s) { return idx(s[i], 0); }>>>,
                Out<Arg<AX, BlockSpec<Block<8, 128>, [](auto i, const auto&) { return idx(i, 0); }>>>>;
}  // namespace

TEST(RuntimeRules, RejectedCallLeavesAliasedOutputUntouched) {
    host_array<AX> x, y;
    std::fill(x.begin(), x.end(), 1.0f);
    std::fill(y.begin(), y.end(), 7.0f);
    const std::vector<std::int32_t> bad = {0, 5};  // block 5 of 2: S34
    EXPECT_EQ(rule_of([&] {
                  (void)AliasedGather{}.into(std::tie(y), [](auto, auto a, auto b) { store(b, load(a)); }, bad, x);
              }),
              "S34");
    EXPECT_TRUE(std::all_of(y.begin(), y.end(), [](float v) { return v == 7.0f; }));
    const std::vector<std::int32_t> good = {1, 0};
    (void)AliasedGather{}.into(std::tie(y), [](auto, auto a, auto b) { store(b, load(a)); }, good, x);
    EXPECT_TRUE(std::all_of(y.begin(), y.end(), [](float v) { return v == 1.0f; }));
}

// A host_view whose data pointer is null is ARG1 naming the operand, before any byte moves
// (inputs, into()'s outputs, dynamic_call's operands).
TEST(RuntimeErrors, NullHostViewIsARG1NamingTheOperand) {
    const host_array<X> x;
    const host_view<const float> null_in{nullptr, 2, {16, 128}};
    std::string m = message_of([&] { (void)Add2{}(add_body, x, null_in); });
    EXPECT_TRUE(has(m, "ptpu[ARG1] pallas_call input 1: the host_view's data pointer is null")) << m;
    host_array<X> z;
    std::fill(z.begin(), z.end(), 5.0f);
    const host_view<float> null_out{nullptr, 2, {16, 128}};
    m = message_of([&] { (void)Copy{}.into(std::tuple{null_out}, copy_body, x); });
    EXPECT_TRUE(has(m, "ptpu[ARG1] pallas_call::into output 0: the host_view's data pointer is null")) << m;
    using D = dynamic_call<In<Operand<float, 2>>, Out<Operand<float, 2>>>;
    D d;
    d.grid = {2};
    d.in[0] = {.shape = {16, 128}, .block = {8, 128}, .index_map = [](index_t i) { return idx(i, 0); }};
    d.out[0] = d.in[0];
    m = message_of([&] { (void)d(copy_body, null_in); });
    EXPECT_TRUE(has(m, "ptpu[ARG1] dynamic_call input 0: the host_view's data pointer is null")) << m;
    const host_view<float> z_view{z.data(), 2, {16, 128}};
    m = message_of([&] { (void)d.into(std::tuple{null_out}, copy_body, z_view); });
    EXPECT_TRUE(has(m, "ptpu[ARG1] dynamic_call output 0: the host_view's data pointer is null")) << m;
    for (float v : z) ASSERT_EQ(v, 5.0f);
}

// An alias joining operands of different shapes or dtypes names both operands and what differs.
TEST(RuntimeErrors, AliasMismatchNamesBothOperandsAndWhatDiffers) {
    using D = dynamic_call<In<Operand<float, 2>, Operand<std::int32_t, 2>>, Out<Operand<float, 2>>>;
    D d;
    d.grid = {2};
    d.in[0] = {.shape = {16, 128}, .block = {8, 128}, .index_map = [](index_t i) { return idx(i, 0); }};
    d.in[1] = d.in[0];
    d.out[0] = {.shape = {32, 128}, .block = {8, 128}, .index_map = [](index_t i) { return idx(i, 0); }};
    d.aliases = {{0, 0}};
    std::string m = message_of([&] { (void)d.events(); });
    EXPECT_TRUE(has(m, "ptpu[11]")) << m;
    EXPECT_TRUE(has(m, "input 0 and output 0: the shapes differ at dim 0 (16 vs 32)")) << m;
    d.out[0].shape = {16, 128};
    d.aliases = {{1, 0}};
    m = message_of([&] { (void)d.events(); });
    EXPECT_TRUE(has(m, "input 1 and output 0: the dtypes differ (i32 vs f32)")) << m;
    d.aliases = {{0, 0}, {1, 0}};
    m = message_of([&] { (void)d.events(); });
    EXPECT_TRUE(has(m, "input 1 and output 0: output 0 is already aliased")) << m;
    d.aliases = {{0, 3}};
    m = message_of([&] { (void)d.events(); });
    EXPECT_TRUE(has(m, "input 0 and output 3: output 3 is out of range (1 output)")) << m;
}

namespace {
using AnyX = BlockSpec<Full, zero_map, any>;
using Outer = pallas_call<Grid<1>, In<Arg<X, AnyX>, Arg<Array<std::int32_t, 2>, AnyX>>, Out<Arg<X, AnyX>>,
                          Scratch<smem, std::int32_t, 2>>;
}  // namespace

// An inner pipeline's index map that reads past its SMEM table names the ref, the inner operand
// and the inner iteration, as a pallas_call map does (the R2 test above).
TEST(RuntimeErrors, R2InAnInnerIndexMapNamesTheOperandAndTheInnerIteration) {
    using Rows = BlockSpec<Block<8, 128>, [](index_t i, const auto&) { return idx(i, 0); }>;
    using Table = BlockSpec<Block<8, 128>, [](index_t i, const auto& t) { return idx(t[i + 1], 0); }>;
    const host_array<X> x;
    const std::vector<std::int32_t> t = {1, 0};
    const std::string m = message_of([&] {
        (void)Outer{}(
            [](auto xh, auto th, auto oh, auto ts) {
                sync_copy(th, ts);
                emit_pipeline([](auto a, auto o) { store(o, load(a)); }, {2}, in_specs<Table>, out_specs<Rows>, {},
                              ts)(xh, oh);
            },
            x, t);
    });
    EXPECT_TRUE(has(m, "ptpu[R2] ref of scratch 0: index 2 is outside dim 0 of extent 2")) << m;
    EXPECT_TRUE(has(m, "(in the index map of emit_pipeline input 0 at inner iteration (1))")) << m;
}

// An inner grid with a zero dim is 25 naming emit_pipeline and the dim (with core_axis too, where
// it would otherwise run nothing).
TEST(RuntimeErrors, ZeroInnerGridIs25NamingEmitPipelineAndTheDim) {
    using Tiles = BlockSpec<Block<8, 128>, [](index_t i, index_t j) { return idx(i, j); }>;
    const host_array<X> x;
    const std::vector<std::int32_t> t = {0, 0};
    for (const int axis : {-1, 0}) {
        const std::string m = message_of([&] {
            (void)Outer{}(
                [axis](auto xh, auto, auto oh, auto) {
                    const index_t cols = xh.shape()[1] / 256;  // 0 at run time
                    pipeline_options o;
                    if (axis >= 0) o = {.semantics = {parallel, arbitrary}, .core_axis = axis};
                    emit_pipeline([](auto a, auto b) { store(b, load(a)); }, {2, cols}, in_specs<Tiles>,
                                  out_specs<Tiles>, o)(xh, oh);
                },
                x, t);
        });
        EXPECT_TRUE(has(m, "ptpu[25] emit_pipeline:")) << m;
        EXPECT_TRUE(has(m, "dim 1")) << m;
        EXPECT_FALSE(has(m, "pallas_call")) << m;
    }
}

// A charge whose total over the call overflows a double is C1 naming the core, the step and its
// program ids (not only the report's sum at the end), in full and timing-only runs alike.
TEST(RuntimeErrors, OverflowingChargesAreC1NamingTheStep) {
    const host_array<X> x;
    for (const bool timing : {false, true}) {
        // One DBL_MAX per step: the total overflows at the second step.
        std::string m = message_of([&] {
            (void)Copy{{.timing_only = timing}}([](auto a, auto b) { store(b, load(a)); charge_seconds(DBL_MAX); }, x);
        });
        EXPECT_TRUE(has(m, "ptpu[C1]")) << m;
        EXPECT_TRUE(has(m, "core 0, step 1 (program ids (1))")) << m;
        // Two in one step: the first step's own work overflows.
        m = message_of([&] {
            (void)Copy{{.timing_only = timing}}(
                [](auto a, auto b) {
                    store(b, load(a));
                    charge_seconds(DBL_MAX);
                    charge_seconds(DBL_MAX);
                },
                x);
        });
        EXPECT_TRUE(has(m, "ptpu[C1]")) << m;
        EXPECT_TRUE(has(m, "step 0 (program ids (0))")) << m;
    }
}

// ARG2: into() with an output buffer that is also an input's (no Alias declared), or one buffer
// for two outputs, would compute garbage (the kernel reads what it overwrites): refused before
// any byte moves, naming both operands. With Alias<in, out> the input's own buffer is the
// output's, updated in place.
TEST(RuntimeErrors, IntoWithSharedBuffersIsARG2) {
    host_array<X> x, y;
    std::iota(x.begin(), x.end(), 0.0f);
    std::string m = message_of([&] { (void)Add2{}.into(std::tie(x), add_body, y, x); });
    EXPECT_TRUE(has(m, "ptpu[ARG2] pallas_call::into output 0: its buffer shares memory with pallas_call input 1"))
        << m;
    EXPECT_TRUE(has(m, "Alias<1, 0>")) << m;
    // Part of a buffer (a view of its second half over the first input's second half) counts too.
    std::vector<float> big(3 * 8 * 128);
    const host_view<float> tail{big.data() + 8 * 128, 2, {16, 128}};
    const host_view<const float> head{big.data(), 2, {16, 128}};
    m = message_of([&] { (void)Add2{}.into(std::tuple{tail}, add_body, head, y); });
    EXPECT_TRUE(has(m, "ptpu[ARG2] pallas_call::into output 0: its buffer shares memory with pallas_call input 0"))
        << m;
    using Two = pallas_call<Grid<2>, In<Arg<X, Blk>>, Out<Arg<X, Blk>, Arg<X, Blk>>>;
    host_array<X> z;
    m = message_of([&] {
        (void)Two{}.into(std::tie(z, z), [](auto a, auto b, auto c) { store(b, load(a)); store(c, load(a)); }, x);
    });
    EXPECT_TRUE(has(m, "ptpu[ARG2] pallas_call::into output 1: its buffer shares memory with pallas_call::into "
                       "output 0: the two outputs would overwrite each other"))
        << m;
    for (float v : z.vector()) ASSERT_EQ(v, 0.0f);  // nothing ran
    // Inputs may share a buffer (both are read); an aliased input may be its output's buffer.
    (void)Add2{}.into(std::tie(z), add_body, x, x);
    for (std::size_t k = 0; k < z.size(); ++k) ASSERT_EQ(z.vector()[k], 2.0f * x.vector()[k]);
    using InPlace = pallas_call<Grid<2>, Alias<0, 0>, In<Arg<X, Blk>>, Out<Arg<X, Blk>>>;
    host_array<X> w = x;
    (void)InPlace{}.into(std::tie(w), [](auto a, auto b) { store(b, load(a) + 1.0f); }, w);
    for (std::size_t k = 0; k < w.size(); ++k) ASSERT_EQ(w.vector()[k], x.vector()[k] + 1.0f);
    // Aliased, but only part of the same memory: the input's copy into the output would overlap.
    m = message_of([&] {
        (void)InPlace{}.into(std::tuple{tail}, [](auto a, auto b) { store(b, load(a)); }, head);
    });
    EXPECT_TRUE(has(m, "ptpu[ARG2] pallas_call::into output 0: its buffer shares memory with pallas_call input 0"))
        << m;
}
