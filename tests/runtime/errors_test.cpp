// Run-time rules of the runtime layer, each pinned by its id: operands (ARG1), refs (R1, R2),
// copies (DMA1, PRED1), the kernel context (K1, 22) and the exporters (REP2).
#include <gtest/gtest.h>

#include <ptpu/ptpu.hpp>

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
