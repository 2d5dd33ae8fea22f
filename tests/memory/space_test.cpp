#include <gtest/gtest.h>

#include <ptpu/memory/space.hpp>

using namespace ptpu;

TEST(MemorySpace, DmaPathRuntimeCheckThrowsM1) {
    EXPECT_NO_THROW(check_dma_path(space_kind::hbm, space_kind::vmem, "test"));
    EXPECT_NO_THROW(check_dma_path(space_kind::vmem, space_kind::vmem, "test"));
    try {
        check_dma_path(space_kind::smem, space_kind::vmem, "async_copy");
        FAIL() << "expected ptpu::error";
    } catch (const ptpu::error& e) {
        EXPECT_EQ(e.rule(), "M1");
        EXPECT_STREQ(e.what(),
                     "ptpu[M1] async_copy: no DMA path from smem to vmem; DMA between HBM/ANY and "
                     "VMEM/SMEM, or VMEM to VMEM; semaphores are never copied");
    }
    EXPECT_THROW(check_dma_path(space_kind::semaphore, space_kind::hbm, "x"), ptpu::error);
}

TEST(Error, FormatHasRuleWhereWhatFix) {
    const ptpu::error e("S3", "kernel body", "cannot load", "use sync_copy");
    EXPECT_EQ(e.rule(), "S3");
    EXPECT_STREQ(e.what(), "ptpu[S3] kernel body: cannot load; use sync_copy");
    EXPECT_EQ(ptpu::error::format("V1", "shape", "bad", ""), "ptpu[V1] shape: bad");
}
