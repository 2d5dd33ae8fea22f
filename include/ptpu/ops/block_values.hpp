// Defines how a vec (ops/vec.hpp) holds its values: owned in an Eigen array from a per-thread
// cache, a copy-on-write view of the VMEM it was loaded from, or a pending elementwise op or
// product evaluated when first read or straight into the ref it is stored to.
#pragma once

#include <Eigen/Core>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "ptpu/core/error.hpp"
#include "ptpu/core/integers.hpp"
#include "ptpu/core/linkage.hpp"
#include "ptpu/runtime/context.hpp"

namespace ptpu::detail {

// ---- Storage of a vec's values: owned, a copy-on-write view of VMEM, or a pending op ----------

/// A row-major plane of compute values: element (i, j) at data[i * stride + j].
template <class C>
struct block_view {
    const C* data = nullptr;
    index_t stride = 0;
};

/// Dense arrays of compute values come from, and go back to, a small per-thread cache: a
/// block-sized temporary per op would otherwise be a fresh allocation each time, and glibc gives
/// freed megabytes back to the kernel, so every one faults its pages in again (measured: a
/// quarter of a blocked f32 add's time, most of a blocked matmul's overhead). Bounded: 8 arrays,
/// 32 MiB per compute type; arrays under 64 KiB are left to malloc (cheap at that size).
template <class C>
class array_cache {
public:
    using array_type = Eigen::Array<C, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

    static array_type take(index_t rows, index_t cols);
    /// Keeps a's storage for a later take() (a is left empty), or leaves it to a's destructor.
    static void give(array_type& a);

private:
    static constexpr std::size_t min_bytes = std::size_t{64} << 10;
    static constexpr std::size_t max_bytes = std::size_t{32} << 20;
    static constexpr std::size_t max_slots = 8;
    static std::size_t bytes_of(index_t n) { return static_cast<std::size_t>(n) * sizeof(C); }
    struct holder {
        std::vector<array_type> slots;
        std::size_t bytes = 0;
        holder() = default;
        holder(const holder&) = delete;
        holder& operator=(const holder&) = delete;
        ~holder() { dead() = true; }
    };
    static holder& cache() {
        thread_local holder h;
        return h;
    }
    // Vecs destroyed after the thread's cache (static ones at exit) free their own storage.
    static bool& dead() {
        thread_local bool d = false;
        return d;
    }
};

template <class C>
typename array_cache<C>::array_type array_cache<C>::take(index_t rows, index_t cols) {
    const index_t n = rows * cols;
    if (bytes_of(n) >= min_bytes && !dead()) {
        holder& h = cache();
        for (std::size_t i = 0; i < h.slots.size(); ++i)
            if (h.slots[i].size() == n) {
                array_type a = std::move(h.slots[i]);
                h.slots.erase(h.slots.begin() + static_cast<std::ptrdiff_t>(i));
                h.bytes -= bytes_of(n);
                a.resize(rows, cols);  // the same number of elements: no reallocation
                return a;
            }
    }
    return array_type(rows, cols);
}
template <class C>
void array_cache<C>::give(array_type& a) {
    const std::size_t b = bytes_of(a.size());
    if (b < min_bytes || b > max_bytes || dead()) return;
    holder& h = cache();
    while (!h.slots.empty() && (h.slots.size() >= max_slots || h.bytes + b > max_bytes)) {
        h.bytes -= bytes_of(h.slots.front().size());
        h.slots.erase(h.slots.begin());  // the oldest goes
    }
    h.bytes += b;
    h.slots.push_back(std::move(a));
}

/// Copies a rows × cols plane (strides in elements).
template <class C>
void copy_plane(C* dst, index_t ds, const C* src, index_t ss, index_t rows, index_t cols) {
    if (dst == src && ds == ss) return;
    if (ds == cols && ss == cols) {
        std::memmove(dst, src, static_cast<std::size_t>(rows * cols) * sizeof(C));
        return;
    }
    for (index_t i = 0; i < rows; ++i)
        std::memmove(dst + i * ds, src + i * ss, static_cast<std::size_t>(cols) * sizeof(C));
}

/// The operands of a pending elementwise op: planes a and b (b.data null for a unary op or a
/// scalar k), and which of them are the pending value's own storage.
template <class C>
struct pending_args {
    block_view<C> a{}, b{};
    C k{};
};
/// Evaluates a pending op into the plane out (rows × cols, row stride os); out may be one of the
/// operands exactly (same data and stride: elementwise, so safe), never a partial overlap.
template <class C>
using pending_fn = void (*)(C* out, index_t os, index_t rows, index_t cols, const pending_args<C>& args);
/// Evaluates a pending product lhs (m × k) · rhs (k × n), both contiguous, into the plane out
/// (row stride os): out = product, or out += product when `accumulate` (ops/dot.hpp's GEMM).
template <class C>
using product_fn = void (*)(C* out, index_t os, index_t m, index_t n, index_t k, const C* lhs, const C* rhs,
                            bool accumulate);

[[noreturn]] PTPU_COMPILED void stale_vec(const char* where);
#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED void stale_vec(const char* where) {
    throw error("OP4", where,
                "this vec reads VMEM it was loaded from in an earlier kernel body step (or call), "
                "which a DMA may have refilled since",
                "use a vec within the body step that loaded it; carry values across steps in a VMEM "
                "scratch ref (store, then load in the next step)");
}
#endif

