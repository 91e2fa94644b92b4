// Gemm and MatMul on the CPU, through Eigen's GEMM. Work is split across
// the pool by rows of the output, or by columns when there are few rows
// (a fully connected layer at batch 1).
#include "kernels/cpu/eigen_util.h"
#include "kernels/cpu/registry.h"
#include "runtime/ops/linalg.h"

#include <algorithm>

namespace minirt::cpu {

namespace {

// C(m x n, ld ldc) = A(m x k) * B(k x n), A and B possibly transposed in
// memory, split over the pool.
void parallel_gemm(ThreadPool& pool, const float* a, bool ta, int64_t lda, const float* b, bool tb, int64_t ldb,
                   float* c, int64_t ldc, int64_t m, int64_t n, int64_t k) {
  auto block = [&](int64_t r0, int64_t rows, int64_t c0, int64_t cols) {
    auto out = mat(c + r0 * ldc + c0, rows, cols, ldc);
    const float* ap = ta ? a + r0 : a + r0 * lda;
    const float* bp = tb ? b + c0 * ldb : b + c0;
    if (!ta && !tb) out.noalias() = cmat(ap, rows, k, lda) * cmat(bp, k, cols, ldb);
    else if (ta && !tb) out.noalias() = cmat(ap, k, rows, lda).transpose() * cmat(bp, k, cols, ldb);
    else if (!ta && tb) out.noalias() = cmat(ap, rows, k, lda) * cmat(bp, cols, k, ldb).transpose();
    else out.noalias() = cmat(ap, k, rows, lda).transpose() * cmat(bp, cols, k, ldb).transpose();
  };
  int64_t threads = pool.size();
  double flops = 2.0 * m * n * k;
  if (threads == 1 || flops < 2e5) return block(0, m, 0, n);
  if (m >= 4 * threads || m >= n) {
    int64_t step = std::max<int64_t>(4, (m + threads - 1) / threads);
    int64_t tiles = (m + step - 1) / step;
    auto body = [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) block(t * step, std::min(step, m - t * step), 0, n);
    };
    pool.parallel_for(tiles, body);
  } else {
    int64_t step = std::max<int64_t>(16, ((n + threads - 1) / threads + 15) / 16 * 16);
    int64_t tiles = (n + step - 1) / step;
    auto body = [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) block(0, m, t * step, std::min(step, n - t * step));
    };
    pool.parallel_for(tiles, body);
  }
}

class GemmKernel final : public Kernel {
 public:
  GemmKernel(const Graph& g, const Node& n, int) : a_(n.attrs_as<GemmAttrs>()) {
    const Shape& sa = in_shape(g, n, 0);
    const Shape& sb = in_shape(g, n, 1);
    m_ = a_.trans_a ? sa[1] : sa[0];
    k_ = a_.trans_a ? sa[0] : sa[1];
    n_ = a_.trans_b ? sb[0] : sb[1];
    has_c_ = n.input(2) >= 0 && a_.beta != 0.0f;
    if (has_c_) {
      Shape c = in_shape(g, n, 2);
      while (c.size() < 2) c.insert(c.begin(), 1);
      c_rows_ = c[0];
      c_cols_ = c[1];
    }
  }
  void run(const KernelArgs& args) override {
    const float* a = static_cast<const float*>(args.inputs[0]);
    const float* b = static_cast<const float*>(args.inputs[1]);
    float* y = static_cast<float*>(args.outputs[0]);
    parallel_gemm(*args.pool, a, a_.trans_a, a_.trans_a ? m_ : k_, b, a_.trans_b, a_.trans_b ? k_ : n_, y, n_, m_, n_, k_);
    const float* c = has_c_ ? static_cast<const float*>(args.inputs[2]) : nullptr;
    for (int64_t i = 0; i < m_; ++i) {
      float* row = y + i * n_;
      if (a_.alpha != 1.0f)
        for (int64_t j = 0; j < n_; ++j) row[j] *= a_.alpha;
      if (c) {
        const float* cr = c + (c_rows_ == 1 ? 0 : i) * c_cols_;
        if (c_cols_ == 1)
          for (int64_t j = 0; j < n_; ++j) row[j] += a_.beta * cr[0];
        else
          for (int64_t j = 0; j < n_; ++j) row[j] += a_.beta * cr[j];
      }
      a_.act.apply(row, n_);
    }
  }

