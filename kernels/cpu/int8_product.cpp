// A quantized model's Gemm or MatMul on its codes (issue 25's DQ -> Gemm ->
// Q): A a float value a QuantizeLinear -> DequantizeLinear pair put on an
// 8-bit grid (quant_grid_of), B a constant DequantizeLinear of int8 codes
// (mark_dequantized_constants: one scale, or one per output column). Each
// run quantizes A's rows to their codes (the division's rounding, as
// QuantizeLinear), multiplies them with B's codes on int8_gemm (exact int32
// sums), takes the zero point and the operands' sign flips out
// (int8_unshift), and scales each column by alpha x A's scale x its
// weights' scale before the bias and the fused activation (the pair after
// the product, as a grid). B is packed once, when the kernel is made.
//
// Where it runs: AVX512-VNNI (int8_isa()); elsewhere the float32 product
// does, on the dequantized weights, as before.
#include "kernels/cpu/gemm_bf16.h"  // ConstBProduct
#include "kernels/cpu/gemm_int8.h"
#include "kernels/cpu/nchwc_plan.h"  // quant_grid_of
#include "kernels/cpu/registry.h"
#include "kernels/cpu/vmath.h"  // apply_activation
#include "runtime/ops/linalg.h"
#include "runtime/thread_pool.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace minirt::cpu {

namespace {

struct Int8ProductPlan : ConstBProduct {
  Activation grid;            // A's
  std::vector<float> scales;  // B's: one, or one per column of op(B)
};

// Why n runs in float32 (empty: it can run on its codes), and its plan.
std::string int8_product_plan(const Graph& g, const Node& n, Int8ProductPlan& plan) {
  Int8ProductPlan p;
  if (std::string why = const_b_product(g, n, p); !why.empty()) return why;
  const Activation* grid = nchwc_plan::quant_grid_of(g, n.inputs[0]);
  if (!grid || grid->gamma - grid->beta > 255) return "reads no value that a quantize pair put on an 8-bit grid";
  p.grid = *grid;
  const Value& bv = g.values[static_cast<size_t>(n.inputs[1])];
  if (!bv.quant_scales) return "has weights that are not a DequantizeLinear of 8-bit codes";
  const int column_axis = p.b_column_axis;
  // The sums and int8_unshift's terms (each up to 255 x 128 x k, several of
  // them added in int32) stay inside int32 up to k = 16000.
  if (p.k > 16000) return "sums more than 16000 products (int32 could overflow)";
  if (bv.quant_axis == -1 && bv.quant_scales->size() == 1) {
    p.scales = *bv.quant_scales;
  } else if (bv.quant_axis == column_axis && static_cast<int64_t>(bv.quant_scales->size()) == p.n) {
    p.scales = *bv.quant_scales;
  } else {
    return "has weight scales along an axis other than its output columns";
  }
  // Every weight an int8 code times its scale (DequantizeLinear's product).
  const float* w = in_const(g, n, 1)->data<float>();
  for (int64_t i = 0; i < p.k; ++i)
    for (int64_t j = 0; j < p.n; ++j) {
      const float s = p.scales[p.scales.size() == 1 ? 0 : static_cast<size_t>(j)];
      const float v = w[i * p.brs + j * p.bcs], code = std::nearbyint(v / s);
      if (!(code >= -128.0f && code <= 127.0f) || code * s != v)
        return "has a weight that is not an int8 code times its scale";
    }
  plan = std::move(p);
  return {};
}

class Int8ProductKernel final : public Kernel {
 public:
  Int8ProductKernel(const Graph& g, const Node& n, Int8Isa isa, Int8ProductPlan p) : p_(std::move(p)), isa_(isa) {
    kp_ = int8_quads(p_.k) * 4;
    // B's codes, flipped to uint8 (c + 128), in panels; colsum of those.
    const float* w = in_const(g, n, 1)->data<float>();
    std::vector<uint8_t> codes(static_cast<size_t>(p_.k * p_.n));
    for (int64_t i = 0; i < p_.k; ++i)
      for (int64_t j = 0; j < p_.n; ++j) {
        const float s = p_.scales[p_.scales.size() == 1 ? 0 : static_cast<size_t>(j)];
        codes[static_cast<size_t>(i * p_.n + j)] =
            static_cast<uint8_t>(static_cast<int8_t>(std::nearbyint(w[i * p_.brs + j * p_.bcs] / s)));
      }
    q_.assign(static_cast<size_t>(int8_q_bytes(p_.k, p_.n)), 0);
    colsum_.assign(static_cast<size_t>(p_.n), 0);
    int8_pack_q(codes.data(), p_.n, 1, p_.k, p_.n, 0x80, q_.data(), colsum_.data());
    mult_.resize(static_cast<size_t>(p_.n));
    for (int64_t j = 0; j < p_.n; ++j)
      mult_[static_cast<size_t>(j)] =
          p_.alpha * p_.grid.alpha * p_.scales[p_.scales.size() == 1 ? 0 : static_cast<size_t>(j)];
    if (p_.col_bias) c_elems_ = shape_numel(in_shape(g, n, 2));
    // Workspace: [P: m rows of kp int8][rowsum: m int32][C: m x n int32].
    rowsum_at_ = align(static_cast<size_t>(p_.m * kp_));
    c_at_ = rowsum_at_ + align(static_cast<size_t>(p_.m) * sizeof(int32_t));
    ws_bytes_ = c_at_ + align(static_cast<size_t>(p_.m * p_.n) * sizeof(int32_t));
  }