/// The values of one vec, in one of three forms:
/// - owned: an Eigen array (from array_cache);
/// - view: the VMEM the vec was loaded from, read in place (load() copies nothing). The view is
///   registered with the running call (kernel_context::borrows): before ptpu writes that memory
///   (store, sync_copy, a writable uncharged view) the vec takes a copy, so it keeps the value it
///   was loaded with; copying or moving the vec keeps the view;
/// - pending: an elementwise op whose operands are views (or one array it owns), evaluated when
///   its values are first read, or straight into the ref it is stored to, which saves the
///   temporary and its copy (store(c, load(a) + load(b)) is one pass, as a hand-written loop);
///   or a product (dot) of two operands it owns, plus optionally an accumulator view (acc +
///   dot(a, b)), evaluated as one GEMM accumulating into the destination.
/// Views and pending values belong to the body step that made them: read in a later one they
/// are OP4, as their memory may have been refilled; when the call ends, the last step's are
/// copied (its memory is intact then).
template <class C>
class block_values final : public borrower {
public:
    using array_type = typename array_cache<C>::array_type;

    block_values() = default;
    explicit block_values(array_type a) : own_(std::move(a)) {}
    block_values(const block_values& o);
    block_values(block_values&& o) noexcept { take_from(o); }
    block_values& operator=(const block_values& o);
    block_values& operator=(block_values&& o) noexcept;
    ~block_values() {
        if (ctx_ != nullptr || own_.size() != 0 || own2_.size() != 0) release();
    }

    /// A view of `p` (registered with ctx's call).
    static block_values view(const C* p, index_t stride, index_t rows, index_t cols, kernel_context& ctx);
    /// A pending op over `args` (rows × cols). `own` is the storage of an rvalue operand (empty
    /// if none), which a_own / b_own say args.a / args.b are. At least one operand is a view.
    static block_values pending(pending_fn<C> fn, const pending_args<C>& args, bool a_own, bool b_own,
                                array_type own, index_t rows, index_t cols, kernel_context& ctx);
    /// A pending product lhs · rhs (m × n, depth k) of the running body.
    static block_values product(product_fn<C> fn, array_type lhs, array_type rhs, index_t m, index_t n,
                                index_t k, kernel_context& ctx);
    /// acc + p for a pending product p without an accumulator (an rvalue: taken) and a view acc
    /// of p's shape: the product accumulates into acc's values.
    static block_values accumulate(block_values&& p, const block_view<C>& acc);

    [[nodiscard]] bool is_owned() const { return st_ == state::owned; }
    [[nodiscard]] bool is_view() const { return st_ == state::view; }
    [[nodiscard]] bool is_pending() const { return st_ == state::pending; }
    /// A pending product without an accumulator yet.
    [[nodiscard]] bool is_bare_product() const {
        return st_ == state::pending && pfn_ != nullptr && args_.a.data == nullptr;
    }
    [[nodiscard]] index_t rows() const { return st_ == state::owned ? own_.rows() : rows_; }
    [[nodiscard]] index_t cols() const { return st_ == state::owned ? own_.cols() : cols_; }

