// Async copies and semaphores in kernel bodies (S58–S61, checks 35–39): a hand-written
// double-buffered kernel equals the pallas_call pipeline it spells out (result and predicted
// time), copies land at their wait, races are reported, and deadlocks and leaks are errors.
#include <gtest/gtest.h>

#include <ptpu/ptpu.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <mutex>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace ptpu;

namespace {

using X = Array<float, 1024, 512>;
using Blk = BlockSpec<Block<128, 512>, [](auto i) { return idx(i, 0); }>;
using AnyX = BlockSpec<Full, zero_map, any>;
using Piped = pallas_call<Grid<8>, In<Arg<X, Blk>>, Out<Arg<X, Blk>>, Chip<tpu::v5e>>;
using Buf = Scratch<vmem, float, 2, 128, 512>;
using Sems = Scratch<semaphore, dma_semaphore, 2>;
using Hand = pallas_call<Grid<8>, In<Arg<X, AnyX>>, Out<Arg<X, AnyX>>, Buf, Buf, Sems, Sems, Chip<tpu::v5e>>;

// The pipeline of Piped written by hand (S23): fetch the next block while this one computes,
// write each block back asynchronously and wait for it one step later.
struct hand_pipeline {
    template <class XR, class OR, class XB, class OB, class IS, class OS>
    void operator()(XR x, OR o, XB xbuf, OB obuf, IS isem, OS osem) const {
        const index_t i = program_id(0), n = num_programs(0);
        auto in = [&](index_t j) {
            return make_async_copy(x.at(ds(j * 128, 128), ds(0, 512)), xbuf.at(j % 2), isem.at(j % 2));
        };
        auto out = [&](index_t j) {
            return make_async_copy(obuf.at(j % 2), o.at(ds(j * 128, 128), ds(0, 512)), osem.at(j % 2));
        };
        if (i == 0) in(0).start();
        if (i + 1 < n) in(i + 1).start();
        in(i).wait();
        store(obuf.at(i % 2), load(xbuf.at(i % 2)) * 2.0f + 1.0f);
        out(i).start();
        if (i > 0) out(i - 1).wait();
        if (i == n - 1) out(i).wait();
    }
};

host_array<X> ramp() {
    host_array<X> x;
    std::iota(x.begin(), x.end(), 0.0f);
    return x;
}

}  // namespace

TEST(AsyncCopy, HandWrittenPipelineEqualsPallasCall) {
    const host_array<X> x = ramp();
    auto [yp, rp] = Piped{}([](auto a, auto b) { store(b, load(a) * 2.0f + 1.0f); }, x);
    auto [yh, rh] = Hand{}(hand_pipeline{}, x);
    for (std::size_t k = 0; k < x.size(); ++k) ASSERT_EQ(yh.vector()[k], x.vector()[k] * 2.0f + 1.0f) << k;
    EXPECT_TRUE(std::ranges::equal(yp, yh));
    EXPECT_EQ(rh.stats.body_dmas, 16);
    EXPECT_EQ(rh.stats.sem_waits, 16);
    EXPECT_EQ(rp.device_time, rh.device_time);
    EXPECT_GT(rh.device_time, 0.0);
}

namespace {

// One 8x128 block through VMEM: the helpers of the smaller cases below.
using Row = Array<float, 16, 128>;
using AnyRow = BlockSpec<Full, zero_map, any>;
using Tile = Scratch<vmem, float, 8, 128>;
using DmaSem = Scratch<semaphore, dma_semaphore, 2>;
using RegSem = Scratch<semaphore, regular_semaphore, 1>;
using Single = pallas_call<Grid<2>, In<Arg<Row, AnyRow>>, Out<Arg<Row, AnyRow>>, Tile, DmaSem, RegSem,
                           Chip<tpu::v5e>>;
// v5p: two TensorCores, one grid step each.
using Pair = pallas_call<Grid<2>, In<Arg<Row, AnyRow>>, Out<Arg<Row, AnyRow>>, Tile, DmaSem, RegSem,
                         Semantics<parallel>, Chip<tpu::v5p>>;

host_array<Row> rows() {
    host_array<Row> x;
    std::iota(x.begin(), x.end(), 1.0f);
    return x;
}

template <class F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const error& e) {
        return e.what();
    }
    return "no error";
}

}  // namespace

