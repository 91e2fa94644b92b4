// The quantization ops on the CPU: QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, MatMulInteger and ConvInteger. These are the
// portable reference of minirt's int8 semantics:
//   quantize    y = saturate(round_half_even(x / scale) + zero_point)
//   dequantize  y = float(int32(x) - zero_point) * scale
//   integer ops sum (a - a_zero_point) * (b - b_zero_point) in int32.
// Q and DQ see their tensor as [outer][mid][inner] around the scale's axis:
// one scale per tensor, per `mid` (per axis), or per (outer, mid / block,
// inner) (blocked).
#include "kernels/cpu/registry.h"
#include "runtime/ops/conv.h"
#include "runtime/ops/linalg.h"
#include "runtime/ops/quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace minirt::cpu {

namespace {

constexpr int64_t kGrain = 16384;  // elements per parallel chunk, at least

int64_t product(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= s[i];
  return p;
}

// Rounds v (|v| < 2^22) to the nearest integer, ties to even, in the
// default rounding mode: adding and taking away 1.5 * 2^23 leaves no
// fraction bits. Unlike nearbyint it vectorizes on every ISA.
inline float round_half_even(float v) {
  constexpr float kMagic = 12582912.0f;
  return (v + kMagic) - kMagic;
}

// One run of elements sharing a scale and zero point. The quotient is
// clamped to the type's range first (exact: the bounds are integers), so a
// NaN becomes the low bound and the rounding trick's range holds.
template <typename Q>
void quantize_run(const float* x, Q* y, int64_t n, float scale, int32_t zp) {
  const QuantRange r = quant_range(std::is_signed_v<Q> ? DType::kInt8 : DType::kUInt8);
  const float lo = static_cast<float>(r.lo - zp), hi = static_cast<float>(r.hi - zp);
  for (int64_t i = 0; i < n; ++i) {
    const float v = std::min(hi, std::max(lo, x[i] / scale));
    y[i] = static_cast<Q>(static_cast<int32_t>(round_half_even(v)) + zp);
  }
}

// A run whose elements each have their own scale and zero point (blocked
// quantization: consecutive elements along the inner axes).
template <typename Q>
void quantize_run_each(const float* x, Q* y, int64_t n, const float* scale, const Q* zp) {
  const QuantRange r = quant_range(std::is_signed_v<Q> ? DType::kInt8 : DType::kUInt8);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t z = zp ? static_cast<int32_t>(zp[i]) : 0;
    const float v = std::min(static_cast<float>(r.hi - z), std::max(static_cast<float>(r.lo - z), x[i] / scale[i]));
    y[i] = static_cast<Q>(static_cast<int32_t>(round_half_even(v)) + z);
  }
}

template <typename Q>
void dequantize_run(const Q* x, float* y, int64_t n, float scale, int32_t zp) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(static_cast<int32_t>(x[i]) - zp) * scale;
}

template <typename Q>
void dequantize_run_each(const Q* x, float* y, int64_t n, const float* scale, const Q* zp) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = static_cast<float>(static_cast<int32_t>(x[i]) - (zp ? static_cast<int32_t>(zp[i]) : 0)) * scale[i];
}

// QuantizeLinear and DequantizeLinear: the geometry of the scale against the tensor.
class QuantLinearKernel final : public Kernel {
 public:
  QuantLinearKernel(const Graph& g, const Node& n, int)
      : quantize_(n.op == "QuantizeLinear"),
        qtype_(quantize_ ? g.values[n.outputs[0]].dtype : in_dtype(g, n, 0)),
        has_zp_(n.input(2) >= 0) {
    const auto& a = n.attrs_as<QuantAttrs>();
    const Shape& x = in_shape(g, n, 0);
    gran_ = a.granularity;
    block_ = a.block_size;
    if (gran_ == QuantGranularity::kTensor) {
      outer_ = 1;
      mid_ = 1;
      inner_ = shape_numel(x);
    } else {
      const size_t axis = static_cast<size_t>(a.axis);
      outer_ = product(x, 0, axis);
      mid_ = x[axis];
      inner_ = product(x, axis + 1, x.size());
    }
  }
  std::string describe() const override {
    switch (gran_) {
      case QuantGranularity::kTensor:
        return "per tensor";
      case QuantGranularity::kAxis:
        return "per axis";
      case QuantGranularity::kBlocked:
        return "blocked by " + std::to_string(block_);
    }
    return {};
  }
  void run(const KernelArgs& args) override {
    switch (qtype_) {
      case DType::kInt8:
        return run_typed<int8_t>(args);
      case DType::kUInt8:
        return run_typed<uint8_t>(args);
      default:
        return run_typed<int32_t>(args);  // DequantizeLinear of int32
    }
  }

