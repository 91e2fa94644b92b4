// Typed attributes of Gemm, MatMul, the normalizations, Softmax and the reductions.
#pragma once

#include "runtime/graph.h"
#include "runtime/ops/activation.h"

#include <vector>

namespace minirt {

struct GemmAttrs : OpAttrs {
  float alpha = 1.0f, beta = 1.0f;
  bool trans_a = false, trans_b = false;
  // Before opset 7 with broadcast=0 (the default): C must be M x N.
  bool c_full_shape = false;
  Activation act;  // fused
};

struct BatchNormAttrs : OpAttrs {  // BatchNormalization, InstanceNormalization
  float epsilon = 1e-5f;
};

struct LayerNormAttrs : OpAttrs {
  int64_t axis = -1;  // first normalized axis; resolved to [0, rank) by infer
  float epsilon = 1e-5f;
};

struct SoftmaxAttrs : OpAttrs {
  int64_t axis = -1;       // resolved to [0, rank) by infer
  bool coerce_2d = false;  // before opset 13: softmax over the flattened axes [axis, rank)
  bool log = false;        // LogSoftmax
};

struct LpNormAttrs : OpAttrs {  // LpNormalization
  int64_t axis = -1;  // resolved to [0, rank) by infer
  int p = 2;          // 1 or 2
};

enum class ReduceKind { kMean, kSum, kMax, kMin, kL1, kL2, kLogSum, kLogSumExp, kProd, kSumSquare };

struct ReduceAttrs : OpAttrs {
  ReduceKind kind = ReduceKind::kMean;
  std::vector<int64_t> axes;  // resolved to sorted, non-negative by infer; empty = none
  bool keepdims = true;
  bool noop_with_empty_axes = false;
  bool all_axes = false;      // resolved: reduce every axis
};

}  // namespace minirt