// S60 across cores: core 0 computes rows 0-7 into HBM and signals core 1's semaphore; core 1
// waits for it, then reads what core 0 wrote (and answers, so core 0 waits for core 1 too).
TEST(AsyncCopy, CrossCoreHandshakeOnV5p) {
    const host_array<Row> x = rows();
    auto body = [](auto x_any, auto o_any, auto buf, auto dsem, auto sem) {
        const index_t i = program_id(0);
        if (i == 0) {
            auto in = async_copy(x_any.at(ds(0, 8), ds(0, 128)), buf, dsem.at(0));
            in.wait();
            store(buf, load(buf) * 2.0f);
            auto out = async_copy(buf, o_any.at(ds(0, 8), ds(0, 128)), dsem.at(1));
            out.wait();
            semaphore_signal(sem.at(0), 1, 1);  // core 1 may read rows 0-7 now
            semaphore_wait(sem.at(0), 1);       // core 1's answer
        } else {
            semaphore_wait(sem.at(0), 1);
            auto in = async_copy(o_any.at(ds(0, 8), ds(0, 128)), buf, dsem.at(0));
            in.wait();
            store(buf, load(buf) + 1.0f);
            auto out = async_copy(buf, o_any.at(ds(8, 8), ds(0, 128)), dsem.at(1));
            out.wait();
            semaphore_signal(sem.at(0), 1, 0);
        }
    };
    Pair call;
    call.options.timeline = true;
    auto [o, rep] = call(body, x);
    for (index_t r = 0; r < 8; ++r)
        for (index_t c = 0; c < 128; ++c) {
            const float v = x.vector()[static_cast<std::size_t>(r * 128 + c)];
            ASSERT_EQ(o.vector()[static_cast<std::size_t>(r * 128 + c)], 2.0f * v);
            ASSERT_EQ(o.vector()[static_cast<std::size_t>((r + 8) * 128 + c)], 2.0f * v + 1.0f);
        }
    ASSERT_EQ(rep.cores, 2);
    EXPECT_EQ(rep.stats.sem_signals, 2);
    EXPECT_EQ(rep.stats.sem_waits, 2 + 4);  // two semaphore waits, four copy waits
    // Core 1 starts at once but stalls until core 0's signal: its stall is core 0's work up to
    // the signal (about one step overhead and two dependent copies), then core 0 stalls for
    // core 1's answer. Both show as semaphore stall, not as exposed DMA.
    const core_report& c0 = rep.core[0];
    const core_report& c1 = rep.core[1];
    EXPECT_GT(c1.semaphore_stall, 2 * tpu::v5p.dma_latency_s);
    EXPECT_GT(c0.semaphore_stall, 2 * tpu::v5p.dma_latency_s);
    EXPECT_NEAR(c0.time, c0.overhead + c0.dma_issue + c0.compute + c0.exposed_dma + c0.semaphore_stall, 1e-12);
    EXPECT_NEAR(c1.time, c1.overhead + c1.dma_issue + c1.compute + c1.exposed_dma + c1.semaphore_stall, 1e-12);
    // The cores ran one after the other (but for core 1's step overhead, which overlaps core 0):
    // the kernel takes about the sum of their busy times.
    EXPECT_GT(rep.device_time, c0.time - c0.semaphore_stall + (c1.time - c1.semaphore_stall) - c1.overhead - 1e-9);
    bool stall_span = false;
    for (const sim::span& s : rep.timeline) stall_span = stall_span || (s.kind == sim::op_kind::sem_wait && !s.far);
    EXPECT_TRUE(stall_span);
    EXPECT_NE(to_svg(rep).find("semaphore stall"), std::string::npos);
}

// 39: a wait nothing can satisfy is an error at once, naming semaphore, values, core and step.
TEST(AsyncCopy, DeadlockOnOneCoreIsAnError) {
    const host_array<Row> x = rows();
    const std::string e = error_of([&] {
        Single{}([](auto, auto, auto, auto, auto sem) {
            if (program_id(0) == 1) semaphore_wait(sem.at(0), 2);
        }, x);
    });
    EXPECT_NE(e.find("ptpu[39]"), std::string::npos) << e;
    EXPECT_NE(e.find("core 0, step 1"), std::string::npos) << e;
    EXPECT_NE(e.find("waits for 2 on semaphore scratch 2[0], which holds 0"), std::string::npos) << e;
}

