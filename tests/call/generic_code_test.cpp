// Calls written in generic code: pallas_call, BlockSpecs, emit_pipeline and check_call formed
// inside function templates, class templates and alias templates, with the Array type, block
// rows and dtype taken from template parameters; and the value front ends (dynamic_call with
// custom_buffered or with a body's async copies on semaphore scratch, dynamic_pipeline) whose
// Operand types come from template parameters. Each call's outputs
// are checked against a reference computed here, outside the templates, and each body counts its steps: a
// compiler that dropped a call (g++ 12 drops statements that name an alias template holding a lambda,
// docs/guide.md, "Calls in templates") fails these tests instead of passing them vacuously.
#include <gtest/gtest.h>

#include <ptpu/ptpu.hpp>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string_view>
#include <vector>

using namespace ptpu;

namespace {

// ---- Function templates ------------------------------------------------------------------------

// y = k * x through row blocks of R: the array type is dependent, the BlockSpec's lambda sits in a
// local alias of the function template, and the operands have no name (Arg's default operand_name).
template <class A, index_t R>
auto scaled_copy(const host_array<A>& x, typename A::value_type k, int& steps) {
    using T = typename A::value_type;
    using Rows = BlockSpec<Block<R, A::shape[1]>, [](auto i) { return idx(i, 0); }>;
    using K = pallas_call<Grid<A::shape[0] / R>, In<Arg<A, Rows>>, Out<Arg<A, Rows>>>;
    static_assert(K::dma_count() == 2 * (A::shape[0] / R));
    return K{}(
        [k, &steps](auto a, auto b) {
            ++steps;
            store(b, load(a) * static_cast<T>(k));
        },
        x);
}

// y = 2 x by an inner pipeline over row blocks of R (emit_pipeline with dependent specs and grid)
// inside a call over the whole arrays in ANY.
template <class A, index_t R>
host_array<A> inner_double(const host_array<A>& x, int& steps) {
    using T = typename A::value_type;
    using Whole = BlockSpec<Full, zero_map, any>;
    using Rows = BlockSpec<Block<R, A::shape[1]>, [](index_t i) { return idx(i, 0); }>;
    using K = pallas_call<Grid<>, In<Arg<A, Whole, "x">>, Out<Arg<A, Whole, "y">>>;
    auto [y, rep] = K{}(
        [&steps](auto xh, auto yh) {
            emit_pipeline(
                [&steps](auto in, auto out) {
                    ++steps;
                    store(out, load(in) * T{2});
                },
                {A::shape[0] / R}, in_specs<Rows>, out_specs<Rows>)(xh, yh);
        },
        x);
    EXPECT_EQ(rep.stats.inner_steps, A::shape[0] / R);
    return y;
}

// The verdict on a copy through R-row blocks, with the BlockSpec's lambda written in the template
// argument list of check_call inside the function template.
template <index_t R>
constexpr verdict copy_verdict() {
    using X = Array<float, 64, 128>;
    return check_call<Grid<64 / R>, In<Arg<X, BlockSpec<Block<R, 128>, [](auto i) { return idx(i, 0); }>>>,
                      Out<Arg<X, BlockSpec<Block<R, 128>, [](auto i) { return idx(i, 0); }>>>>();
}
static_assert(copy_verdict<8>().ok());
static_assert(copy_verdict<4>().rule() == "15");   // (8, 128) tiling
}  // namespace

TEST(GenericCode, CallsInFunctionTemplates) {
    host_array<Array<float, 32, 256>> x;
    std::iota(x.begin(), x.end(), 0.0f);
    int steps = 0;
    const auto [y, rep] = scaled_copy<Array<float, 32, 256>, 8>(x, 3.0f, steps);
    EXPECT_EQ(steps, 4);
    for (index_t i = 0; i < 32; ++i)
        for (index_t j = 0; j < 256; ++j) ASSERT_EQ(y(i, j), 3.0f * x(i, j)) << i << ", " << j;
    // Another dtype and block: the same template.
    host_array<Array<std::int32_t, 16, 128>> n;
    std::iota(n.begin(), n.end(), -100);
    steps = 0;
    const auto [m, rep2] = scaled_copy<Array<std::int32_t, 16, 128>, 16>(n, -2, steps);
    EXPECT_EQ(steps, 1);
    for (std::size_t k = 0; k < n.size(); ++k) ASSERT_EQ(m.data()[k], -2 * n.data()[k]) << k;
    EXPECT_GT(rep.device_time, 0.0);
}

