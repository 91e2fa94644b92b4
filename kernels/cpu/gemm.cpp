// Gemm and MatMul on the CPU, with the SGEMM engine of sgemm.h.
//
// A constant B (a classifier's weights, usually stored transposed) is packed
// into B panels once, when the kernel is made; a B that changes is packed per
// call, block by block. A is packed per call into workspace (a constant A
// once). Gemm's alpha, its bias C (beta * C as a row or column vector, or
// a whole matrix the result is added to) and the fused activation are applied
// in the GEMM's epilogue. Work is split over the pool by the engine: rows
// when there are many, columns when there are few (a batch-1 classifier).
//
// Under bf16 math a classifier's fully connected layer runs gemm_bf16.h's
// product instead (make_bf16_product_kernel, asked first by the backend).
#include "kernels/cpu/gemm_bf16.h"
#include "kernels/cpu/nchwc.h"  // bf16_policy_keeps_float32
#include "kernels/cpu/registry.h"
#include "kernels/cpu/sgemm.h"
#include "runtime/ops/linalg.h"

#include <algorithm>

namespace minirt::cpu {

namespace {

size_t round16(size_t n) { return (n + 15) / 16 * 16; }

class GemmKernel final : public Kernel {
 public:
  GemmKernel(const Graph& g, const Node& n, int threads) : a_(n.attrs_as<GemmAttrs>()), isa_(sgemm_default_isa()) {
    const Shape& sa = in_shape(g, n, 0);
    const Shape& sb = in_shape(g, n, 1);
    m_ = a_.trans_a ? sa[1] : sa[0];
    k_ = a_.trans_a ? sa[0] : sa[1];
    n_ = a_.trans_b ? sb[0] : sb[1];
    // Element (r, k) of op(A) is a[r * ars_ + k * acs_]; (k, c) of op(B) is b[k * brs_ + c * bcs_].
    ars_ = a_.trans_a ? 1 : k_;
    acs_ = a_.trans_a ? m_ : 1;
    brs_ = a_.trans_b ? 1 : n_;
    bcs_ = a_.trans_b ? k_ : 1;
    has_c_ = n.input(2) >= 0 && a_.beta != 0.0f;
    if (has_c_) {
      Shape c = in_shape(g, n, 2);
      while (c.size() < 2) c.insert(c.begin(), 1);
      c_rows_ = c[0];
      c_cols_ = c[1];
    }
    empty_ = m_ == 0 || n_ == 0;
    if (empty_) return;
    if (const Tensor* b = in_const(g, n, 1)) packed_b_ = sgemm_pack_b(isa_, b->data<float>(), brs_, bcs_, k_, n_);
    if (const Tensor* a = in_const(g, n, 0)) packed_a_ = sgemm_pack_a(isa_, a->data<float>(), ars_, acs_, m_, k_);
    split_ = sgemm_split(isa_, 1, m_, n_, k_, threads, 0, packed_b_.empty());
    // Workspace: [packed A][beta * C as a vector][B blocks per task].
    bias_at_ = packed_a_.empty() ? round16(sgemm_packed_a_floats(isa_, m_, k_)) : 0;
    scratch_at_ = bias_at_ + round16(static_cast<size_t>(std::max(m_, n_)));
    ws_floats_ = scratch_at_ + sgemm_workspace_bytes(split_, isa_, k_, n_, packed_b_.empty()) / sizeof(float);
  }

  size_t workspace_bytes() const override { return empty_ ? 0 : ws_floats_ * sizeof(float); }
  std::string describe() const override {
    return std::string("sgemm isa=") + sgemm_isa_name(isa_) + (packed_b_.empty() ? "" : " b=prepacked");
  }

  bool packs_input(size_t input) const override {
    return (input == 0 && !packed_a_.empty()) || (input == 1 && !packed_b_.empty());
  }
  size_t packed_bytes() const override { return (packed_a_.size() + packed_b_.size()) * sizeof(float); }

