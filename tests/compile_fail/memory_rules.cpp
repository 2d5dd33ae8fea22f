// Compile-fail cases for every compile-time rule of the accessibility table.
//! ko 1 S3
//! ko 2 S3
//! ko 3 S4
//! ko 4 S4
//! ko 5 S4
//! ko 6 21
//! ko 7 S5
//! ko 8 29
//! ko 9 M1 from semaphore to VMEM. copy between
//! ko 10 21
#include <ptpu/memory/rules.hpp>

using namespace ptpu;

#if !defined(PTPU_KO)
static_assert(rules::require_vector_load<vmem>());
static_assert(rules::require_scalar_store<smem>());
#elif PTPU_KO == 1
static_assert(rules::require_vector_load<hbm>());  // S3: HBM is DMA-only
#elif PTPU_KO == 2
static_assert(rules::require_vector_store<any>());  // S3: ANY is DMA-only
#elif PTPU_KO == 3
static_assert(rules::require_vector_load<smem>());  // S4: SMEM is scalar-only
#elif PTPU_KO == 4
static_assert(rules::require_vector_store<smem>());  // S4
#elif PTPU_KO == 5
static_assert(rules::require_scalar_store<vmem>());  // S4: no scalar stores to VMEM
#elif PTPU_KO == 6
static_assert(rules::require_vector_load<semaphore>());  // 21
#elif PTPU_KO == 7
static_assert(rules::require_scratch<hbm>());  // S5
#elif PTPU_KO == 8
static_assert(rules::require_block_space<vmem_shared>());  // 29
#elif PTPU_KO == 9
static_assert(rules::require_dma<semaphore, vmem>());  // M1
#elif PTPU_KO == 10
static_assert(rules::require_scalar_load<semaphore>());  // 21
#endif

int main() {}
