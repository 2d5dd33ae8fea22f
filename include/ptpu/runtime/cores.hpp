// Defines how the runners of a megacore kernel whose bodies use semaphores take turns. A body
// on one core may wait for a signal the other core's body has not sent yet: it must stop in the
// middle and let the other core run. Each core's runner then runs on a thread of its own, and
// exactly one thread runs at a time: the caller's (the timing model pulling batches) hands the
// turn to a core when the model wants that core's next ops, and the core hands it back when its
// batch is made or its body blocks in a wait (with the ops made so far, ending with the wait).
// Nothing runs concurrently, so the run is as deterministic as a single thread's. (A timing-only
// run runs its cores on one thread, its waits taking on credit what the other core signals
// later, and takes turns only where that cannot do: call/run_impl.hpp, run_call.)
//
// A thread waiting for its turn first polls for it a few tens of microseconds, yielding the CPU
// as it polls, and only then sleeps on the condition variable: a turn is handed over at every
// batch, and waking a sleeping thread costs the host several microseconds each time.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

#include "ptpu/runtime/context.hpp"
#include "ptpu/runtime/runner.hpp"
#include "ptpu/stream/op.hpp"

namespace ptpu::detail {

/// The runners of `cores` cores, each on its own thread, run one at a time (see above).
class core_turns {
public:
    core_turns(const per_core<runner*>& r, const per_core<kernel_context*>& k, int cores) : cores_(cores) {
        for (int c = 0; c < cores; ++c) {
            core_& p = core(c);
            p.run = r[static_cast<std::size_t>(c)];
            p.ctx = k[static_cast<std::size_t>(c)];
            p.owner = this;
            p.id = c;
            p.ctx->yield = [](void* self) {
                auto* q = static_cast<core_*>(self);
                q->owner->yield(*q);
            };
            p.ctx->yield_self = &p;
        }
        for (int c = 0; c < cores; ++c) core(c).th = std::thread([this, c] { loop(core(c)); });
    }
    core_turns(const core_turns&) = delete;
    core_turns& operator=(const core_turns&) = delete;
    ~core_turns() {
        {
            std::unique_lock<std::mutex> l(m_);
            stop_.store(true);
        }
        cv_.notify_all();
        for (int c = 0; c < cores_; ++c) {
            core_& p = core(c);
            if (p.th.joinable()) p.th.join();
            p.ctx->yield = nullptr;
        }
    }

    /// Core `c`'s next batch (or, if its body blocks, the ops up to the wait): runs it until
    /// then. An error thrown on the core is thrown here.
    stream::batch next_batch(int c, bool lazy) {
        core_& p = core(c);
        p.lazy = lazy;
        hand_to(c);
        wait_for(-1);
        if (p.error) {
            std::exception_ptr e = p.error;
            p.error = nullptr;
            std::rethrow_exception(e);
        }
        return p.out;
    }

    /// Whether core `c`'s runner is between two steps (its last batch ended a step), not in the
    /// middle of a body blocked in a wait: only then may the caller ask it to skip periods.
    [[nodiscard]] bool between_steps(int c) { return !core(c).in_body; }

private:
    struct stopped {};  // unwinds a blocked body when the run is abandoned
    struct core_ {
        runner* run = nullptr;
        kernel_context* ctx = nullptr;
        core_turns* owner = nullptr;
        int id = 0;
        std::thread th;
        bool lazy = false;
        bool in_body = false;  // handed the turn back from inside its body (yield)
        stream::batch out{};
        std::exception_ptr error;
    };
    core_& core(int c) { return cores_arr_[static_cast<std::size_t>(c)]; }

    // Whose turn it is becomes `to`; a thread sleeping for it is woken.
    void hand_to(int to) {
        {
            std::lock_guard<std::mutex> l(m_);
            turn_.store(to, std::memory_order_release);
            if (sleepers_ == 0) return;
        }
        cv_.notify_all();
    }
    // Returns once it is `who`'s turn (or the run stops): polls, then sleeps.
    void wait_for(int who) {
        const auto ready = [&] {
            return turn_.load(std::memory_order_acquire) == who || stop_.load(std::memory_order_acquire);
        };
        const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
        for (int k = 0; !ready(); ++k) {
            if (k % 16 == 15 && std::chrono::steady_clock::now() > until) {
                std::unique_lock<std::mutex> l(m_);
                ++sleepers_;
                cv_.wait(l, ready);
                --sleepers_;
                return;
            }
            std::this_thread::yield();
        }
    }

    void loop(core_& p) {
        for (;;) {
            wait_for(p.id);
            if (stop_.load()) return;
            stream::batch b{};
            std::exception_ptr err;
            bool abandoned = false;
            try {
                b = p.run->next_batch(p.lazy);
            } catch (const stopped&) {
                abandoned = true;
            } catch (...) {
                err = std::current_exception();
            }
            if (abandoned) return;
            p.in_body = false;
            p.out = b;
            p.error = err;
            hand_to(-1);
        }
    }
    // On core p's thread, inside its body: hand back the ops so far and wait for the turn again.
    void yield(core_& p) {
        p.out = p.run->take_partial();
        p.out.blocked = p.out.ops.empty();  // (the first yield at a wait hands out the wait's op)
        p.in_body = true;
        p.error = nullptr;
        hand_to(-1);
        wait_for(p.id);
        if (stop_.load()) throw stopped{};
    }

    int cores_;
    per_core<core_> cores_arr_{};
    std::mutex m_;  // guards sleepers_, and the turn's changes against a thread going to sleep
    std::condition_variable cv_;
    std::atomic<int> turn_{-1};  // the core running, or -1: the caller
    std::atomic<bool> stop_{false};
    int sleepers_ = 0;  // threads asleep on cv_
};

}  // namespace ptpu::detail