    /// The values as a plane (a pending op is evaluated first).
    [[nodiscard]] block_view<C> read(const char* where) const {
        if (st_ == state::view) {
            check_fresh(where);
            return args_.a;
        }
        if (st_ != state::owned) {
            check_fresh(where);
            materialize();
        }
        return {own_.data(), own_.cols()};
    }
    /// The values as an owned array (a view copies them; a pending op is evaluated).
    [[nodiscard]] array_type& array(const char* where) const;
    /// Writes the values into the plane dst (rows × cols, row stride ds). A pending op is
    /// evaluated straight into dst (unless an operand partly overlaps it), after which these
    /// values are a view of dst, which now holds them.
    void store_to(C* dst, index_t ds, const char* where) const;

    /// Empties these values (a moved-from or consumed operand): unregistered, storage cached.
    void release();

    void detach() const override;
    void expire() const override;

private:
    enum class state : unsigned char { owned, view, pending, expired };

    void bind(kernel_context& ctx) {
        ctx_ = &ctx;
        step_ = ctx.step;
        core_ = ctx.core;
    }
    // The last byte of a plane of rows_ × cols_ elements.
    [[nodiscard]] const C* end_of(const block_view<C>& v) const {
        return rows_ == 0 || cols_ == 0 ? v.data : v.data + (rows_ - 1) * v.stride + cols_;
    }
    [[nodiscard]] bool overlaps(const block_view<C>& v, const C* dst, index_t ds) const;
    void enlist(const block_view<C>& v) const;
    void unlist() const {
        if (ctx_ != nullptr) ctx_->borrows.remove(this);
        ctx_ = nullptr;
    }
    // Views and pending ops belong to the body step that made them (OP4 otherwise).
    void check_fresh(const char* where) const {
        if (st_ == state::expired || ctx_ == nullptr || ctx_->step != step_ || ctx_->core != core_)
            stale_vec(where);
    }
    [[nodiscard]] pending_args<C> operands() const;
    void drop_arrays() const;
    // A pending op's values into the plane out: a product (accumulating into a copy of its
    // accumulator, or in place when out is it), or an elementwise op.
    void evaluate_into(C* out, index_t os) const;
    // A pending op's values, computed into its own array (the rvalue operand's, in place, when
    // it has one).
    void materialize() const;
    void copy_from(const block_values& o);
    void take_from(block_values& o) noexcept;

    // Mutable: evaluating, copying-on-write and expiring change the form, never the value.
    mutable array_type own_;   // owned values, an elementwise op's owned operand, a product's lhs
    mutable array_type own2_;  // a product's rhs
    mutable pending_args<C> args_{};
    mutable kernel_context* ctx_ = nullptr;
    pending_fn<C> fn_ = nullptr;
    mutable product_fn<C> pfn_ = nullptr;
    index_t depth_ = 0;  // a product's contracting dim
    index_t rows_ = 0, cols_ = 0;  // the shape of a view or pending value
    index_t step_ = 0;
    int core_ = 0;
    mutable state st_ = state::owned;
    mutable bool a_own_ = false, b_own_ = false;
};

// The members below are defined out of the class, so not inline: with PTPU_SEPARATE_RUNTIME a
// kernel file declares their instantiations for the compute types extern (the end of this
// header) and compiles none of them; ptpu::runtime compiles them once.

template <class C>
block_values<C>::block_values(const block_values& o) {
    if (o.st_ != state::owned) o.check_fresh("vec copy");
    copy_from(o);
}
template <class C>
block_values<C>& block_values<C>::operator=(const block_values& o) {
    if (this != &o) {
        if (o.st_ != state::owned) o.check_fresh("vec copy");
        release();
        copy_from(o);
    }
    return *this;
}
template <class C>
block_values<C>& block_values<C>::operator=(block_values&& o) noexcept {
    if (this != &o) {
        release();
        take_from(o);
    }
    return *this;
}

