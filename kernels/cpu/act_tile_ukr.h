// A fused activation over a tile in place, for the ISA files' one-body
// headers (nchwc_conv_ukr.h, winograd_ukr.h): the kind chosen once per
// tile, its math inlined in the loop for the common costly ones (SiLU,
// Sigmoid, HardSwish, LeakyRelu, Tanh), vmath's act form for the rest.
// Traits W: kLanes-wide V, loadu(p), storeu(p, v), act(v, activation),
// act_kind<K>(v, activation). In an anonymous namespace, no std template:
// each ISA object has its own copy.
#pragma once

#include <cstdint>

#include "runtime/ops/activation.h"  // the Activation struct's fields

namespace minirt::cpu {
namespace {

template <class W>
struct ActTile {
  // n pixels (ps floats apart) x nb blocks (bs floats apart) of one vector each.
  template <ActKind K>
  static void kind(float* y, int64_t ps, int64_t bs, int n, int nb, const Activation& act) {
    for (int p = 0; p < n; ++p)
      for (int o = 0; o < nb; ++o) {
        float* q = y + p * ps + o * bs;
        W::storeu(q, W::template act_kind<K>(W::loadu(q), act));
      }
  }

  // Out of line: inlined into a register tile's epilogue it would take the
  // registers the accumulators need.
  __attribute__((noinline)) static void run(float* y, int64_t ps, int64_t bs, int n, int nb, const Activation& act) {
    // The common ones with the kind known inside the loop, the others through W::act.
    const ActKind k = act.kind;
    if (k == ActKind::kSilu) return kind<ActKind::kSilu>(y, ps, bs, n, nb, act);
    if (k == ActKind::kSigmoid) return kind<ActKind::kSigmoid>(y, ps, bs, n, nb, act);
    if (k == ActKind::kHardSwish) return kind<ActKind::kHardSwish>(y, ps, bs, n, nb, act);
    if (k == ActKind::kLeakyRelu) return kind<ActKind::kLeakyRelu>(y, ps, bs, n, nb, act);
    if (k == ActKind::kTanh) return kind<ActKind::kTanh>(y, ps, bs, n, nb, act);
    for (int p = 0; p < n; ++p)
      for (int o = 0; o < nb; ++o) {
        float* q = y + p * ps + o * bs;
        W::storeu(q, W::act(W::loadu(q), act));
      }
  }
};

}  // namespace
}  // namespace minirt::cpu
