#include <gtest/gtest.h>

#include <ptpu/core/index.hpp>
#include <ptpu/core/shape.hpp>

using namespace ptpu;

static_assert(sizeof(sshape<8, 128>) == 1, "static extents cost no storage");
static_assert(sshape<8, 128>::is_static && sshape<8, 128>{}.size() == 1024);
static_assert(sshape<8, 128>::static_extents() == std::array<index_t, 2>{8, 128});
static_assert(shape<C<4>, bounded<16>, index_t>::static_extents() == std::array<index_t, 3>{4, 16, -1});
static_assert(!shape<C<4>, index_t>::is_static);
static_assert((c<2> + c<3>).value == 5 && (c<4> * c<8>).value == 32);  // static∘static is static
static_assert(std::is_same_v<decltype(c<2> * c<3>), C<6>>);
static_assert(idx(c<1>, 2) == index_tuple<2>{{index_entry{1, -1}, index_entry{2, -1}}});
static_assert(idx(3, ds(4, 2))[1].is_slice() && !idx(3, ds(4, 2))[0].is_slice());
static_assert(ds(3, 4) == slice{3, 4} && ds(5) == slice{0, 5});
static_assert(bounded<8>(c<8>).value() == 8);
// In-process negative tests (V1, V2 as concepts): these spellings do not compile.
static_assert(!extent<C<0>> && !extent<C<-3>> && extent<C<1>> && extent<bounded<4>>);
static_assert(!std::is_constructible_v<bounded<8>, C<9>>);
static_assert(!std::is_constructible_v<bounded<8>, C<0>>);

TEST(Shape, MixedStaticDynamicBounded) {
    shape<C<4>, bounded<16>, index_t> s{c<4>, bounded<16>(10), 7};
    EXPECT_EQ(s.extents(), (std::array<index_t, 3>{4, 10, 7}));
    EXPECT_EQ(s.size(), 280);
    EXPECT_EQ(s.get<1>(), 10);
    EXPECT_EQ(decltype(s)::rank, 3u);
}

TEST(Shape, DynamicZeroOrNegativeExtentThrowsV1) {
    try {
        shape<C<4>, index_t> s{c<4>, 0};
        FAIL() << "expected ptpu::error, got shape of size " << s.size();
    } catch (const ptpu::error& e) {
        EXPECT_EQ(e.rule(), "V1");
        EXPECT_STREQ(e.what(),
                     "ptpu[V1] shape: zero or negative extent; every extent must be >= 1 (extent 1 is 0)");
    }
    EXPECT_THROW((shape<index_t>{-2}), ptpu::error);
}

TEST(Bounded, ValueAboveBoundThrowsV2) {
    EXPECT_EQ(bounded<8>(8).value(), 8);
    EXPECT_EQ(bounded<8>(1).value(), 1);
    try {
        bounded<8> b(9);
        FAIL() << b.value();
    } catch (const ptpu::error& e) {
        EXPECT_EQ(e.rule(), "V2");
        EXPECT_STREQ(e.what(),
                     "ptpu[V2] bounded<Max>: value outside [1, Max]; a bounded extent holds a "
                     "positive value no larger than its static maximum (got 9, Max 8)");
    }
    EXPECT_THROW(bounded<8>(0), ptpu::error);
    EXPECT_THROW(bounded<8>(-1), ptpu::error);
}