 private:
  template <typename Q>
  void run_typed(const KernelArgs& args) {
    const float* scale = static_cast<const float*>(args.inputs[1]);
    const Q* zp = has_zp_ ? static_cast<const Q*>(args.inputs[2]) : nullptr;
    const void* x = args.inputs[0];
    void* y = args.outputs[0];
    auto zero = [&](int64_t i) { return zp ? static_cast<int32_t>(zp[i]) : 0; };
    if (gran_ == QuantGranularity::kTensor) {
      const float s = scale[0];
      const int32_t z = zero(0);
      args.pool->parallel_for(
          inner_,
          [&](int64_t b, int64_t e) {
            if (quantize_) {
              if constexpr (!std::is_same_v<Q, int32_t>)
                quantize_run(static_cast<const float*>(x) + b, static_cast<Q*>(y) + b, e - b, s, z);
            } else {
              dequantize_run(static_cast<const Q*>(x) + b, static_cast<float*>(y) + b, e - b, s, z);
            }
          },
          kGrain);
      return;
    }
    const int64_t blocks = gran_ == QuantGranularity::kBlocked ? (mid_ + block_ - 1) / block_ : 0;
    args.pool->parallel_for(
        outer_ * mid_,
        [&](int64_t r0, int64_t r1) {
          for (int64_t r = r0; r < r1; ++r) {
            const int64_t o = r / mid_, m = r % mid_;
            const int64_t off = r * inner_;
            if (gran_ == QuantGranularity::kAxis) {
              if (quantize_) {
                if constexpr (!std::is_same_v<Q, int32_t>)
                  quantize_run(static_cast<const float*>(x) + off, static_cast<Q*>(y) + off, inner_, scale[m], zero(m));
              } else {
                dequantize_run(static_cast<const Q*>(x) + off, static_cast<float*>(y) + off, inner_, scale[m], zero(m));
              }
            } else {
              const int64_t s_off = (o * blocks + m / block_) * inner_;
              const Q* zr = zp ? zp + s_off : nullptr;
              if (quantize_) {
                if constexpr (!std::is_same_v<Q, int32_t>)
                  quantize_run_each(static_cast<const float*>(x) + off, static_cast<Q*>(y) + off, inner_, scale + s_off,
                                    zr);
              } else {
                dequantize_run_each(static_cast<const Q*>(x) + off, static_cast<float*>(y) + off, inner_, scale + s_off,
                                    zr);
              }
            }
          }
        },
        std::max<int64_t>(1, kGrain / std::max<int64_t>(inner_, 1)));
  }

  bool quantize_;
  DType qtype_;
  bool has_zp_;
  QuantGranularity gran_ = QuantGranularity::kTensor;
  int64_t block_ = 0;
  int64_t outer_ = 1, mid_ = 1, inner_ = 1;
};

// DynamicQuantizeLinear: uint8 with the scale and zero point of the
// input's range stretched to include 0, as onnxruntime computes them
// (scale 1 when the range is empty).
class DynamicQuantizeKernel final : public Kernel {
 public:
  DynamicQuantizeKernel(const Graph& g, const Node& n, int) : count_(shape_numel(in_shape(g, n, 0))) {}
  void run(const KernelArgs& args) override {
    const float* x = static_cast<const float*>(args.inputs[0]);
    float lo = 0, hi = 0;
    for (int64_t i = 0; i < count_; ++i) {
      lo = std::min(lo, x[i]);
      hi = std::max(hi, x[i]);
    }
    const float scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
    const float zf = std::min(255.0f, std::max(0.0f, 0.0f - lo / scale));
    const int32_t zp = static_cast<int32_t>(std::nearbyint(zf));
    uint8_t* y = static_cast<uint8_t*>(args.outputs[0]);
    args.pool->parallel_for(
        count_, [&](int64_t b, int64_t e) { quantize_run(x + b, y + b, e - b, scale, zp); }, kGrain);
    *static_cast<float*>(args.outputs[1]) = scale;
    *static_cast<uint8_t*>(args.outputs[2]) = static_cast<uint8_t>(zp);
  }

