// The quantization ops on the CPU: QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, and MatMulInteger and ConvInteger on the int8
// product (gemm_int8.h: AVX512-VNNI, or its portable reference). The
// semantics:
//   quantize    y = saturate(round_half_even(x / scale) + zero_point)
//   dequantize  y = float(int32(x) - zero_point) * scale
//   integer ops sum (a - a_zero_point) * (b - b_zero_point) in int32.
// Q and DQ see their tensor as [outer][mid][inner] around the scale's axis:
// one scale per tensor, per `mid` (per axis), or per (outer, mid / block,
// inner) (blocked).
#include "kernels/cpu/gemm_int8.h"
#include "kernels/cpu/registry.h"
#include "runtime/ops/conv.h"
#include "runtime/ops/linalg.h"
#include "runtime/ops/quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

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

// Zero point i of a scalar-or-vector zero-point input (null: 0), widened.
inline int32_t zero_at(const void* zp, int64_t count, int64_t i, bool is_signed) {
  if (!zp) return 0;
  const int64_t at = count == 1 ? 0 : i;
  return is_signed ? static_cast<const int8_t*>(zp)[at] : static_cast<const uint8_t*>(zp)[at];
}

// Workspace carved in 64-byte aligned pieces.
class Carver {
 public:
  explicit Carver(void* base) : at_(static_cast<char*>(base)) {}
  template <typename T>
  T* take(int64_t count) {
    T* p = reinterpret_cast<T*>(at_);
    at_ += (static_cast<size_t>(count) * sizeof(T) + 63) / 64 * 64;
    return p;
  }
  static size_t bytes(int64_t count, size_t size) { return (static_cast<size_t>(count) * size + 63) / 64 * 64; }

 private:
  char* at_;
};

// MatMulInteger on the int8 product (gemm_int8.h): A's rows as P (uint8
// flipped to int8), B's columns as Q's panels (int8 flipped to uint8), the
// zero points and flips taken out with row and column sums.
class MatMulIntegerKernel final : public Kernel {
 public:
  MatMulIntegerKernel(const Graph& g, const Node& n, int)
      : geo_(matmul_geometry(in_shape(g, n, 0), in_shape(g, n, 1))),
        a_signed_(in_dtype(g, n, 0) == DType::kInt8),
        b_signed_(in_dtype(g, n, 1) == DType::kInt8),
        za_count_(n.input(2) >= 0 ? shape_numel(in_shape(g, n, 2)) : 0),
        zb_count_(n.input(3) >= 0 ? shape_numel(in_shape(g, n, 3)) : 0),
        isa_(int8_isa()) {
    // A constant B (the weights) is packed once, here.
    if (const Tensor* b = in_const(g, n, 1)) {
      packed_q_.resize(static_cast<size_t>(geo_.b_mats * int8_q_bytes(geo_.k, geo_.n)));
      packed_colsum_.resize(static_cast<size_t>(geo_.b_mats * geo_.n));
      pack_b(static_cast<const uint8_t*>(b->raw()), packed_q_.data(), packed_colsum_.data());
    }
  }
  std::string describe() const override { return std::string("int8 product, ") + int8_isa_name(isa_); }
  size_t workspace_bytes() const override {
    const int64_t kp = int8_quads(geo_.k) * 4;
    const size_t b = packed_q_.empty() ? Carver::bytes(geo_.b_mats * int8_q_bytes(geo_.k, geo_.n), 1) +
                                             Carver::bytes(geo_.b_mats * geo_.n, 4)
                                       : 0;
    return Carver::bytes(geo_.a_mats * geo_.m * kp, 1) + Carver::bytes(geo_.a_mats * geo_.m, 4) + b +
           Carver::bytes(geo_.m, 4) + Carver::bytes(geo_.n, 4);
  }
  // args.inputs holds one pointer per input the node lists (fewer than 4
  // when trailing zero points are left out).
  void run(const KernelArgs& args) override {
    const int64_t m = geo_.m, k = geo_.k, n = geo_.n, kp = int8_quads(k) * 4, qb = int8_q_bytes(k, n);
    const uint8_t* a = static_cast<const uint8_t*>(args.inputs[0]);
    const uint8_t* b = static_cast<const uint8_t*>(args.inputs[1]);
    Carver ws(args.workspace);
    int8_t* pbuf = ws.take<int8_t>(geo_.a_mats * m * kp);
    int32_t* rowsum = ws.take<int32_t>(geo_.a_mats * m);
    const uint8_t* qbuf = packed_q_.data();
    const int32_t* colsum = packed_colsum_.data();
    if (packed_q_.empty()) {
      uint8_t* q = ws.take<uint8_t>(geo_.b_mats * qb);
      int32_t* cs = ws.take<int32_t>(geo_.b_mats * n);
      pack_b(b, q, cs);
      qbuf = q;
      colsum = cs;
    }
    int32_t* za = ws.take<int32_t>(m);
    int32_t* zb = ws.take<int32_t>(n);
    const void* zap = za_count_ ? args.inputs[2] : nullptr;
    const void* zbp = zb_count_ ? args.inputs[3] : nullptr;
    for (int64_t r = 0; r < m; ++r) za[r] = zero_at(zap, za_count_, r, a_signed_);
    for (int64_t j = 0; j < n; ++j) zb[j] = zero_at(zbp, zb_count_, j, b_signed_);
    const uint8_t fa = a_signed_ ? 0 : 0x80;
    for (int64_t i = 0; i < geo_.a_mats; ++i)
      int8_pack_p(a + i * m * k, k, k, m, fa, pbuf + i * m * kp, rowsum + i * m);
    int32_t* y = static_cast<int32_t*>(args.outputs[0]);
    for (int64_t e = 0; e < geo_.count(); ++e) {
      const auto [ia, ib] = geo_.operands(e);
      int32_t* c = y + e * m * n;
      int8_gemm(isa_, pbuf + ia * m * kp, kp, m, kp / 4, qbuf + ib * qb, n, c, n, args.pool);
      int8_unshift(c, n, m, n, k, rowsum + ia * m, colsum + ib * n, za, 1, a_signed_ ? 0 : 128, zb, 1,
                   b_signed_ ? 128 : 0);
    }
  }

