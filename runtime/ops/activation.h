// An elementwise activation that a Conv or Gemm may carry fused after its
// output (set by the fusion pass), and that the activation ops use too.
// apply() is the scalar reference, in std:: math; the CPU kernels run the
// vectorized forms of kernels/cpu/vmath.h, tested against it.
//
//   Activation a{ActKind::kLeakyRelu, 0.1f};
//   float y = a.apply(x);         // one value
//   a.apply(p, n);                // in place over n floats
//
// NaN in gives NaN out for every kind except Relu and ThresholdedRelu
// (0, as their comparisons read), so that the SIMD forms can match it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

namespace minirt {

enum class ActKind : uint8_t {
  kNone,
  kRelu,
  kLeakyRelu,
  kClip,
  kSigmoid,
  kHardSigmoid,
  kHardSwish,
  kTanh,
  kElu,
  kSelu,
  kCelu,
  kSoftplus,
  kSoftsign,
  kThresholdedRelu,
  kMish,
  kGelu,      // exact: x * Phi(x), with erf
  kGeluTanh,  // approximate="tanh"
  kSilu,      // x * sigmoid(x) (Swish); set by the fusion pass for Mul(x, Sigmoid(x))
  // QuantizeLinear then DequantizeLinear with one scale (alpha) and zero
  // point z: x rounded to the scale's grid within the 8-bit range,
  // alpha * round_half_even(clamp(x / alpha, beta, gamma)) with beta = lo - z
  // and gamma = hi - z; set by fold_quantize_pairs (runtime/passes/quant.cpp).
  kQuantGrid,
};

struct Activation {
  ActKind kind = ActKind::kNone;
  float alpha = 0;  // LeakyRelu slope; Clip min; HardSigmoid, Elu, Selu, Celu alpha; ThresholdedRelu threshold
  float beta = 0;   // Clip max; HardSigmoid beta; Selu gamma; QuantGrid low bound
  float gamma = 0;  // QuantGrid high bound

  bool none() const { return kind == ActKind::kNone; }

  float apply(float x) const {
    switch (kind) {
      case ActKind::kNone:
        return x;
      case ActKind::kRelu:
        return x > 0 ? x : 0.0f;
      case ActKind::kLeakyRelu:
        return x >= 0 ? x : alpha * x;
      case ActKind::kClip:
        return std::min(std::max(x, alpha), beta);
      case ActKind::kSigmoid:
        return 1.0f / (1.0f + std::exp(-x));
      // The clamps put the value first so that a NaN passes through them.
      // One rounding (fma) in every form, scalar and vector, so that a
      // compiler fusing alpha * x + beta or not changes nothing.
      case ActKind::kHardSigmoid:
        return std::min(std::max(std::fma(alpha, x, beta), 0.0f), 1.0f);
      case ActKind::kHardSwish:
        return x * std::min(std::max(x / 6.0f + 0.5f, 0.0f), 1.0f);
      case ActKind::kTanh:
        return std::tanh(x);
      case ActKind::kElu:
        return x >= 0 ? x : alpha * std::expm1(x);
      case ActKind::kSelu:
        return x > 0 ? beta * x : beta * alpha * std::expm1(x);
      case ActKind::kCelu:
        return std::max(x, 0.0f) + std::min(alpha * std::expm1(x / alpha), 0.0f);
      case ActKind::kSoftplus:
        return softplus(x);
      case ActKind::kSoftsign:
        return x / (1.0f + std::fabs(x));
      case ActKind::kThresholdedRelu:
        return x > alpha ? x : 0.0f;
      case ActKind::kMish:
        return x * std::tanh(softplus(x));
      case ActKind::kGelu:
        return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f));
      case ActKind::kGeluTanh: {
        // sqrt(2 / pi) * (x + 0.044715 x^3)
        float u = 0.79788456080286536f * (x + 0.044715f * x * x * x);
        return 0.5f * x * (1.0f + std::tanh(u));
      }
      case ActKind::kSilu:
        return x / (1.0f + std::exp(-x));
      case ActKind::kQuantGrid:  // the clamps keep a NaN, as Clip's
        return alpha * std::nearbyint(std::min(std::max(x / alpha, beta), gamma));
    }
    return x;
  }

  // log(1 + exp(x)) without overflow for large x.
  static float softplus(float x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }

  // Applies in place over n floats.
  void apply(float* p, int64_t n) const {
    switch (kind) {
      case ActKind::kNone:
        return;
      case ActKind::kRelu:
        for (int64_t i = 0; i < n; ++i) p[i] = p[i] > 0 ? p[i] : 0.0f;
        return;
      case ActKind::kClip:
        for (int64_t i = 0; i < n; ++i) p[i] = std::min(std::max(p[i], alpha), beta);
        return;
      default:
        for (int64_t i = 0; i < n; ++i) p[i] = apply(p[i]);
    }
  }

  std::string name() const {
    switch (kind) {
      case ActKind::kNone:
        return "";
      case ActKind::kRelu:
        return "Relu";
      case ActKind::kLeakyRelu:
        return "LeakyRelu";
      case ActKind::kClip:
        return "Clip";
      case ActKind::kSigmoid:
        return "Sigmoid";
      case ActKind::kHardSigmoid:
        return "HardSigmoid";
      case ActKind::kHardSwish:
        return "HardSwish";
      case ActKind::kTanh:
        return "Tanh";
      case ActKind::kElu:
        return "Elu";
      case ActKind::kSelu:
        return "Selu";
      case ActKind::kCelu:
        return "Celu";
      case ActKind::kSoftplus:
        return "Softplus";
      case ActKind::kSoftsign:
        return "Softsign";
      case ActKind::kThresholdedRelu:
        return "ThresholdedRelu";
      case ActKind::kMish:
        return "Mish";
      case ActKind::kGelu:
        return "Gelu";
      case ActKind::kGeluTanh:
        return "Gelu(tanh)";
      case ActKind::kSilu:
        return "Silu";
      case ActKind::kQuantGrid:
        return "QuantizeDequantize";
    }
    return "";
  }
};

}  // namespace minirt