 private:
  int64_t count_;
};

// An int8 or uint8 element as int32.
inline int32_t widen(const void* p, int64_t i, bool is_signed) {
  return is_signed ? static_cast<const int8_t*>(p)[i] : static_cast<const uint8_t*>(p)[i];
}

// Zero point i of a scalar-or-vector zero-point input (null: 0).
inline int32_t zero_at(const void* zp, int64_t count, int64_t i, bool is_signed) {
  if (!zp) return 0;
  return widen(zp, count == 1 ? 0 : i, is_signed);
}

// MatMulInteger: per product, B (less its zero points) widened to int32 in
// the workspace once, then each row of A adds its scaled rows of B.
class MatMulIntegerKernel final : public Kernel {
 public:
  MatMulIntegerKernel(const Graph& g, const Node& n, int threads)
      : geo_(matmul_geometry(in_shape(g, n, 0), in_shape(g, n, 1))),
        a_signed_(in_dtype(g, n, 0) == DType::kInt8),
        b_signed_(in_dtype(g, n, 1) == DType::kInt8),
        za_count_(n.input(2) >= 0 ? shape_numel(in_shape(g, n, 2)) : 0),
        zb_count_(n.input(3) >= 0 ? shape_numel(in_shape(g, n, 3)) : 0) {}
  // args.inputs holds one pointer per input the node lists (fewer than 4
  // when trailing zero points are left out).
  size_t workspace_bytes() const override {
    return static_cast<size_t>(geo_.b_mats * geo_.k * geo_.n) * sizeof(int32_t);
  }
  void run(const KernelArgs& args) override {
    const int64_t m = geo_.m, k = geo_.k, n = geo_.n;
    const void* a = args.inputs[0];
    const void* b = args.inputs[1];
    const void* za = za_count_ ? args.inputs[2] : nullptr;
    const void* zb = zb_count_ ? args.inputs[3] : nullptr;
    int32_t* bw = static_cast<int32_t*>(args.workspace);
    for (int64_t mat = 0; mat < geo_.b_mats; ++mat)
      for (int64_t r = 0; r < k; ++r)
        for (int64_t c = 0; c < n; ++c) {
          const int64_t i = (mat * k + r) * n + c;
          bw[i] = widen(b, i, b_signed_) - zero_at(zb, zb_count_, c, b_signed_);
        }
    int32_t* y = static_cast<int32_t*>(args.outputs[0]);
    args.pool->parallel_for(
        geo_.count() * m,
        [&](int64_t r0, int64_t r1) {
          for (int64_t r = r0; r < r1; ++r) {
            const int64_t e = r / m, row = r % m;
            const auto [ia, ib] = geo_.operands(e);
            const int32_t z = zero_at(za, za_count_, row, a_signed_);
            int32_t* out = y + r * n;
            std::fill(out, out + n, 0);
            const int32_t* bm = bw + ib * k * n;
            for (int64_t j = 0; j < k; ++j) {
              const int32_t av = widen(a, (ia * m + row) * k + j, a_signed_) - z;
              if (!av) continue;
              const int32_t* br = bm + j * n;
              for (int64_t c = 0; c < n; ++c) out[c] += av * br[c];
            }
          }
        },
        std::max<int64_t>(1, kGrain / std::max<int64_t>(n * k, 1)));
  }

 private:
  MatMulGeometry geo_;
  bool a_signed_, b_signed_;
  int64_t za_count_, zb_count_;
};