TEST(GenericCode, EmitPipelineInAFunctionTemplate) {
    host_array<Array<float, 64, 128>> x;
    std::iota(x.begin(), x.end(), 1.0f);
    int steps = 0;
    const host_array<Array<float, 64, 128>> y = inner_double<Array<float, 64, 128>, 16>(x, steps);
    EXPECT_EQ(steps, 4);
    for (std::size_t k = 0; k < x.size(); ++k) ASSERT_EQ(y.data()[k], 2.0f * x.data()[k]) << k;
}

namespace {
// ---- Class templates ---------------------------------------------------------------------------

// z = x + y over row blocks of 8: the call and its specs are member aliases of a class template
// (its lambda in the class template), with a verdict and the schedule as static members, and a
// member function template that adds an inner pipeline.
template <class A>
struct adder {
    using T = typename A::value_type;
    using Rows = BlockSpec<Block<8, A::shape[1]>, [](auto i) { return idx(i, 0); }>;
    using Call = pallas_call<Grid<A::shape[0] / 8>, In<Arg<A, Rows, "x">, Arg<A, Rows, "y">>, Out<Arg<A, Rows, "z">>>;
    static constexpr verdict checked = check_call<Call>();
    static_assert(checked.ok() && checked.complete());
    static_assert(Call::dma_count() == 3 * (A::shape[0] / 8));

    int steps = 0;
    auto operator()(const host_array<A>& x, const host_array<A>& y) {
        return Call{}(
            [this](auto a, auto b, auto c) {
                ++steps;
                store(c, load(a) + load(b));
            },
            x, y);
    }
    // z = x + y again, by an inner pipeline over halves of each 8-row block (specs in a member
    // function template of the class template).
    template <index_t Half>
    auto halves(const host_array<A>& x, const host_array<A>& y) {
        using Sub = BlockSpec<Block<Half, A::shape[1]>, [](index_t i) { return idx(i, 0); }>;
        using Whole = BlockSpec<Full, zero_map, any>;
        using K = pallas_call<Grid<>, In<Arg<A, Whole>, Arg<A, Whole>>, Out<Arg<A, Whole>>>;
        return K{}(
            [this](auto xh, auto yh, auto zh) {
                emit_pipeline(
                    [this](auto a, auto b, auto c) {
                        ++steps;
                        store(c, load(a) + load(b));
                    },
                    {A::shape[0] / Half}, in_specs<Sub, Sub>, out_specs<Sub>)(xh, yh, zh);
            },
            x, y);
    }
};
}  // namespace

TEST(GenericCode, CallsInClassTemplates) {
    using A = Array<float, 32, 128>;
    host_array<A> x, y;
    std::iota(x.begin(), x.end(), 0.0f);
    std::iota(y.begin(), y.end(), 10.0f);
    adder<A> add;
    const auto [z, rep] = add(x, y);
    EXPECT_EQ(add.steps, 4);
    for (std::size_t k = 0; k < x.size(); ++k) ASSERT_EQ(z.data()[k], x.data()[k] + y.data()[k]) << k;
    EXPECT_EQ(rep.operands.size(), 3u);
    EXPECT_EQ(rep.operands[0].name, "x");
    add.steps = 0;
    const auto [w, rep2] = add.halves<8>(x, y);
    EXPECT_EQ(add.steps, 4);
    for (std::size_t k = 0; k < x.size(); ++k) ASSERT_EQ(w.data()[k], x.data()[k] + y.data()[k]) << k;
}

