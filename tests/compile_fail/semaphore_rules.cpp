// Compile-fail cases for the semaphore and async-copy rules Pallas checks when it lowers a kernel
// (checks 35, 36, 38; docs/rules.md): one mistake each, one message.
//! ko 1 35
//! ko 2 36
//! ko 3 35
//! ko 4 36
//! ko 5 36
//! ko 6 38
//! ko 7 36
//! ko 8 35
//! ko 9 36
#include <ptpu/ptpu.hpp>

using namespace ptpu;

using dma_sems = ref<dma_semaphore, semaphore, 1, extents<2>>;
using one_sem = ref<regular_semaphore, semaphore, 0, extents<>>;

void body(ref<const float, any, 2> x, ref<float, vmem, 2, extents<8, 128>> v, dma_sems dsem, one_sem sem,
          [[maybe_unused]] ref<const bool, any, 2> bx, [[maybe_unused]] ref<bool, vmem, 2> bv) {
#if !defined(PTPU_KO)
    auto d = make_async_copy(x.at(ds(0, 8), ds(0, 128)), v, dsem.at(0));
    d.start();
    d.wait();
    semaphore_signal(sem, 2);
    semaphore_wait(sem, 2);
    (void)semaphore_read(dsem.at(1));
#elif PTPU_KO == 1
    (void)make_async_copy(x.at(ds(0, 8), ds(0, 128)), v, dsem);  // 35: an array of semaphores
#elif PTPU_KO == 2
    (void)make_async_copy(x.at(ds(0, 8), ds(0, 128)), v, sem);  // 36: a DMA on a regular semaphore
#elif PTPU_KO == 3
    semaphore_signal(dsem);  // 35: a non-()-shaped semaphore
#elif PTPU_KO == 4
    semaphore_wait(v, 1);  // 36: not a semaphore
#elif PTPU_KO == 5
    semaphore_signal(sem, 1.5);  // 36: must signal an int32 value
#elif PTPU_KO == 6
    (void)make_async_copy(bx, bv, dsem.at(0));  // 38: bool DMAs
#elif PTPU_KO == 7
    [[maybe_unused]] Scratch<semaphore, float, 2> s;  // 36: semaphore scratch of floats
#elif PTPU_KO == 8
    (void)make_async_copy(x.at(ds(0, 8), ds(0, 128)), v, v);  // 35: the semaphore is not a semaphore ref
#elif PTPU_KO == 9
    (void)semaphore_read(v);  // 36
#endif
}

int main() {}
