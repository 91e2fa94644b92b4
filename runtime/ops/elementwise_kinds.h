// The elementwise ops' kinds, alone: the CPU kernels, the passes and the
// CUDA module's device code (kernels/cuda/elementwise.cu, compiled by nvcc)
// all switch on these enums, so this header includes only the op table,
// which includes nothing.
#pragma once

#include "runtime/ops/op_table.h"

namespace minirt {

// UnaryKind: one kind per row of MINIRT_UNARY_KINDS (runtime/ops/op_table.h):
// kActivation runs the node's Activation (Relu, Sigmoid, ...), kCopy is
// Identity and Dropout in inference.

// kMod: Mod with fmod=0, the remainder takes the divisor's sign (integers
// only); kFMod: fmod=1, C's fmod, the remainder takes the dividend's sign.
enum class BinaryKind { kAdd, kSub, kMul, kDiv, kPow, kPRelu, kMax, kMin, kMod, kFMod, kCount };

// Max, Min, Sum, Mean over one or more inputs, all broadcast together.
// (kCount, in each enum: the number of kinds, which no node has.)
enum class VariadicKind { kMax, kMin, kSum, kMean, kCount };

}  // namespace minirt