namespace {
// ---- Alias templates ---------------------------------------------------------------------------
// The spellings that work on every supported compiler when a call family is an alias template
// used from generic code: the index map named outside the alias (a constexpr lambda, or a variable
// template when it depends on the alias's parameters), or the call made a member of a class
// template that the alias names.
using Y = Array<float, 64, 128>;
constexpr auto rows_map = [](auto i) { return idx(i, 0); };
template <index_t R>
using CopyRows = pallas_call<Grid<64 / R>, In<Arg<Y, BlockSpec<Block<R, 128>, rows_map>>>,
                             Out<Arg<Y, BlockSpec<Block<R, 128>, rows_map>>>>;
// Block i of the output reads block (i + Shift) mod n of the input: a map that depends on the
// alias's parameters.
template <index_t R, index_t Shift>
constexpr auto rotated_map = [](auto i) { return idx((i + Shift) % (64 / R), 0); };
template <index_t R, index_t Shift>
struct rotate_rows {
    using type = pallas_call<Grid<64 / R>, In<Arg<Y, BlockSpec<Block<R, 128>, rotated_map<R, Shift>>>>,
                             Out<Arg<Y, BlockSpec<Block<R, 128>, [](auto i) { return idx(i, 0); }>>>>;
};
template <index_t R, index_t Shift>
using RotateRows = typename rotate_rows<R, Shift>::type;

// Runs a call of the family from a function template: its template arguments are dependent here.
template <index_t R, index_t Shift>
host_array<Y> rotate(const host_array<Y>& x, int& steps) {
    static_assert(check_call<RotateRows<R, Shift>>().ok());
    static_assert(check_call<CopyRows<R>>().ok());
    auto [y, rep] = RotateRows<R, Shift>{}(
        [&steps](auto a, auto b) {
            ++steps;
            store(b, load(a));
        },
        x);
    auto [z, rep2] = CopyRows<R>{}(
        [&steps](auto a, auto b) {
            ++steps;
            store(b, load(a));
        },
        y);
    return z;
}
}  // namespace

TEST(GenericCode, AliasTemplatesUsedFromFunctionTemplates) {
    host_array<Y> x;
    std::iota(x.begin(), x.end(), 0.0f);
    int steps = 0;
    const host_array<Y> y = rotate<16, 1>(x, steps);
    EXPECT_EQ(steps, 8);  // 4 steps of each call
    for (index_t i = 0; i < 64; ++i)
        for (index_t j = 0; j < 128; ++j) ASSERT_EQ(y(i, j), x((i + 16) % 64, j)) << i << ", " << j;
}

namespace {
// ---- Value front ends in templates ---------------------------------------------------------------

// y = k * x for an element type T, the grid run as one inner pipeline (custom_buffered) with the
// input `buffers` deep: the dynamic_call's Operand types, its index maps and its body are all
// dependent on T.
template <class T>
std::vector<T> deep_scale(const std::vector<T>& x, index_t rows, index_t cols, int buffers, bool lookahead,
                          int& steps, run_stats& s) {
    using Call = dynamic_call<In<Operand<T, 2>>, Out<Operand<T, 2>>>;
    Call call;
    call.grid = {rows / 8};
    call.chip = tpu::v5e;
    call.custom_buffered = true;
    call.in[0] = {.shape = {rows, cols},
                  .block = {8, cols},
                  .index_map = [](index_t i) { return idx(i, 0); },
                  .buffer_count = buffers,
                  .lookahead = lookahead};
    call.out[0] = {
        .shape = {rows, cols}, .block = {8, cols}, .index_map = [](index_t i) { return idx(i, 0); }};
    auto [y, rep] = call(
        [&steps](auto a, auto b) {
            ++steps;
            store(b, load(a) * T{3});
        },
        x);
    s = rep.stats;
    return y.vector();
}

// z = x + y over the rows of A, by a dynamic_pipeline that is a member of a class template: its
// Operand types come from A, its block rows and depth are values set at run time, and the
// member function template's body runs it inside a static call over the whole arrays.
template <class A>
struct value_adder {
    using T = typename A::value_type;
    using Op = Operand<T, 2>;
    using Pipe = dynamic_pipeline<In<Op, Op>, Out<Op>>;
    using Whole = BlockSpec<Full, zero_map, any>;
    using Call = pallas_call<Grid<>, In<Arg<A, Whole>, Arg<A, Whole>>, Out<Arg<A, Whole>>, Chip<tpu::v5e>>;
    Pipe pipe;
    int steps = 0;
    value_adder(index_t block_rows, int buffers) {
        pipe.grid = {A::shape[0] / block_rows};
        constexpr auto rows = [](index_t i) { return idx(i, 0); };
        pipe.in[0] = {.block = {block_rows, A::shape[1]}, .index_map = rows, .buffer_count = buffers};
        pipe.in[1] = {.block = {block_rows, A::shape[1]}, .index_map = rows};
        pipe.out[0] = {.block = {block_rows, A::shape[1]}, .index_map = rows};
    }
    template <class U>
    auto operator()(const host_array<U>& x, const host_array<U>& y) {
        return Call{}(
            [this](auto xh, auto yh, auto zh) {
                emit_pipeline(
                    [this](auto a, auto b, auto c) {
                        ++steps;
                        store(c, load(a) + load(b));
                    },
                    pipe)(xh, yh, zh);
            },
            x, y);
    }
};
}  // namespace

