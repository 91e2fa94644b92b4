// What the blocked convolution tests (test_nchwc_conv, test_nchwc_winograd)
// share: the ISAs with a blocked layout this CPU runs, and the activations
// they try in the epilogue.
#pragma once

#include "kernels/cpu/sgemm.h"
#include "poison.h"
#include "runtime/ops/activation.h"

#include <vector>

namespace minirt::cpu::testing {

using minirt::testing::is_poison;
using minirt::testing::kPoison;
using minirt::testing::poison;

struct Isa {
  SgemmIsa isa;
  int block;
};

inline std::vector<Isa> blocked_isas() {
  std::vector<Isa> out;
  for (Isa i : {Isa{SgemmIsa::kAvx2, 8}, Isa{SgemmIsa::kAvx512, 16}})
    if (sgemm_isa_supported(i.isa)) out.push_back(i);
  return out;
}

// An activation of kind k with the parameters the tests use.
inline Activation act_of(ActKind k) {
  Activation a;
  a.kind = k;
  if (k == ActKind::kClip) a.alpha = -0.3f, a.beta = 0.4f;
  if (k == ActKind::kLeakyRelu) a.alpha = 0.1f;
  return a;
}

}  // namespace minirt::cpu::testing
