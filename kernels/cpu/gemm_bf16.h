// The bf16 matrix product (SessionOptions::math = kBf16 on the CPU): Gemm and
// MatMul with a constant B (a classifier's fully connected layer), its
// products in bfloat16 with float32 accumulation, alpha, the bias and the
// activation applied in float32.
//
//   if (bf16_gemm_declined(m, Bf16Isa::kAmx).empty()) {
//     Bf16Gemm p(isa, m, k, n, b, n, 1);   // plan time: B (k x n, row-major) packed to bf16 once
//     p.run(a, k, 1, bias, 1.0f, act, y, workspace, pool);  // run time: allocates nothing
//   }
//
// Semantics: each element of A and B rounded to bfloat16 (round to nearest
// even), the products summed in float32, then y = act(alpha * sum + bias).
// The AVX512_BF16 instruction also treats denormal bf16 operands as zero,
// which the portable reference (Bf16Isa::kNone, the tests' yardstick on
// every host) does not.
//
// Why: a batch-1 classifier's fully connected layer is a matrix-vector
// product that reads every weight once; its time is the weights' bytes
// (ResNet-50's: 8 MB in float32, 4 in bf16). Up to 16 rows (a batch of 16)
// the product is that read; past it, it is arithmetic that vdpbf16ps does no
// faster than the float32 SGEMM, and the float32 kernel runs it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_caps.h"
#include "kernels/cpu/gemm_bf16_isa.h"

#include "runtime/ops/activation.h"

namespace minirt {
class ThreadPool;
class Kernel;
struct Graph;
struct Node;
}  // namespace minirt

namespace minirt::cpu {

// A Gemm or MatMul with a constant float32 B (a classifier's weights), as
// the bf16 and int8 products take it: C = act(alpha op(A) op(B) + beta C),
// op(A)(r, i) at a[r ars + i acs], op(B)(i, j) at b[i brs + j bcs], a Gemm's C
// one row (col_bias) or none; a MatMul's batch folded into A's rows.
// b_column_axis: B's axis along op(B)'s columns (-1: B not a matrix).
struct ConstBProduct {
  int64_t m = 0, k = 0, n = 0;
  int64_t ars = 0, acs = 1, brs = 0, bcs = 1;
  float alpha = 1.0f, beta = 0.0f;
  bool col_bias = false;
  Activation act;
  int b_column_axis = -1;
};
// Why n is not such a product (empty: it is, and `plan` says how). gemm.cpp.
std::string const_b_product(const Graph& g, const Node& n, ConstBProduct& plan);

// The most rows (A's, the batch of a classifier) the bf16 product takes.
constexpr int64_t kBf16GemmMaxRows = 16;

// Why the bf16 product cannot run m rows on `isa`, empty when it can.
std::string bf16_gemm_declined(int64_t m, Bf16Isa isa);

// A Gemm or MatMul node's kernel under bf16 math (gemm.cpp), or null where
// it runs float32: it runs bf16 when B is a constant float32 matrix, A has
// at most kBf16GemmMaxRows rows, a Gemm's C is one row, and the accuracy
// policy (bf16_policy_keeps_float32) lets it.
std::unique_ptr<Kernel> make_bf16_product_kernel(const Graph& g, const Node& n, Bf16Isa isa);

class Bf16Gemm {
 public:
  // B (k x n): element (r, c) at b[r * brs + c * bcs], packed once.
  Bf16Gemm(Bf16Isa isa, int64_t m, int64_t k, int64_t n, const float* b, int64_t brs, int64_t bcs);
  size_t workspace_bytes() const { return ws_bytes_; }
  // A (m x k): element (r, c) at a[r * ars + c * acs]; bias: n floats or
  // null; y: m x n row-major.
  void run(const float* a, int64_t ars, int64_t acs, const float* bias, float alpha, const Activation& act, float* y,
           void* workspace, ThreadPool& pool) const;
  std::string describe() const;
  Bf16Isa isa() const { return isa_; }
  size_t weight_bytes() const { return w_.size() * sizeof(uint16_t); }  // the packed B

 private:
  Bf16Isa isa_;
  int64_t m_, k_, n_, groups_, blocks_;
  std::vector<uint16_t> w_;  // gemm_bf16_isa.h's layout
  size_t a_elems_ = 0, ws_bytes_ = 0;
};

}  // namespace minirt::cpu
