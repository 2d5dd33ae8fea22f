// pallas_call end to end: schedules event by event against Pallas's pipeline, and numerics
// against reference computations (acceptance cases A1, A2, A4, A5, A7, A8, A12 and the seeds).
#include <gtest/gtest.h>

#include <ptpu/ptpu.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <tuple>
#include <vector>

using namespace ptpu;

namespace {

// Renders events as the acceptance cases write them.
template <class Call>
std::string trace() {
    std::string s;
    for (const event& e : Call::events) {
        const auto b = Call::block_index(e.op, e.block_step)[0].start;
        auto item = [&](const char* k) {
            return std::string(k) + std::to_string(b) + "@" + std::to_string(e.slot);
        };
        switch (e.kind) {
            case event_kind::step:
                s += "| s" + std::to_string(e.step) + ":";
                break;
            case event_kind::fetch:
                s += " in" + item("").substr(0);
                break;
            case event_kind::wait_in:
                s += " wait" + item("");
                break;
            case event_kind::body:
                s += " BODY";
                break;
            case event_kind::write:
                s += " out" + item("");
                break;
            case event_kind::write_sync:
                s += " sout" + item("");
                break;
            case event_kind::wait_out:
                s += " wout" + item("");
                break;
            case event_kind::sync_in:
                s += " sync_in" + item("");
                break;
            case event_kind::sync_out:
                s += " sync_out" + item("");
                break;
            case event_kind::restore:
                s += " restore" + item("");
                break;
        }
    }
    return s;
}

template <class A>
host_array<A> iota_array(typename A::value_type scale = 1) {
    host_array<A> a;
    for (std::size_t i = 0; i < a.size(); ++i) a.vector()[i] = static_cast<typename A::value_type>(i) * scale;
    return a;
}

}  // namespace

// ---- A1: double-buffered copy, exact event order -------------------------------------------

using A1X = Array<float, 32, 128>;
using A1Blk = BlockSpec<Block<8, 128>, [](auto i) { return idx(i, 0); }>;
using A1 = pallas_call<Grid<4>, In<Arg<A1X, A1Blk>>, Out<Arg<A1X, A1Blk>>>;

TEST(PallasCallA1, DoubleBufferedCopyEventOrder) {
    // P: in0@0 | s0: in1@1, wait0@0, BODY, out0@0 | s1: in2@0, wait1@1, BODY, out1@1, wout0@0 |
    // s2: in3@1, wait2@0, BODY, out2@0, wout1@1 | s3: wait3@1, BODY, out3@1, wout2@0 | E: wout3@1
    EXPECT_EQ(trace<A1>(),
              " in0@0| s0: in1@1 wait0@0 BODY out0@0| s1: in2@0 wait1@1 BODY out1@1 wout0@0"
              "| s2: in3@1 wait2@0 BODY out2@0 wout1@1| s3: wait3@1 BODY out3@1 wout2@0 wout3@1");
    static_assert(A1::dma_count() == 8 && A1::dma_count(0) == 4 && A1::dma_count(1) == 4);
    static_assert(A1::count(event_kind::wait_in) == 4 && A1::count(event_kind::wait_out, 1) == 4);
    static_assert(A1::info.ops[0].buffers == 2 && A1::info.vmem_bytes == 4 * 8 * 128 * 4);
}

TEST(PallasCallA1, CopiesRealData) {
    const auto x = iota_array<A1X>();
    auto [y, rep] = A1{}([](auto in, auto out) { store(out, load(in)); }, x);
    EXPECT_EQ(y.vector(), x.vector());
    EXPECT_EQ(rep.stats.steps, 4);
    EXPECT_EQ(rep.stats.dma_in, 4);
    EXPECT_EQ(rep.stats.dma_out, 4);
    EXPECT_EQ(rep.stats.bytes_in, 32 * 128 * 4);
    EXPECT_EQ(rep.stats.bytes_out, 32 * 128 * 4);
}

// ---- A2: matmul with accumulation -----------------------------------------------------------

