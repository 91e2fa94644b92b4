// Gemm and MatMul through cuBLAS. minirt's tensors are row-major and cuBLAS
// is column-major: a row-major matrix is its transpose in column-major, so
// Y = op(A) op(B) is computed as Y^T = op(B)^T op(A)^T with B passed first;
// no data is transposed. The stream's cuBLAS handle carries the math mode
// (CUBLAS_DEFAULT_MATH for fp32 and fp16, CUBLAS_TF32_TENSOR_OP_MATH for
// tf32). Under --math fp16 the operands are float16 (constant ones converted
// once, when the kernel is made; the others each run, into the workspace) and
// cublasGemmEx multiplies them on tensor cores into the float32 output with
// float32 accumulation (CUBLAS_COMPUTE_32F).
#include <minirt/error.h>
#include <minirt/half.h>

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

// The same product on 16-bit operands (bfloat16 with bf16, else float16),
// float32 output and accumulation.
void gemm_row_major_half(cublasHandle_t h, bool bf16, bool trans_a, bool trans_b, int64_t rows, int64_t cols, int64_t k,
                         float alpha, const void* a, int64_t lda, const void* b, int64_t ldb, float beta, float* y,
                         const std::string& where) {
  const cudaDataType_t t = bf16 ? CUDA_R_16BF : CUDA_R_16F;
  check_cublas(cublasGemmEx(h, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                            static_cast<int>(cols), static_cast<int>(rows), static_cast<int>(k), &alpha, b, t,
                            static_cast<int>(ldb), a, t, static_cast<int>(lda), &beta, y, CUDA_R_32F,
                            static_cast<int>(cols), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               where + (bf16 ? "cublasGemmEx (bfloat16)" : "cublasGemmEx (float16)"));
}

// One operand of a product under --math fp16 or bf16: a 16-bit copy made
// once for a constant, or a place in the workspace to convert it into each
// run.
class HalfOperand {
 public:
  // Sets up input `i` of the node; `offset` is where its workspace part
  // starts, and the bytes it needs there are returned.
  size_t init(const DeviceContext& ctx, const Graph& g, const Node& n, size_t i, size_t offset,
              const std::string& where) {
    count_ = shape_numel(in_shape(g, n, i));
    bf16_ = ctx.bf16;
    if (const Tensor* t = in_const(g, n, i)) {
      std::vector<uint16_t> h(static_cast<size_t>(count_));
      if (bf16_)
        float_to_bfloat16(t->data<float>(), h.data(), h.size());
      else
        float_to_half(t->data<float>(), h.data(), h.size());
      const std::string what = where + "a " + ctx.name16() + " operand";
      constant_ = DeviceBuffer(ctx.device, h.size() * 2, what);
      constant_.upload(h.data(), h.size() * 2, what);
      return 0;
    }
    offset_ = offset;
    return (static_cast<size_t>(count_) * 2 + 255) / 256 * 256;
  }
  // The float16 operand for this run (converting `x` when it is not constant).
  const void* get(const float* x, void* workspace, cudaStream_t stream) const {
    if (constant_.get()) return constant_.get();
    void* h = static_cast<char*>(workspace) + offset_;
    launch_to_16(bf16_, x, h, count_, stream);
    return h;
  }
  // Device bytes of the float16 copy of a constant operand (0 otherwise).
  size_t constant_bytes() const { return constant_.get() ? static_cast<size_t>(count_) * 2 : 0; }

 private:
  DeviceBuffer constant_;
  size_t offset_ = 0;
  int64_t count_ = 0;
  bool bf16_ = false;
};

class GemmKernel final : public CudaKernel {
 public:
  GemmKernel(const DeviceContext& ctx, const Graph& g, const Node& n)
      : CudaKernel(node_context(g, n)), a_(n.attrs_as<GemmAttrs>()) {
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
    if ((half_ = ctx.narrow16())) {
      bf16_ = ctx.bf16;
      workspace_ = ha_.init(ctx, g, n, 0, 0, where());
      workspace_ += hb_.init(ctx, g, n, 1, workspace_, where());
    }
  }
  std::string describe() const override {
    return !half_ ? "cuBLAS sgemm" : bf16_ ? "cuBLAS gemmEx, bfloat16 operands" : "cuBLAS gemmEx, float16 operands";
  }
  size_t workspace_bytes() const override { return workspace_; }
  size_t own_constant_bytes() const override { return ha_.constant_bytes() + hb_.constant_bytes(); }
  void launch(const KernelArgs& args, StreamState& s) override {
    float* y = out<float>(args, 0);
    if (has_c_) {
      launch_view_copy(args.inputs[2], y, c_view_, sizeof(float), s.stream);
      check_launch("the broadcast of C");
    }
    int64_t lda = a_.trans_a ? m_ : k_;
    int64_t ldb = a_.trans_b ? k_ : n_;
    if (half_) {
      const void* a = ha_.get(in<float>(args, 0), args.workspace, s.stream);
      const void* b = hb_.get(in<float>(args, 1), args.workspace, s.stream);
      check_launch("the operands' conversion to 16 bits");
      gemm_row_major_half(s.blas, bf16_, a_.trans_a, a_.trans_b, m_, n_, k_, a_.alpha, a, lda, b, ldb,
                          has_c_ ? a_.beta : 0.0f, y, where());
    } else {
      gemm_row_major(s.blas, a_.trans_a, a_.trans_b, m_, n_, k_, a_.alpha, in<float>(args, 0), lda, in<float>(args, 1),
                     ldb, has_c_ ? a_.beta : 0.0f, y, where());
    }
    if (a_.act.kind != ActKind::kNone) {
      launch_activation(y, y, m_ * n_, ActParams{a_.act.kind, a_.act.alpha, a_.act.beta, a_.act.gamma}, s.stream);
      check_launch("the fused activation");
    }
  }

 private:
  GemmAttrs a_;
  int64_t m_ = 0, n_ = 0, k_ = 0;
  bool has_c_ = false;
  ViewArgs c_view_;
  bool half_ = false;
  bool bf16_ = false;  // the 16-bit type is bfloat16 (--math bf16), else float16
  HalfOperand ha_, hb_;
  size_t workspace_ = 0;
};

// MatMul with NumPy semantics: 1-D operands get a unit axis, batch axes
// broadcast. A batch of A against one B is one taller product; batches at a
// constant stride are one strided-batched call; anything else is a loop of
// single products at precomputed offsets.
class MatMulKernel final : public CudaKernel {
 public:
  MatMulKernel(const DeviceContext& ctx, const Graph& g, const Node& n) : CudaKernel(node_context(g, n)) {
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
    if ((half_ = ctx.narrow16())) {
      bf16_ = ctx.bf16;
      workspace_ = ha_.init(ctx, g, n, 0, 0, where());
      workspace_ += hb_.init(ctx, g, n, 1, workspace_, where());
    }
  }
  std::string describe() const override {
    std::string what = !half_  ? "cuBLAS sgemm"
                       : bf16_ ? "cuBLAS gemmEx (bfloat16 operands)"
                               : "cuBLAS gemmEx (float16 operands)";
    if (batch_ == 1) return what;
    return strided_ ? what + ", strided batch of " + std::to_string(batch_)
                    : what + ", " + std::to_string(batch_) + " products";
  }
  size_t workspace_bytes() const override { return workspace_; }
  size_t own_constant_bytes() const override { return ha_.constant_bytes() + hb_.constant_bytes(); }
  void launch(const KernelArgs& args, StreamState& s) override {
    if (half_) return launch_half(args, s);
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
  // The same products on 16-bit operands (offsets in elements, as above).
  void launch_half(const KernelArgs& args, StreamState& s) {
    const auto* a = static_cast<const uint16_t*>(ha_.get(in<float>(args, 0), args.workspace, s.stream));
    const auto* b = static_cast<const uint16_t*>(hb_.get(in<float>(args, 1), args.workspace, s.stream));
    check_launch("the operands' conversion to 16 bits");
    const cudaDataType_t t = bf16_ ? CUDA_R_16BF : CUDA_R_16F;
    float* y = out<float>(args, 0);
    const float one = 1.0f, zero = 0.0f;
    int64_t mat_a = m_ * k_, mat_b = k_ * n_, mat_y = m_ * n_;
    if (batch_ == 1) {
      gemm_row_major_half(s.blas, bf16_, false, false, m_, n_, k_, 1.0f, a, k_, b, n_, 0.0f, y, where());
      return;
    }
    if (strided_) {
      check_cublas(
          cublasGemmStridedBatchedEx(s.blas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n_), static_cast<int>(m_),
                                     static_cast<int>(k_), &one, b, t, static_cast<int>(n_), step_b_ * mat_b, a, t,
                                     static_cast<int>(k_), step_a_ * mat_a, &zero, y, CUDA_R_32F, static_cast<int>(n_),
                                     mat_y, static_cast<int>(batch_), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          where() + (bf16_ ? "cublasGemmStridedBatchedEx (bfloat16)" : "cublasGemmStridedBatchedEx (float16)"));
      return;
    }
    for (int64_t e = 0; e < batch_; ++e)
      gemm_row_major_half(s.blas, bf16_, false, false, m_, n_, k_, 1.0f, a + a_index_[e] * mat_a, k_,
                          b + b_index_[e] * mat_b, n_, 0.0f, y + e * mat_y, where());
  }

  int64_t m_ = 0, n_ = 0, k_ = 0, batch_ = 1, step_a_ = 0, step_b_ = 0;
  bool strided_ = false;
  std::vector<int64_t> a_index_, b_index_;
  bool half_ = false;
  bool bf16_ = false;  // the 16-bit type is bfloat16 (--math bf16), else float16
  HalfOperand ha_, hb_;
  size_t workspace_ = 0;
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