  void run(const KernelArgs& args) override {
    if (empty_) return;
    const float* a = static_cast<const float*>(args.inputs[0]);
    const float* b = static_cast<const float*>(args.inputs[1]);
    const float* c = has_c_ ? static_cast<const float*>(args.inputs[2]) : nullptr;
    float* y = static_cast<float*>(args.outputs[0]);
    float* ws = static_cast<float*>(args.workspace);
    ThreadPool& pool = *args.pool;

    SgemmArgs g;
    g.isa = isa_;
    g.m = m_;
    g.n = n_;
    g.k = k_;
    if (packed_a_.empty()) {
      sgemm_pack_a_parallel(pool, isa_, a, ars_, acs_, m_, k_, ws);
      g.a = ws;
    } else {
      g.a = packed_a_.data();
    }
    g.b = packed_b_.empty() ? SgemmB::matrix(b, brs_, bcs_) : SgemmB::prepacked(packed_b_.data());
    g.c = y;
    g.ldc = n_;
    g.ep.alpha = a_.alpha;
    g.ep.act = a_.act;
    if (c) {
      // beta * C: a vector along the columns or the rows, or the whole
      // matrix written into Y first and added to.
      float* bias = ws + bias_at_;
      if (c_rows_ == 1) {
        for (int64_t j = 0; j < n_; ++j) bias[j] = a_.beta * c[c_cols_ == 1 ? 0 : j];
        g.ep.col_bias = bias;
      } else if (c_cols_ == 1) {
        for (int64_t i = 0; i < m_; ++i) bias[i] = a_.beta * c[i];
        g.ep.row_bias = bias;
      } else {
        for (int64_t i = 0; i < m_ * n_; ++i) y[i] = a_.beta * c[i];
        g.ep.accumulate = true;
      }
    }
    sgemm_run(pool, g, split_, ws + scratch_at_);
  }

 private:
  GemmAttrs a_;
  SgemmIsa isa_;
  int64_t m_ = 0, n_ = 0, k_ = 0;
  int64_t ars_ = 0, acs_ = 1, brs_ = 0, bcs_ = 1;
  bool has_c_ = false, empty_ = false;
  int64_t c_rows_ = 1, c_cols_ = 1;
  AlignedFloats packed_a_, packed_b_;
  SgemmSplit split_;
  size_t bias_at_ = 0, scratch_at_ = 0, ws_floats_ = 0;
};

class MatMulKernel final : public Kernel {
 public:
  MatMulKernel(const Graph& g, const Node& n, int threads) : isa_(sgemm_default_isa()) {
    // The geometry (runtime/ops/linalg.h, shared with the CUDA kernel). A
    // batch of A against one shared B is a single taller GEMM.
    geo_ = matmul_geometry(in_shape(g, n, 0), in_shape(g, n, 1));
    geo_.fold_shared_b();
    m_ = geo_.m;
    k_ = geo_.k;
    n_ = geo_.n;
    batch_ = geo_.count();
    empty_ = batch_ == 0 || m_ == 0 || n_ == 0;
    if (empty_) return;
    b_floats_ = sgemm_packed_b_floats(isa_, k_, n_);
    if (const Tensor* bt = in_const(g, n, 1)) {
      packed_b_ = AlignedFloats(b_floats_ * static_cast<size_t>(geo_.b_mats));
      for (int64_t i = 0; i < geo_.b_mats; ++i) {
        AlignedFloats one = sgemm_pack_b(isa_, bt->data<float>() + i * k_ * n_, n_, 1, k_, n_);
        std::copy(one.data(), one.data() + b_floats_, packed_b_.data() + i * b_floats_);
      }
    }
    a_floats_ = round16(sgemm_packed_a_floats(isa_, m_, k_));
    split_ = sgemm_split(isa_, batch_, m_, n_, k_, threads, 0, packed_b_.empty());
    // Workspace: [each of A's matrices, packed][B blocks per task].
    scratch_at_ = a_floats_ * static_cast<size_t>(geo_.a_mats);
    ws_floats_ = scratch_at_ + sgemm_workspace_bytes(split_, isa_, k_, n_, packed_b_.empty()) / sizeof(float);
  }

  size_t workspace_bytes() const override { return empty_ ? 0 : ws_floats_ * sizeof(float); }
  std::string describe() const override {
    return std::string("sgemm isa=") + sgemm_isa_name(isa_) + (packed_b_.empty() ? "" : " b=prepacked");
  }