constexpr auto a2_x_map = [](auto i, auto, auto k) { return idx(i, k); };
constexpr auto a2_y_map = [](auto, auto j, auto k) { return idx(k, j); };
constexpr auto a2_o_map = [](auto i, auto j, auto) { return idx(i, j); };
template <index_t N, index_t B, int BC>
using A2 = pallas_call<Grid<N / B, N / B, N / B>,
                       In<Arg<Array<float, N, N>, BlockSpec<Block<B, B>, a2_x_map, Buffered<BC>>>,
                          Arg<Array<float, N, N>, BlockSpec<Block<B, B>, a2_y_map, Buffered<BC>>>>,
                       Out<Arg<Array<float, N, N>, BlockSpec<Block<B, B>, a2_o_map>>>>;

TEST(PallasCallA2, FetchAndWriteCountsAndSlots) {
    using K = A2<256, 128, 2>;
    static_assert(K::dma_count(0) == 8 && K::dma_count(1) == 8 && K::dma_count(2) == 4);
    std::vector<std::uint32_t> write_steps, write_slots, wait_steps;
    for (const event& e : K::events) {
        if (e.kind == event_kind::write) {
            write_steps.push_back(e.step);
            write_slots.push_back(e.slot);
        }
        if (e.kind == event_kind::wait_out) wait_steps.push_back(e.step);
    }
    EXPECT_EQ(write_steps, (std::vector<std::uint32_t>{1, 3, 5, 7}));
    EXPECT_EQ(write_slots, (std::vector<std::uint32_t>{0, 1, 0, 1}));  // slot 0 for steps 0-1, …
    EXPECT_EQ(wait_steps, (std::vector<std::uint32_t>{2, 4, 6, 7}));   // next step; last: epilogue
    // Grid (4,4,4): 64 fetches of x and of y, 16 copy-outs of o. (A2's bc = 4 variant is an
    // emit_pipeline case: pallas_call allows only 1 or 2 buffers, check 19.)
    static_assert(A2<512, 128, 2>::dma_count(0) == 64 && A2<512, 128, 2>::dma_count(1) == 64 &&
                  A2<512, 128, 2>::dma_count(2) == 16);
}

TEST(PallasCallA2, MatmulIsExact) {
    using K = A2<512, 128, 2>;
    host_array<Array<float, 512, 512>> x, y;
    for (index_t i = 0; i < 512; ++i)
        for (index_t j = 0; j < 512; ++j) {
            x(i, j) = static_cast<float>((i * 3 + j) % 7) - 3.0f;
            y(i, j) = static_cast<float>((i + 5 * j) % 5) - 2.0f;
        }
    auto [z, rep] = K{}(
        [](auto xr, auto yr, auto o) {
            if (program_id(2) == 0) store(o, zeros_like(o));
            store(o, load(o) + dot(load(xr), load(yr)));  // small integers: exact in bf16
        },
        x, y);
    for (index_t i = 0; i < 512; i += 37)
        for (index_t j = 0; j < 512; j += 11) {
            double ref = 0;
            for (index_t k = 0; k < 512; ++k) ref += double(x(i, k)) * double(y(k, j));
            ASSERT_EQ(z(i, j), static_cast<float>(ref)) << i << "," << j;
        }
    EXPECT_EQ(rep.stats.op_dmas[0], 64);
    EXPECT_EQ(rep.stats.op_dmas[2], 16);
}

TEST(PlannerA2, BufferCountFourIsRejectedByCheck19) {
    using K = A2<512, 128, 2>;
    call_desc d = K::desc;
    d.ops[0].buffer_count = 4;
    d.ops[1].buffer_count = 4;
    // bc = 4 is rejected by pallas_call's check 19, as Pallas does.
    EXPECT_EQ(validate(d).code, rule::r19_buffers);
}

// ---- A5: correct reduction over the last axis ------------------------------------------------

using A5 = pallas_call<
    Grid<4, 4, 8>,
    In<Arg<Array<float, 8, 1024, 1024>,
           BlockSpec<Block<squeezed, 256, 256>, [](auto i, auto j, auto k) { return idx(k, i, j); }>>>,
    Out<Arg<Array<float, 1024, 1024>,
            BlockSpec<Block<256, 256>, [](auto i, auto j, auto) { return idx(i, j); }>>>>;

