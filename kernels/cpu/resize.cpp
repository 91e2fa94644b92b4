// Placeholder until the resize kernels land.
#include "kernels/cpu/registry.h"

namespace minirt::cpu {

void add_resize_kernels(std::vector<KernelEntry>&) {}

}  // namespace minirt::cpu