namespace {
constexpr index_t barrier_steps = 200;
// Each core's part of the rows, a step at a time: copy in, add one, copy out, then a barrier
// with the other core (signal its semaphore, wait for its signal).
using Barrier = pallas_call<Grid<2, barrier_steps>, In<Arg<Row, AnyRow>>, Out<Arg<Row, AnyRow>>, Tile, DmaSem,
                            RegSem, Semantics<parallel, arbitrary>, Chip<tpu::v5p>>;
}  // namespace

// Cores that meet at a barrier every step: each is woken by the other's signal, which the
// model times in strict order (the signalling core does not run on past the core it woke). The
// steady-state lane, which follows both cores through the signals (their semaphores are part of
// the state it compares), predicts what simulating every op does, to 1e-9; the run on data,
// whose cores take turns on threads and are simulated op by op, predicts it exactly.
TEST(AsyncCopy, ABarrierEveryStepOnTwoCores) {
    auto body = [](auto x_any, auto o_any, auto buf, auto dsem, auto sem) {
        const index_t c = program_id(0);
        auto in = make_async_copy(x_any.at(ds(c * 8, 8), ds(0, 128)), buf, dsem.at(0));
        in.start();
        in.wait();
        store(buf, load(buf) + 1.0f);
        auto out = make_async_copy(buf, o_any.at(ds(c * 8, 8), ds(0, 128)), dsem.at(1));
        out.start();
        out.wait();
        semaphore_signal(sem.at(0), 1, 1 - static_cast<int>(c));
        semaphore_wait(sem.at(0), 1);
    };
    const report every = Barrier{{.steady_state = false}}.predict(body);
    const report lane = Barrier{}.predict(body);
    EXPECT_NEAR(lane.device_time, every.device_time, 1e-9 * every.device_time);
    EXPECT_GT(lane.steady_ops, lane.ops * 9 / 10);
    EXPECT_EQ(lane.stats.sem_signals, 2 * barrier_steps);
    EXPECT_EQ(lane.stats.sem_waits, 2 * 3 * barrier_steps);  // two copy waits and the barrier's
    // The cores are held together: neither ends more than a step's work after the other.
    EXPECT_NEAR(lane.core[0].time, lane.core[1].time, lane.device_time / barrier_steps);
    const host_array<Row> x = rows();
    auto [o, rep] = Barrier{}(body, x);
    EXPECT_EQ(rep.device_time, every.device_time);
    for (std::size_t k = 0; k < x.size(); ++k) ASSERT_EQ(o.vector()[k], x.vector()[k] + 1.0f) << k;
}