  bool packs_input(size_t input) const override { return input == 1 && !packed_b_.empty(); }
  size_t packed_bytes() const override { return packed_b_.size() * sizeof(float); }
  void run(const KernelArgs& args) override {
    if (empty_) return;
    const float* a = static_cast<const float*>(args.inputs[0]);
    const float* b = static_cast<const float*>(args.inputs[1]);
    float* y = static_cast<float*>(args.outputs[0]);
    float* ws = static_cast<float*>(args.workspace);
    ThreadPool& pool = *args.pool;
    // Pack every matrix of A (each is used by the batch items that broadcast it).
    const int64_t panels = ceil_div(m_, sgemm_tile(isa_).mr);
    auto pack = [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        int64_t mat = i / panels, p = i % panels;
        sgemm_pack_a_panels(isa_, a + mat * m_ * k_, k_, 1, m_, k_, ws + mat * a_floats_, p, p + 1);
      }
    };
    pool.parallel_for(geo_.a_mats * panels, pack, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, k_ * 8)));
    auto make = [&](int64_t batch, SgemmArgs& g) {
      auto [ia, ib] = geo_.operands(batch);
      g.isa = isa_;
      g.m = m_;
      g.n = n_;
      g.k = k_;
      g.a = ws + ia * a_floats_;
      g.b = packed_b_.empty() ? SgemmB::matrix(b + ib * k_ * n_, n_, 1)
                              : SgemmB::prepacked(packed_b_.data() + ib * b_floats_);
      g.c = y + batch * m_ * n_;
      g.ldc = n_;
    };
    sgemm_run_batch(pool, split_, isa_, m_, n_, k_, ws + scratch_at_, make);
  }

 private:
  static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

  SgemmIsa isa_;
  int64_t m_ = 0, n_ = 0, k_ = 0, batch_ = 1;
  MatMulGeometry geo_;
  bool empty_ = false;
  AlignedFloats packed_b_;
  size_t a_floats_ = 0, b_floats_ = 0;
  SgemmSplit split_;
  size_t scratch_at_ = 0, ws_floats_ = 0;
};

std::unique_ptr<Kernel> make_gemm(const Graph& g, const Node& n, int t) {
  return std::make_unique<GemmKernel>(g, n, t);
}
std::unique_ptr<Kernel> make_matmul(const Graph& g, const Node& n, int t) {
  return std::make_unique<MatMulKernel>(g, n, t);
}

}  // namespace

std::string const_b_product(const Graph& g, const Node& n, ConstBProduct& plan) {
  ConstBProduct p;
  if (in_dtype(g, n, 0) != DType::kFloat32 || in_dtype(g, n, 1) != DType::kFloat32)
    return "reads a type other than float32";
  if (!in_const(g, n, 1)) return "multiplies by a B that is not a constant (the weights are packed once)";
  if (in_const(g, n, 0)) return "has a constant A (folded or float32)";
  if (n.op == "Gemm") {
    const auto& at = n.attrs_as<GemmAttrs>();
    const Shape& sa = in_shape(g, n, 0);
    const Shape& sb = in_shape(g, n, 1);
    p.m = at.trans_a ? sa[1] : sa[0];
    p.k = at.trans_a ? sa[0] : sa[1];
    p.n = at.trans_b ? sb[0] : sb[1];
    p.ars = at.trans_a ? 1 : p.k;
    p.acs = at.trans_a ? p.m : 1;
    p.brs = at.trans_b ? 1 : p.n;
    p.bcs = at.trans_b ? p.k : 1;
    p.alpha = at.alpha;
    p.beta = at.beta;
    p.act = at.act;
    p.b_column_axis = at.trans_b ? 0 : 1;
    if (n.input(2) >= 0 && at.beta != 0.0f) {
      if (in_dtype(g, n, 2) != DType::kFloat32) return "adds a C of a type other than float32";
      Shape c = in_shape(g, n, 2);
      while (c.size() < 2) c.insert(c.begin(), 1);
      if (c[0] != 1) return "adds a C that is not one row (the product adds a bias along the columns)";
      p.col_bias = true;
    }
  } else if (n.op == "MatMul") {
    MatMulGeometry geo = matmul_geometry(in_shape(g, n, 0), in_shape(g, n, 1));
    geo.fold_shared_b();
    if (geo.count() != 1 || geo.b_mats != 1) return "multiplies by a batch of B matrices";
    p.m = geo.m;
    p.k = geo.k;
    p.n = geo.n;
    p.ars = geo.k;
    p.brs = geo.n;
    p.b_column_axis = in_shape(g, n, 1).size() == 2 ? 1 : -1;
  } else {
    return "is not a matrix product";
  }
  if (p.m == 0 || p.n == 0 || p.k == 0) return "is empty";
  plan = p;
  return {};
}

