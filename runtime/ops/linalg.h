// Typed attributes of Gemm, MatMul, the normalizations, Softmax and the reductions.
#pragma once

#include "runtime/graph.h"
#include "runtime/ops/activation.h"

#include <utility>
#include <vector>

namespace minirt {

struct GemmAttrs : OpAttrs {
  float alpha = 1.0f, beta = 1.0f;
  bool trans_a = false, trans_b = false;
  // Before opset 7 with broadcast=0 (the default): C must be M x N.
  bool c_full_shape = false;
  Activation act;  // fused
  std::string recipe() const override { return act.recipe(); }
};

// MatMul's geometry with NumPy semantics, for every backend's kernel: a 1-D
// A gets a leading unit axis and a 1-D B a trailing one; the batch axes
// broadcast, a 1 taking the other side's extent (0 included: max() would
// turn a 0 against a 1 into 1 and compute a matrix that is not there).
//
//   MatMulGeometry geo = matmul_geometry(in_shape(g, n, 0), in_shape(g, n, 1));
//   geo.fold_shared_b();                       // a batch of A against one B: one taller product
//   for (int64_t e = 0; e < geo.count(); ++e) {
//     auto [ia, ib] = geo.operands(e);         // A's matrix ia times B's matrix ib is product e
//   }
struct MatMulGeometry {
  int64_t m = 0, k = 0, n = 0;
  Shape batch;                              // the broadcast batch axes
  std::vector<int64_t> stride_a, stride_b;  // per batch axis, in matrices; 0 where the operand broadcasts
  int64_t a_mats = 1, b_mats = 1;           // matrices stored in A and in B

  // Products in the batch (0 when an axis is 0).
  int64_t count() const;
  // The matrices of A and B that batch entry e (row-major over `batch`) multiplies.
  std::pair<int64_t, int64_t> operands(int64_t e) const;
  // When B is one matrix and A's matrices are the batch entries in order,
  // makes the batch one product of m * count() rows and returns true.
  bool fold_shared_b();
};

MatMulGeometry matmul_geometry(Shape a, Shape b);

struct BatchNormAttrs : OpAttrs {  // BatchNormalization, InstanceNormalization
  float epsilon = 1e-5f;
};

struct GroupNormAttrs : OpAttrs {  // version 21: scale and bias per channel
  float epsilon = 1e-5f;
  int64_t num_groups = 1;
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
  int64_t axis = -1;            // resolved to [0, rank) by infer
  int p = 2;                    // 1 or 2
};

enum class ReduceKind { kMean, kSum, kMax, kMin, kL1, kL2, kLogSum, kLogSumExp, kProd, kSumSquare };

struct ReduceAttrs : OpAttrs {
  ReduceKind kind = ReduceKind::kMean;
  std::vector<int64_t> axes;  // resolved to sorted, non-negative by infer; empty = none
  bool keepdims = true;
  bool noop_with_empty_axes = false;
  bool all_axes = false;  // resolved: reduce every axis
};

}  // namespace minirt
