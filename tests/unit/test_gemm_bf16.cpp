// The bf16 matrix product (kernels/cpu/gemm_bf16.h): Gemm and MatMul with a
// constant B under MathMode::kBf16.
//
// Yardstick: the product written here in double over A and B rounded to
// bfloat16 (round to nearest even), then alpha, the bias and the activation
// -- the semantics the kernels promise. The portable reference
// (Bf16Isa::kNone) runs on every host, the AVX512_BF16 kernel where the CPU
// has it. Tolerance: 2e-5 of the sum of the terms' magnitudes (times alpha
// and the activation's steepest slope), plus 1e-6: the products are exact in
// float32, only the sums round, while a pair swapped, a column shifted or a
// group of k dropped moves an output by whole terms (1 / k of the magnitude
// or more), and operands truncated instead of rounded by 2^-9 of each term.
//
// Y starts as NaNs with guard floats after it, and each row has columns
// past n (ldy > n is not offered, so the guards are after the last row):
// every output must be written, nothing past it.
#include <gtest/gtest.h>
#include <minirt/half.h>

#include <cmath>
#include <random>
#include <sstream>
#include <vector>

#include <minirt/session.h>

#include "kernels/cpu/cpu_caps.h"
#include "kernels/cpu/gemm_bf16.h"
#include "model_builder.h"
#include "nchwc_test_util.h"
#include "runtime/ops/activation.h"
#include "runtime/thread_pool.h"

namespace minirt::cpu {
namespace {

using testing::act_of;

struct Case {
  int64_t m, k, n;
  bool trans_a = false, trans_b = true, bias = true;
  float alpha = 1.0f;
  ActKind act = ActKind::kNone;
  std::string str() const {
    std::ostringstream s;
    s << "m" << m << " k" << k << " n" << n << (trans_a ? " A^T" : "") << (trans_b ? " B^T" : "")
      << (bias ? "" : " no-bias") << " alpha " << alpha << " act " << static_cast<int>(act);
    return s.str();
  }
};

float rounded(float v) { return bfloat16_to_float(float_to_bfloat16(v)); }

bool run_case(const Case& c, Bf16Isa isa, ThreadPool& pool) {
  std::mt19937 rng(static_cast<uint32_t>(c.m * 131 + c.k * 7 + c.n));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> a(static_cast<size_t>(c.m * c.k)), b(static_cast<size_t>(c.k * c.n)), bias(c.n);
  for (float& v : a) v = u(rng);
  for (float& v : b) v = u(rng);
  for (float& v : bias) v = u(rng);
  // A (m x k) stored as given or transposed (k x m); B (k x n) likewise.
  const int64_t ars = c.trans_a ? 1 : c.k, acs = c.trans_a ? c.m : 1;
  const int64_t brs = c.trans_b ? 1 : c.n, bcs = c.trans_b ? c.k : 1;
  Activation act = act_of(c.act);
  Bf16Gemm p(isa, c.m, c.k, c.n, b.data(), brs, bcs);
  constexpr size_t kGuard = 32;
  std::vector<float> y(static_cast<size_t>(c.m * c.n) + kGuard, std::nanf(""));
  std::vector<char> ws(p.workspace_bytes() + 64);
  void* wsp = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(ws.data()) + 63) / 64 * 64);
  p.run(a.data(), ars, acs, c.bias ? bias.data() : nullptr, c.alpha, act, y.data(), wsp, pool);
  for (int64_t r = 0; r < c.m; ++r)
    for (int64_t j = 0; j < c.n; ++j) {
      double sum = 0, mag = 0;
      for (int64_t i = 0; i < c.k; ++i) {
        double t = static_cast<double>(rounded(a[r * ars + i * acs])) * rounded(b[i * brs + j * bcs]);
        sum += t;
        mag += std::fabs(t);
      }
      const double want = act.apply(static_cast<float>(c.alpha * sum + (c.bias ? bias[j] : 0.0f)));
      const double got = y[r * c.n + j];
      const double tol = 2e-5 * mag * std::fabs(c.alpha) + 1e-6;  // every activation here has slope <= 1
      if (!(std::fabs(got - want) <= tol)) {
        ADD_FAILURE() << bf16_isa_name(isa) << " " << c.str() << ": y[" << r << "][" << j << "] = " << got << ", want "
                      << want << " (tolerance " << tol << ")";
        return false;
      }
    }
  for (size_t i = static_cast<size_t>(c.m * c.n); i < y.size(); ++i)
    if (!std::isnan(y[i])) {
      ADD_FAILURE() << bf16_isa_name(isa) << " " << c.str() << ": wrote past the output";
      return false;
    }
  return true;
}