TEST(PallasCallA5, AccumulateOverTrailingAxisGivesEight) {
    host_array<Array<float, 8, 1024, 1024>> x;
    std::fill(x.vector().begin(), x.vector().end(), 1.0f);
    auto [o, rep] = A5{}(
        [](auto xr, auto orf) {
            when(program_id(2) == 0, [&] { store(orf, zeros_like(orf)); });
            store(orf, load(orf) + load(xr));
        },
        x);
    for (float v : o.vector()) ASSERT_EQ(v, 8.0f);
    EXPECT_EQ(rep.stats.op_dmas[1], 16);  // one write per output block
    EXPECT_EQ(rep.stats.op_dmas[0], 128);
}

// ---- A7: single-buffered output accumulation --------------------------------------------------

using A7 = pallas_call<
    Grid<2, 3>,
    Out<Arg<Array<float, 2, 8, 128>,
            BlockSpec<Block<1, 8, 128>, [](auto b, auto) { return idx(b, 0, 0); }, Buffered<1>>>>>;

TEST(PallasCallA7, SingleBufferedOutputAccumulates) {
    std::vector<std::uint32_t> sync_out_steps;
    for (const event& e : A7::events) {
        EXPECT_NE(e.kind, event_kind::write);  // bc = 1: never an async write (S29)
        EXPECT_NE(e.kind, event_kind::wait_out);
        if (e.kind == event_kind::write_sync) sync_out_steps.push_back(e.step);
    }
    EXPECT_EQ(sync_out_steps, (std::vector<std::uint32_t>{2, 5}));
    auto [o, rep] = A7{}([](auto orf) {
        if (program_id(1) == 0) store(orf, zeros_like(orf));
        store(orf, load(orf) + 1.0f);
    });
    for (float v : o.vector()) ASSERT_EQ(v, 3.0f);
    EXPECT_EQ(rep.stats.dma_out, 2);
}

// ---- A8: trivial windowing elides double buffering --------------------------------------------

using A8 = pallas_call<
    Grid<4, 1>,
    In<Arg<Array<float, 8, 512>, BlockSpec<Block<8, 128>, [](auto i, auto) { return idx(0, i); }>>,
       Arg<Array<float, 8, 128>, BlockSpec<Block<8, 128>, [](auto, auto j) { return idx(0, j); }>>>,
    Out<Arg<Array<float, 8, 512>, BlockSpec<Block<8, 128>, [](auto i, auto) { return idx(0, i); }>>>>;

TEST(PallasCallA8, TrivialInputIsSyncCopiedOnceBeforeThePrologue) {
    static_assert(A8::info.ops[1].trivial && A8::info.ops[1].buffers == 1);
    static_assert(!A8::info.ops[0].trivial && A8::info.ops[0].buffers == 2);
    static_assert(A8::events[0].kind == event_kind::sync_in && A8::events[0].op == 1);
    static_assert(A8::dma_count(1) == 1);
    // VMEM: x and out double-buffered, y single (S48's footprint formula).
    static_assert(A8::info.vmem_bytes == 8 * 128 * 4 * (2 + 1 + 2));
    const auto x = iota_array<Array<float, 8, 512>>();
    const auto y = iota_array<Array<float, 8, 128>>(-1.0f);
    auto [o, rep] = A8{}([](auto xr, auto yr, auto orf) { store(orf, load(xr) + load(yr)); }, x, y);
    for (index_t r = 0; r < 8; ++r)
        for (index_t c = 0; c < 512; ++c) ASSERT_EQ(o(r, c), x(r, c) + y(r, c % 128));
    EXPECT_EQ(rep.stats.op_dmas[1], 1);
}

// ---- A12: megacore split (no random permutation) ----------------------------------------------