// A timing-only megacore prediction runs its cores on the calling thread, a barrier included:
// a wait for the other core's signal takes its amount on credit, and the model blocks the core
// until the signal. A body reading a semaphore (its value depends on how far the other core ran)
// starts over with each core on a thread of its own, taking turns, as a run on data does from
// the start. All of them predict the same time.
TEST(AsyncCopy, AMegacorePredictionRunsOnTheCallingThreadUnlessABodyReadsASemaphore) {
    std::mutex m;
    std::set<std::thread::id> threads;
    bool barrier = false;
    bool reads = false;
    auto body = [&](auto x_any, auto o_any, auto buf, auto dsem, auto sem) {
        {
            const std::lock_guard<std::mutex> l(m);
            threads.insert(std::this_thread::get_id());
        }
        const index_t c = program_id(0);
        auto in = make_async_copy(x_any.at(ds(c * 8, 8), ds(0, 128)), buf, dsem.at(0));
        in.start();
        in.wait();
        auto out = make_async_copy(buf, o_any.at(ds(c * 8, 8), ds(0, 128)), dsem.at(1));
        out.start();
        out.wait();
        if (barrier) {
            semaphore_signal(sem.at(0), 1, 1 - static_cast<int>(c));
            if (reads && semaphore_read(sem.at(0)) < 0) throw std::runtime_error("a debt was seen");
            semaphore_wait(sem.at(0), 1);
        }
    };
    const std::thread::id here = std::this_thread::get_id();
    const report alone = Barrier{}.predict(body);
    EXPECT_EQ(threads, std::set<std::thread::id>{here});
    EXPECT_EQ(alone.stats.sem_waits, 2 * 2 * barrier_steps);
    threads.clear();
    barrier = true;
    const report met = Barrier{}.predict(body);
    EXPECT_EQ(threads, std::set<std::thread::id>{here});
    EXPECT_EQ(met.stats.sem_waits, 2 * 3 * barrier_steps);
    EXPECT_EQ(met.stats.sem_signals, 2 * barrier_steps);
    const double every = Barrier{{.steady_state = false}}.predict(body).device_time;
    EXPECT_NEAR(met.device_time, every, 1e-9 * every);
    threads.clear();
    reads = true;
    const report read = Barrier{}.predict(body);
    EXPECT_GE(threads.size(), 3u);  // this thread's first attempt, then both cores' own
    EXPECT_EQ(read.device_time, every);  // (taking turns, simulated op by op)
    threads.clear();
    reads = false;
    const host_array<Row> x = rows();
    auto [o, rep] = Barrier{}(body, x);
    EXPECT_EQ(threads.count(here), 0u);
    EXPECT_EQ(rep.device_time, every);
    for (std::size_t k = 0; k < x.size(); ++k) ASSERT_EQ(o.vector()[k], x.vector()[k]) << k;
    // Without the barrier too.
    threads.clear();
    barrier = false;
    auto [o2, rep2] = Barrier{}(body, x);
    EXPECT_EQ(threads.count(here), 0u);
    EXPECT_EQ(rep2.device_time, alone.device_time);
    for (std::size_t k = 0; k < x.size(); ++k) ASSERT_EQ(o2.vector()[k], x.vector()[k]) << k;
}

// What credit cannot answer takes turns, and what never gets paid is 39. Core 0 waits for the
// largest amount twice, core 1 signals it twice with an acknowledgement between: on one thread a
// second debt would pass -2^31 (or, core 1 first, the signals pass 2^31 - 1), so the prediction
// starts over on threads, where each wait is met in time. A wait for a signal no core sends is
// the model's deadlock, naming core, step and semaphore.
TEST(AsyncCopy, AWaitOnCreditThatIsNeverPaidIs39) {
    constexpr std::int32_t most = std::numeric_limits<std::int32_t>::max();
    std::mutex m;
    std::set<std::thread::id> threads;
    auto big = [&](auto, auto, auto, auto, auto sem) {
        {
            const std::lock_guard<std::mutex> l(m);
            threads.insert(std::this_thread::get_id());
        }
        if (program_id(1) != 0) return;
        if (program_id(0) == 0) {
            semaphore_wait(sem.at(0), most);
            semaphore_signal(sem.at(0), 1, 1);
            semaphore_wait(sem.at(0), most);
        } else {
            semaphore_signal(sem.at(0), most, 0);
            semaphore_wait(sem.at(0), 1);
            semaphore_signal(sem.at(0), most, 0);
        }
    };
    const report r = Barrier{}.predict(big);
    EXPECT_GE(threads.size(), 3u);
    EXPECT_EQ(r.stats.sem_waits, 3);
    EXPECT_EQ(r.stats.sem_signals, 3);
    auto unpaid = [](auto, auto, auto, auto, auto sem) {
        if (program_id(0) == 1 && program_id(1) == 7) semaphore_wait(sem.at(0), 2);
    };
    const std::string e = error_of([&] { (void)Barrier{}.predict(unpaid); });
    EXPECT_NE(e.find("ptpu[39] core 1, step 207"), std::string::npos) << e;  // core 1's 8th step
    EXPECT_NE(e.find("waits for 2 on semaphore scratch 2[0], which holds 0"), std::string::npos) << e;
    // The run on data, taking turns, names the same wait.
    const host_array<Row> x = rows();
    const std::string d = error_of([&] { (void)Barrier{}(unpaid, x); });
    EXPECT_NE(d.find("ptpu[39] core 1, step 207"), std::string::npos) << d;
    EXPECT_NE(d.find("waits for 2 on semaphore scratch 2[0], which holds 0"), std::string::npos) << d;
}

