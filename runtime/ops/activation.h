// An elementwise activation that a Conv or Gemm may carry fused after its
// output (set by the fusion pass), and that the activation ops use too.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

namespace minirt {

enum class ActKind : uint8_t { kNone, kRelu, kLeakyRelu, kClip, kSigmoid, kHardSigmoid, kHardSwish, kTanh };

struct Activation {
  ActKind kind = ActKind::kNone;
  float alpha = 0;  // LeakyRelu slope; Clip min; HardSigmoid alpha
  float beta = 0;   // Clip max; HardSigmoid beta

  bool none() const { return kind == ActKind::kNone; }

  float apply(float x) const {
    switch (kind) {
      case ActKind::kNone: return x;
      case ActKind::kRelu: return x > 0 ? x : 0.0f;
      case ActKind::kLeakyRelu: return x >= 0 ? x : alpha * x;
      case ActKind::kClip: return std::min(std::max(x, alpha), beta);
      case ActKind::kSigmoid: return 1.0f / (1.0f + std::exp(-x));
      case ActKind::kHardSigmoid: return std::max(0.0f, std::min(1.0f, alpha * x + beta));
      case ActKind::kHardSwish: return x * std::max(0.0f, std::min(1.0f, x / 6.0f + 0.5f));
      case ActKind::kTanh: return std::tanh(x);
    }
    return x;
  }

  // Applies in place over n floats.
  void apply(float* p, int64_t n) const {
    switch (kind) {
      case ActKind::kNone: return;
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
      case ActKind::kNone: return "";
      case ActKind::kRelu: return "Relu";
      case ActKind::kLeakyRelu: return "LeakyRelu";
      case ActKind::kClip: return "Clip";
      case ActKind::kSigmoid: return "Sigmoid";
      case ActKind::kHardSigmoid: return "HardSigmoid";
      case ActKind::kHardSwish: return "HardSwish";
      case ActKind::kTanh: return "Tanh";
    }
    return "";
  }
};

}  // namespace minirt