 private:
  GemmAttrs a_;
  int64_t m_ = 0, n_ = 0, k_ = 0;
  bool has_c_ = false;
  int64_t c_rows_ = 1, c_cols_ = 1;
};

class MatMulKernel final : public Kernel {
 public:
  MatMulKernel(const Graph& g, const Node& n, int) {
    Shape a = in_shape(g, n, 0), b = in_shape(g, n, 1);
    if (a.size() == 1) a.insert(a.begin(), 1);
    if (b.size() == 1) b.push_back(1);
    m_ = a[a.size() - 2];
    k_ = a.back();
    n_ = b.back();
    Shape ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
    size_t r = std::max(ba.size(), bb.size());
    ba.insert(ba.begin(), r - ba.size(), 1);
    bb.insert(bb.begin(), r - bb.size(), 1);
    batch_shape_.resize(r);
    for (size_t i = 0; i < r; ++i) batch_shape_[i] = std::max(ba[i], bb[i]);
    batch_ = shape_numel(batch_shape_);
    // Element strides of each operand's batch axes (0 where broadcast).
    int64_t sa = m_ * k_, sb = k_ * n_;
    stride_a_.assign(r, 0);
    stride_b_.assign(r, 0);
    for (int64_t i = static_cast<int64_t>(r) - 1; i >= 0; --i) {
      if (ba[i] != 1) stride_a_[i] = sa;
      if (bb[i] != 1) stride_b_[i] = sb;
      sa *= ba[i];
      sb *= bb[i];
    }
    // A batch of A against one shared B is a single taller GEMM.
    shared_b_ = true;
    for (int64_t s : stride_b_) shared_b_ = shared_b_ && s == 0;
    bool a_dense = true;
    int64_t expect = m_ * k_;
    for (int64_t i = static_cast<int64_t>(r) - 1; i >= 0; --i) {
      if (batch_shape_[i] == 1) continue;
      a_dense = a_dense && stride_a_[i] == expect;
      expect *= batch_shape_[i];
    }
    shared_b_ = shared_b_ && a_dense;
  }
  void run(const KernelArgs& args) override {
    const float* a = static_cast<const float*>(args.inputs[0]);
    const float* b = static_cast<const float*>(args.inputs[1]);
    float* y = static_cast<float*>(args.outputs[0]);
    if (shared_b_) return parallel_gemm(*args.pool, a, false, k_, b, false, n_, y, n_, batch_ * m_, n_, k_);
    for (int64_t i = 0; i < batch_; ++i) {
      int64_t oa = 0, ob = 0, rest = i;
      for (int64_t d = static_cast<int64_t>(batch_shape_.size()) - 1; d >= 0; --d) {
        int64_t idx = rest % batch_shape_[d];
        rest /= batch_shape_[d];
        oa += idx * stride_a_[d];
        ob += idx * stride_b_[d];
      }
      parallel_gemm(*args.pool, a + oa, false, k_, b + ob, false, n_, y + i * m_ * n_, n_, m_, n_, k_);
    }
  }

 private:
  int64_t m_ = 0, n_ = 0, k_ = 0, batch_ = 1;
  Shape batch_shape_;
  std::vector<int64_t> stride_a_, stride_b_;
  bool shared_b_ = false;
};

std::unique_ptr<Kernel> make_gemm(const Graph& g, const Node& n, int t) { return std::make_unique<GemmKernel>(g, n, t); }
std::unique_ptr<Kernel> make_matmul(const Graph& g, const Node& n, int t) { return std::make_unique<MatMulKernel>(g, n, t); }

}  // namespace

void add_gemm_kernels(std::vector<KernelEntry>& out) {
  out.push_back({"Gemm", make_gemm});
  out.push_back({"MatMul", make_matmul});
}

}  // namespace minirt::cpu