  size_t workspace_bytes() const override { return ws_bytes_; }
  std::string describe() const override {
    return std::string("int8_gemm isa=") + int8_isa_name(isa_) + " x_scale=" + std::to_string(p_.grid.alpha) +
           " grid=[" + std::to_string(static_cast<int>(p_.grid.beta)) + "," +
           std::to_string(static_cast<int>(p_.grid.gamma)) + "]" +
           (p_.scales.size() == 1 ? " w=per tensor" : " w=per channel");
  }
  const char* precision() const override { return "int8"; }
  bool packs_input(size_t input) const override { return input == 1; }
  size_t packed_bytes() const override { return q_.size() + (colsum_.size() + mult_.size()) * 4; }

  void run(const KernelArgs& args) override {
    const float* a = static_cast<const float*>(args.inputs[0]);
    float* y = static_cast<float*>(args.outputs[0]);
    char* ws = static_cast<char*>(args.workspace);
    auto* pa = reinterpret_cast<int8_t*>(ws);
    auto* rowsum = reinterpret_cast<int32_t*>(ws + rowsum_at_);
    auto* c = reinterpret_cast<int32_t*>(ws + c_at_);
    // A's codes u = rne(clamp(a / scale, lo, hi)) - lo, stored as u - 128 (the
    // int8 operand); NaN to lo as QuantizeLinear's clamp here does.
    const float flo = p_.grid.beta, fhi = p_.grid.gamma, scale = p_.grid.alpha;
    const int32_t lo = static_cast<int32_t>(p_.grid.beta);
    for (int64_t r = 0; r < p_.m; ++r) {
      int8_t* row = pa + r * kp_;
      int32_t sum = 0;
      for (int64_t i = 0; i < p_.k; ++i) {
        const float v = std::min(fhi, std::max(flo, a[r * p_.ars + i * p_.acs] / scale));
        // Ties to even without nearbyint (which does not vectorize): |v| <= 255 < 2^22.
        const float k = (v + 12582912.0f) - 12582912.0f;
        const int32_t code = static_cast<int32_t>(k) - lo - 128;
        row[i] = static_cast<int8_t>(code);
        sum += code;
      }
      std::memset(row + p_.k, 0, static_cast<size_t>(kp_ - p_.k));
      rowsum[r] = sum;
    }
    int8_gemm(isa_, pa, kp_, p_.m, kp_ / 4, q_.data(), p_.n, c, p_.n, args.pool);
    // sum over i of (u + lo) code: a = u = a' + 128 (za = -lo), b = code = b' - 128 (zb = 0).
    const int32_t za = -lo;
    int8_unshift(c, p_.n, p_.m, p_.n, p_.k, rowsum, colsum_.data(), &za, 0, 128, nullptr, 0, 128);
    const float* cv = p_.col_bias ? static_cast<const float*>(args.inputs[2]) : nullptr;
    for (int64_t r = 0; r < p_.m; ++r) {
      float* yr = y + r * p_.n;
      const int32_t* cr = c + r * p_.n;
      for (int64_t j = 0; j < p_.n; ++j) {
        const float bias = cv ? p_.beta * cv[c_elems_ == 1 ? 0 : j] : 0.0f;
        yr[j] = static_cast<float>(cr[j]) * mult_[static_cast<size_t>(j)] + bias;
      }
      if (!p_.act.none()) apply_activation(p_.act, yr, p_.n);
    }
  }

 private:
  static size_t align(size_t b) { return (b + 63) / 64 * 64; }

  Int8ProductPlan p_;
  Int8Isa isa_;
  int64_t kp_ = 0;
  std::vector<uint8_t> q_;
  std::vector<int32_t> colsum_;
  std::vector<float> mult_;
  int64_t c_elems_ = 0;
  size_t rowsum_at_ = 0, c_at_ = 0, ws_bytes_ = 0;
};

}  // namespace

std::unique_ptr<Kernel> make_int8_product_kernel(const Graph& g, const Node& n) {
  const Int8Isa isa = int8_isa();
  if (isa != Int8Isa::kAvx512Vnni) return nullptr;
  Int8ProductPlan p;
  if (!int8_product_plan(g, n, p).empty()) return nullptr;
  return std::make_unique<Int8ProductKernel>(g, n, isa, std::move(p));
}

}  // namespace minirt::cpu
