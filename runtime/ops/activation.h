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
#include <cstring>
#include <string>

#include "runtime/ops/op_table.h"

namespace minirt {

// ActKind, one kind per row of MINIRT_ACTIVATIONS (runtime/ops/op_table.h).
// kQuantGrid: QuantizeLinear then DequantizeLinear with one scale (alpha)
// and zero point z: x rounded to the scale's grid within the 8-bit range,
// alpha * round_half_even(clamp(x / alpha, beta, gamma)) with beta = lo - z
// and gamma = hi - z; set by fold_quantize_pairs (runtime/passes/quant.cpp).
// kSilu, x * sigmoid(x), is set by the fusion pass for Mul(x, Sigmoid(x)).

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
      case ActKind::kCount:  // no kind
        break;
    }
    return x;
  }

  // log(1 + exp(x)) without overflow for large x.
  static float softplus(float x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }

  // Applies in place over n floats.
  void apply(float* p, int64_t n) const {
    // Relu and Clip (the common ones) without the per-value switch; the rest through apply(x).
    if (kind == ActKind::kNone) return;
    if (kind == ActKind::kRelu) {
      for (int64_t i = 0; i < n; ++i) p[i] = p[i] > 0 ? p[i] : 0.0f;
    } else if (kind == ActKind::kClip) {
      for (int64_t i = 0; i < n; ++i) p[i] = std::min(std::max(p[i], alpha), beta);
    } else {
      for (int64_t i = 0; i < n; ++i) p[i] = apply(p[i]);
    }
  }

  // The kind's name in the op table ("" for none).
  std::string name() const { return kind < ActKind::kCount ? act_info(kind).name : ""; }
  // Kind and parameters exactly (the floats' bits), for OpAttrs::recipe.
  std::string recipe() const {
    if (kind == ActKind::kNone) return "-";
    auto bits = [](float f) {
      uint32_t u;
      std::memcpy(&u, &f, sizeof u);
      return std::to_string(u);
    };
    return name() + "(" + bits(alpha) + "," + bits(beta) + "," + bits(gamma) + ")";
  }
};

}  // namespace minirt
