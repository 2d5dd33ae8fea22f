// Interpret mode's options on a pallas_call (InterpretParams; docs/guide.md):
// poisoned buffers (run_options::poison_buffers: NaN, INT_MIN, true in every window slot and
// scratch buffer, and in the padding of every edge block copied in) and out-of-bounds block
// reads (run_options::out_of_bounds_reads: `raise` keeps what the slot held, `uninitialized`
// reads poison). The bodies read their windows' raw memory, padding included.
#include <gtest/gtest.h>

#include <ptpu/ptpu.hpp>

#include <climits>
#include <cmath>
#include <cstdint>
#include <vector>

using namespace ptpu;

namespace {

template <class A>
host_array<A> counting() {
    host_array<A> a;
    for (std::size_t i = 0; i < a.size(); ++i) a.vector()[i] = static_cast<typename A::value_type>(i);
    return a;
}

// A (20, 200) array in (8, 128) blocks, grid (3, 2): block (2, 1) holds rows 16..19 and columns
// 128..199; its window's rows 4..7 and columns 72..127 lie outside the array (S34 padding). It
// is the last step; its slot (double-buffered, slot 1) held block (1, 1) two steps before.
// (Two aliases rather than one alias template: g++ 12 runs no body of a pallas_call whose
// index-map lambdas sit in an alias template used inside a function template.)
constexpr auto blocks = [](auto i, auto j) { return idx(i, j); };
template <class T>
using EdgeArg = Arg<Array<T, 20, 200>, BlockSpec<Block<8, 128>, blocks>>;
using EdgeF = pallas_call<Grid<3, 2>, In<EdgeArg<float>>, Out<EdgeArg<float>>>;
using EdgeI = pallas_call<Grid<3, 2>, In<EdgeArg<std::int32_t>>, Out<EdgeArg<std::int32_t>>>;

// The last step's input window, raw (8 x 128, row-major).
template <class Call, class T>
std::vector<T> last_window(const run_options& opt) {
    const auto x = counting<Array<T, 20, 200>>();
    std::vector<T> seen;
    (void)Call{opt}(
        [&](auto a, auto b) {
            if (program_id(0) == 2 && program_id(1) == 1) seen.assign(a.data(), a.data() + 8 * 128);
            store(b, load(a));
        },
        x);
    return seen;
}

TEST(InterpretOptions, EdgePaddingReadsNaNWithPoison) {
    const std::vector<float> w = last_window<EdgeF, float>({.poison_buffers = true});
    ASSERT_EQ(w.size(), 8u * 128u);
    for (index_t r = 0; r < 8; ++r)
        for (index_t c = 0; c < 128; ++c) {
            const float v = w[static_cast<std::size_t>(r * 128 + c)];
            if (r < 4 && c < 72)
                ASSERT_EQ(v, static_cast<float>((16 + r) * 200 + 128 + c));  // inside: the data
            else
                ASSERT_TRUE(std::isnan(v)) << r << "," << c;
        }
}

TEST(InterpretOptions, EdgePaddingKeepsTheSlotsOldRowsByDefault) {
    // raise (the default): rows 4..7 keep block (1, 1)'s rows 12..15, as on a TPU (S35).
    const std::vector<float> w = last_window<EdgeF, float>({});
    for (index_t r = 4; r < 8; ++r)
        for (index_t c = 0; c < 72; ++c)
            ASSERT_EQ(w[static_cast<std::size_t>(r * 128 + c)], static_cast<float>((8 + r) * 200 + 128 + c));
}

TEST(InterpretOptions, UninitializedReadsPoisonForTheOutOfBoundsPart) {
    // Without poisoned buffers too; for ints the poison is INT_MIN.
    const std::vector<std::int32_t> w =
        last_window<EdgeI, std::int32_t>({.out_of_bounds_reads = oob_reads::uninitialized});
    for (index_t r = 0; r < 8; ++r)
        for (index_t c = 0; c < 128; ++c) {
            const std::int32_t v = w[static_cast<std::size_t>(r * 128 + c)];
            ASSERT_EQ(v, r < 4 && c < 72 ? static_cast<std::int32_t>((16 + r) * 200 + 128 + c) : INT_MIN)
                << r << "," << c;
        }
}

// Scratch starts as poison: NaN for floats, INT_MIN for ints, true for bool (VMEM and SMEM).
using WithScratch =
    pallas_call<Grid<2>,
                In<Arg<Array<float, 16, 128>, BlockSpec<Block<8, 128>, [](auto i) { return idx(i, 0); }>>>,
                Out<Arg<Array<float, 16, 128>, BlockSpec<Block<8, 128>, [](auto i) { return idx(i, 0); }>>>,
                Scratch<vmem, float, 8, 128>, Scratch<vmem, std::int32_t, 8, 128>,
                Scratch<smem, std::int32_t, 4>, Scratch<vmem, bool, 8, 128>>;

struct scratch_seen {
    std::vector<float> f;
    std::vector<std::int32_t> i, s;
    std::vector<bool> b;
};

scratch_seen first_scratch(const run_options& opt) {
    const auto x = counting<Array<float, 16, 128>>();
    scratch_seen seen;
    (void)WithScratch{opt}(
        [&](auto a, auto o, auto f, auto i, auto s, auto b) {
            if (program_id(0) == 0) {
                seen.f.assign(f.data(), f.data() + 8 * 128);
                seen.i.assign(i.data(), i.data() + 8 * 128);
                seen.s.assign(s.data(), s.data() + 4);
                seen.b.assign(b.data(), b.data() + 8 * 128);
            }
            store(o, load(a));
        },
        x);
    return seen;
}

TEST(InterpretOptions, ScratchStartsAsPoison) {
    const scratch_seen p = first_scratch({.poison_buffers = true});
    for (float v : p.f) ASSERT_TRUE(std::isnan(v));
    for (std::int32_t v : p.i) ASSERT_EQ(v, INT_MIN);
    for (std::int32_t v : p.s) ASSERT_EQ(v, INT_MIN);
    for (bool v : p.b) ASSERT_TRUE(v);
    // Without it, fresh memory is all 0xff bytes: NaN for floats, -1 for ints; bools are true
    // (a host bool may hold nothing else: reading 0xff as bool is undefined behaviour).
    const scratch_seen d = first_scratch({});
    for (float v : d.f) ASSERT_TRUE(std::isnan(v));
    for (std::int32_t v : d.i) ASSERT_EQ(v, -1);
    for (bool v : d.b) ASSERT_TRUE(v);
}

TEST(InterpretOptions, PoisonChangesNoResult) {
    const auto x = counting<Array<float, 20, 200>>();
    auto body = [](auto a, auto b) { store(b, load(a) * 2.0f); };
    auto [y, r] = EdgeF{{.poison_buffers = true, .out_of_bounds_reads = oob_reads::uninitialized}}(body, x);
    auto [z, q] = EdgeF{}(body, x);
    for (std::size_t k = 0; k < y.size(); ++k) ASSERT_EQ(y.vector()[k], z.vector()[k]);
    EXPECT_EQ(r.device_time, q.device_time);
}

}  // namespace
