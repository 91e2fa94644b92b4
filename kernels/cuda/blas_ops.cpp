// Gemm and MatMul through cuBLAS. minirt's tensors are row-major and cuBLAS
// is column-major: a row-major matrix is its transpose in column-major, so
// Y = op(A) op(B) is computed as Y^T = op(B)^T op(A)^T with B passed first;
// no data is transposed. The stream's cuBLAS handle carries the math mode
// (CUBLAS_DEFAULT_MATH for fp32, CUBLAS_TF32_TENSOR_OP_MATH for tf32).
#include <minirt/error.h>

#include <climits>

#include "kernels/cuda/common.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/registry.h"
#include "runtime/ops/linalg.h"

namespace minirt::cuda {

namespace {

// Y (rows x cols, row-major) = alpha * op(A) op(B) + beta * Y for one matrix;
// lda and ldb are the row lengths of A and B as stored.
void gemm_row_major(cublasHandle_t h, bool trans_a, bool trans_b, int64_t rows, int64_t cols, int64_t k, float alpha,
                    const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* y,
                    const std::string& where) {
  check_cublas(cublasSgemm(h, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                           static_cast<int>(cols), static_cast<int>(rows), static_cast<int>(k), &alpha, b,
                           static_cast<int>(ldb), a, static_cast<int>(lda), &beta, y, static_cast<int>(cols)),
               where + "cublasSgemm");
}

class GemmKernel final : public CudaKernel {
 public:
  GemmKernel(const Graph& g, const Node& n) : CudaKernel(node_context(g, n)), a_(n.attrs_as<GemmAttrs>()) {
    const Shape& sa = in_shape(g, n, 0);
    const Shape& y = out_shape(g, n, 0);
    m_ = y[0];
    n_ = y[1];
    k_ = a_.trans_a ? sa[0] : sa[1];
    has_c_ = n.input(2) >= 0 && a_.beta != 0.0f;
    if (has_c_) {
      // beta * C: C broadcast into Y first, then the product added with weight beta.
      Shape c = in_shape(g, n, 2);
      while (c.size() < 2) c.insert(c.begin(), 1);
      c_view_.rank = 2;
      c_view_.shape[0] = m_;
      c_view_.shape[1] = n_;
      c_view_.stride[0] = c[0] == 1 ? 0 : c[1];
      c_view_.stride[1] = c[1] == 1 ? 0 : 1;
      c_view_.count = m_ * n_;
    }
  }
  std::string describe() const override { return "cuBLAS sgemm"; }
  void launch(const KernelArgs& args, StreamState& s) override {
    float* y = out<float>(args, 0);
    if (has_c_) {
      launch_view_copy(args.inputs[2], y, c_view_, sizeof(float), s.stream);
      check_launch("the broadcast of C");
    }
    int64_t lda = a_.trans_a ? m_ : k_;
    int64_t ldb = a_.trans_b ? k_ : n_;
    gemm_row_major(s.blas, a_.trans_a, a_.trans_b, m_, n_, k_, a_.alpha, in<float>(args, 0), lda, in<float>(args, 1),
                   ldb, has_c_ ? a_.beta : 0.0f, y, where());
    if (a_.act.kind != ActKind::kNone) {
      launch_activation(y, y, m_ * n_, ActParams{a_.act.kind, a_.act.alpha, a_.act.beta}, s.stream);
      check_launch("the fused activation");
    }
  }

 private:
  GemmAttrs a_;
  int64_t m_ = 0, n_ = 0, k_ = 0;
  bool has_c_ = false;
  ViewArgs c_view_;
};

// MatMul with NumPy semantics: 1-D operands get a unit axis, batch axes
// broadcast. A batch of A against one B is one taller product; batches at a
// constant stride are one strided-batched call; anything else is a loop of
// single products at precomputed offsets.
class MatMulKernel final : public CudaKernel {
 public:
  MatMulKernel(const Graph& g, const Node& n) : CudaKernel(node_context(g, n)) {
    // The geometry (runtime/ops/linalg.h, shared with the CPU kernel).
    MatMulGeometry geo = matmul_geometry(in_shape(g, n, 0), in_shape(g, n, 1));
    geo.fold_shared_b();  // one taller product
    m_ = geo.m;
    k_ = geo.k;
    n_ = geo.n;
    int64_t count = geo.count();
    for (int64_t e = 0; e < count; ++e) {
      auto [ia, ib] = geo.operands(e);
      a_index_.push_back(ia);
      b_index_.push_back(ib);
    }
    batch_ = count;
    // A constant step in both (0 allowed) makes one strided-batched call.
    if (batch_ > 1) {
      step_a_ = a_index_[1] - a_index_[0];
      step_b_ = b_index_[1] - b_index_[0];
      strided_ = true;
      for (int64_t e = 0; e < batch_; ++e)
        strided_ = strided_ && a_index_[e] == e * step_a_ && b_index_[e] == e * step_b_;
      strided_ = strided_ && batch_ <= INT_MAX;
    }
  }
  std::string describe() const override {
    if (batch_ == 1) return "cuBLAS sgemm";
    return strided_ ? "cuBLAS sgemm, strided batch of " + std::to_string(batch_)
                    : "cuBLAS sgemm, " + std::to_string(batch_) + " products";
  }
  void launch(const KernelArgs& args, StreamState& s) override {
    const float* a = in<float>(args, 0);
    const float* b = in<float>(args, 1);
    float* y = out<float>(args, 0);
    const float one = 1.0f, zero = 0.0f;
    int64_t mat_a = m_ * k_, mat_b = k_ * n_, mat_y = m_ * n_;
    if (batch_ == 1) {
      gemm_row_major(s.blas, false, false, m_, n_, k_, 1.0f, a, k_, b, n_, 0.0f, y, where());
      return;
    }
    if (strided_) {
      check_cublas(cublasSgemmStridedBatched(s.blas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n_),
                                             static_cast<int>(m_), static_cast<int>(k_), &one, b, static_cast<int>(n_),
                                             step_b_ * mat_b, a, static_cast<int>(k_), step_a_ * mat_a, &zero, y,
                                             static_cast<int>(n_), mat_y, static_cast<int>(batch_)),
                   where() + "cublasSgemmStridedBatched");
      return;
    }
    for (int64_t e = 0; e < batch_; ++e)
      gemm_row_major(s.blas, false, false, m_, n_, k_, 1.0f, a + a_index_[e] * mat_a, k_, b + b_index_[e] * mat_b, n_,
                     0.0f, y + e * mat_y, where());
  }

 private:
  int64_t m_ = 0, n_ = 0, k_ = 0, batch_ = 1, step_a_ = 0, step_b_ = 0;
  bool strided_ = false;
  std::vector<int64_t> a_index_, b_index_;
};

constexpr KernelEntry kBlasKernels[] = {
    {"Gemm", make<GemmKernel>},
    {"MatMul", make<MatMulKernel>},
};
static_assert(same_ops(kBlasKernels, kBlasSupport),
              "blas_ops.cpp's kernel table and support.h's kBlasSupport must name the same ops");

}  // namespace

std::span<const KernelEntry> blas_kernels() { return kBlasKernels; }

}  // namespace minirt::cuda