template <class C>
block_values<C> block_values<C>::view(const C* p, index_t stride, index_t rows, index_t cols,
                                      kernel_context& ctx) {
    block_values v;
    v.st_ = state::view;
    v.rows_ = rows;
    v.cols_ = cols;
    v.args_.a = {p, stride};
    v.bind(ctx);
    v.enlist(v.args_.a);
    return v;
}
template <class C>
block_values<C> block_values<C>::pending(pending_fn<C> fn, const pending_args<C>& args, bool a_own,
                                         bool b_own, array_type own, index_t rows, index_t cols,
                                         kernel_context& ctx) {
    block_values v;
    v.st_ = state::pending;
    v.fn_ = fn;
    v.args_ = args;
    v.a_own_ = a_own;
    v.b_own_ = b_own;
    v.own_ = std::move(own);
    v.rows_ = rows;
    v.cols_ = cols;
    v.bind(ctx);
    if (!a_own) v.enlist(args.a);
    if (args.b.data != nullptr && !b_own) v.enlist(args.b);
    return v;
}
template <class C>
block_values<C> block_values<C>::product(product_fn<C> fn, array_type lhs, array_type rhs, index_t m,
                                         index_t n, index_t k, kernel_context& ctx) {
    block_values v;
    v.st_ = state::pending;
    v.pfn_ = fn;
    v.own_ = std::move(lhs);
    v.own2_ = std::move(rhs);
    v.depth_ = k;
    v.rows_ = m;
    v.cols_ = n;
    v.bind(ctx);
    return v;
}
template <class C>
block_values<C> block_values<C>::accumulate(block_values&& p, const block_view<C>& acc) {
    block_values v(std::move(p));
    v.args_.a = acc;
    v.enlist(acc);
    return v;
}

template <class C>
typename block_values<C>::array_type& block_values<C>::array(const char* where) const {
    if (st_ != state::owned) {
        check_fresh(where);
        if (st_ == state::view)
            detach();
        else
            materialize();
    }
    return own_;
}

template <class C>
void block_values<C>::store_to(C* dst, index_t ds, const char* where) const {
    const index_t r = rows(), c = cols();
    if (st_ == state::owned) {
        copy_plane(dst, ds, own_.data(), own_.cols(), r, c);
        return;
    }
    check_fresh(where);
    if (st_ == state::view) {
        if (args_.a.data == dst && args_.a.stride == ds) return;  // stored where it was loaded
        if (overlaps(args_.a, dst, ds)) detach();                 // a shifted copy onto itself
        const block_view<C> v = read(where);
        copy_plane(dst, ds, v.data, v.stride, r, c);
        return;
    }
    const auto clash = [&](const block_view<C>& o, bool own) {
        return !own && o.data != nullptr && overlaps(o, dst, ds) && !(o.data == dst && o.stride == ds);
    };
    if (clash(args_.a, a_own_) || clash(args_.b, b_own_)) {
        materialize();
        copy_plane(dst, ds, own_.data(), own_.cols(), r, c);
        return;
    }
    evaluate_into(dst, ds);
    // dst now holds exactly these values: read them there from now on.
    kernel_context* ctx = ctx_;
    unlist();
    drop_arrays();
    pfn_ = nullptr;
    st_ = state::view;
    args_ = {};
    args_.a = {dst, ds};
    ctx_ = ctx;
    enlist(args_.a);
}

template <class C>
void block_values<C>::release() {
    unlist();
    drop_arrays();
    st_ = state::owned;
    a_own_ = b_own_ = false;
    pfn_ = nullptr;
}

template <class C>
void block_values<C>::detach() const {
    if (st_ == state::pending) {
        materialize();
        return;
    }
    if (st_ != state::view) return;
    array_type a = array_cache<C>::take(rows_, cols_);
    copy_plane(a.data(), cols_, args_.a.data, args_.a.stride, rows_, cols_);
    unlist();
    own_ = std::move(a);
    st_ = state::owned;
}
template <class C>
void block_values<C>::expire() const {
    unlist();
    drop_arrays();
    st_ = state::expired;
}