TEST(GenericCode, DynamicCallCustomBufferedInAFunctionTemplate) {
    constexpr index_t rows = 64, cols = 128;
    std::vector<float> x(rows * cols);
    std::iota(x.begin(), x.end(), -50.0f);
    std::vector<std::int32_t> n(rows * cols);
    std::iota(n.begin(), n.end(), -4000);
    for (int b = 1; b <= 4; ++b)
        for (const bool look : {false, true}) {
            if (b == 1 && look) continue;  // Q1: lookahead needs two buffers
            int steps = 0;
            run_stats s{};
            const std::vector<float> y = deep_scale(x, rows, cols, b, look, steps, s);
            EXPECT_EQ(steps, rows / 8) << b << look;
            EXPECT_EQ(s.inner_steps, rows / 8) << b << look;
            EXPECT_EQ(s.inner_dmas, 2 * (rows / 8)) << b << look;  // a fetch and a write-back per step
            ASSERT_EQ(y.size(), x.size());
            for (std::size_t k = 0; k < x.size(); ++k) ASSERT_EQ(y[k], 3.0f * x[k]) << b << look << " " << k;
            steps = 0;
            const std::vector<std::int32_t> m = deep_scale(n, rows, cols, b, look, steps, s);
            EXPECT_EQ(steps, rows / 8) << b << look;
            for (std::size_t k = 0; k < n.size(); ++k) ASSERT_EQ(m[k], 3 * n[k]) << b << look << " " << k;
        }
}

TEST(GenericCode, DynamicPipelineInAClassTemplate) {
    using A = Array<float, 64, 128>;
    host_array<A> x, y;
    std::iota(x.begin(), x.end(), 0.0f);
    std::iota(y.begin(), y.end(), 100.0f);
    for (const index_t block_rows : {8, 16, 32})
        for (int b = 1; b <= 3; ++b) {
            value_adder<A> add(block_rows, b);
            const auto [z, rep] = add(x, y);
            EXPECT_EQ(add.steps, 64 / block_rows) << block_rows << " " << b;
            EXPECT_EQ(rep.stats.inner_steps, 64 / block_rows) << block_rows << " " << b;
            for (std::size_t k = 0; k < x.size(); ++k)
                ASSERT_EQ(z.data()[k], x.data()[k] + y.data()[k]) << block_rows << " " << b << " " << k;
        }
}

namespace {
// y = 2 x by a body's own async copies: the element type and the block rows are template
// parameters, so the dynamic_call's Operand types (its semaphore scratch among them), the copies'
// windows and the body are all dependent. Each step fetches its rows into a VMEM slot, waits,
// doubles them into another slot and writes them back, on DMA semaphore cells 0 (in) and 1 (out).
template <class T, index_t Rows>
std::vector<T> async_double(const std::vector<T>& x, index_t steps, int& runs, run_stats& s) {
    using Any = Operand<T, 2, any>;
    using Slots = Operand<T, 3>;
    using Sems = Operand<dma_semaphore, 1, semaphore>;
    dynamic_call<In<Any>, Out<Any>, ScratchShapes<Slots, Slots, Sems>> d;
    d.grid = {steps};
    d.chip = tpu::v5e;
    d.in[0].shape = {steps * Rows, 128};
    d.out[0].shape = d.in[0].shape;
    d.scratch[0] = {2, Rows, 128};
    d.scratch[1] = {2, Rows, 128};
    d.scratch[2] = {2};
    auto [y, rep] = d(
        [&runs](auto xh, auto yh, auto in, auto out, auto sems) {
            ++runs;
            const index_t i = program_id(0);
            auto rows = [i](auto r) { return r.at(ds(i * Rows, Rows), ds(0, 128)); };
            auto fetch = make_async_copy(rows(xh), in.at(i % 2), sems.at(0));
            fetch.start();
            fetch.wait();
            store(out.at(i % 2), load(in.at(i % 2)) * T{2});
            auto back = make_async_copy(out.at(i % 2), rows(yh), sems.at(1));
            back.start();
            back.wait();
        },
        x);
    s = rep.stats;
    return y.vector();
}
}  // namespace