// 39 across cores: each core waits for the other first. The model finds both blocked with
// nothing in flight and the call returns (the cores' threads are unwound), with the error.
TEST(AsyncCopy, CrossCoreDeadlockReturnsPromptly) {
    const host_array<Row> x = rows();
    const std::string e = error_of([&] {
        Pair{}([](auto, auto, auto, auto, auto sem) {
            semaphore_wait(sem.at(0), 1);
            semaphore_signal(sem.at(0), 1, 1 - static_cast<int>(program_id(0)));
        }, x);
    });
    EXPECT_NE(e.find("ptpu[39]"), std::string::npos) << e;
    EXPECT_NE(e.find("semaphore scratch 2[0]"), std::string::npos) << e;
    EXPECT_NE(e.find("which holds 0"), std::string::npos) << e;
    // The same kernel with the signals first runs.
    auto [o, rep] = Pair{}([](auto, auto, auto, auto, auto sem) {
        semaphore_signal(sem.at(0), 1, 1 - static_cast<int>(program_id(0)));
        semaphore_wait(sem.at(0), 1);
    }, x);
    EXPECT_EQ(rep.stats.sem_waits, 2);
}

// 39 at exit: a copy started and never waited, a semaphore left raised.
TEST(AsyncCopy, LeaksAreErrors) {
    const host_array<Row> x = rows();
    std::string e = error_of([&] {
        Single{}([](auto x_any, auto, auto buf, auto dsem, auto) {
            if (program_id(0) == 1) (void)async_copy(x_any.at(ds(0, 8), ds(0, 128)), buf, dsem.at(1));
        }, x);
    });
    EXPECT_NE(e.find("ptpu[39]"), std::string::npos) << e;
    EXPECT_NE(e.find("an async copy from ref of input 0 to ref of scratch 0 started at step 1 was never waited"),
              std::string::npos)
        << e;
    e = error_of([&] {
        Single{}([](auto, auto, auto, auto, auto sem) { semaphore_signal(sem.at(0)); }, x);
    });
    EXPECT_NE(e.find("semaphore scratch 2[0] holds 2"), std::string::npos) << e;
    // Over-waiting a DMA semaphore (more bytes than were copied into it) deadlocks.
    e = error_of([&] {
        Single{}([](auto x_any, auto, auto buf, auto dsem, auto) {
            (void)async_copy(x_any.at(ds(0, 8), ds(0, 128)), buf, dsem.at(0));
            semaphore_wait(dsem.at(0), 2 * 8 * 128 * 4);
        }, x);
    });
    EXPECT_NE(e.find("waits for 8192 on semaphore scratch 1[0], which holds 4096"), std::string::npos) << e;
}

// The destination is defined only after the wait: read early, it still holds what it held
// (copies land at their wait), and with detect_races the read is error DMA2.
TEST(AsyncCopy, ReadBeforeWait) {
    const host_array<Row> x = rows();
    auto early = [](auto x_any, auto o_any, auto buf, auto dsem, auto) {
        if (program_id(0) != 0) return;
        store(buf, zeros<float>(c<8>, c<128>));
        auto in = async_copy(x_any.at(ds(0, 8), ds(0, 128)), buf, dsem.at(0));
        const auto v = load(buf);  // too early
        in.wait();
        store(buf, v);
        sync_copy(buf, o_any.at(ds(0, 8), ds(0, 128)));
    };
    auto [o, rep] = Single{}(early, x);
    for (std::size_t k = 0; k < 8 * 128; ++k) ASSERT_EQ(o.vector()[k], 0.0f) << k;
    Single checked;
    checked.options.detect_races = true;
    const std::string e = error_of([&] { checked(early, x); });
    EXPECT_NE(e.find("ptpu[DMA2] core 0, step 0: load: reads ref of scratch 0, the destination of an async copy"),
              std::string::npos)
        << e;
    // A write to a source in flight, too.
    const std::string w = error_of([&] {
        checked([](auto, auto o_any, auto buf, auto dsem, auto) {
            if (program_id(0) != 0) return;
            auto out = async_copy(buf, o_any.at(ds(0, 8), ds(0, 128)), dsem.at(0));
            store(buf, zeros<float>(c<8>, c<128>));
            out.wait();
        }, x);
    });
    EXPECT_NE(w.find("ptpu[DMA2] core 0, step 0: store: writes ref of scratch 0, the source"), std::string::npos) << w;
}