// ConvInteger: a direct convolution in int32 over up to three spatial axes
// (fewer are padded with axes of length 1). Padding contributes nothing:
// padded input equals its zero point.
class ConvIntegerKernel final : public Kernel {
 public:
  ConvIntegerKernel(const Graph& g, const Node& n, int)
      : a_(n.attrs_as<ConvAttrs>()),
        x_signed_(in_dtype(g, n, 0) == DType::kInt8),
        w_signed_(in_dtype(g, n, 1) == DType::kInt8),
        has_zx_(n.input(2) >= 0),
        zw_count_(n.input(3) >= 0 ? shape_numel(in_shape(g, n, 3)) : 0) {
    const Shape& x = in_shape(g, n, 0);
    const Shape& w = in_shape(g, n, 1);
    const Shape& y = out_shape(g, n, 0);
    batch_ = x[0];
    cin_ = x[1];
    cout_ = w[0];
    const size_t sp = x.size() - 2;
    for (size_t i = 0; i < 3; ++i) {
      const bool has = i < sp;
      in_[i] = has ? x[2 + i] : 1;
      out_[i] = has ? y[2 + i] : 1;
      k_[i] = has ? a_.kernel_shape[i] : 1;
      s_[i] = has ? a_.strides[i] : 1;
      d_[i] = has ? a_.dilations[i] : 1;
      p_[i] = has ? a_.pads[i] : 0;
    }
  }
  void run(const KernelArgs& args) override {
    const void* x = args.inputs[0];
    const void* w = args.inputs[1];
    const int32_t zx = has_zx_ ? zero_at(args.inputs[2], 1, 0, x_signed_) : 0;
    const void* zw = zw_count_ ? args.inputs[3] : nullptr;
    int32_t* y = static_cast<int32_t*>(args.outputs[0]);
    const int64_t group = a_.group, cin_g = cin_ / group, cout_g = cout_ / group;
    const int64_t in_plane = in_[0] * in_[1] * in_[2], out_plane = out_[0] * out_[1] * out_[2];
    const int64_t taps = k_[0] * k_[1] * k_[2];
    args.pool->parallel_for(batch_ * cout_, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t b = r / cout_, oc = r % cout_, gi = oc / cout_g;
        const int32_t z = zero_at(zw, zw_count_, oc, w_signed_);
        int32_t* out = y + r * out_plane;
        for (int64_t o0 = 0; o0 < out_[0]; ++o0)
          for (int64_t o1 = 0; o1 < out_[1]; ++o1)
            for (int64_t o2 = 0; o2 < out_[2]; ++o2) {
              int32_t acc = 0;
              for (int64_t ic = 0; ic < cin_g; ++ic) {
                const int64_t xc = (b * cin_ + gi * cin_g + ic) * in_plane;
                const int64_t wc = (oc * cin_g + ic) * taps;
                for (int64_t k0 = 0; k0 < k_[0]; ++k0) {
                  const int64_t i0 = o0 * s_[0] - p_[0] + k0 * d_[0];
                  if (i0 < 0 || i0 >= in_[0]) continue;
                  for (int64_t k1 = 0; k1 < k_[1]; ++k1) {
                    const int64_t i1 = o1 * s_[1] - p_[1] + k1 * d_[1];
                    if (i1 < 0 || i1 >= in_[1]) continue;
                    for (int64_t k2 = 0; k2 < k_[2]; ++k2) {
                      const int64_t i2 = o2 * s_[2] - p_[2] + k2 * d_[2];
                      if (i2 < 0 || i2 >= in_[2]) continue;
                      const int32_t xv = widen(x, xc + (i0 * in_[1] + i1) * in_[2] + i2, x_signed_) - zx;
                      const int32_t wv = widen(w, wc + (k0 * k_[1] + k1) * k_[2] + k2, w_signed_) - z;
                      acc += xv * wv;
                    }
                  }
                }
              }
              out[(o0 * out_[1] + o1) * out_[2] + o2] = acc;
            }
      }
    });
  }

 private:
  ConvAttrs a_;
  bool x_signed_, w_signed_;
  bool has_zx_;
  int64_t zw_count_;
  int64_t batch_ = 1, cin_ = 1, cout_ = 1;
  int64_t in_[3], out_[3], k_[3], s_[3], d_[3], p_[3];
};

template <typename K>
std::unique_ptr<Kernel> make(const Graph& g, const Node& n, int t) {
  return std::make_unique<K>(g, n, t);
}

}  // namespace

void add_quant_kernels(std::vector<KernelEntry>& out) {
  out.push_back({"QuantizeLinear", make<QuantLinearKernel>});
  out.push_back({"DequantizeLinear", make<QuantLinearKernel>});
  out.push_back({"DynamicQuantizeLinear", make<DynamicQuantizeKernel>});
  out.push_back({"MatMulInteger", make<MatMulIntegerKernel>});
  out.push_back({"ConvInteger", make<ConvIntegerKernel>});
}

}  // namespace minirt::cpu
