// Defines sweep::run_static<F>: a compile-time space (sweep/static_space.hpp) whose points a user
// template F makes into configuration types (a pallas_call, or a type whose `call` is one),
// evaluated for one body into a sweep::result, as sweep::run does for run-time spaces. Each
// infeasible type is reported with the rule check_call's verdict names (call/verdict.hpp), not
// a compile error: its pallas_call is never instantiated. The feasible ones are predicted on all
// host cores.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/hana/for_each.hpp>
#include <boost/hana/unpack.hpp>

#include "ptpu/call/verdict.hpp"
#include "ptpu/core/error.hpp"
#include "ptpu/pallas_call.hpp"
#include "ptpu/report/report.hpp"
#include "ptpu/sweep/run.hpp"
#include "ptpu/sweep/static_space.hpp"

namespace ptpu::sweep {

namespace detail {
template <class T>
struct static_label {
    static std::string get() {
        if constexpr (requires { T::name(); })
            return std::string(T::name());
        else
            return "?";
    }
};
template <auto V>
struct static_label<value_t<V>> {
    static std::string get() { return label_of(V); }
};

// The pallas_call of a configuration type: its `call`, or the type itself.
template <class K>
struct call_of {
    using type = K;
};
template <class K>
requires requires { typename K::call; }
struct call_of<K> {
    using type = typename K::call;
};
}  // namespace detail

/// Evaluates every point of a compile-time space: F<A, B, ...> (A, B, ... the point's types) is
/// the configuration, a pallas_call or a type with `using call = pallas_call<...>` (and
/// optionally `static std::string name()`, its label; by default the point's values joined by
/// ", ", as sweep::run's). A configuration check_call rejects is a rejected entry with the
/// verdict's rule and message; the others are predicted in timing-only mode (a ptpu::error
/// raised at run time by the checks left to the run, verdict::complete(), rejects too).
template <template <class...> class F, class Space, class Body>
result run_static(Space space, const Body& body, const options& opt = {}) {
    std::vector<std::string> labels;
    std::vector<std::function<report()>> jobs;
    hana::for_each(space, [&](auto point) {
        hana::unpack(point, [&](auto... t) {
            using K = F<typename decltype(t)::type...>;
            using Call = typename detail::call_of<K>::type;
            if constexpr (requires { K::name(); }) {
                labels.push_back(std::string(K::name()));
            } else {
                std::string l;
                std::size_t i = 0;
                ((l += (l.empty() ? "" : ", ") +
                       (i < opt.axis_names.size() && !opt.axis_names[i].empty() ? opt.axis_names[i] + "=" : "") +
                       detail::static_label<typename decltype(t)::type>::get(),
                  ++i),
                 ...);
                labels.push_back(std::move(l));
            }
            constexpr verdict v = check_call<Call>();
            if constexpr (v.ok()) {
                jobs.push_back([&body, lean = opt.lean] {
                    Call c;
                    if (lean) detail::make_lean(c);
                    return c.predict(body);
                });
            } else {
                // The verdict's text is the rule's message; its values as a run-time error adds them.
                const std::string details = v.details();
                const std::string message =
                    std::string(v.message()) + (details.empty() ? std::string() : " (" + details + ")");
                jobs.push_back([message]() -> report { throw error(message); });
            }
        });
    });
    unsigned threads = 0;
    double seconds = 0;
    auto job = [&](std::size_t i, std::vector<report>& reps) { reps.push_back(jobs[i]()); };
    auto out = detail::run_pool(jobs.size(), job, opt, threads, seconds);
    return detail::make_result(std::move(out), std::move(labels), opt, threads, seconds);
}

}  // namespace ptpu::sweep