template <chip C>
using A12 = pallas_call<
    Grid<4, 4>, Semantics<parallel, arbitrary>, Chip<C>,
    Out<Arg<Array<std::int32_t, 4, 4, 8, 128>,
            BlockSpec<Block<squeezed, squeezed, 8, 128>, [](auto i, auto j) { return idx(i, j, 0, 0); }>>>,
    Scratch<smem, std::int32_t, 1>>;

template <class K>
host_array<Array<std::int32_t, 4, 4, 8, 128>> run_counter() {
    auto [o, rep] = K{}([](auto orf, auto counter) {
        // The counter is per core (S6) and SMEM starts as garbage (S57): each core zeroes it on
        // its own first step (rows 0 and 2 with two cores).
        if (program_id(1) == 0 && program_id(0) % (4 / K::info.cores) == 0) counter(0) = 0;
        store(orf, full_like(orf, counter(0)));
        counter(0) = counter(0) + 1;
    });
    (void)rep;
    return o;
}

TEST(PallasCallA12, MegacoreSplitsParallelRows) {
    static_assert(A12<tpu::v5p>::info.cores == 2 && A12<tpu::v5e>::info.cores == 1);
    static_assert(A12<tpu::v5p>::info.core_begin[1] == 8 && A12<tpu::v5p>::info.core_end[0] == 8);
    const auto two = run_counter<A12<tpu::v5p>>();
    const auto one = run_counter<A12<tpu::v5e>>();
    for (index_t i = 0; i < 4; ++i)
        for (index_t j = 0; j < 4; ++j) {
            EXPECT_EQ(two(i, j, 3, 77), (i % 2) * 4 + j) << i << "," << j;
            EXPECT_EQ(one(i, j, 0, 0), i * 4 + j);
        }
}

// ---- A4: block gather through scalar-prefetched indices (a run-time plan) -------------------

using A4X = Array<std::int32_t, 1024, 128>;
using A4 =
    pallas_call<Grid<10>, ScalarPrefetch<Array<std::int32_t, 10>>,
                In<Arg<A4X, BlockSpec<Block<128, 128>, [](auto i, const auto& s) { return idx(s[i], 0); }>>>,
                Out<Arg<Array<std::int32_t, 1280, 128>,
                        BlockSpec<Block<128, 128>, [](auto i, const auto&) { return idx(i, 0); }>>>>;

TEST(PallasCallA4, BlockGatherFetchesOncePerRun) {
    static_assert(A4::dynamic);
    const auto x = iota_array<A4X>();
    const std::vector<std::vector<std::int32_t>> seqs = {{2, 2, 2, 2, 2, 2, 2, 2, 2, 2},
                                                         {0, 0, 2, 3, 3, 3, 1, 7, 6, 6},
                                                         {3, 3, 3, 3, 3, 3, 3, 7, 6, 6},
                                                         {0, 1, 2, 3, 4, 5, 0, 1, 2, 3}};
    for (const auto& seq : seqs) {
        auto [out, rep] = A4{}([](auto, auto in, auto o) { store(o, load(in)); }, seq, x);
        index_t runs = 0;
        for (std::size_t i = 0; i < seq.size(); ++i) {
            runs += i == 0 || seq[i] != seq[i - 1];
            for (index_t r = 0; r < 128; ++r)
                for (index_t c = 0; c < 128; c += 17)
                    ASSERT_EQ(out(static_cast<index_t>(i) * 128 + r, c), x(seq[i] * 128 + r, c));
        }
        EXPECT_EQ(rep.stats.op_dmas[0], runs);
        EXPECT_EQ(rep.stats.op_dmas[1], 10);
    }
}

TEST(PallasCallA4, OutOfBoundsPrefetchedIndexIsS34) {
    const auto x = iota_array<A4X>();
    const std::vector<std::int32_t> bad = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};  // block 8 of 8 blocks
    try {
        (void)A4{}([](auto, auto in, auto o) { store(o, load(in)); }, bad, x);
        FAIL() << "expected ptpu::error";
    } catch (const ptpu::error& e) {
        EXPECT_EQ(e.rule(), "S34");
        EXPECT_NE(std::string(e.what()).find("block (8, 0)"), std::string::npos) << e.what();
    }
}

