// The verdict (call/verdict.hpp) without failing the build: check_call, valid_call and
// pallas_call_ok give the rule id and message pallas_call's static_assert gives, for the same
// configurations as tests/compile_fail/pallas_call_checks.cpp (its ko numbers in the comments),
// and the nouns' own checks; a `requires` clause and a Hana-free filter over configurations use
// the concept without a hard error.
#include <gtest/gtest.h>

#include <ptpu/ptpu.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

using namespace ptpu;

namespace {

using X = Array<float, 32, 128>;
constexpr auto row = [](auto i) { return idx(i, 0); };
using Blk = BlockSpec<Block<8, 128>, row>;

// The rule id of a configuration's verdict, as a compile-time value.
template <class... Opts>
constexpr std::string_view rule_of = check_call<Opts...>().rule();

// ---- A valid call ------------------------------------------------------------------------------

using Good = pallas_call<Grid<4>, In<Arg<X, Blk>>, Out<Arg<X, Blk>>>;
static_assert(valid_call<Grid<4>, In<Arg<X, Blk>>, Out<Arg<X, Blk>>>);
static_assert(pallas_call_ok<Grid<4>, In<Arg<X, Blk>>, Out<Arg<X, Blk>>>);
static_assert(Good::valid);  // the two agree where pallas_call can be instantiated

// A named call: check_call<K>() reads K's options; naming K instantiates nothing.
using NamedBad = pallas_call<Grid<8>, In<Arg<X, BlockSpec<Block<4, 128>, row>>>, Out<Arg<X, Blk>>>;
static_assert(valid_call<Good> && pallas_call_ok<Good> && check_call<Good>().ok());
static_assert(!valid_call<NamedBad> && check_call<NamedBad>().rule() == "15");

TEST(Verdict, ValidCallHasNoRuleAndIsComplete) {
    constexpr verdict v = check_call<Grid<4>, In<Arg<X, Blk>>, Out<Arg<X, Blk>>>();
    static_assert(v.ok() && v.complete());
    EXPECT_TRUE(v.ok());
    EXPECT_EQ(v.rule(), "");
    EXPECT_EQ(v.message(), "");
    EXPECT_EQ(v.details(), "");
}

// ---- Rules found by the planner's grid walk and budgets ----------------------------------------

// ko 24: 2 x 16 MiB windows on v5e's 16 MiB scoped VMEM.
using Big = Array<float, 4096, 2048>;
using VmemOverflow = std::tuple<Grid<2>, Chip<tpu::v5e>, In<Arg<Big, BlockSpec<Block<2048, 2048>, row>>>>;
template <class T>
struct verdict_of;
template <class... O>
struct verdict_of<std::tuple<O...>> {
    static constexpr verdict value = check_call<O...>();
    static constexpr bool valid = valid_call<O...>;
};

TEST(Verdict, VmemOverflowIs24WithItsBytes) {
    constexpr verdict v = verdict_of<VmemOverflow>::value;
    static_assert(!verdict_of<VmemOverflow>::valid && v.rule() == "24");
    EXPECT_EQ(v.rule(), "24");
    EXPECT_EQ(v.message(), PTPU_RULE_TEXT_24);
    EXPECT_EQ(v.values().code, rule::r24);
    EXPECT_EQ(v.values().a, 2 * 2048 * 2048 * 4);        // total bytes: two slots
    EXPECT_EQ(v.values().b, tpu::v5e.vmem_limit_bytes);  // the chip's scoped limit
    EXPECT_NE(v.details().find("2 buffers"), std::string::npos) << v.details();
    // The same windows fit once VmemLimit allows them.
    static_assert(valid_call<Grid<2>, Chip<tpu::v5e>, VmemLimit<40 << 20>,
                             In<Arg<Big, BlockSpec<Block<2048, 2048>, row>>>>);
}

// 24 for the limit itself: one above the chip's physical VMEM (1 TiB on v5e's 128 MiB), or
// negative, could never be honoured; the chip's whole VMEM is the largest limit.
static_assert(rule_of<Grid<4>, Chip<tpu::v5e>, VmemLimit<index_t{1} << 40>, In<Arg<X, Blk>>, Out<Arg<X, Blk>>> ==
              "24");
static_assert(rule_of<Grid<4>, Chip<tpu::v5e>, VmemLimit<-1>, In<Arg<X, Blk>>, Out<Arg<X, Blk>>> == "24");
static_assert(rule_of<Grid<4>, Chip<tpu::v4>, VmemLimit<tpu::v5e.vmem_bytes>, In<Arg<X, Blk>>> == "24");
static_assert(valid_call<Grid<4>, Chip<tpu::v5e>, VmemLimit<tpu::v5e.vmem_bytes>, In<Arg<X, Blk>>, Out<Arg<X, Blk>>>);

TEST(Verdict, VmemLimitAboveTheChipIs24WithBothSizes) {
    constexpr auto v = check_call<Grid<4>, Chip<tpu::v5e>, VmemLimit<index_t{1} << 40>, In<Arg<X, Blk>>>();
    EXPECT_EQ(v.rule(), "24");
    EXPECT_NE(v.message().find("exceeds the chip's physical VMEM"), std::string::npos) << v.message();
    EXPECT_EQ(v.values().a, index_t{1} << 40);
    EXPECT_EQ(v.values().b, tpu::v5e.vmem_bytes);
    EXPECT_NE(v.details().find("limit bytes 1099511627776, chip VMEM bytes 134217728"), std::string::npos)
        << v.details();
}

// PAD1: element padding is a count of elements on each side, never negative.
constexpr auto elem_map = [](auto i) { return idx(i * 8, 0); };
static_assert(rule_of<Grid<4>, In<Arg<X, BlockSpec<Block<element{8, -1, 0}, element{128}>, elem_map>>>,
                      Out<Arg<X, Blk>>> == "PAD1");
static_assert(rule_of<Grid<4>, In<Arg<X, BlockSpec<Block<element{8, 0, -3}, element{128}>, elem_map>>>,
                      Out<Arg<X, Blk>>> == "PAD1");
static_assert(valid_call<Grid<4>, In<Arg<X, BlockSpec<Block<element{8, 0, 0}, element{128}>, elem_map>>>,
                         Out<Arg<X, Blk>>>);

// ko 37: bool blocks count 4 bytes each.
static_assert(rule_of<Grid<4>, VmemLimit<3 << 19>,
                      In<Arg<Array<bool, 1024, 1024>, BlockSpec<Block<256, 1024>, row>>>> == "24");

// ko 26: block 4 of a 4-block array.
using OutOfBounds =
    std::tuple<Grid<4>, In<Arg<X, BlockSpec<Block<8, 128>, [](auto i) { return idx(i + 1, 0); }>>>,
               Out<Arg<X, Blk>>>;

TEST(Verdict, OutOfBoundsBlockIsS34AtItsIteration) {
    constexpr verdict v = verdict_of<OutOfBounds>::value;
    static_assert(!verdict_of<OutOfBounds>::valid);
    EXPECT_EQ(v.rule(), "S34");
    EXPECT_EQ(v.message(), PTPU_RULE_TEXT_S34);
    EXPECT_EQ(v.values().op, 0);
    EXPECT_EQ(v.values().at[0].v[0], 3);  // the last step asks for block 4
    EXPECT_NE(v.details().find("block (4, 0) at iteration (3)"), std::string::npos) << v.details();
}

// ko 27: A5's incorrect reduction, out (j, k) revisited across i.
using Revisit = std::tuple<
    Grid<8, 4, 4>,
    In<Arg<Array<float, 8, 1024, 1024>,
           BlockSpec<Block<squeezed, 256, 256>, [](auto i, auto j, auto k) { return idx(i, j, k); }>>>,
    Out<Arg<Array<float, 1024, 1024>,
            BlockSpec<Block<256, 256>, [](auto, auto j, auto k) { return idx(j, k); }>>>>;

TEST(Verdict, RevisitedOutputBlockIsS39) {
    constexpr verdict v = verdict_of<Revisit>::value;
    static_assert(!verdict_of<Revisit>::valid);
    EXPECT_EQ(v.rule(), "S39");
    EXPECT_EQ(v.message(), PTPU_RULE_TEXT_S39);
    EXPECT_EQ(v.values().op, 1);  // the output (inputs then outputs)
    EXPECT_NE(v.details().find("revisited in iteration (1, 0, 0)"), std::string::npos) << v.details();
}

// ko 30: both cores of a v5p write block 0.
using Race =
    std::tuple<Grid<2>, Semantics<parallel>, Chip<tpu::v5p>, In<Arg<X, Blk>>,
               Out<Arg<Array<float, 8, 128>, BlockSpec<Block<8, 128>, [](auto) { return idx(0, 0); }>>>>;

TEST(Verdict, MegacoreRaceIsMC1) {
    constexpr verdict v = verdict_of<Race>::value;
    static_assert(!verdict_of<Race>::valid);
    EXPECT_EQ(v.rule(), "MC1");
    EXPECT_EQ(v.message(), PTPU_RULE_TEXT_MC1);
    EXPECT_NE(v.details().find("written by core 0"), std::string::npos) << v.details();
    // On one core (v5e) nothing races; arbitrary semantics keep it on one core too.
    static_assert(
        valid_call<Grid<2>, Semantics<parallel>, Chip<tpu::v5e>, In<Arg<X, Blk>>,
                   Out<Arg<Array<float, 8, 128>, BlockSpec<Block<8, 128>, [](auto) { return idx(0, 0); }>>>>);
}

// ---- Rules of the description (validate) --------------------------------------------------------

// ko 13: (4, 128) blocks break the (8, 128) tiling.
using Tiling = std::tuple<Grid<8>, In<Arg<X, BlockSpec<Block<4, 128>, row>>>, Out<Arg<X, Blk>>>;

TEST(Verdict, TilingIs15OnItsDim) {
    constexpr verdict v = verdict_of<Tiling>::value;
    static_assert(!verdict_of<Tiling>::valid);
    EXPECT_EQ(v.rule(), "15");
    EXPECT_EQ(v.values().op, 0);
    EXPECT_EQ(v.values().dim, 0);
    EXPECT_EQ(v.values().a, 4);
    EXPECT_EQ(v.message(), message(rule::r15));
}

// Buffer counts: pallas_call allows 1 or 2 (check 19). 27, Q1 and BUF1 are emit_pipeline's
// (emit_pipeline_caps): no pallas_call option reaches them, so its verdict names 19 instead.
template <int K, bool L = false>
constexpr std::string_view buffers_rule =
    rule_of<Grid<4>, In<Arg<X, BlockSpec<Block<8, 128>, row, Buffered<K, L>>>>, Out<Arg<X, Blk>>>;
static_assert(buffers_rule<1> == "" && buffers_rule<2> == "");
static_assert(buffers_rule<0> == "19" && buffers_rule<3> == "19" && buffers_rule<9> == "19");
static_assert(buffers_rule<1, true> == "19" && buffers_rule<2, true> == "19");  // lookahead: 19, not Q1

TEST(Verdict, BufferCountsArePallasCallsRule19) {
    constexpr verdict v =
        check_call<Grid<4>, In<Arg<X, BlockSpec<Block<8, 128>, row, Buffered<3>>>>, Out<Arg<X, Blk>>>();
    EXPECT_EQ(v.rule(), "19");
    EXPECT_EQ(v.message(), message(rule::r19_buffers));
    EXPECT_EQ(v.values().a, 3);
}

// The remaining configuration rules of pallas_call_checks.cpp, ko by ko.
static_assert(
    rule_of<Grid<4>, In<Arg<X, BlockSpec<Block<128>, [](auto i) { return idx(i); }>>>, Out<Arg<X, Blk>>> ==
    "1");  // ko 1
static_assert(
    rule_of<Grid<4>, In<Arg<X, BlockSpec<Block<8, 128>, [](auto i) { return idx(i); }>>>, Out<Arg<X, Blk>>> ==
    "2");  // ko 2
static_assert(rule_of<Grid<4>, In<Arg<X, BlockSpec<Block<8, 128>, [](auto i, auto j) { return idx(i, j); }>>>,
                      Out<Arg<X, Blk>>> == "2");  // ko 3
static_assert(
    rule_of<Grid<4>, In<Arg<X, BlockSpec<Block<8, 128>, [](auto i) { return i; }>>>, Out<Arg<X, Blk>>> ==
    "3");  // ko 4
static_assert(rule_of<Grid<4>, In<Arg<X, BlockSpec<Block<bounded_slice{8}, 128>, row>>>, Out<Arg<X, Blk>>> ==
              "4");  // ko 5
static_assert(
    rule_of<Grid<4>, In<Arg<X, BlockSpec<Block<8, 128>, [](auto i) { return idx(ds(i * 8, 8), 0); }>>>,
            Out<Arg<X, Blk>>> == "5");                                                    // ko 6
static_assert(rule_of<Grid<4>, Grid<4>, In<Arg<X, Blk>>, Out<Arg<X, Blk>>> == "10");      // ko 8
static_assert(rule_of<Grid<4>, int, In<Arg<X, Blk>>, Out<Arg<X, Blk>>> == "10");          // not an option
static_assert(rule_of<Grid<4>, Alias<0, 3>, In<Arg<X, Blk>>, Out<Arg<X, Blk>>> == "11");  // ko 9
static_assert(rule_of<Grid<4>, In<Arg<Array<float>, BlockSpec<>>>, Out<Arg<X, Blk>>> == "13");  // ko 11
static_assert(rule_of<Grid<4>, In<Arg<X, BlockSpec<Block<8, 128>, row, any>>>, Out<Arg<X, Blk>>> ==
              "14");  // ko 12
static_assert(
    rule_of<Grid<10>, In<Arg<Array<float, 1000>, BlockSpec<Block<100>, [](auto i) { return idx(i); }>>>> ==
    "16");  // ko 14
static_assert(
    rule_of<Grid<16>, In<Arg<Array<bool, 1024>, BlockSpec<Block<64>, [](auto i) { return idx(i); }>>>> ==
    "16");  // ko 38
static_assert(rule_of<Grid<>, In<Arg<X, BlockSpec<Block<8, 128>, []() { return idx(1, 0); }>>>> ==
              "17");  // ko 15
static_assert(
    rule_of<Grid<4>,
            In<Arg<X, BlockSpec<Block<bounded_slice{8}, 128>, [](auto i) { return idx(ds(i * 8, 8), 0); }>>>,
            Out<Arg<X, Blk>>> == "18");  // ko 16
static_assert(
    rule_of<Grid<4>, In<Arg<X, BlockSpec<Block<element{8}, 128>, [](auto i) { return idx(i * 8, 0); }>>>,
            Out<Arg<X, Blk>>> == "18");  // ko 17
// Checks 4 and 5 need no grid walk when the map's type states its entries (idx(...)'s slice mask):
// a call planned at run time (its maps read scalar-prefetch values) reports them at compile time
// too, with the operand and dim; a map declared to return a plain index_tuple is left to the walk.
using Pf = ScalarPrefetch<Array<std::int32_t, 4>>;
using Blk4Pf = BlockSpec<Block<8, 128>, [](auto i, const auto&) { return idx(i, 0); }>;
using PfOut = Out<Arg<X, Blk4Pf>>;
using ScalarOnSlice =
    BlockSpec<Block<bounded_slice{8}, 128>, [](auto i, const auto& s) { return idx(s[i], 0); }>;
using SliceOnBlocked = BlockSpec<Block<8, 128>, [](auto, const auto& s) { return idx(ds(s[0], 8), 0); }>;
using Untyped = BlockSpec<Block<bounded_slice{8}, 128>,
                          [](auto i, const auto& s) -> index_tuple<2> { return idx(s[i], 0); }>;
constexpr verdict pf4 = check_call<Grid<4>, Pf, In<Arg<X, ScalarOnSlice>>, PfOut>();
static_assert(pf4.rule() == "4" && !pf4.complete() && pf4.values().op == 0 && pf4.values().dim == 0);
static_assert(rule_of<Grid<4>, Pf, In<Arg<X, Blk4Pf>>, Out<Arg<X, SliceOnBlocked>>> == "5");
static_assert(check_call<Grid<4>, Pf, In<Arg<X, Untyped>>, PfOut>().ok());  // the walk: 4 at run time
static_assert(!valid_call<Grid<4>, Pf, In<Arg<X, ScalarOnSlice>>, PfOut>);
static_assert(rule_of<Grid<4>, In<Arg<X, Blk>>, Out<Arg<X, BlockSpec<Block<8, 128>, row, revisit_any>>>> ==
              "19");  // ko 20
static_assert(rule_of<Grid<4, 1>, Semantics<parallel>,
                      In<Arg<X, BlockSpec<Block<8, 128>, [](auto i, auto) { return idx(i, 0); }>>>> ==
              "20");                                                         // ko 21
static_assert(rule_of<Grid<0>, In<Arg<X, Blk>>, Out<Arg<X, Blk>>> == "25");  // ko 25
static_assert(rule_of<Grid<4, 4>,
                      Out<Arg<Array<float, 32, 256>,
                              BlockSpec<Block<8, 128>, [](auto i, auto j) { return idx(i, j / 2); }>>,
                          Arg<Array<float, 16, 256>,
                              BlockSpec<Block<8, 128>, [](auto i, auto j) { return idx(j / 2, i % 2); }>>>> ==
              "S39");  // ko 28
static_assert(rule_of<Grid<4, 1>, Semantics<arbitrary, parallel>,
                      In<Arg<X, BlockSpec<Block<8, 128>, [](auto i, auto) { return idx(i, 0); }>>>> ==
              "S44");  // ko 29
static_assert(rule_of<Grid<4>, In<Arg<X, Blk>>, Out<Arg<X, Blk>>, Scratch<smem, std::int32_t, 300000>> ==
              "SMEM1");  // ko 31
static_assert(rule_of<Grid<4>, Alias<0, 0>, In<Arg<X, Blk>>, Out<Arg<Array<float, 64, 128>, Blk>>> ==
              "11");  // ko 34
// ko 10, 22, 23, 35, 36, 39 break rules of a call's body or arguments (12, S3, S4, ARG1, PRED1),
// not of the configuration: their configurations are valid.
static_assert(valid_call<Grid<4>, In<Arg<X, BlockSpec<Full, zero_map, any>>>, Out<Arg<X, Blk>>>);  // ko 22
static_assert(
    valid_call<Grid<4>, In<Arg<X, BlockSpec<Block<8, 128>, row, smem>>>, Out<Arg<X, Blk>>>);  // ko 23

// ---- The nouns' own static_asserts, read without instantiating the noun -------------------------

static_assert(rule_of<Grid<4>, In<Arg<X, BlockSpec<Block<true, 128>, row>>>, Out<Arg<X, Blk>>> ==
              "7");  // ko 7
static_assert(rule_of<Grid<4>, In<Arg<X, Blk>>, Out<Arg<X, Blk>>, Scratch<hbm, float, 8, 128>> ==
              "S5");  // ko 32
static_assert(rule_of<Grid<4>, In<Arg<X, BlockSpec<Block<8, 128>, row, vmem_shared>>>, Out<Arg<X, Blk>>> ==
              "29");  // ko 33
static_assert(rule_of<Grid<4>, In<Arg<X, BlockSpec<Block<8, 128>, row, int>>>, Out<Arg<X, Blk>>> ==
              "19");  // an option
static_assert(
    rule_of<Grid<1>, In<Arg<Array<float, 8, 128, 1, 1, 1, 1, 1>, BlockSpec<Block<8, 128, 1, 1, 1, 1, 1>>>>> ==
    "V1");  // the Array's rank check comes first, then the Block's
static_assert(rule_of<Grid<1>, In<Arg<Array<float, 8, 128>, BlockSpec<Block<8, 128, 1, 1, 1, 1, 1>>>>> ==
              "13");
static_assert(rule_of<Grid<4>, In<Arg<X, Blk>>, Out<Arg<X, Blk>>, Scratch<vmem, float, 8, 0>> == "V1");
static_assert(rule_of<Grid<4>, In<Arg<X, Blk>>, Out<Arg<X, Blk>>, Scratch<vmem, double, 8, 128>> == "T1");
static_assert(valid_call<Grid<4>, In<Arg<X, Blk>>, Out<Arg<X, Blk>>, Scratch<semaphore, std::int32_t, 2>>);
static_assert(rule_of<Grid<4>, In<Arg<X, Blk>>, Scratch<semaphore, void, 2>> ==
              "36");  // semaphore scratch holds semaphore cells, as pallas_call's Scratch says
static_assert(valid_call<Grid<4>, In<Arg<X, Blk>>, Out<Arg<X, Blk>>, Scratch<semaphore, dma_semaphore, 2>>);
static_assert(rule_of<Grid<4>, In<Arg<X, Blk>>, Out<Arg<X, Blk>>, Scratch<vmem, dma_semaphore, 2>> == "36");
static_assert(rule_of<Grid<2>, ScalarPrefetch<Array<std::int64_t, 2>>, In<Arg<X, Blk>>> == "T1");

TEST(Verdict, NounChecksGiveTheirMessageAndOperand) {
    constexpr verdict dims =
        check_call<Grid<4>, In<Arg<X, Blk>, Arg<Array<float, 8, 0>, Blk>>, Out<Arg<X, Blk>>>();
    EXPECT_EQ(dims.rule(), "V1");
    EXPECT_EQ(dims.message(), PTPU_RULE_TEXT_V1_ARRAY_DIMS);
    EXPECT_EQ(dims.values().op, 1);  // the second input
    constexpr verdict type = check_call<Grid<4>, In<Arg<X, Blk>>, Out<Arg<Array<double, 32, 128>, Blk>>>();
    EXPECT_EQ(type.rule(), "T1");
    EXPECT_EQ(type.message(), PTPU_RULE_TEXT_T1_ARRAY);
    EXPECT_EQ(type.values().op, 1);  // the output, after the one input
    constexpr verdict dim = check_call<Grid<4>, In<Arg<X, BlockSpec<Block<true, 128>, row>>>>();
    EXPECT_EQ(dim.message(), PTPU_RULE_TEXT_7_BLOCK_DIM);
    constexpr verdict scratch = check_call<Grid<4>, In<Arg<X, Blk>>, Scratch<hbm, float, 8, 128>>();
    EXPECT_EQ(scratch.message(), PTPU_RULE_TEXT_S5);
    EXPECT_EQ(scratch.values().op, -1);
    constexpr verdict space = check_call<Grid<4>, In<Arg<X, BlockSpec<Block<8, 128>, row, vmem_shared>>>>();
    EXPECT_EQ(space.message(), PTPU_RULE_TEXT_29);
}

// ---- Plans made at run time: only the description's rules are known -----------------------------

using Gather =
    std::tuple<Grid<10>, ScalarPrefetch<Array<std::int32_t, 10>>,
               In<Arg<Array<std::int32_t, 1024, 128>,
                      BlockSpec<Block<128, 128>, [](auto i, const auto& s) { return idx(s[i], 0); }>>>,
               Out<Arg<Array<std::int32_t, 1280, 128>,
                       BlockSpec<Block<128, 128>, [](auto i, const auto&) { return idx(i, 0); }>>>>;

TEST(Verdict, RunTimePlansAreIncomplete) {
    constexpr verdict v = verdict_of<Gather>::value;
    static_assert(v.ok() && !v.complete());  // the S34 and S39 checks wait for the prefetched values
    static_assert(
        !check_call<Grid<10>, ScalarPrefetch<Array<std::int32_t, 10>>,
                    In<Arg<Array<std::int32_t, 1024, 128>,
                           BlockSpec<Block<100, 128>, [](auto i, const auto& s) { return idx(s[i], 0); }>>>>()
             .ok());  // but tiling (15) is checked
    // More planning than PTPU_MAX_STATIC_WORK: the same split as pallas_call::static_plan.
    using Long =
        pallas_call<Grid<PTPU_MAX_STATIC_WORK>, In<Arg<Array<float, 8, 128>, BlockSpec<Block<8, 128>>>>>;
    constexpr verdict l =
        check_call<Grid<PTPU_MAX_STATIC_WORK>, In<Arg<Array<float, 8, 128>, BlockSpec<Block<8, 128>>>>>();
    static_assert(l.ok() && l.complete() == Long::static_plan && !Long::static_plan);
    EXPECT_FALSE(v.complete());
}

// ---- Filtering with the concept -----------------------------------------------------------------

// A constrained alias: naming it with a broken configuration is a substitution failure, which a
// `requires` expression sees as false (pallas_call<...> itself names fine: it checks on use).
template <class... Opts>
    requires valid_call<Opts...>
using checked_call = pallas_call<Opts...>;
template <class... Opts>
concept nameable = requires { typename checked_call<Opts...>; };
static_assert(nameable<Grid<4>, In<Arg<X, Blk>>, Out<Arg<X, Blk>>>);
static_assert(!nameable<Grid<8>, In<Arg<X, BlockSpec<Block<4, 128>, row>>>, Out<Arg<X, Blk>>>);      // 15
static_assert(!nameable<Grid<4>, In<Arg<Array<float, 8, 0>, Blk>>>);                                 // V1
static_assert(!nameable<Grid<2>, Chip<tpu::v5e>, In<Arg<Big, BlockSpec<Block<2048, 2048>, row>>>>);  // 24
static_assert(requires { typename pallas_call<Grid<0>>; });  // why the constraint is needed

// Overloads constrained on the concept pick the valid configurations.
template <class... Opts>
constexpr int pick(std::tuple<Opts...>*) {
    return 0;
}
template <class... Opts>
    requires valid_call<Opts...>
constexpr int pick(std::tuple<Opts...>*) {
    return 1;
}
static_assert(pick(static_cast<std::tuple<Grid<4>, In<Arg<X, Blk>>>*>(nullptr)) == 1);
static_assert(pick(static_cast<Race*>(nullptr)) == 0);

// A Hana-free filter: keep only the valid configurations of a list, as pallas_call types.
template <class... Opts>
struct config {};
template <class... T>
struct type_list {};
template <class... A, class... B>
constexpr type_list<A..., B...> operator+(type_list<A...>, type_list<B...>) {
    return {};
}
template <class... Opts>
constexpr auto keep_if_valid(config<Opts...>) {
    if constexpr (valid_call<Opts...>)
        return type_list<pallas_call<Opts...>>{};
    else
        return type_list<>{};
}
template <class... Configs>
constexpr auto valid_calls(type_list<Configs...>) {
    return (type_list<>{} + ... + keep_if_valid(Configs{}));
}

// Row blocks of the (32, 128) array: 4 breaks the tiling (15), and 64 rows over a grid of 2 ask
// for block 1, which has no row inside the array (S34).
template <index_t R, index_t G>
using rows =
    config<Grid<G>, In<Arg<X, BlockSpec<Block<R, 128>, row>>>, Out<Arg<X, BlockSpec<Block<R, 128>, row>>>>;
template <index_t R, index_t G>
using call_rows = pallas_call<Grid<G>, In<Arg<X, BlockSpec<Block<R, 128>, row>>>,
                              Out<Arg<X, BlockSpec<Block<R, 128>, row>>>>;
using kept =
    decltype(valid_calls(type_list<rows<4, 8>, rows<8, 4>, rows<16, 2>, rows<32, 1>, rows<64, 2>>{}));
static_assert(std::is_same_v<kept, type_list<call_rows<8, 4>, call_rows<16, 2>, call_rows<32, 1>>>);

template <class... Calls>
index_t total_dmas(type_list<Calls...>) {
    return (index_t{0} + ... + Calls::dma_count());
}

TEST(Verdict, FilterKeepsOnlyValidConfigurationsAndTheyRun) {
    // The kept calls instantiate cleanly: 4 + 2 + 1 steps, each one copy-in and one copy-out.
    EXPECT_EQ(total_dmas(kept{}), 2 * (4 + 2 + 1));
    host_array<X> x;
    for (index_t i = 0; i < X::size; ++i) x.data()[i] = static_cast<float>(i);
    auto [z, rep] = call_rows<16, 2>{}([](auto a, auto b) { store(b, load(a) * 2.0f); }, x);
    for (index_t i = 0; i < X::size; ++i) ASSERT_EQ(z.data()[i], 2.0f * static_cast<float>(i));
}

}  // namespace
