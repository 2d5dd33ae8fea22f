// Pins the whole accessibility table (S1–S6, S47, S56, checks 21 and 29): compiling is the test.
#include <ptpu/memory/rules.hpp>
#include <ptpu/memory/space.hpp>

namespace {
using namespace ptpu;

struct row {
    space_kind k;
    bool vl, vs, sl, ss, dma, scratch, block, windowless, per_core, far;
};
// The expected table, written out independently of the implementation's.
constexpr row expected[] = {
    {space_kind::any, false, false, false, false, true, false, false, true, false, true},
    {space_kind::hbm, false, false, false, false, true, false, false, true, false, true},
    {space_kind::vmem, true, true, true, false, true, true, true, false, true, false},
    {space_kind::smem, false, false, true, true, true, true, true, false, true, false},
    {space_kind::semaphore, false, false, false, false, false, true, false, true, true, false},
    {space_kind::vmem_shared, false, false, false, false, true, false, false, false, false, false},
    {space_kind::cmem, false, false, false, false, true, false, false, false, false, true},
};

constexpr bool table_matches() {
    for (const row& r : expected) {
        const auto& a = access(r.k);
        if (a.vector_load != r.vl || a.vector_store != r.vs || a.scalar_load != r.sl ||
            a.scalar_store != r.ss || a.dma_endpoint != r.dma || a.scratch != r.scratch ||
            a.block_buffer != r.block || a.windowless != r.windowless || a.per_core != r.per_core ||
            a.far != r.far)
            return false;
    }
    return true;
}
static_assert(table_matches());
static_assert(name(space_kind::vmem) == "vmem" && name(space_kind::semaphore) == "semaphore");

// S3: ANY/HBM are touched by DMA only.
static_assert(!vector_loadable<any> && !vector_storable<hbm> && !scalar_loadable<hbm> &&
              !scalar_storable<any>);
// S4: SMEM scalar-only; VMEM has no scalar stores.
static_assert(scalar_loadable<smem> && scalar_storable<smem> && !vector_loadable<smem>);
static_assert(vector_loadable<vmem> && vector_storable<vmem> && !scalar_storable<vmem>);
// 21: semaphores are never loaded or stored.
static_assert(!vector_loadable<semaphore> && !scalar_loadable<semaphore>);
// S5: scratch in vmem, smem, semaphore only.
static_assert(scratch_space<vmem> && scratch_space<smem> && scratch_space<semaphore>);
static_assert(!scratch_space<any> && !scratch_space<hbm> && !scratch_space<cmem>);
// 29 / S47 / S56: windows in vmem or smem; any/hbm/semaphore blocks are windowless.
static_assert(block_buffer_space<vmem> && block_buffer_space<smem> && !block_buffer_space<hbm>);
static_assert(windowless_space<any> && windowless_space<hbm> && windowless_space<semaphore>);
static_assert(!block_buffer_space<vmem_shared> && !windowless_space<vmem_shared>);
// S6: per-core VMEM/SMEM/semaphores, shared HBM.
static_assert(vmem::access().per_core && smem::access().per_core && semaphore::access().per_core &&
              !hbm::access().per_core);

// M1: DMA pairs, every ordered pair.
constexpr bool dma_pairs_match() {
    constexpr space_kind all_spaces[] = {space_kind::any,  space_kind::hbm,       space_kind::vmem,
                                         space_kind::smem, space_kind::semaphore, space_kind::vmem_shared,
                                         space_kind::cmem};
    for (space_kind s : all_spaces)
        for (space_kind d : all_spaces) {
            const bool sem = s == space_kind::semaphore || d == space_kind::semaphore;
            const bool far = access(s).far || access(d).far;
            const bool vv =
                (s == space_kind::vmem && (d == space_kind::vmem || d == space_kind::vmem_shared)) ||
                (d == space_kind::vmem && s == space_kind::vmem_shared);
            if (dma_path(s, d) != (!sem && (far || vv))) return false;
        }
    return true;
}
static_assert(dma_pairs_match());
static_assert(dma_pair<hbm, vmem> && dma_pair<vmem, any> && dma_pair<any, smem> && dma_pair<vmem, vmem> &&
              !dma_pair<vmem, smem> && !dma_pair<semaphore, hbm>);

// The require_* helpers accept what the table allows (their failures are compile_fail tests).
static_assert(rules::require_vector_load<vmem>() && rules::require_vector_store<vmem>());
static_assert(rules::require_scalar_load<smem>() && rules::require_scalar_store<smem>());
static_assert(rules::require_scalar_load<vmem>());
static_assert(rules::require_scratch<semaphore>() && rules::require_block_space<any>());
static_assert(rules::require_dma<hbm, vmem>());

// Types are not spaces unless they derive from memory_space.
static_assert(space<vmem> && !space<int>);
}  // namespace
