// The host memory of timing-only predictions (docs/model.md §11, "Memory"): a 10^7-step streaming
// copy predicted in a few megabytes (pass 1's change bits stored once per distinct chunk, the
// revisit checks by the runs' order), and the budget a run's tables may not exceed (MEM1): the
// planner's, with the operand and the step it was reached at, and the per-step rows and timeline
// asked for, with the step.
#include <gtest/gtest.h>

#include <ptpu/ptpu.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace ptpu;

namespace {
using Blk = BlockSpec<Block<8, 128>, [](auto i) { return idx(i, 0); }>;

// The process's resident set now, in KiB (/proc/self/statm counts pages).
long rss_kib() {
    long pages = 0, resident = 0;
    std::FILE* f = std::fopen("/proc/self/statm", "r");
    if (f == nullptr) return -1;
    const int n = std::fscanf(f, "%ld %ld", &pages, &resident);
    std::fclose(f);
    return n == 2 ? resident * (sysconf(_SC_PAGESIZE) / 1024) : -1;
}

// Runs fn in a child process (a fresh peak of its own) and returns the child's peak resident set
// (ru_maxrss, KiB) minus its resident set before fn, or -1 when fn's check fails (or the child
// does not report).
template <class F>
long peak_growth_kib(F&& fn) {
    int fd[2];
    if (pipe(fd) != 0) return -1;
    const pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        close(fd[0]);
        const long before = rss_kib();
        const bool ok = fn();
        rusage ru{};
        getrusage(RUSAGE_SELF, &ru);
        const long growth = before >= 0 && ok ? ru.ru_maxrss - before : -1;
        if (write(fd[1], &growth, sizeof growth) != static_cast<ssize_t>(sizeof growth)) _exit(4);
        _exit(0);
    }
    close(fd[1]);
    long growth = -1;
    const ssize_t got = read(fd[0], &growth, sizeof growth);
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (got != static_cast<ssize_t>(sizeof growth) || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
    return growth;
}

constexpr index_t long_steps = 10'000'000;
using LongX = Array<float, long_steps * 8, 128>;
using LongCopy = pallas_call<Grid<long_steps>, In<Arg<LongX, Blk>>, Out<Arg<LongX, Blk>>, Chip<tpu::v5e>>;

// The index map of an input whose block changes at irregular steps (i² / 2^17 crosses an
// integer): no two chunks of its change bits are equal, so they take a byte a step.
constexpr index_t irregular_steps = index_t{1} << 17;
using IrregularX = Array<float, irregular_steps * 8, 128>;
using IrregularCopy = pallas_call<
    Grid<irregular_steps>,
    In<Arg<IrregularX, BlockSpec<Block<8, 128>, [](auto i) { return idx(i * i / irregular_steps, 0); }>>>,
    Out<Arg<IrregularX, Blk>>, Chip<tpu::v5e>>;
}  // namespace

TEST(TimingOnlyMemory, TenMillionStepCopyStaysWithinMegabytes) {
    // Before the tables were chunked this prediction took about 2 GB (200 B a step).
    const long growth = peak_growth_kib([] {
        const LongCopy call{{.per_step = per_step_rows::never}};
        const report r = call.predict([](auto x, auto o) { store(o, load(x)); });
        // Every step ran (in bulk), and the copy moved every block in and out.
        return r.stats.steps == long_steps && r.stats.dma_in == long_steps && r.stats.dma_out == long_steps &&
               r.device_time > 0;
    });
    ASSERT_GE(growth, 0) << "the prediction failed in the child process";
    EXPECT_LT(growth, 64 * 1024) << growth << " KiB over the RSS before the prediction";
}

TEST(TimingOnlyMemory, TablesOverTheBudgetAreMEM1) {
    IrregularCopy call{};
    call.options.per_step = per_step_rows::never;
    call.options.memory_budget = index_t{1} << 16;
    try {
        (void)call.predict([](auto x, auto o) { store(o, load(x)); });
        FAIL() << "no error";
    } catch (const ptpu::error& e) {
        EXPECT_EQ(e.rule(), "MEM1");
        const std::string m = e.what();
        EXPECT_NE(m.find("operand 0"), std::string::npos) << m;  // the input's change bits
        EXPECT_NE(m.find("budget 65536"), std::string::npos) << m;
        EXPECT_NE(m.find("at step "), std::string::npos) << m;
        EXPECT_NE(m.find("run_options::memory_budget"), std::string::npos) << m;
    }
    // Within the default budget the same call predicts (its bits take 128 KiB).
    call.options.memory_budget = default_memory_budget;
    const report r = call.predict([](auto x, auto o) { store(o, load(x)); });
    EXPECT_EQ(r.stats.steps, irregular_steps);
}

TEST(TimingOnlyMemory, PerStepRowsAndTimelineOverTheBudgetAreMEM1) {
    // The planner's tables of the 2^17-step copy take under 1 MB; its rows would take some 18 MB
    // and its spans some 70 MB.
    for (const bool timeline : {false, true}) {
        IrregularCopy call{};
        call.options.per_step = timeline ? per_step_rows::never : per_step_rows::always;
        call.options.timeline = timeline;
        call.options.memory_budget = index_t{1} << 20;
        try {
            (void)call.predict([](auto x, auto o) { store(o, load(x)); });
            ADD_FAILURE() << "no error, timeline " << timeline;
        } catch (const ptpu::error& e) {
            EXPECT_EQ(e.rule(), "MEM1");
            const std::string m = e.what();
            EXPECT_NE(m.find(timeline ? "recording the timeline" : "recording the per-step rows"), std::string::npos)
                << m;
            EXPECT_NE(m.find("timing model, step "), std::string::npos) << m;
            EXPECT_NE(m.find("budget of 1048576"), std::string::npos) << m;
        }
    }
}

TEST(PredictWithoutData, AddressesOfNoMemoryMoveAsIntegers) {
    // A call predicted without data has refs of no memory (null addresses); their sub-refs'
    // addresses still move as on data, by integer arithmetic, not arithmetic on a null pointer.
    float* none = nullptr;
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(detail::advanced(none, 3)), 3 * sizeof(float));
    EXPECT_EQ(detail::advanced(none, 0), nullptr);
    float x[8]{};
    EXPECT_EQ(detail::advanced(x, 5), x + 5);
    EXPECT_EQ(detail::advanced(detail::advanced(x, 5), -2), x + 3);
    static_assert(detail::advanced(static_cast<const int*>(nullptr), 0) == nullptr);
}