// S61: copies may share a semaphore; each wait takes one destination's bytes. semaphore_read
// sees a DMA semaphore's landed bytes. S60: bad amounts and cores are errors.
TEST(AsyncCopy, SharedSemaphoreAndRuntimeChecks) {
    const host_array<Row> x = rows();
    auto [o, rep] = Single{}([](auto x_any, auto o_any, auto buf, auto dsem, auto sem) {
        const index_t i = program_id(0);
        auto a = async_copy(x_any.at(ds(8 * i, 4), ds(0, 128)), buf.at(ds(0, 4), ds(0, 128)), dsem.at(0));
        auto b = async_copy(x_any.at(ds(8 * i + 4, 4), ds(0, 128)), buf.at(ds(4, 4), ds(0, 128)), dsem.at(0));
        if (semaphore_read(dsem.at(0)) != 0) throw std::runtime_error("landed before any wait");
        a.wait();
        b.wait();
        store(buf, load(buf) - 1.0f);
        sync_copy(buf, o_any.at(ds(8 * i, 8), ds(0, 128)));
        semaphore_signal(sem.at(0), 3);
        if (semaphore_read(sem.at(0)) != 3) throw std::runtime_error("signal not counted");
        semaphore_wait(sem.at(0), 3);
    }, x);
    for (std::size_t k = 0; k < x.size(); ++k) ASSERT_EQ(o.vector()[k], x.vector()[k] - 1.0f) << k;
    EXPECT_EQ(rep.stats.body_dmas, 2 * 3);
    EXPECT_EQ(rep.stats.sem_waits, 2 * 3);
    EXPECT_EQ(rep.semaphore_stall, 0.0);

    EXPECT_NE(error_of([&] {
                  Single{}([](auto, auto, auto, auto, auto sem) { semaphore_signal(sem.at(0), 1, 1); }, x);
              }).find("ptpu[S60] core 0, step 0: semaphore_signal: signals core 1 but the kernel runs on 1 core(s)"),
              std::string::npos);
    EXPECT_NE(error_of([&] {
                  Single{}([](auto, auto, auto, auto, auto sem) { semaphore_wait(sem.at(0), -1); }, x);
              }).find("ptpu[S60]"),
              std::string::npos);
    EXPECT_NE(error_of([&] {
                  Single{}([](auto x_any, auto, auto buf, auto dsem, auto) {
                      make_async_copy(x_any.at(ds(0, 8), ds(0, 128)), buf, dsem.at(0)).start(-1);
                  }, x);
              }).find("ptpu[35] core 0, step 0: async_copy: DMA start priority must be non-negative"),
              std::string::npos);
    // A run-time shape mismatch (the static extents cannot tell): DMA1, nothing started.
    EXPECT_NE(error_of([&] {
                  Single{}([](auto x_any, auto, auto buf, auto dsem, auto) {
                      const index_t n = 4 + program_id(0);
                      (void)async_copy(x_any.at(ds(0, n), ds(0, 128)), buf.at(ds(0, 4), ds(0, 128)), dsem.at(0));
                  }, x);
              }).find("ptpu[DMA1]"),
              std::string::npos);
}

// Timing-only runs keep the semaphores and the control flow (and time) of the data run.
TEST(AsyncCopy, TimingOnlyMatchesDataRun) {
    const host_array<Row> x = rows();
    Hand data, timing;
    timing.options.timing_only = true;
    const host_array<X> big = ramp();
    auto [a, ra] = data(hand_pipeline{}, big);
    auto [b, rb] = timing(hand_pipeline{}, big);
    EXPECT_EQ(ra.device_time, rb.device_time);
    EXPECT_EQ(ra.stats.sem_waits, rb.stats.sem_waits);
}

