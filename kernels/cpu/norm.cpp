// Placeholder until the norm kernels land.
#include "kernels/cpu/registry.h"

namespace minirt::cpu {

void add_norm_kernels(std::vector<KernelEntry>&) {}

}  // namespace minirt::cpu