// A megacore output race through a run-time index map: two cores write block s[0].
using Race =
    pallas_call<Grid<2>, Semantics<parallel>, Chip<tpu::v5p>, ScalarPrefetch<Array<std::int32_t, 2>>,
                Out<Arg<Array<float, 16, 128>,
                        BlockSpec<Block<8, 128>, [](auto i, const auto& s) { return idx(s[i], 0); }>>>>;

TEST(PallasCallMegacore, DynamicOutputRaceIsMC1) {
    const std::vector<std::int32_t> same = {1, 1};
    try {
        (void)Race{}([](auto, auto o) { store(o, full_like(o, 1.0f)); }, same);
        FAIL() << "expected ptpu::error";
    } catch (const ptpu::error& e) {
        EXPECT_EQ(e.rule(), "MC1");
        // The map uses its parallel index; the race comes from the prefetched values, and the
        // message says so.
        const std::string m = e.what();
        EXPECT_NE(m.find("reads scalar-prefetch values, so the prefetched values may have sent"),
                  std::string::npos)
            << m;
    }
    const std::vector<std::int32_t> distinct = {1, 0};
    auto [o, rep] =
        Race{}([](auto, auto orf) { store(orf, full_like(orf, program_id(0) + 1)); }, distinct);
    EXPECT_EQ(o(0, 0), 2.0f);
    EXPECT_EQ(o(8, 5), 1.0f);
    EXPECT_EQ(rep.stats.core_steps[0], 1);
    EXPECT_EQ(rep.stats.core_steps[1], 1);
}

// A static index map planned at run time (too many steps for a compile-time plan) that ignores
// its parallel dim: the race is the map's, and the message blames the map, not prefetched data.
using BigRace =
    pallas_call<Grid<2 * PTPU_MAX_STATIC_WORK>, Semantics<parallel>, Chip<tpu::v5p>,
                Out<Arg<Array<float, 8, 128>, BlockSpec<Block<8, 128>, [](auto) { return idx(0, 0); }>>>>;

// Past the compile-time planning bound the grid walk waits for the run, but the core split
// needs none: info.cores and each core's steps are constants all the same.
using BigSplit = pallas_call<Grid<2 * PTPU_MAX_STATIC_WORK>, Semantics<parallel>, Chip<tpu::v5p>,
                             Out<Arg<Array<float, 2 * PTPU_MAX_STATIC_WORK * 8, 128>,
                                     BlockSpec<Block<8, 128>, [](auto i) { return idx(i, 0); }>>>>;
static_assert(!BigSplit::static_plan && BigSplit::info.cores == 2);
static_assert(BigSplit::info.core_begin[1] == PTPU_MAX_STATIC_WORK &&
              BigSplit::info.core_end[1] == 2 * PTPU_MAX_STATIC_WORK);

TEST(PallasCallMegacore, StaticMapRacePlannedAtRunTimeBlamesTheMap) {
    static_assert(!BigRace::static_plan && !BigRace::dynamic);
    try {
        (void)BigRace{}.predict([](auto) {});
        FAIL() << "expected ptpu::error";
    } catch (const ptpu::error& e) {
        EXPECT_EQ(e.rule(), "MC1");
        const std::string m = e.what();
        EXPECT_NE(m.find("(e.g. it ignores a parallel dimension split across the cores)"), std::string::npos)
            << m;
        EXPECT_EQ(m.find("scalar-prefetch"), std::string::npos) << m;
    }
}

// ---- bool blocks: stored as int32 in VMEM (memref_dtype) ----------------------------------------

// A (256, 1024) bool block takes 4 bytes per element in each of its two VMEM slots (check 24
// counts it so; ptpu/compile_fail/pallas_call_checks.cpp ko 37 is the overflow it causes).
using BoolX = Array<bool, 1024, 1024>;
using BoolCopy =
    pallas_call<Grid<4>, In<Arg<BoolX, BlockSpec<Block<256, 1024>, [](auto i) { return idx(i, 0); }>>>>;