// A14: signal 2 then two waits leave 0; a read returns what was signalled; after a copy's wait
// its DMA semaphore reads 0. (The unindexed semaphore array and the copy on a regular semaphore
// are compile-fail cases 35 and 36, tests/compile_fail/semaphore_rules.cpp; deadlocks above.)
TEST(AsyncCopy, A14SemaphoreValues) {
    const host_array<Row> x = rows();
    std::vector<std::int32_t> seen;
    auto [o, rep] = Single{}(
        [&](auto x_any, auto, auto buf, auto dsem, auto sem) {
            semaphore_signal(sem.at(0), 2);
            seen.push_back(semaphore_read(sem.at(0)));
            semaphore_wait(sem.at(0));
            semaphore_wait(sem.at(0));
            seen.push_back(semaphore_read(sem.at(0)));
            async_copy(x_any.at(ds(0, 8), ds(0, 128)), buf, dsem.at(1)).wait();
            seen.push_back(semaphore_read(dsem.at(1)));
        },
        x);
    EXPECT_EQ(seen, (std::vector<std::int32_t>{2, 0, 0, 2, 0, 0}));  // two grid steps
}

namespace {
// 16 rows of VMEM scratch: room for an overlapping copy of 8 rows by 4.
using Buf16 = Scratch<vmem, float, 16, 128>;
using Wide = pallas_call<Grid<1>, In<Arg<Row, AnyRow>>, Out<Arg<Row, AnyRow>>, Buf16, DmaSem, Chip<tpu::v5e>>;

// The rows of a (16, 128) array after moving rows [from, from + 8) to [to, to + 8) as memmove does.
std::vector<float> moved(std::vector<float> v, int from, int to) {
    std::vector<float> src(v.begin() + from * 128, v.begin() + (from + 8) * 128);
    std::copy(src.begin(), src.end(), v.begin() + to * 128);
    return v;
}

// Overlapping copies in VMEM (rows [0, 8) to [4, 12)), in HBM ([0, 8) to [2, 10)) and a
// sync_copy in VMEM ([8, 16) to [7, 15)) each move the source's contents from before the copy.
struct overlapping_copies {
    template <class X, class O, class B, class S>
    void operator()(X x_any, O o_any, B buf, S dsem) const {
        sync_copy(x_any, buf);
        async_copy(buf.at(ds(0, 8), ds(0, 128)), buf.at(ds(4, 8), ds(0, 128)), dsem.at(0)).wait();
        sync_copy(buf.at(ds(8, 8), ds(0, 128)), buf.at(ds(7, 8), ds(0, 128)));
        sync_copy(buf, o_any);
        async_copy(o_any.at(ds(0, 8), ds(0, 128)), o_any.at(ds(2, 8), ds(0, 128)), dsem.at(1)).wait();
    }
};
}  // namespace

// A TPU DMA engine makes no public promise about copies whose ends overlap (S61 orders nothing);
// ptpu copies them as a DMA that reads its whole source before it writes (memmove: Pallas's
// interpret mode does the same), never replicating rows, and detect_races reports them (DMA4).
TEST(AsyncCopy, OverlappingCopiesMoveLikeMemmoveAndAreReportedAsDMA4) {
    const host_array<Row> x = rows();
    auto [o, rep] = Wide{}(overlapping_copies{}, x);
    const std::vector<float> want = moved(moved(moved(x.vector(), 0, 4), 8, 7), 0, 2);
    for (std::size_t k = 0; k < want.size(); ++k) ASSERT_EQ(o.vector()[k], want[k]) << "element " << k;
    EXPECT_EQ(rep.stats.body_dmas, 5);

    Wide checked;
    checked.options.detect_races = true;
    const std::string e = error_of([&] { checked(overlapping_copies{}, x); });
    EXPECT_NE(e.find("ptpu[DMA4] core 0, step 0: async_copy: the source ref of scratch 0 and the destination ref of "
                     "scratch 0 overlap"),
              std::string::npos)
        << e;
    // The sync_copy and the HBM copy, each on its own.
    const std::string s = error_of([&] {
        checked([](auto, auto, auto buf, auto) { sync_copy(buf.at(ds(1, 8), ds(0, 128)), buf.at(ds(0, 8), ds(0, 128))); },
                x);
    });
    EXPECT_NE(s.find("ptpu[DMA4] core 0, step 0: sync_copy: the source ref of scratch 0"), std::string::npos) << s;
    const std::string h = error_of([&] {
        checked([](auto, auto o_any, auto, auto dsem) {
            async_copy(o_any.at(ds(0, 8), ds(0, 128)), o_any.at(ds(2, 8), ds(0, 128)), dsem.at(1)).wait();
        }, x);
    });
    EXPECT_NE(h.find("ptpu[DMA4] core 0, step 0: async_copy: the source ref of output 0 and the destination ref of "
                     "output 0 overlap"),
              std::string::npos)
        << h;
    // Two column halves of one buffer: their byte ranges interleave, their elements do not.
    auto [o2, rep2] = checked(
        [](auto x_any, auto o_any, auto buf, auto dsem) {
            sync_copy(x_any, buf);
            async_copy(buf.at(ds(0, 16), ds(0, 64)), buf.at(ds(0, 16), ds(64, 64)), dsem.at(0)).wait();
            sync_copy(buf, o_any);
        },
        x);
    for (std::size_t k = 0; k < o2.size(); ++k)
        ASSERT_EQ(o2.vector()[k], x.vector()[k % 128 < 64 ? k : k - 64]) << "element " << k;
}

