// A project outside ptpu's tree: finds the installed package and uses the public header.
#include <ptpu/ptpu.hpp>

#include <iostream>

static_assert(ptpu::tpu::v5e.megacore == false && ptpu::tpu::v5p.megacore);

int main() {
    ptpu::bf16 h(1.0f);
    if (static_cast<float>(h) != 1.0f) return 1;
    std::cout << "consumer: ok (" << ptpu::tpu::v5e.name << ")\n";
    return 0;
}
