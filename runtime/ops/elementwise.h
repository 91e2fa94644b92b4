// Typed attributes of the elementwise ops.
#pragma once

#include "runtime/graph.h"
#include "runtime/ops/activation.h"
#include "runtime/ops/legacy_broadcast.h"

namespace minirt {

enum class UnaryKind {
  kActivation,  // Relu, LeakyRelu, Sigmoid, Tanh, Clip, HardSigmoid, HardSwish, Elu, Selu, Celu,
                // Softplus, Softsign, ThresholdedRelu, Mish, Gelu: see act
  kExp,
  kLog,
  kSqrt,
  kNeg,
  kAbs,
  kReciprocal,
  kFloor,
  kCeil,
  kErf,
  kSin,
  kCos,
  kSign,
  kCopy,  // Identity, Dropout in inference
};

struct UnaryAttrs : OpAttrs {
  UnaryKind kind = UnaryKind::kCopy;
  Activation act;
};

// kMod: Mod with fmod=0, the remainder takes the divisor's sign (integers
// only); kFMod: fmod=1, C's fmod, the remainder takes the dividend's sign.
enum class BinaryKind { kAdd, kSub, kMul, kDiv, kPow, kPRelu, kMax, kMin, kMod, kFMod };

struct BinaryAttrs : OpAttrs {
  BinaryKind kind = BinaryKind::kAdd;
  LegacyBroadcast legacy;  // before opset 7 (see op_registry.h)
};

// Max, Min, Sum, Mean over one or more inputs, all broadcast together.
enum class VariadicKind { kMax, kMin, kSum, kMean };

struct VariadicAttrs : OpAttrs {
  VariadicKind kind = VariadicKind::kSum;
};

const char* binary_name(BinaryKind k);

}  // namespace minirt
