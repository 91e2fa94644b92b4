// Vectorized math (see vmath.h). STATUS: stub, scalar.
#include "kernels/cpu/vmath.h"

namespace minirt::cpu {

void apply_activation(const Activation& act, float* p, int64_t n) { act.apply(p, n); }

}  // namespace minirt::cpu
