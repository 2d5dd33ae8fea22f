// Pins how static shapes propagate (rule OP1 at compile time): the extents of the refs
// pallas_call hands a body, the vec types loads give, and the static shape of every op's result,
// for static, dynamic and mixed operands. Compiling is the test.
#include <ptpu/ptpu.hpp>

#include <cstdint>
#include <numeric>  // std::iota, which a call to ptpu::iota must never meet
#include <type_traits>

namespace {
using namespace ptpu;

template <index_t R, index_t C>
using block = vmem_ref<float, 2, extents<R, C>>;
template <class T, class U>
inline constexpr bool same = std::is_same_v<T, U>;
template <class R>
R make();  // a value of type R in unevaluated operands

// ---- extents ------------------------------------------------------------------------------------

static_assert(same<dextents<2>, extents<dyn, dyn>> && same<dextents<0>, extents<>>);
static_assert(same<extents_from_t<std::array<index_t, 2>{8, 128}>, extents<8, 128>>);
static_assert(extents<8, 128>::is_static && !extents<8, dyn>::is_static && extents<dyn>::is_dynamic);
static_assert(same<vmem_ref<float, 2>, ref<float, vmem, 2, extents<dyn, dyn>>>);  // the default
static_assert(sizeof(block<8, 128>) == sizeof(vmem_ref<float, 2>));               // the type carries them

// ---- refs: conversions ------------------------------------------------------------------------

static_assert(std::is_convertible_v<block<8, 128>, vmem_ref<float, 2>>);           // static -> dyn
static_assert(std::is_convertible_v<block<8, 128>, vmem_ref<const float, 2>>);     // and -> const
static_assert(!std::is_convertible_v<vmem_ref<float, 2>, block<8, 128>>);          // dyn -> static:
static_assert(std::is_constructible_v<block<8, 128>, vmem_ref<float, 2>>);         // explicit
static_assert(!std::is_constructible_v<block<8, 128>, vmem_ref<const float, 2>>);  // const stays
static_assert(!std::is_constructible_v<ref<float, smem, 2>, block<8, 128>>);       // space stays
static_assert(same<decltype(make<block<8, 128>>().as_const()), ref<const float, vmem, 2, extents<8, 128>>>);
static_assert(same<decltype(make<vmem_ref<float, 3, extents<2, 8, 128>>>().at(0)), block<8, 128>>);
static_assert(same<decltype(make<block<8, 128>>().at(ds(0, 4), ds(0, 128))), vmem_ref<float, 2>>);

// ---- the refs a body gets ---------------------------------------------------------------------

using X = Array<float, 16, 4, 256>;
constexpr auto map3 = [](auto i) { return idx(i, 0, 0); };
static_assert(same<detail::kernel_ref_t<Arg<X, BlockSpec<Block<squeezed, 4, 128>, map3>>>,
                   ref<float, vmem, 2, extents<4, 128>>>);  // squeezed dims removed
static_assert(same<detail::kernel_ref_t<Arg<X, BlockSpec<Block<8, 4, 256>, map3>>>,
                   ref<float, vmem, 3, extents<8, 4, 256>>>);
static_assert(same<detail::kernel_ref_t<Arg<X, BlockSpec<Block<bounded_slice{8}, 4, 256>, map3>>>,
                   ref<float, vmem, 3, extents<dyn, 4, 256>>>);  // its size is the index map's
static_assert(same<detail::kernel_ref_t<Arg<X, BlockSpec<Block<element{8}, 4, 256>, map3>>>,
                   ref<float, vmem, 3, extents<8, 4, 256>>>);
static_assert(same<detail::kernel_ref_t<Arg<X>>, ref<float, vmem, 3, extents<16, 4, 256>>>);  // Full
static_assert(same<detail::kernel_ref_t<Arg<X, BlockSpec<Full, zero_map, any>>>,
                   ref<float, any, 3, extents<16, 4, 256>>>);  // no window: the whole array
static_assert(same<detail::kernel_ref_t<Arg<X, BlockSpec<Full, zero_map, any>>, true>,
                   ref<const float, any, 3, extents<16, 4, 256>>>);  // an unaliased input's: read-only (R4)

// ---- loads ------------------------------------------------------------------------------------

using v8 = vec<float, 8, 128>;
static_assert(same<decltype(load(make<block<8, 128>>())), v8>);
static_assert(same<decltype(load(make<vmem_ref<const bf16, 2, extents<16, 128>>>())), vec<bf16, 16, 128>>);
static_assert(same<decltype(load(make<vmem_ref<float, 3, extents<2, 4, 128>>>())), v8>);  // collapsed
static_assert(same<decltype(load(make<vmem_ref<float, 3, extents<dyn, 4, 128>>>())), vec<float, dyn, 128>>);
static_assert(same<decltype(load(make<vmem_ref<float, 1, extents<300>>>())), vec<float, 1, 300>>);
static_assert(same<decltype(load(make<vmem_ref<float, 1>>())), vec<float, 1, dyn>>);  // rank 1: one row
static_assert(same<decltype(load(make<vmem_ref<float, 2>>())), vec<float>>);
static_assert(same<decltype(load(make<block<8, 128>>(), ds(0, 8), ds(0, 8))), vec<float>>);  // run-time ds
static_assert(same<decltype(load(make<vmem_ref<float, 2>>(), ds(8, c<8>), ds(0, c<128>))), v8>);  // static ds
static_assert(same<decltype(load(make<vmem_ref<float, 2>>(), ds(8, c<8>), ds(0, 128))), vec<float, 8, dyn>>);
static_assert(same<decltype(make<vmem_ref<float, 2>>().at(ds(c<8>), ds(0, c<128>))), block<8, 128>>);
static_assert(same<decltype(ds(4, c<8>)), static_slice<8>> && ds(4, c<8>) == ds(4, 8));
static_assert(idx(ds(16, c<8>), 0)[0] == index_entry{16, 8});  // index maps take them too
static_assert(same<decltype(zeros_like(make<block<8, 128>>())), v8>);

// ---- vecs: conversions ------------------------------------------------------------------------

static_assert(std::is_convertible_v<v8, vec<float>> && std::is_convertible_v<v8, vec<float, 8, dyn>>);
static_assert(!std::is_convertible_v<vec<float>, v8> && std::is_constructible_v<v8, vec<float>>);
static_assert(!std::is_constructible_v<vec<bf16, 8, 128>, v8>);  // dtypes never convert
static_assert(v8::is_static && !vec<float, 8, dyn>::is_static && vec<float>::static_rows == dyn);

// ---- elementwise: NumPy broadcasting of the static shapes ---------------------------------------

template <index_t R, index_t C>
using vf = vec<float, R, C>;
static_assert(same<decltype(make<v8>() + make<v8>()), v8>);
static_assert(same<decltype(make<v8>() * make<vf<1, 128>>()), v8>);
static_assert(same<decltype(make<vf<8, 1>>() - make<vf<1, 128>>()), v8>);
static_assert(same<decltype(make<vf<8, dyn>>() + make<vf<dyn, 128>>()), v8>);  // checked at run time
static_assert(same<decltype(make<vf<1, dyn>>() + make<vec<float>>()), vec<float>>);
static_assert(same<decltype(make<vf<8, 128>>() + make<vec<float>>()), v8>);  // 8 and 128 fix the result
static_assert(same<decltype(make<v8>() + 1.0f), v8> && same<decltype(2.0 * make<v8>()), v8>);
static_assert(same<decltype(make<v8>() < make<vf<1, 1>>()), vec<bool, 8, 128>>);
static_assert(same<decltype(exp(make<v8>())), v8> && same<decltype(-make<v8>()), v8>);
static_assert(same<decltype(!(make<v8>() > 0.0f)), vec<bool, 8, 128>>);
static_assert(same<decltype(cast<bf16>(make<v8>())), vec<bf16, 8, 128>>);
static_assert(same<decltype(make<v8&>() += make<vf<1, 128>>()), v8&>);
static_assert(same<decltype(maximum(make<vf<8, 1>>(), make<vf<1, 128>>())), v8>);
static_assert(same<decltype(where(make<vec<bool, 8, 1>>(), make<vf<1, 128>>(), 0.0f)), v8>);
static_assert(same<decltype(where(make<vec<bool, 8, 128>>(), 1.0f, make<vec<float>>())), v8>);
// The predicates behind the compile-time checks.
static_assert(detail::broadcastable(8, 1) && detail::broadcastable(dyn, 5) && !detail::broadcastable(8, 16));
static_assert(detail::broadcast_extent(1, dyn) == dyn && detail::broadcast_extent(8, dyn) == 8);

// ---- dot --------------------------------------------------------------------------------------

static_assert(same<decltype(dot(make<v8>(), make<vf<128, 256>>())), vf<8, 256>>);
static_assert(
    same<decltype(dot<dot_options{.transpose_b = true}>(make<v8>(), make<vf<256, 128>>())), vf<8, 256>>);
static_assert(same<decltype(dot<dot_options{.transpose_a = true}>(make<vf<128, 8>>(), make<vf<128, 256>>())),
                   vf<8, 256>>);
static_assert(same<decltype(dot(make<vec<std::int8_t, 32, 128>>(), make<vec<std::int8_t, 128, 128>>())),
                   vec<std::int32_t, 32, 128>>);
static_assert(same<decltype(dot(make<v8>(), make<vf<128, dyn>>())), vf<8, dyn>>);
// Run-time options: an extent stays static only when both transpose choices give it.
static_assert(same<decltype(dot(make<v8>(), make<vf<128, 256>>(), dot_options{})), vec<float>>);
static_assert(same<decltype(dot(make<vf<128, 128>>(), make<vf<128, 128>>(), dot_options{})), vf<128, 128>>);

// ---- reductions -------------------------------------------------------------------------------

static_assert(same<decltype(sum(make<v8>())), vf<1, 1>> &&
              same<decltype(mean(make<vec<float>>())), vf<1, 1>>);
static_assert(same<decltype(sum(make<v8>(), c<0>)), vf<1, 128>> &&
              same<decltype(max(make<v8>(), c<1>)), vf<8, 1>>);
static_assert(same<decltype(min(make<v8>(), c<-2>)), vf<1, 128>> &&
              same<decltype(mean(make<v8>(), c<-1>)), vf<8, 1>>);
static_assert(same<decltype(sum(make<v8>(), 1)), vec<float>>);          // a run-time axis
static_assert(same<decltype(sum(make<vf<1, 128>>(), 0)), vf<1, dyn>>);  // 1 either way
static_assert(same<decltype(make<v8>() - max(make<v8>(), c<1>)), v8>);  // softmax-style

// ---- layout and creation ----------------------------------------------------------------------

static_assert(same<decltype(transpose(make<vf<8, 256>>())), vf<256, 8>>);
static_assert(same<decltype(broadcast_to(make<vf<1, 128>>(), c<8>, c<128>)), v8>);
static_assert(same<decltype(broadcast_to(make<vf<1, 128>>(), 8, 128)), vf<dyn, 128>>);
static_assert(same<decltype(concatenate(make<v8>(), make<vf<16, 128>>(), c<0>)), vf<24, 128>>);
static_assert(same<decltype(concatenate(make<v8>(), make<vf<8, dyn>>(), c<1>)), vf<8, dyn>>);
static_assert(same<decltype(concatenate(make<v8>(), make<v8>(), 0)), vec<float>>);  // a run-time axis
static_assert(same<decltype(full<float>(c<8>, c<128>, 1.0f)), v8>);
static_assert(same<decltype(zeros<float>(c<8>, 128)), vf<8, dyn>> &&
              same<decltype(zeros<float>(8, 128)), vec<float>>);
static_assert(same<decltype(iota<std::int32_t>(c<8>, c<128>, 0)), vec<std::int32_t, 8, 128>>);
// iota is a function object: a static axis (c<1>, whose base std::integral_constant associates
// namespace std) brings no std::iota into the call. As a function template, the first call was
// ambiguous with std::iota and the second one chose std::iota.
static_assert(same<decltype(iota<std::int32_t>(c<8>, c<128>, c<1>)), vec<std::int32_t, 8, 128>>);
static_assert(same<decltype(iota<float>(8, 128, c<1>)), vec<float>>);
static_assert(same<decltype(iota<float>(c<8>, 128, std::integral_constant<int, 0>{})), vf<8, dyn>>);
static_assert(requires { ptpu::iota<float>(c<8>, c<256>, c<1>); });
static_assert(same<decltype(zeros_like(make<v8>())), v8> && same<decltype(full_like(make<v8>(), 2)), v8>);
static_assert(same<decltype(make<v8>()(ds(0, 8), ds(0, 8))), vec<float>>);  // a run-time window
static_assert(same<decltype(make<vec<float>>()(ds(0, c<8>), ds(128, c<128>))), v8>);

// ---- chains: the static shape survives end to end ----------------------------------------------

static_assert(
    same<decltype(logistic(dot(make<v8>(), make<vf<128, 512>>())) * 2.0f + make<vf<1, 512>>()), vf<8, 512>>);

}  // namespace
