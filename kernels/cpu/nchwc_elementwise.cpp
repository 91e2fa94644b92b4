// The CPU backend's reorders between the plain and the channel-blocked
// layout (nchwc.h) and its elementwise ops on blocked tensors: unary
// activations, binary ops with a per-channel or scalar operand, and
// BatchNormalization (make_nchwc_elementwise_kernel, nchwc_plan.h).
#include "kernels/cpu/nchwc.h"
#include "kernels/cpu/nchwc_binary_isa.h"
#include "kernels/cpu/nchwc_plan.h"
#include "kernels/cpu/registry.h"
#include "kernels/cpu/vmath.h"
#include "runtime/ops/elementwise.h"
#include "runtime/ops/linalg.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace minirt::cpu {

using namespace nchwc_plan;

namespace {

constexpr int64_t kGrain = 16384;  // floats per parallel chunk, at least

// Floats a value's buffer holds (padded channels included).
int64_t value_floats(const Graph& g, int v) { return static_cast<int64_t>(value_bytes(g.values[v]) / sizeof(float)); }

// ---- Reorders

class ReorderKernel final : public Kernel {
 public:
  ReorderKernel(const Graph& g, const Node& n, bool to_blocked) : to_blocked_(to_blocked) {
    const Shape& s = in_shape(g, n, 0);
    n_ = s[0];
    c_ = s[1];
    hw_ = s[2] * s[3];
    b_ = to_blocked ? block_of(g, n.outputs[0]) : block_of(g, n.inputs[0]);
  }
  void run(const KernelArgs& args) override {
    const float* x = static_cast<const float*>(args.inputs[0]);
    float* y = static_cast<float*>(args.outputs[0]);
    if (to_blocked_)
      nchwc_reorder_to_blocked(x, y, n_, c_, hw_, b_, *args.pool);
    else
      nchwc_reorder_to_plain(x, y, n_, c_, hw_, b_, *args.pool);
  }
  std::string describe() const override {
    return to_blocked_ ? "nchw -> nchw" + std::to_string(b_) + "c" : "nchw" + std::to_string(b_) + "c -> nchw";
  }

 private:
  bool to_blocked_;
  int64_t n_ = 0, c_ = 0, hw_ = 0;
  int b_ = 0;
};

// ---- Elementwise

// An activation (or a copy) over every float of the buffer, padding lanes
// included: act of a finite value is finite.
class BlockedUnaryKernel final : public Kernel {
 public:
  BlockedUnaryKernel(const Graph& g, const Node& n) : a_(*unary_of(n)), count_(value_floats(g, n.inputs[0])) {}
  void run(const KernelArgs& args) override {
    const float* x = static_cast<const float*>(args.inputs[0]);
    float* y = static_cast<float*>(args.outputs[0]);
    auto body = [&](int64_t b, int64_t e) {
      if (y != x) std::memcpy(y + b, x + b, static_cast<size_t>(e - b) * sizeof(float));
      if (a_.kind == UnaryKind::kActivation) apply_activation(a_.act, y + b, e - b);
    };
    args.pool->parallel_for(count_, body, kGrain);
  }
  std::string describe() const override { return "blocked"; }

