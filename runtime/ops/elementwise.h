// Typed attributes of the elementwise ops.
#pragma once

#include "runtime/graph.h"
#include "runtime/ops/activation.h"
#include "runtime/ops/elementwise_kinds.h"
#include "runtime/ops/legacy_broadcast.h"

namespace minirt {

struct UnaryAttrs : OpAttrs {
  UnaryKind kind = UnaryKind::kCopy;
  Activation act;
  std::string recipe() const override { return act.recipe(); }
};

struct BinaryAttrs : OpAttrs {
  BinaryKind kind = BinaryKind::kAdd;
  LegacyBroadcast legacy;  // before opset 7 (see op_registry.h)
  // The activation step after it (a quantize pair, Relu, ...), taken into a
  // blocked float binary op by the CPU after the algorithms are chosen
  // (nchwc_fuse_chosen); the CPU's binary kernels apply it, y = act(a op b).
  Activation act;
  std::string recipe() const override { return act.recipe(); }
};

struct VariadicAttrs : OpAttrs {
  VariadicKind kind = VariadicKind::kSum;
};

const char* binary_name(BinaryKind k);

}  // namespace minirt
