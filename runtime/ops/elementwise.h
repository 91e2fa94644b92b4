// Typed attributes of the elementwise ops.
#pragma once

#include "runtime/graph.h"
#include "runtime/ops/activation.h"

namespace minirt {

enum class UnaryKind {
  kActivation,  // Relu, LeakyRelu, Sigmoid, Tanh, Clip, HardSigmoid, HardSwish: see act
  kExp,
  kLog,
  kSqrt,
  kNeg,
  kAbs,
  kReciprocal,
  kFloor,
  kCeil,
  kErf,
  kCopy,  // Identity, Dropout in inference
};

struct UnaryAttrs : OpAttrs {
  UnaryKind kind = UnaryKind::kCopy;
  Activation act;
};

enum class BinaryKind { kAdd, kSub, kMul, kDiv, kPow, kPRelu, kMax, kMin };

struct BinaryAttrs : OpAttrs {
  BinaryKind kind = BinaryKind::kAdd;
};

const char* binary_name(BinaryKind k);

}  // namespace minirt