 private:
  UnaryAttrs a_;
  int64_t count_;
};

inline float binary(BinaryKind k, float a, float b) {
  switch (k) {
    case BinaryKind::kAdd:
      return a + b;
    case BinaryKind::kSub:
      return a - b;
    case BinaryKind::kMul:
      return a * b;
    case BinaryKind::kMax:
      return a > b ? a : b;
    case BinaryKind::kMin:
      return a < b ? a : b;
    case BinaryKind::kDiv:
      return a / b;
    case BinaryKind::kPRelu:
      return a < 0 ? a * b : a;
    case BinaryKind::kPow:  // not offered blocked (blocked_binary_ok)
    case BinaryKind::kMod:
    case BinaryKind::kFMod:
    case BinaryKind::kCount:
      break;
  }
  return a;
}

// One pixel run of a blocked binary op: out[p] = a[p * sa] op c[p * sc] for
// p in [0, n), pixels of B lanes; a step of 0 repeats one pixel (a channel
// operand). Vector forms for B = 16 (AVX-512) and 8 (AVX2) in the ISA files
// nchwc_binary_avx512.cpp and nchwc_binary_avx2.cpp; max and min as the
// plain kernel computes them (a > b ? a : b), which is what the vector max
// and min instructions do.
template <BinaryKind K>
void binary_run_portable(const float* a, int64_t sa, const float* c, int64_t sc, float* out, int64_t n, int b) {
  for (int64_t p = 0; p < n; ++p)
    for (int l = 0; l < b; ++l) out[p * b + l] = binary(K, a[p * sa + l], c[p * sc + l]);
}

using BinaryRun = BlockedBinaryRun;

// The vector loop for blocks of b lanes on this CPU (nchwc_binary_*.cpp), or
// null: the portable loop below.
BinaryRun binary_run(BinaryKind k, int b) {
#if defined(__x86_64__) || defined(__i386__)
  if (b == 16 && sgemm_isa_supported(SgemmIsa::kAvx512)) return nchwc_binary_run_avx512(k);
  if (b == 8 && sgemm_isa_supported(SgemmIsa::kAvx2)) return nchwc_binary_run_avx2(k);
#endif
  return nullptr;
}

// A op B with both blocked and the same shape; or one of them per channel
// ([N or 1, C, 1, 1], blocked) or a per-channel or scalar constant.
class BlockedBinaryKernel final : public Kernel {
 public:
  BlockedBinaryKernel(const Graph& g, const Node& n) : kind_(binary_of(n)->kind), act_(binary_of(n)->act) {
    const Shape& y = out_shape(g, n, 0);
    b_ = block_of(g, n.outputs[0]);
    run_ = binary_run(kind_, b_);
    n_ = y[0];
    cb_ = nchwc_blocks(y[1], b_);
    hw_ = y[2] * y[3];
    for (int side = 0; side < 2; ++side) {
      int v = n.inputs[side];
      const Value& val = g.values[v];
      if (val.constant) {
        // Padded to whole blocks: padding lanes take 0 (1 for a divisor).
        const Tensor& t = *val.constant;
        consts_[side].assign(static_cast<size_t>(cb_ * b_), kind_ == BinaryKind::kDiv ? 1.0f : 0.0f);
        for (int64_t c = 0; c < y[1]; ++c) consts_[side][c] = t.numel() == 1 ? t.data<float>()[0] : t.data<float>()[c];
        mode_[side] = Mode::kConstant;
      } else if (val.shape == y) {
        mode_[side] = Mode::kFull;
      } else {
        mode_[side] = Mode::kChannel;
        per_image_[side] = val.shape[0] == n_;
      }
    }
  }
  void run(const KernelArgs& args) override {
    const float* in[2] = {static_cast<const float*>(args.inputs[0]), static_cast<const float*>(args.inputs[1])};
    float* y = static_cast<float*>(args.outputs[0]);
    const int64_t plane = hw_ * b_;
    // Units: (image, channel block, part of the plane).
    const int64_t parts = std::max<int64_t>(1, plane / kGrain);
    auto body = [&](int64_t u0, int64_t u1) {
      for (int64_t u = u0; u < u1; ++u) {
        int64_t part = u % parts, blk = (u / parts) % cb_, img = u / parts / cb_;
        int64_t p0 = hw_ * part / parts, p1 = hw_ * (part + 1) / parts;
        const size_t base = static_cast<size_t>((img * cb_ + blk) * plane);
        const float* src[2];
        int64_t step[2];
        for (int s = 0; s < 2; ++s) {
          switch (mode_[s]) {
            case Mode::kFull:
              src[s] = in[s] + base;
              step[s] = b_;
              break;
            case Mode::kChannel:
              src[s] = in[s] + ((per_image_[s] ? img : 0) * cb_ + blk) * b_;
              step[s] = 0;
              break;
            case Mode::kConstant:
              src[s] = consts_[s].data() + blk * b_;
              step[s] = 0;
              break;
          }
        }
        float* out = y + base + p0 * b_;
        const float* a = src[0] + p0 * step[0];
        const float* c = src[1] + p0 * step[1];
        if (run_)
          run_(a, step[0], c, step[1], out, p1 - p0);
        else
          portable(a, step[0], c, step[1], out, p1 - p0);
        // The fused activation, while the part is in cache.
        if (!act_.none()) apply_activation(act_, out, (p1 - p0) * b_);
      }
    };
    args.pool->parallel_for(n_ * cb_ * parts, body);
  }
  std::string describe() const override { return "blocked"; }