static_assert(BoolCopy::info.vmem_bytes == 2 * 256 * 1024 * 4);
static_assert(BoolCopy::info.ops[0].slot_bytes == 256 * 1024 * 4);
static_assert(BoolCopy::info.ops[0].block_bytes == 256 * 1024);  // the HBM copy: 1 byte each
// VMEM scratch of bool counts alike: (8, 128) bools are 4 KiB.
using BoolScratch =
    pallas_call<Grid<4>, In<Arg<BoolX, BlockSpec<Block<256, 1024>, [](auto i) { return idx(i, 0); }>>>,
                Scratch<vmem, bool, 8, 128>>;
static_assert(BoolScratch::info.vmem_bytes == BoolCopy::info.vmem_bytes + 8 * 128 * 4);
// Check 16 with bool's memref width (32 bits): a rank-1 bool block of 128 is fine (ko 38: 64 is
// not), where 8-bit types need 512.
using BoolRank1 =
    pallas_call<Grid<8>, In<Arg<Array<bool, 1024>, BlockSpec<Block<128>, [](auto i) { return idx(i); }>>>>;
static_assert(BoolRank1::valid && BoolRank1::info.ops[0].slot_bytes == 128 * 4);

TEST(PallasCallBool, BlocksCountFourBytesPerElementInVmem) {
    // The same facts, read at run time from the report of a call planned at compile time.
    EXPECT_EQ(BoolCopy::info.vmem_bytes, 2 * 256 * 1024 * 4);
    const report rep = BoolCopy{}.predict([](auto) {});
    EXPECT_EQ(rep.core[0].vmem_high_water, 2 * 256 * 1024 * 4);
}

// ---- into(): outputs in memory the caller owns ----------------------------------------------

TEST(PallasCallInto, WritesIntoAVectorOrASpan) {
    const auto x = iota_array<A1X>();
    std::vector<float> out(32 * 128, -1.0f);
    (void)A1{}.into(
        std::tie(out), [](auto a, auto b) { store(b, load(a) * 2.0f); }, x);
    for (std::size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], 2.0f * static_cast<float>(i));
    std::vector<float> big(2 * 32 * 128, -1.0f);
    (void)A1{}.into(
        std::tuple{std::span<float>(big).subspan(32 * 128)}, [](auto a, auto b) { store(b, load(a) + 1.0f); },
        x);
    EXPECT_EQ(big[32 * 128 - 1], -1.0f);  // before the span: untouched
    for (std::size_t i = 0; i < 32 * 128; ++i) ASSERT_EQ(big[32 * 128 + i], static_cast<float>(i) + 1.0f);
    // The wrong number of elements is ARG1, naming the output, before anything runs.
    std::vector<float> small(32 * 128 - 1, -1.0f);
    try {
        (void)A1{}.into(
            std::tie(small), [](auto a, auto b) { store(b, load(a)); }, x);
        FAIL() << "expected ptpu::error";
    } catch (const ptpu::error& e) {
        EXPECT_EQ(e.rule(), "ARG1");
        EXPECT_NE(std::string(e.what()).find("output 0"), std::string::npos) << e.what();
    }
    for (float v : small) ASSERT_EQ(v, -1.0f);
}

// ---- Seeds ------------------------------------------------------------------------------------

// An ANY input sliced into a VMEM scratch with sync_copy.
using AnySlice =
    pallas_call<Grid<4>, In<Arg<Array<float, 32, 128>, BlockSpec<Full, zero_map, any>>>,
                Out<Arg<Array<float, 32, 128>, BlockSpec<Block<8, 128>, [](auto i) { return idx(i, 0); }>>>,
                Scratch<vmem, float, 8, 128>>;