// An empty copy (a zero-row slice) started and waited is complete: its wait takes 0 bytes and
// nothing is left pending at exit (check 39).
TEST(AsyncCopy, EmptyCopyStartedAndWaitedIsFine) {
    const host_array<Row> x = rows();
    auto [o, rep] = Single{}(
        [](auto x_any, auto o_any, auto buf, auto dsem, auto) {
            const index_t n = 1 - program_id(0);  // 1 row at step 0, 0 at step 1 (the last)
            async_copy(x_any.at(ds(0, n), ds(0, 128)), buf.at(ds(0, n), ds(0, 128)), dsem.at(0)).wait();
            async_copy(buf.at(ds(0, n), ds(0, 128)), o_any.at(ds(0, n), ds(0, 128)), dsem.at(1)).wait();
            if (semaphore_read(dsem.at(0)) != 0 || semaphore_read(dsem.at(1)) != 0)
                throw std::runtime_error("semaphore left raised");
        },
        x);
    for (std::size_t k = 0; k < 128; ++k) ASSERT_EQ(o.vector()[k], x.vector()[k]) << k;
    EXPECT_EQ(rep.stats.body_dmas, 4);
    EXPECT_EQ(rep.stats.sem_waits, 4);
}

// S60: the core index and the amount are checked as given, before any conversion: a negative
// core other than -1 (this core) is no core, and a uint64 2^64 - 1 is not -1 (nor 0xFFFFFFFF
// an int32 -1).
TEST(AsyncCopy, SignalCoreAndAmountsAreCheckedBeforeConversion) {
    const host_array<Row> x = rows();
    auto run = [&](auto f) {
        return error_of([&] { Single{}([&](auto, auto, auto, auto, auto sem) { f(sem.at(0)); }, x); });
    };
    std::string e = run([](auto s) { semaphore_signal(s, 1, -7); });
    EXPECT_NE(e.find("ptpu[S60] core 0, step 0: semaphore_signal: signals core -7"), std::string::npos) << e;
    e = run([](auto s) { semaphore_signal(s, std::numeric_limits<std::uint64_t>::max()); });
    EXPECT_NE(e.find("ptpu[S60] core 0, step 0: semaphore_signal: signals 18446744073709551615 on semaphore "
                     "scratch 2[0]"),
              std::string::npos)
        << e;
    e = run([](auto s) { semaphore_signal(s, std::uint32_t{0xFFFFFFFFu}); });
    EXPECT_NE(e.find("signals 4294967295"), std::string::npos) << e;
    e = run([](auto s) { semaphore_wait(s, std::numeric_limits<std::uint64_t>::max()); });
    EXPECT_NE(e.find("ptpu[S60] core 0, step 0: semaphore_wait: waits for 18446744073709551615"), std::string::npos)
        << e;
    // -1 is this core; an amount of INT32_MAX fits (and is waited back).
    EXPECT_EQ(run([](auto s) {
                  semaphore_signal(s, std::uint64_t{INT32_MAX}, -1);
                  semaphore_wait(s, std::uint64_t{INT32_MAX});
              }),
              "no error");
}