template <class C>
bool block_values<C>::overlaps(const block_view<C>& v, const C* dst, index_t ds) const {
    const auto lo = reinterpret_cast<std::uintptr_t>(v.data);
    const auto hi = reinterpret_cast<std::uintptr_t>(end_of(v));
    const auto dlo = reinterpret_cast<std::uintptr_t>(dst);
    const auto dhi = reinterpret_cast<std::uintptr_t>(end_of({dst, ds}));
    return lo < dhi && dlo < hi;
}
template <class C>
void block_values<C>::enlist(const block_view<C>& v) const {
    ctx_->borrows.add(this, v.data, end_of(v), step_, core_);
}
template <class C>
pending_args<C> block_values<C>::operands() const {
    pending_args<C> p = args_;
    if (a_own_) p.a = {own_.data(), own_.cols()};
    if (b_own_) p.b = {own_.data(), own_.cols()};
    return p;
}
template <class C>
void block_values<C>::drop_arrays() const {
    array_cache<C>::give(own_);
    own_ = array_type();
    array_cache<C>::give(own2_);
    own2_ = array_type();
}
template <class C>
void block_values<C>::evaluate_into(C* out, index_t os) const {
    if (pfn_ != nullptr) {
        const bool acc = args_.a.data != nullptr;
        if (acc) copy_plane(out, os, args_.a.data, args_.a.stride, rows_, cols_);
        pfn_(out, os, rows_, cols_, depth_, own_.data(), own2_.data(), acc);
    } else {
        fn_(out, os, rows_, cols_, operands());
    }
}
template <class C>
void block_values<C>::materialize() const {
    if (st_ != state::pending) return;
    if (pfn_ == nullptr && (a_own_ || b_own_)) {
        fn_(own_.data(), own_.cols(), rows_, cols_, operands());
    } else {
        array_type out = array_cache<C>::take(rows_, cols_);
        evaluate_into(out.data(), cols_);
        drop_arrays();
        own_ = std::move(out);
    }
    unlist();
    st_ = state::owned;
    a_own_ = b_own_ = false;
    pfn_ = nullptr;
}
template <class C>
void block_values<C>::copy_from(const block_values& o) {
    st_ = o.st_;
    fn_ = o.fn_;
    pfn_ = o.pfn_;
    depth_ = o.depth_;
    // A copy of an owned plane, from the cache.
    const auto copied = [](const array_type& from) {
        array_type to = array_cache<C>::take(from.rows(), from.cols());
        copy_plane(to.data(), to.cols(), from.data(), from.cols(), to.rows(), to.cols());
        return to;
    };
    if (o.own2_.size() > 0) own2_ = copied(o.own2_);
    args_ = o.args_;
    a_own_ = o.a_own_;
    b_own_ = o.b_own_;
    rows_ = o.rows_;
    cols_ = o.cols_;
    step_ = o.step_;
    core_ = o.core_;
    if (o.own_.size() > 0)
        own_ = copied(o.own_);
    else
        own_.resize(o.own_.rows(), o.own_.cols());
    if (st_ == state::view || st_ == state::pending) {
        ctx_ = o.ctx_;
        if (!a_own_ && args_.a.data != nullptr) enlist(args_.a);
        if (st_ == state::pending && args_.b.data != nullptr && !b_own_) enlist(args_.b);
    }
}
template <class C>
void block_values<C>::take_from(block_values& o) noexcept {
    st_ = o.st_;
    fn_ = o.fn_;
    pfn_ = o.pfn_;
    depth_ = o.depth_;
    own2_ = std::move(o.own2_);
    o.own2_ = array_type();
    o.pfn_ = nullptr;
    args_ = o.args_;
    a_own_ = o.a_own_;
    b_own_ = o.b_own_;
    rows_ = o.rows_;
    cols_ = o.cols_;
    step_ = o.step_;
    core_ = o.core_;
    own_ = std::move(o.own_);  // Eigen moves the pointer: views into it stay valid
    ctx_ = o.ctx_;
    if (ctx_ != nullptr) ctx_->borrows.rebind(&o, this);
    o.ctx_ = nullptr;
    o.st_ = state::owned;
    o.a_own_ = o.b_own_ = false;
    o.own_ = array_type();
}

// The compute types of vecs (float, int32, bool): compiled once in ptpu::runtime.
PTPU_INSTANTIATED(class array_cache<float>)
PTPU_INSTANTIATED(class array_cache<std::int32_t>)
PTPU_INSTANTIATED(class array_cache<bool>)
PTPU_INSTANTIATED(class block_values<float>)
PTPU_INSTANTIATED(class block_values<std::int32_t>)
PTPU_INSTANTIATED(class block_values<bool>)

}  // namespace ptpu::detail
