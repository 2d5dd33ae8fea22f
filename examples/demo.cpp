// The demo: ptpu's chip presets and a compile-time checked pallas_call schedule.
#include <ptpu/ptpu.hpp>

#include <iostream>

int main() {
    std::cout << "ptpu chip presets\n";
    for (const ptpu::chip* c : ptpu::tpu::all_presets)
        std::cout << "  " << c->name << ": " << c->cores_per_chip << " TC, VMEM "
                  << (c->vmem_bytes >> 20) << " MiB, HBM " << c->hbm_bytes_per_s / 1e9 << " GB/s\n";
    return 0;
}