TEST(PallasCallSeeds, AnyInputSlicedIntoScratchWithSyncCopy) {
    static_assert(AnySlice::dma_count(0) == 0);  // no window: the pipeline copies nothing (S47)
    const auto x = iota_array<Array<float, 32, 128>>();
    auto [o, rep] = AnySlice{}(
        [](auto xr, auto orf, auto scratch) {
            sync_copy(xr.at(ds(program_id(0) * 8, 8), ds(0, 128)), scratch);
            store(orf, load(scratch) * 2.0f);
        },
        x);
    for (std::size_t i = 0; i < o.size(); ++i) ASSERT_EQ(o.vector()[i], 2.0f * x.vector()[i]);
    EXPECT_EQ(rep.stats.body_dmas, 4);
    EXPECT_EQ(rep.stats.body_dma_bytes, 32 * 128 * 4);
    EXPECT_EQ(rep.stats.op_dmas[0], 0);
}

TEST(PallasCallSeeds, SyncCopyShapeMismatchIsDMA1) {
    const auto x = iota_array<Array<float, 32, 128>>();
    try {
        (void)AnySlice{}(
            [](auto xr, auto, auto scratch) { sync_copy(xr.at(ds(0, 16), ds(0, 128)), scratch); }, x);
        FAIL();
    } catch (const ptpu::error& e) {
        EXPECT_EQ(e.rule(), "DMA1");
    }
}

// Matrix add over Grid<2> with parallel on a megacore chip: one step per core.
using MegaAdd = pallas_call<
    Grid<2>, Semantics<parallel>, Chip<tpu::v4>,
    In<Arg<Array<float, 512, 512>, BlockSpec<Block<256, 512>, [](auto i) { return idx(i, 0); }>>,
       Arg<Array<float, 512, 512>, BlockSpec<Block<256, 512>, [](auto i) { return idx(i, 0); }>>>,
    Out<Arg<Array<float, 512, 512>, BlockSpec<Block<256, 512>, [](auto i) { return idx(i, 0); }>>>>;

TEST(PallasCallSeeds, MegacoreMatrixAdd) {
    static_assert(MegaAdd::info.cores == 2 && MegaAdd::dma_count() == 6);
    const auto x = iota_array<Array<float, 512, 512>>();
    const auto y = iota_array<Array<float, 512, 512>>(0.5f);
    auto [z, rep] = MegaAdd{}([](auto a, auto b, auto c) { store(c, load(a) + load(b)); }, x, y);
    for (std::size_t i = 0; i < z.size(); i += 7) ASSERT_EQ(z.vector()[i], x.vector()[i] + y.vector()[i]);
    EXPECT_EQ(rep.stats.core_steps[0], 1);
    EXPECT_EQ(rep.stats.core_steps[1], 1);
}

// Program ids are global under megacore (S15) and check 22 guards the axis.
TEST(PallasCallSeeds, ProgramIdAxisOutOfRangeIs22) {
    try {
        (void)MegaAdd{}([](auto, auto, auto) { (void)program_id(1); }, host_array<Array<float, 512, 512>>{},
                        host_array<Array<float, 512, 512>>{});
        FAIL();
    } catch (const ptpu::error& e) {
        EXPECT_EQ(e.rule(), "22");
    }
    EXPECT_THROW((void)program_id(0), ptpu::error);  // outside a body: K1
}

// Edge blocks: a (20, 200) array in (8, 128) blocks: the last blocks are partial (S34).
using Edge = pallas_call<
    Grid<3, 2>,
    In<Arg<Array<float, 20, 200>, BlockSpec<Block<8, 128>, [](auto i, auto j) { return idx(i, j); }>>>,
    Out<Arg<Array<float, 20, 200>, BlockSpec<Block<8, 128>, [](auto i, auto j) { return idx(i, j); }>>>>;

TEST(PallasCallEdges, PartialEdgeBlocksCopyOnlyTheInBoundsPart) {
    const auto x = iota_array<Array<float, 20, 200>>();
    auto [y, rep] = Edge{}([](auto a, auto b) { store(b, load(a) + 1.0f); }, x);
    for (std::size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y.vector()[i], x.vector()[i] + 1.0f);
    EXPECT_EQ(rep.stats.bytes_in, 20 * 200 * 4);
    EXPECT_EQ(rep.stats.bytes_out, 20 * 200 * 4);
}