TEST(GenericCode, AsyncCopiesOnSemaphoreScratchInAFunctionTemplate) {
    constexpr index_t steps = 6;
    std::vector<float> x(steps * 8 * 128);
    std::iota(x.begin(), x.end(), -300.0f);
    int runs = 0;
    run_stats s{};
    const std::vector<float> y = async_double<float, 8>(x, steps, runs, s);
    EXPECT_EQ(runs, steps);
    EXPECT_EQ(s.body_dmas, 2 * steps);  // a fetch and a write-back per step
    ASSERT_EQ(y.size(), x.size());
    for (std::size_t k = 0; k < x.size(); ++k) ASSERT_EQ(y[k], 2.0f * x[k]) << k;
    std::vector<std::int32_t> n(steps * 16 * 128);
    std::iota(n.begin(), n.end(), -5000);
    runs = 0;
    const std::vector<std::int32_t> m = async_double<std::int32_t, 16>(n, steps, runs, s);
    EXPECT_EQ(runs, steps);
    EXPECT_EQ(s.body_dma_bytes, 2 * steps * 16 * 128 * 4);
    for (std::size_t k = 0; k < n.size(); ++k) ASSERT_EQ(m[k], 2 * n[k]) << k;
}

namespace {
// A v5p with `Cores` TensorCores (1 to max_cores), as a user's own chip.
template <int Cores>
constexpr chip with_cores() {
    chip c = tpu::v5p;
    c.cores_per_chip = Cores;
    c.megacore = Cores > 1;
    return c;
}

// An element type and a core count as template parameters: the split (per_core tables), the
// run on data and the per-core report of a run-time configured call.
template <class T, int Cores>
void split_add_over_cores() {
    using Op = Operand<T, 2>;
    dynamic_call<In<Op, Op>, Out<Op>> d;
    d.chip = with_cores<Cores>();
    d.grid = {8};
    d.semantics = {parallel};
    d.in[0] = {.shape = {64, 128}, .block = {8, 128}, .index_map = [](index_t i) { return idx(i, 0); }};
    d.in[1] = d.in[0];
    d.out[0] = d.in[0];
    const plan_info info = d.info();
    ASSERT_EQ(info.cores, Cores);
    per_core<index_t> begin = each_core(index_t{8});
    for (int c = 0; c < Cores; ++c) begin[static_cast<std::size_t>(c)] = c * ((8 + Cores - 1) / Cores);
    for (int c = 0; c < Cores; ++c)
        EXPECT_EQ(info.core_begin[static_cast<std::size_t>(c)],
                  std::min<index_t>(8, begin[static_cast<std::size_t>(c)]))
            << Cores << " cores, core " << c;
    std::vector<T> x(64 * 128), y(64 * 128);
    for (std::size_t i = 0; i < x.size(); ++i) {
        x[i] = static_cast<T>(i % 100);
        y[i] = static_cast<T>(3);
    }
    auto [z, rep] = d([](auto a, auto b, auto o) { store(o, load(a) + load(b)); }, x, y);
    for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(z.vector()[i], x[i] + y[i]) << i;
    ASSERT_EQ(rep.cores, Cores);
    index_t steps = 0;
    for (int c = 0; c < Cores; ++c) steps += rep.core[static_cast<std::size_t>(c)].steps;
    EXPECT_EQ(steps, 8);
}
}  // namespace

TEST(GenericCode, CoreCountAsATemplateParameter) {
    split_add_over_cores<float, 1>();
    split_add_over_cores<float, 2>();
    split_add_over_cores<std::int32_t, 3>();
    split_add_over_cores<float, 4>();
}