namespace {

// Gemm or MatMul under bf16 math (gemm_bf16.h): the constant-B product of
// const_b_product, its products in bf16.
using Bf16ProductPlan = ConstBProduct;

// Why n runs float32 under bf16 math (empty: it can run bf16), and its plan.
std::string bf16_product_plan(const Graph& g, const Node& n, Bf16Isa isa, Bf16ProductPlan& plan) {
  Bf16ProductPlan p;
  if (std::string why = const_b_product(g, n, p); !why.empty()) return why;
  if (std::string why = bf16_gemm_declined(p.m, isa); !why.empty()) return why;
  if (bf16_policy_keeps_float32(g, n))
    return "is one of the model's last layers (its result reaches the outputs through no other product, and its "
           "input is not pooled over pixels: float32 by the accuracy policy)";
  plan = p;
  return {};
}

class Bf16ProductKernel final : public Kernel {
 public:
  Bf16ProductKernel(const Graph& g, const Node& n, Bf16Isa isa, const Bf16ProductPlan& p)
      : p_(p), gemm_(isa, p.m, p.k, p.n, in_const(g, n, 1)->data<float>(), p.brs, p.bcs) {
    if (p_.col_bias) {
      c_elems_ = shape_numel(in_shape(g, n, 2));
      bias_at_ = (gemm_.workspace_bytes() + 63) / 64 * 64;
      ws_bytes_ = bias_at_ + static_cast<size_t>(p.n) * sizeof(float);
    } else {
      ws_bytes_ = gemm_.workspace_bytes();
    }
  }
  size_t workspace_bytes() const override { return ws_bytes_; }
  std::string describe() const override { return gemm_.describe(); }
  const char* precision() const override { return "bf16"; }
  bool packs_input(size_t input) const override { return input == 1; }
  size_t packed_bytes() const override { return gemm_.weight_bytes(); }
  void run(const KernelArgs& args) override {
    const float* a = static_cast<const float*>(args.inputs[0]);
    float* bias = nullptr;
    if (p_.col_bias) {
      // beta * C along the columns (a scalar C broadcast).
      const float* c = static_cast<const float*>(args.inputs[2]);
      const bool scalar = c_elems_ == 1;
      bias = reinterpret_cast<float*>(static_cast<char*>(args.workspace) + bias_at_);
      for (int64_t j = 0; j < p_.n; ++j) bias[j] = p_.beta * c[scalar ? 0 : j];
    }
    gemm_.run(a, p_.ars, p_.acs, bias, p_.alpha, p_.act, static_cast<float*>(args.outputs[0]), args.workspace,
              *args.pool);
  }

 private:
  Bf16ProductPlan p_;
  Bf16Gemm gemm_;
  size_t bias_at_ = 0, ws_bytes_ = 0;
  int64_t c_elems_ = 0;
};

}  // namespace

std::unique_ptr<Kernel> make_bf16_product_kernel(const Graph& g, const Node& n, Bf16Isa isa) {
  Bf16ProductPlan p;
  if (!bf16_product_plan(g, n, isa, p).empty()) return nullptr;
  return std::make_unique<Bf16ProductKernel>(g, n, isa, p);
}

void add_gemm_kernels(std::vector<KernelEntry>& out) {
  out.push_back({"Gemm", make_gemm});
  out.push_back({"MatMul", make_matmul});
}

}  // namespace minirt::cpu