 private:
  void portable(const float* a, int64_t sa, const float* c, int64_t sc, float* out, int64_t n) const {
    switch (kind_) {
      case BinaryKind::kAdd:
        return binary_run_portable<BinaryKind::kAdd>(a, sa, c, sc, out, n, b_);
      case BinaryKind::kSub:
        return binary_run_portable<BinaryKind::kSub>(a, sa, c, sc, out, n, b_);
      case BinaryKind::kMul:
        return binary_run_portable<BinaryKind::kMul>(a, sa, c, sc, out, n, b_);
      case BinaryKind::kMax:
        return binary_run_portable<BinaryKind::kMax>(a, sa, c, sc, out, n, b_);
      case BinaryKind::kDiv:
        return binary_run_portable<BinaryKind::kDiv>(a, sa, c, sc, out, n, b_);
      case BinaryKind::kPRelu:
        return binary_run_portable<BinaryKind::kPRelu>(a, sa, c, sc, out, n, b_);
      case BinaryKind::kMin:
        return binary_run_portable<BinaryKind::kMin>(a, sa, c, sc, out, n, b_);
      case BinaryKind::kPow:  // not offered blocked (blocked_binary_ok)
      case BinaryKind::kMod:
      case BinaryKind::kFMod:
      case BinaryKind::kCount:
        return;
    }
  }

  enum class Mode { kFull, kChannel, kConstant };
  BinaryKind kind_;
  Activation act_;           // fused after (BinaryAttrs::act)
  BinaryRun run_ = nullptr;  // the vector form, where the CPU has it
  int b_ = 0;
  int64_t n_ = 0, cb_ = 0, hw_ = 0;
  Mode mode_[2] = {Mode::kFull, Mode::kFull};
  bool per_image_[2] = {false, false};
  std::vector<float> consts_[2];
};

// BatchNormalization with constant parameters: y = x * s + t per channel,
// s and t computed as the plain kernel computes them; padding lanes 0.
class BlockedBatchNormKernel final : public Kernel {
 public:
  BlockedBatchNormKernel(const Graph& g, const Node& n) {
    const Shape& x = in_shape(g, n, 0);
    b_ = block_of(g, n.outputs[0]);
    n_ = x[0];
    cb_ = nchwc_blocks(x[1], b_);
    hw_ = x[2] * x[3];
    float eps = n.attrs_as<BatchNormAttrs>().epsilon;
    const float* scale = in_const(g, n, 1)->data<float>();
    const float* bias = in_const(g, n, 2)->data<float>();
    const float* mean = in_const(g, n, 3)->data<float>();
    const float* var = in_const(g, n, 4)->data<float>();
    s_.assign(static_cast<size_t>(cb_ * b_), 0.0f);
    t_.assign(static_cast<size_t>(cb_ * b_), 0.0f);
    for (int64_t c = 0; c < x[1]; ++c) {
      s_[c] = scale[c] / std::sqrt(var[c] + eps);
      t_[c] = bias[c] - mean[c] * s_[c];
    }
  }
  void run(const KernelArgs& args) override {
    const float* x = static_cast<const float*>(args.inputs[0]);
    float* y = static_cast<float*>(args.outputs[0]);
    auto body = [&](int64_t u0, int64_t u1) {
      for (int64_t u = u0; u < u1; ++u) {
        int64_t blk = u % cb_;
        const float* s = s_.data() + blk * b_;
        const float* t = t_.data() + blk * b_;
        const float* xp = x + u * hw_ * b_;
        float* yp = y + u * hw_ * b_;
        for (int64_t p = 0; p < hw_; ++p)
          for (int l = 0; l < b_; ++l) yp[p * b_ + l] = xp[p * b_ + l] * s[l] + t[l];
      }
    };
    args.pool->parallel_for(n_ * cb_, body, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, hw_ * b_)));
  }
  std::string describe() const override { return "blocked"; }

 private:
  int b_ = 0;
  int64_t n_ = 0, cb_ = 0, hw_ = 0;
  std::vector<float> s_, t_;
};

}  // namespace

namespace nchwc_plan {

std::unique_ptr<Kernel> make_nchwc_elementwise_kernel(const Graph& g, const Node& n) {
  const std::string& op = n.op;
  if (op == "ReorderToBlocked") return std::make_unique<ReorderKernel>(g, n, true);
  if (op == "ReorderToPlain") return std::make_unique<ReorderKernel>(g, n, false);
  if (unary_of(n)) return std::make_unique<BlockedUnaryKernel>(g, n);
  if (binary_of(n)) return std::make_unique<BlockedBinaryKernel>(g, n);
  if (op == "BatchNormalization") return std::make_unique<BlockedBatchNormKernel>(g, n);
  return nullptr;
}

}  // namespace nchwc_plan

}  // namespace minirt::cpu