void run_all(Bf16Isa isa) {
  ThreadPool pool(2);
  const std::vector<Case> cases = {
      {1, 2048, 1000},                                           // ResNet-50's fc
      {1, 1280, 1000, false, true, true, 1.0f, ActKind::kRelu},  // MobileNetV2's, with an activation
      {1, 37, 15},                                               // k past whole pairs and groups, n below a block
      {3, 64, 33, true, false, false, 0.5f},                     // A transposed, B plain, alpha, no bias
      {8, 100, 17, false, true, true, -2.0f, ActKind::kLeakyRelu},
      {9, 31, 48, false, false, true, 1.0f, ActKind::kClip},  // 8 rows, then 1
      {16, 1, 1},
      {16, 513, 130, true, true, true, 1.0f, ActKind::kSigmoid},
  };
  for (const Case& c : cases)
    if (!run_case(c, isa, pool)) return;
}

TEST(GemmBf16, ReferenceMatchesRoundedOperands) { run_all(Bf16Isa::kNone); }

TEST(GemmBf16, Avx512Bf16MatchesRoundedOperands) {
  if (!cpu_isa_supported(CpuIsa::kAvx512Bf16))
    GTEST_SKIP() << "this CPU has no AVX512_BF16 (" << cpu_features_line() << ")";
  run_all(Bf16Isa::kAvx512Bf16);
}

TEST(GemmBf16, DeclinesWithReasons) {
  EXPECT_EQ(bf16_gemm_declined(1, Bf16Isa::kAvx512Bf16), "");
  EXPECT_EQ(bf16_gemm_declined(kBf16GemmMaxRows, Bf16Isa::kAmx), "");
  EXPECT_NE(bf16_gemm_declined(kBf16GemmMaxRows + 1, Bf16Isa::kAmx).find("rows, more than 16"), std::string::npos);
  EXPECT_FALSE(bf16_gemm_declined(1, Bf16Isa::kNone).empty());
}

// The accuracy policy in a plan: a Gemm over pooled features (a
// classifier's fc) runs bf16, one over a plain input that the outputs read
// as it is (a detector-like head) stays float32, and one that feeds another
// product runs bf16.
TEST(GemmBf16, PolicyInThePlan) {
  if (bf16_isa() == Bf16Isa::kNone) GTEST_SKIP() << "no bf16 instructions here: " << bf16_isa_reason();
  minirt::testing::ModelBuilder m(13);
  m.input("x", DType::kFloat32, {1, 16, 4, 4});
  m.input("v", DType::kFloat32, {1, 64});
  m.initializer("fc", minirt::testing::iota({10, 16}, 0.05f, 0.001f));
  m.initializer("w1", minirt::testing::iota({64, 32}, -0.1f, 0.0001f));
  m.initializer("w2", minirt::testing::iota({32, 8}, 0.1f, -0.0007f));
  m.node("GlobalAveragePool", {"x"}, {"g"}, "gap");
  m.node("Flatten", {"g"}, {"h"}, "flatten");
  m.node("Gemm", {"h", "fc"}, {"logits"}, "classifier_fc").i("transB", 1);
  m.node("MatMul", {"v", "w1"}, {"hidden"}, "inner_product");
  m.node("MatMul", {"hidden", "w2"}, {"boxes"}, "head_product");
  m.output("logits");
  m.output("boxes");
  std::string bytes = m.bytes();
  auto model = Model::load_from_memory(bytes.data(), bytes.size(), "policy.onnx");
  Session s(model, {.device = Device::kCpu, .threads = 1, .math = MathMode::kBf16});
  s.run({{"x", Tensor::zeros(DType::kFloat32, {1, 16, 4, 4})}, {"v", Tensor::zeros(DType::kFloat32, {1, 64})}});
  const std::string plan = s.plan_report();
  auto line_of = [&](const std::string& name) {
    size_t at = plan.find(" " + name + " ");
    if (at == std::string::npos) return std::string();
    size_t b = plan.rfind('\n', at), e = plan.find('\n', at);
    return plan.substr(b == std::string::npos ? 0 : b + 1, e == std::string::npos ? std::string::npos : e - b - 1);
  };
  EXPECT_NE(line_of("classifier_fc").find("precision bf16"), std::string::npos) << plan;
  EXPECT_NE(line_of("inner_product").find("precision bf16"), std::string::npos) << plan;
  const std::string head = line_of("head_product");
  EXPECT_NE(head.find("sgemm"), std::string::npos) << plan;
  EXPECT_EQ(head.find("bf16"), std::string::npos) << plan;
}

}  // namespace
}  // namespace minirt::cpu