// Input/output aliasing (S50): the output starts as the input; untouched blocks keep it.
using Aliased =
    pallas_call<Grid<2>, Alias<0, 0>,
                In<Arg<Array<float, 32, 128>, BlockSpec<Block<8, 128>, [](auto i) { return idx(i, 0); }>>>,
                Out<Arg<Array<float, 32, 128>, BlockSpec<Block<8, 128>, [](auto i) { return idx(i, 0); }>>>>;

TEST(PallasCallSeeds, AliasedOutputKeepsUnwrittenBlocks) {
    const auto x = iota_array<Array<float, 32, 128>>();
    auto [y, rep] = Aliased{}([](auto a, auto b) { store(b, -load(a)); }, x);
    for (index_t r = 0; r < 32; ++r)
        for (index_t c = 0; c < 128; ++c) ASSERT_EQ(y(r, c), r < 16 ? -x(r, c) : x(r, c));
}

// Element block dims (S8): overlapping windows with a halo; rows outside the array are padding
// (the window keeps what it held: garbage, S34), rows inside are exact.
constexpr auto halo_map = [](auto i) { return idx(i * 8, 0); };
using Halo =
    pallas_call<Grid<4>,
                In<Arg<Array<float, 32, 128>, BlockSpec<Block<element{16, 4, 4}, element{128}>, halo_map>>>,
                Out<Arg<Array<float, 32, 128>, BlockSpec<Block<8, 128>, [](auto i) { return idx(i, 0); }>>>>;

TEST(PallasCallElement, HaloWindowsSeeTheirNeighbours) {
    const auto x = iota_array<Array<float, 32, 128>>();
    // out row r of block i = x[r-1] + x[r] + x[r+1] where in bounds (window row w = r - 8i + 4).
    auto [y, rep] = Halo{}(
        [](auto win, auto out) {
            // Array row of each output element; rows outside the array are masked out.
            const auto row = iota<std::int32_t>(c<8>, c<128>, 0) + static_cast<std::int32_t>(8 * program_id(0));
            auto s = load(win, ds(4, c<8>), ds(0, c<128>));
            s = s + where(row > 0, load(win, ds(3, c<8>), ds(0, c<128>)), 0.0f);
            s = s + where(row < 31, load(win, ds(5, c<8>), ds(0, c<128>)), 0.0f);
            store(out, s);
        },
        x);
    for (index_t r = 0; r < 32; ++r)
        for (index_t c = 0; c < 128; c += 13) {
            float s = x(r, c);
            if (r > 0) s += x(r - 1, c);
            if (r < 31) s += x(r + 1, c);
            ASSERT_EQ(y(r, c), s) << r << "," << c;
        }
    // Edge windows move only their in-bounds rows: 12 + 16 + 16 + 12 rows of 128 floats.
    EXPECT_EQ(rep.stats.op_bytes[0], (12 + 16 + 16 + 12) * 128 * 4);
}

// revisit_any with Buffered<1> (S40): a non-consecutive revisit restores the block from HBM first,
// so accumulating into it works (without revisit_any this is the compile error S39).
using Revisit =
    pallas_call<Grid<6>,
                Out<Arg<Array<float, 16, 128>, BlockSpec<Block<8, 128>, [](auto i) { return idx(i % 2, 0); },
                                                         Buffered<1>, revisit_any>>>>;

TEST(PallasCallRevisit, RevisitAnyRestoresTheBlock) {
    std::vector<std::uint32_t> restores;
    for (const event& e : Revisit::events)
        if (e.kind == event_kind::restore) restores.push_back(e.step);
    EXPECT_EQ(restores, (std::vector<std::uint32_t>{0, 1, 2, 3, 4, 5}));
    auto [o, rep] = Revisit{}([](auto out) { store(out, load(out) + 1.0f); });  // HBM outputs start at 0
    for (float v : o.vector()) ASSERT_EQ(v, 3.0f);                  // each block visited 3 times
    EXPECT_EQ(rep.stats.dma_in, 6);
    EXPECT_EQ(rep.stats.dma_out, 6);
}