 private:
  // B's matrices as Q's panels (int8 flipped to uint8) and their column sums.
  void pack_b(const uint8_t* b, uint8_t* q, int32_t* colsum) const {
    const int64_t k = geo_.k, n = geo_.n, qb = int8_q_bytes(k, n);
    for (int64_t i = 0; i < geo_.b_mats; ++i)
      int8_pack_q(b + i * k * n, n, 1, k, n, b_signed_ ? 0x80 : 0, q + i * qb, colsum + i * n);
  }

  MatMulGeometry geo_;
  bool a_signed_, b_signed_;
  int64_t za_count_, zb_count_;
  Int8Isa isa_;
  std::vector<uint8_t> packed_q_;  // a constant B, packed when the kernel was made
  std::vector<int32_t> packed_colsum_;
};

// ConvInteger on the int8 product: per image and group, the weights' rows
// as P and the input's columns (im2col: one column per output pixel, padding
// at the input's zero point so it adds nothing) as Q; up to three spatial
// axes (fewer are padded with axes of length 1).
class ConvIntegerKernel final : public Kernel {
 public:
  ConvIntegerKernel(const Graph& g, const Node& n, int)
      : a_(n.attrs_as<ConvAttrs>()),
        x_signed_(in_dtype(g, n, 0) == DType::kInt8),
        w_signed_(in_dtype(g, n, 1) == DType::kInt8),
        has_zx_(n.input(2) >= 0),
        zw_count_(n.input(3) >= 0 ? shape_numel(in_shape(g, n, 3)) : 0),
        isa_(int8_isa()) {
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
    taps_ = k_[0] * k_[1] * k_[2];
    pixels_ = out_[0] * out_[1] * out_[2];
    kdim_ = cin_ / a_.group * taps_;
    // Constant weights (the usual case) are packed once, here: every
    // group's rows as P (uint8 flipped to int8) and their sums.
    if (const Tensor* wt = in_const(g, n, 1)) {
      const int64_t kp = int8_quads(kdim_) * 4;
      packed_p_.resize(static_cast<size_t>(cout_ * kp));
      packed_rowsum_.resize(static_cast<size_t>(cout_));
      int8_pack_p(static_cast<const uint8_t*>(wt->raw()), kdim_, kdim_, cout_, w_signed_ ? 0 : 0x80, packed_p_.data(),
                  packed_rowsum_.data());
    }
  }
  std::string describe() const override { return std::string("int8 product, ") + int8_isa_name(isa_); }
  size_t workspace_bytes() const override {
    const int64_t cout_g = cout_ / a_.group;
    return Carver::bytes(cout_g * int8_quads(kdim_) * 4, 1) + Carver::bytes(cout_g, 4) * 2 +
           Carver::bytes(kdim_ * pixels_, 1) + Carver::bytes(int8_q_bytes(kdim_, pixels_), 1) +
           Carver::bytes(pixels_, 4);
  }
  void run(const KernelArgs& args) override {
    const uint8_t* x = static_cast<const uint8_t*>(args.inputs[0]);
    const uint8_t* w = static_cast<const uint8_t*>(args.inputs[1]);
    const int32_t zx = has_zx_ ? zero_at(args.inputs[2], 1, 0, x_signed_) : 0;
    const void* zwp = zw_count_ ? args.inputs[3] : nullptr;
    int32_t* y = static_cast<int32_t*>(args.outputs[0]);
    const int64_t group = a_.group, cin_g = cin_ / group, cout_g = cout_ / group, kp = int8_quads(kdim_) * 4;
    const int64_t in_plane = in_[0] * in_[1] * in_[2];
    Carver ws(args.workspace);
    int8_t* wbuf = ws.take<int8_t>(cout_g * kp);
    int32_t* wsum = ws.take<int32_t>(cout_g);
    int32_t* zw = ws.take<int32_t>(cout_g);
    uint8_t* cols = ws.take<uint8_t>(kdim_ * pixels_);
    uint8_t* qbuf = ws.take<uint8_t>(int8_q_bytes(kdim_, pixels_));
    int32_t* colsum = ws.take<int32_t>(pixels_);
    // Padding holds the raw zero point, so (x - zx) is 0 there.
    const uint8_t pad = static_cast<uint8_t>(zx);
    for (int64_t gi = 0; gi < group; ++gi) {
      const int8_t* pbuf = packed_p_.empty() ? wbuf : packed_p_.data() + gi * cout_g * kp;
      const int32_t* rowsum = packed_rowsum_.empty() ? wsum : packed_rowsum_.data() + gi * cout_g;
      if (packed_p_.empty())
        int8_pack_p(w + gi * cout_g * kdim_, kdim_, kdim_, cout_g, w_signed_ ? 0 : 0x80, wbuf, wsum);
      for (int64_t oc = 0; oc < cout_g; ++oc) zw[oc] = zero_at(zwp, zw_count_, gi * cout_g + oc, w_signed_);
      for (int64_t b = 0; b < batch_; ++b) {
        const uint8_t* xg = x + (b * cin_ + gi * cin_g) * in_plane;
        args.pool->parallel_for(cin_g, [&](int64_t c0, int64_t c1) {
          for (int64_t ic = c0; ic < c1; ++ic) im2col(xg + ic * in_plane, cols + ic * taps_ * pixels_, pad);
        });
        int8_pack_q(cols, pixels_, 1, kdim_, pixels_, x_signed_ ? 0x80 : 0, qbuf, colsum, args.pool);
        int32_t* c = y + (b * cout_ + gi * cout_g) * pixels_;
        int8_gemm(isa_, pbuf, kp, cout_g, kp / 4, qbuf, pixels_, c, pixels_, args.pool);
        int8_unshift(c, pixels_, cout_g, pixels_, kdim_, rowsum, colsum, zw, 1, w_signed_ ? 0 : 128, &zx, 0,
                     x_signed_ ? 128 : 0);
      }
    }
  }

