// The elementwise ops' kinds, alone: the CPU kernels, the passes and the
// CUDA module's device code (kernels/cuda/elementwise.cu, compiled by nvcc)
// all switch on these enums, so this header includes nothing.
#pragma once

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

// kMod: Mod with fmod=0, the remainder takes the divisor's sign (integers
// only); kFMod: fmod=1, C's fmod, the remainder takes the dividend's sign.
enum class BinaryKind { kAdd, kSub, kMul, kDiv, kPow, kPRelu, kMax, kMin, kMod, kFMod };

// Max, Min, Sum, Mean over one or more inputs, all broadcast together.
enum class VariadicKind { kMax, kMin, kSum, kMean };

}  // namespace minirt