 private:
  // One input channel's taps x output pixels. Along the last axis the
  // output positions whose input lies inside form one run (copied; strided
  // when the stride is), the rest are padding.
  void im2col(const uint8_t* x, uint8_t* out, uint8_t pad) const {
    for (int64_t k0 = 0; k0 < k_[0]; ++k0)
      for (int64_t k1 = 0; k1 < k_[1]; ++k1)
        for (int64_t k2 = 0; k2 < k_[2]; ++k2) {
          uint8_t* row = out + ((k0 * k_[1] + k1) * k_[2] + k2) * pixels_;
          // o2 with 0 <= o2 * s - p + k2 * d < in: [lo, hi).
          const int64_t off = k2 * d_[2] - p_[2];
          int64_t lo = off >= 0 ? 0 : (-off + s_[2] - 1) / s_[2];
          int64_t hi = in_[2] - off <= 0 ? 0 : (in_[2] - off + s_[2] - 1) / s_[2];
          hi = std::min(hi, out_[2]);
          lo = std::min(lo, hi);
          for (int64_t o0 = 0; o0 < out_[0]; ++o0) {
            const int64_t i0 = o0 * s_[0] - p_[0] + k0 * d_[0];
            for (int64_t o1 = 0; o1 < out_[1]; ++o1) {
              const int64_t i1 = o1 * s_[1] - p_[1] + k1 * d_[1];
              uint8_t* r = row + (o0 * out_[1] + o1) * out_[2];
              if (i0 < 0 || i0 >= in_[0] || i1 < 0 || i1 >= in_[1]) {
                for (int64_t o2 = 0; o2 < out_[2]; ++o2) r[o2] = pad;
                continue;
              }
              // Plain loops: the runs are short (7 to 112), where a call costs more than the copy.
              const uint8_t* src = x + (i0 * in_[1] + i1) * in_[2] + off;
              for (int64_t o2 = 0; o2 < lo; ++o2) r[o2] = pad;
              if (s_[2] == 1) {
                for (int64_t o2 = lo; o2 < hi; ++o2) r[o2] = src[o2];
              } else {
                for (int64_t o2 = lo; o2 < hi; ++o2) r[o2] = src[o2 * s_[2]];
              }
              for (int64_t o2 = hi; o2 < out_[2]; ++o2) r[o2] = pad;
            }
          }
        }
  }

  ConvAttrs a_;
  bool x_signed_, w_signed_;
  bool has_zx_;
  int64_t zw_count_;
  Int8Isa isa_;
  std::vector<int8_t> packed_p_;  // constant weights, packed when the kernel was made
  std::vector<int32_t> packed_rowsum_;
  int64_t batch_ = 1, cin_ = 1, cout_ = 1, taps_ = 1, pixels_ = 1, kdim_ = 1;
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
