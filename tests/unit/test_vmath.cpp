// The vectorized math of kernels/cpu/vmath.h and the elementwise, softmax
// and LRN kernels built on it, for every variant the CPU can run (AVX-512,
// AVX2, the portable scalar forms), forced in turn.
//
// - exp, expm1, log, log1p, erf, sigmoid, tanh against the std:: functions
//   in double, over every 257th bit pattern of the 2^32 floats (NaNs,
//   infinities, zeros and denormals among them), every float near 1, and the
//   neighbours of each threshold (overflow, underflow, branch points),
//   asserting the maximum ULP error vmath.h documents;
// - the special values (NaN, +-inf, +-0, log of 0 and negatives) exactly;
// - every ActKind, through apply_activation and through the register forms
//   act_avx512 / act_avx2, against Activation::apply (scalar std::);
// - the activation ops through the Unary kernel against Activation::apply.
// The other kernels on vmath (Unary, Binary, Variadic, Pow, Softmax, LRN,
// ReduceLogSumExp) are test_vmath_kernels.cpp.
#include "op_runner.h"
#include "vmath_test_util.h"
#include "kernels/cpu/sgemm.h"
#include "kernels/cpu/vmath.h"
#include "kernels/cpu/vmath_avx2.h"
#include "kernels/cpu/vmath_avx512.h"
#include "runtime/ops/activation.h"
#include "runtime/thread_pool.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace minirt {
namespace {

using cpu::MathFn;
using cpu::SgemmIsa;
using namespace ::minirt::testing;
using namespace ::minirt::vmath_test;

// ---------------------------------------------------------------- accuracy sweeps

// The inputs of a sweep: every `step`th bit pattern, all floats in [lo, hi)
// of each dense range, and 8 neighbours of each point on either side.
std::vector<float> sweep_inputs(uint32_t step, const std::vector<std::pair<float, float>>& dense,
                                const std::vector<float>& points) {
  std::vector<float> x;
  x.reserve((uint64_t{1} << 32) / step + 4096);
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += step) x.push_back(from_bits(static_cast<uint32_t>(u)));
  for (auto [lo, hi] : dense)
    for (float v = lo; v < hi; v = std::nextafter(v, kInf)) x.push_back(v);
  for (float p : points)
    for (float s : {p, -p}) {
      float up = s, down = s;
      x.push_back(s);
      for (int i = 0; i < 8; ++i) {
        up = std::nextafter(up, kInf);
        down = std::nextafter(down, -kInf);
        x.push_back(up);
        x.push_back(down);
      }
    }
  for (float v : {0.0f, -0.0f, kInf, -kInf, kNaN, -kNaN, from_bits(0x7f800001u), from_bits(0xffc00001u)})
    x.push_back(v);
  return x;
}

struct Sweep {
  const char* name;
  std::function<void(const float*, float*, int64_t)> run;  // the array function under test
  std::function<double(double)> ref;                       // the exact function, in double
  double bound[3];                                         // max ULP for AVX-512, AVX2, generic
};

double bound_for(const Sweep& s, SgemmIsa isa) {
  return isa == SgemmIsa::kAvx512 ? s.bound[0] : isa == SgemmIsa::kAvx2 ? s.bound[1] : s.bound[2];
}

// Runs the sweep for every variant; reports the measured maximum and the
// input where it occurs.
void run_sweep(const Sweep& s, const std::vector<float>& x) {
  std::vector<double> want(x.size());
  for (size_t i = 0; i < x.size(); ++i) want[i] = s.ref(x[i]);
  std::vector<float> got(x.size());
  for (SgemmIsa isa : supported_isas()) {
    ForceIsa force(isa);
    s.run(x.data(), got.data(), static_cast<int64_t>(x.size()));
    double worst = 0;
    size_t at = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      double e = ulp_error(got[i], want[i]);
      if (!(e <= worst)) {
        worst = e;
        at = i;
      }
    }
    std::printf("  %-8s %-7s max %.3f ULP at x = %a (got %a, want %a)\n", s.name, cpu::sgemm_isa_name(isa), worst,
                x[at], got[at], want[at]);
    EXPECT_LE(worst, bound_for(s, isa)) << s.name << " on " << cpu::sgemm_isa_name(isa) << " at x = " << x[at] << " ("
                                        << std::hexfloat << x[at] << "): got " << got[at] << ", want " << want[at];
  }
}

constexpr uint32_t kStep = 257;  // a prime: every mantissa residue, about 16.7 million inputs

// Thresholds and branch points of the algorithms (their negatives too).
const std::vector<float> kPoints = {
    1.0f,   0.5f,       2.0f,        0.625f,      0.75f,       2.35f,          3.92f,    3.95f,        9.0f,
    10.0f,  20.0f,      30.0f,       17.33f,      88.7228f,    88.72284f,      88.75f,   87.3365f,     103.972f,
    104.0f, 1.4142135f, 0.70710677f, 0.34657359f, 0.69314718f, 1.1754944e-38f, 1.4e-45f, 3.4028235e38f};

void math_array(MathFn f, const float* x, float* y, int64_t n) { cpu::apply_math(f, x, y, n); }
void act_array(ActKind k, const float* x, float* y, int64_t n) {
  Activation a;
  a.kind = k;
  cpu::apply_activation(a, x, y, n);
}

TEST(Vmath, ExpLogAndFriendsWithinDocumentedUlps) {
  std::vector<float> x = sweep_inputs(kStep, {{0.99f, 1.01f}, {88.6f, 88.8f}, {-104.5f, -103.5f}}, kPoints);
  using namespace std::placeholders;
  const Sweep sweeps[] = {
      {"exp", std::bind(math_array, MathFn::kExp, _1, _2, _3), [](double v) { return std::exp(v); }, {1, 1, 1}},
      {"expm1", std::bind(math_array, MathFn::kExpm1, _1, _2, _3), [](double v) { return std::expm1(v); }, {2, 2, 2}},
      {"log", std::bind(math_array, MathFn::kLog, _1, _2, _3), [](double v) { return std::log(v); }, {1, 1, 1}},
      {"log1p", std::bind(math_array, MathFn::kLog1p, _1, _2, _3), [](double v) { return std::log1p(v); }, {2, 2, 2}},
  };
  for (const Sweep& s : sweeps) run_sweep(s, x);
}

TEST(Vmath, SigmoidTanhErfWithinDocumentedUlps) {
  std::vector<float> x = sweep_inputs(kStep, {{0.62f, 0.63f}, {0.745f, 0.755f}, {-0.755f, -0.745f}}, kPoints);
  using namespace std::placeholders;
  const Sweep sweeps[] = {
      {"sigmoid",
       std::bind(act_array, ActKind::kSigmoid, _1, _2, _3),
       [](double v) { return 1.0 / (1.0 + std::exp(-v)); },
       {3, 3, 3}},
      {"tanh", std::bind(act_array, ActKind::kTanh, _1, _2, _3), [](double v) { return std::tanh(v); }, {2, 2, 2}},
      {"erf", std::bind(math_array, MathFn::kErf, _1, _2, _3), [](double v) { return std::erf(v); }, {2, 2, 2}},
  };
  for (const Sweep& s : sweeps) run_sweep(s, x);
}

// ---------------------------------------------------------------- special values

float one_value(SgemmIsa isa, MathFn f, float v) {
  ForceIsa force(isa);
  float y;
  cpu::apply_math(f, &v, &y, 1);
  return y;
}
float one_act(SgemmIsa isa, ActKind k, float v) {
  ForceIsa force(isa);
  float y;
  act_array(k, &v, &y, 1);
  return y;
}

TEST(Vmath, SpecialValuesExactly) {
  const float denorm = std::numeric_limits<float>::denorm_min();
  for (SgemmIsa isa : supported_isas()) {
    SCOPED_TRACE(cpu::sgemm_isa_name(isa));
    auto e = [&](float v) { return one_value(isa, MathFn::kExp, v); };
    EXPECT_TRUE(std::isnan(e(kNaN)));
    EXPECT_EQ(e(kInf), kInf);
    EXPECT_EQ(e(-kInf), 0.0f);
    EXPECT_EQ(e(0.0f), 1.0f);
    EXPECT_EQ(e(-0.0f), 1.0f);
    EXPECT_EQ(e(denorm), 1.0f);
    EXPECT_EQ(e(100.0f), kInf);
    EXPECT_EQ(e(-100.0f), std::exp(-100.0f));  // a denormal, as std::exp gives it
    EXPECT_GT(e(-100.0f), 0.0f);
    EXPECT_EQ(e(-104.0f), 0.0f);
    EXPECT_EQ(e(88.7228f), std::exp(88.7228f));  // the largest finite results
    EXPECT_EQ(e(88.7229f), kInf);

    auto em1 = [&](float v) { return one_value(isa, MathFn::kExpm1, v); };
    EXPECT_TRUE(std::isnan(em1(kNaN)));
    EXPECT_EQ(em1(-kInf), -1.0f);
    EXPECT_EQ(em1(kInf), kInf);
    EXPECT_EQ(em1(1e-30f), 1e-30f);
    EXPECT_EQ(em1(-50.0f), -1.0f);

    auto l = [&](float v) { return one_value(isa, MathFn::kLog, v); };
    EXPECT_EQ(l(0.0f), -kInf);
    EXPECT_EQ(l(-0.0f), -kInf);
    EXPECT_TRUE(std::isnan(l(-1.0f)));
    EXPECT_TRUE(std::isnan(l(-denorm)));
    EXPECT_TRUE(std::isnan(l(-kInf)));
    EXPECT_TRUE(std::isnan(l(kNaN)));
    EXPECT_EQ(l(kInf), kInf);
    EXPECT_EQ(l(1.0f), 0.0f);
    EXPECT_NEAR(l(denorm), -103.27893f, 1e-5f);
    EXPECT_NEAR(l(std::numeric_limits<float>::max()), 88.72284f, 1e-5f);

    auto l1p = [&](float v) { return one_value(isa, MathFn::kLog1p, v); };
    EXPECT_EQ(l1p(-1.0f), -kInf);
    EXPECT_TRUE(std::isnan(l1p(-2.0f)));
    EXPECT_EQ(l1p(kInf), kInf);
    EXPECT_EQ(l1p(1e-30f), 1e-30f);
    EXPECT_EQ(l1p(-0.0f), 0.0f);

    auto s = [&](float v) { return one_act(isa, ActKind::kSigmoid, v); };
    EXPECT_TRUE(std::isnan(s(kNaN)));
    EXPECT_EQ(s(kInf), 1.0f);
    EXPECT_EQ(s(-kInf), 0.0f);
    EXPECT_EQ(s(0.0f), 0.5f);
    EXPECT_EQ(s(-0.0f), 0.5f);
    EXPECT_EQ(s(20.0f), 1.0f);
    EXPECT_EQ(s(-200.0f), 0.0f);
    EXPECT_GT(s(-100.0f), 0.0f);  // e^-100, a denormal

    auto t = [&](float v) { return one_act(isa, ActKind::kTanh, v); };
    EXPECT_TRUE(std::isnan(t(kNaN)));
    EXPECT_EQ(t(kInf), 1.0f);
    EXPECT_EQ(t(-kInf), -1.0f);
    EXPECT_EQ(t(10.0f), 1.0f);
    EXPECT_EQ(t(-1e30f), -1.0f);
    EXPECT_TRUE(std::signbit(t(-0.0f)) && t(-0.0f) == 0.0f);
    EXPECT_EQ(t(denorm), denorm);

    auto er = [&](float v) { return one_value(isa, MathFn::kErf, v); };
    EXPECT_TRUE(std::isnan(er(kNaN)));
    EXPECT_EQ(er(kInf), 1.0f);
    EXPECT_EQ(er(-kInf), -1.0f);
    EXPECT_EQ(er(4.0f), 1.0f);
    EXPECT_EQ(er(-5.0f), -1.0f);
    EXPECT_TRUE(std::signbit(er(-0.0f)) && er(-0.0f) == 0.0f);
  }
}

// ---------------------------------------------------------------- activations

struct ActCase {
  ActKind kind;
  float alpha, beta;
  double ulps;   // relative tolerance, in ULPs of the reference
  double abs_x;  // plus this times max(1, |x|) absolute (cancellation in the reference)
  float gamma = 0;
};

// A case per row of the op table (runtime/ops/op_table.h): its kind, its
// default attributes and the vector forms' bound the row gives (Ulps, AbsX)
// against Activation::apply, itself rounded in float (so a few ULP apart
// from the exact value where it composes several functions). Some kinds
// are tested away from their defaults, and Clip and QuantGrid, whose ops
// have no attribute defaults, with bounds of their own.
ActCase act_case(ActKind k) {
  const ActInfo& r = act_info(k);
  ActCase c{k, r.alpha.value, r.beta.value, r.ulps, r.abs_x};
  if (k == ActKind::kLeakyRelu) c.alpha = 0.1f;
  if (k == ActKind::kClip) c.alpha = -1.5f, c.beta = 6.0f;
  if (k == ActKind::kElu) c.alpha = 0.7f;
  if (k == ActKind::kCelu) c.alpha = 1.3f;
  if (k == ActKind::kThresholdedRelu) c.alpha = 0.3f;
  if (k == ActKind::kQuantGrid) c.alpha = 0.05f, c.beta = -128 - 3, c.gamma = 127 - 3;
  return c;
}

std::vector<ActCase> all_act_cases() {
  std::vector<ActCase> out;
  for (const ActInfo& r : kActInfo) out.push_back(act_case(r.kind));
  return out;
}
const std::vector<ActCase> kActCases = all_act_cases();

// The op table's math names each resolve to the MathFn of that name, and the
// kinds without one (the activations, the copy, libm's Sin and Cos) to none.
TEST(Vmath, UnaryKindsMapToTheirMathFunctions) {
  for (const UnaryInfo& r : kUnaryInfo) {
    cpu::MathFn fn = cpu::MathFn::kCount;
    const bool has = cpu::math_fn_of(r.kind, &fn);
    EXPECT_EQ(has, r.math != nullptr) << "kind " << static_cast<int>(r.kind) << ": its row names '"
                                      << (r.math ? r.math : "") << "', which is no MathFn's name";
    if (has && r.math) {
      EXPECT_STREQ(cpu::math_fn_name(fn), r.math);
    }
  }
  for (int f = 0; f < cpu::kMathFnCount; ++f)
    EXPECT_STRNE(cpu::math_fn_name(static_cast<cpu::MathFn>(f)), "") << "MathFn " << f;
}

// Inputs: every 65521st bit pattern, a fine grid over [-20, 20], specials.
std::vector<float> act_inputs() {
  std::vector<float> x = sweep_inputs(65521, {}, {0.625f, 0.75f, 3.0f, 6.0f, 20.0f, 88.7f, 1e-30f});
  for (int i = -20 * 64; i <= 20 * 64; ++i) x.push_back(static_cast<float>(i) / 64.0f);
  x.push_back(1.0f);  // an odd count: every tail length shows up below
  return x;
}

// Where got and want differ by more than the case allows, a message; else "".
std::string act_mismatch(const ActCase& c, float x, float got, float want) {
  bool ok;
  if (std::isnan(want) || std::isnan(got))
    ok = std::isnan(want) && std::isnan(got);
  else if (std::isinf(want) || std::isinf(got))
    ok = got == want;
  else if (c.ulps == 0)
    ok = got == want;
  else {
    // Plus FLT_MIN |x| absolute: the reference's std::exp overflows (to a 0
    // sigmoid, a -0 Silu) for x < -88.7, where the vector forms still give
    // the denormal.
    double ax = std::isinf(x) ? 1.0 : std::max(1.0, std::fabs(static_cast<double>(x)));
    double tol = c.ulps * ulp_of(want) + c.abs_x * ax + 0x1p-126 * ax;
    ok = std::fabs(static_cast<double>(got) - want) <= tol;
  }
  if (ok) return "";
  char buf[200];
  std::snprintf(buf, sizeof buf, "x = %a: got %a, Activation::apply %a", x, got, want);
  return buf;
}

void expect_act_close(const ActCase& c, const std::vector<float>& x, const std::vector<float>& got,
                      const std::string& what) {
  Activation a{c.kind, c.alpha, c.beta, c.gamma};
  int bad = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    std::string m = act_mismatch(c, x[i], got[i], a.apply(x[i]));
    if (!m.empty() && bad++ < 3) ADD_FAILURE() << what << " " << a.name() << ": " << m;
  }
  EXPECT_EQ(bad, 0) << what << " " << a.name() << ": elements out of tolerance";
}

TEST(Vmath, EveryActivationArrayMatchesScalarReference) {
  std::vector<float> x = act_inputs();
  std::vector<float> y(x.size());
  for (SgemmIsa isa : supported_isas()) {
    ForceIsa force(isa);
    for (const ActCase& c : kActCases) {
      Activation a{c.kind, c.alpha, c.beta, c.gamma};
      cpu::apply_activation(a, x.data(), y.data(), static_cast<int64_t>(x.size()));
      expect_act_close(c, x, y, std::string("apply_activation ") + cpu::sgemm_isa_name(isa));
      // In place, from an odd offset, for a length with a tail.
      std::vector<float> z(x.begin() + 3, x.begin() + 3 + 1000 + 13);
      cpu::apply_activation(a, z.data(), static_cast<int64_t>(z.size()));
      for (size_t i = 0; i < z.size(); ++i) ASSERT_TRUE(same_float(z[i], y[i + 3])) << a.name() << " in place, " << i;
    }
  }
}

#if MINIRT_VMATH_X86
MINIRT_TARGET_AVX512 void act_registers512(const Activation& a, const float* x, float* y, size_t n) {
  for (size_t i = 0; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, cpu::act_avx512(_mm512_loadu_ps(x + i), a));
}
MINIRT_TARGET_AVX2 void act_registers256(const Activation& a, const float* x, float* y, size_t n) {
  for (size_t i = 0; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, cpu::act_avx2(_mm256_loadu_ps(x + i), a));
}

// The register forms the Conv and Gemm epilogues call: the same results as
// the array functions (bit for bit), and so within tolerance of apply().
TEST(Vmath, RegisterFormsMatchArrays) {
  std::vector<float> x = act_inputs();
  x.resize(x.size() / 16 * 16);
  std::vector<float> reg(x.size()), arr(x.size());
  for (SgemmIsa isa : {SgemmIsa::kAvx512, SgemmIsa::kAvx2}) {
    if (!cpu::sgemm_isa_supported(isa)) continue;
    ForceIsa force(isa);
    for (const ActCase& c : kActCases) {
      Activation a{c.kind, c.alpha, c.beta, c.gamma};
      if (isa == SgemmIsa::kAvx512)
        act_registers512(a, x.data(), reg.data(), x.size());
      else
        act_registers256(a, x.data(), reg.data(), x.size());
      cpu::apply_activation(a, x.data(), arr.data(), static_cast<int64_t>(x.size()));
      for (size_t i = 0; i < x.size(); ++i)
        ASSERT_TRUE(same_float(reg[i], arr[i])) << a.name() << " on " << cpu::sgemm_isa_name(isa) << " at " << x[i];
      expect_act_close(c, x, reg, std::string("register form ") + cpu::sgemm_isa_name(isa));
    }
  }
}

// QuantGrid's AVX-512 register form (every int8 convolution's epilogue)
// gives Activation::apply's value wherever a value could round either way:
// every midpoint (k + 0.5) alpha of the grid and beyond it, each with its
// neighbours a few ulps away, and the grid points themselves, for scales of
// quantized models' kind, odd ones included. A form that multiplied by a
// reciprocal, or rounded the exact quotient instead of the float one (an
// fma on the midpoint), fails here: x = -6.375 at scale 0.05 is -127.49999
// exactly, -127.5 as a float, so -128 by the division and -127 otherwise.
TEST(Vmath, QuantGridRoundsMidpointsAsTheDivision) {
  if (!cpu::sgemm_isa_supported(SgemmIsa::kAvx512)) GTEST_SKIP() << "no AVX-512 here";
  std::vector<float> x;
  for (float s : {0.05f, 0.0137f, 1.0f / 3.0f, 0.00392157f, 0.1f, 7.5e-5f, 3.0f})
    for (int k = -300; k <= 300; ++k)
      for (float base : {(static_cast<float>(k) + 0.5f) * s, static_cast<float>(k) * s}) {
        float up = base, down = base;
        x.push_back(base);
        for (int u = 0; u < 3; ++u) {
          up = std::nextafter(up, INFINITY);
          down = std::nextafter(down, -INFINITY);
          x.push_back(up);
          x.push_back(down);
        }
      }
  x.resize((x.size() + 15) / 16 * 16, 0.0f);
  std::vector<float> reg(x.size());
  for (float s : {0.05f, 0.0137f, 1.0f / 3.0f, 0.00392157f, 0.1f, 7.5e-5f, 3.0f})
    for (auto [lo, hi] : {std::pair{-128.0f, 127.0f}, std::pair{0.0f, 255.0f}, std::pair{-255.0f, 0.0f}}) {
      Activation a{ActKind::kQuantGrid, s, lo, hi};
      act_registers512(a, x.data(), reg.data(), x.size());
      int bad = 0;
      for (size_t i = 0; i < x.size(); ++i)
        if (!same_float(reg[i], a.apply(x[i])) && bad++ < 3)
          ADD_FAILURE() << "scale " << s << " grid [" << lo << ", " << hi << "]: x = " << x[i] << ": got " << reg[i]
                        << ", the division gives " << a.apply(x[i]);
      EXPECT_EQ(bad, 0);
    }
}
#endif

// Every activation fused into the SGEMM epilogue (the tile in registers:
// act_avx512 / act_avx2, masked column tails, the narrow and portable
// kernels' scalar path) against a naive GEMM in double, then apply().
void epilogue_case(int64_t m, int64_t n, int64_t k) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.5f, 1.5f);
  std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n)), bias(static_cast<size_t>(m));
  for (float& v : a) v = u(rng);
  for (float& v : b) v = u(rng);
  for (float& v : bias) v = 4 * u(rng);
  std::vector<double> acc(static_cast<size_t>(m * n));
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = 0; c < n; ++c) {
      double sum = bias[static_cast<size_t>(r)];
      for (int64_t i = 0; i < k; ++i)
        sum += static_cast<double>(a[static_cast<size_t>(r * k + i)]) * b[static_cast<size_t>(i * n + c)];
      acc[static_cast<size_t>(r * n + c)] = sum;
    }
  ThreadPool pool(2);
  for (SgemmIsa isa : supported_isas())
    for (const ActCase& c : kActCases) {
      Activation act{c.kind, c.alpha, c.beta, c.gamma};
      cpu::AlignedFloats pa = cpu::sgemm_pack_a(isa, a.data(), k, 1, m, k);
      std::vector<float> y(static_cast<size_t>(m * n));
      cpu::SgemmArgs g;
      g.isa = isa;
      g.m = m;
      g.n = n;
      g.k = k;
      g.a = pa.data();
      g.b = cpu::SgemmB::matrix(b.data(), n, 1);
      g.c = y.data();
      g.ldc = n;
      g.ep.row_bias = bias.data();
      g.ep.act = act;
      cpu::SgemmSplit split = cpu::sgemm_split(isa, 1, m, n, k, 2);
      cpu::AlignedFloats ws(cpu::sgemm_workspace_bytes(split, isa, k, n, true) / sizeof(float) + 16);
      cpu::sgemm_run(pool, g, split, ws.data());
      int bad = 0;
      for (size_t i = 0; i < y.size(); ++i) {
        float pre = static_cast<float>(acc[i]);
        // The GEMM's own rounding (1e-5 of its magnitude) passed through the
        // activation, whose slope is at most about 1.2 (Selu: 1.76).
        double tol = 2e-5 * std::max(1.0, std::fabs(acc[i]));
        double want = act.apply(pre);
        if (!(std::fabs(y[i] - want) <= tol) && bad++ < 3)
          ADD_FAILURE() << act.name() << " on " << cpu::sgemm_isa_name(isa) << " n " << n << " element " << i << ": "
                        << y[i] << " vs " << want;
      }
    }
}

TEST(Vmath, EveryActivationInTheSgemmEpilogue) {
  // Partial row panels; column tails masked (45), narrow on AVX-512 (44: 32 + 12)
  // and on AVX2 (27: 24 + 3).
  for (int64_t n : {45, 44, 27}) epilogue_case(13, n, 19);
}

// ---------------------------------------------------------------- the kernels

// Every activation op (as a model has it) through the Unary kernel.
TEST(VmathKernels, ActivationOpsMatchScalarReference) {
  struct A {
    const char* op;
    int64_t opset;
    std::map<std::string, Attribute> attrs;
    ActCase c;
  };
  const A ops[] = {
      {"Sigmoid", 13, {}, act_case(ActKind::kSigmoid)},
      {"HardSwish", 14, {}, act_case(ActKind::kHardSwish)},
      {"Elu", 13, {{"alpha", float_attr(0.7f)}}, act_case(ActKind::kElu)},
      {"Softplus", 13, {}, act_case(ActKind::kSoftplus)},
      {"Mish", 18, {}, act_case(ActKind::kMish)},
      {"Gelu", 20, {}, act_case(ActKind::kGelu)},
      {"Gelu", 20, {{"approximate", string_attr("tanh")}}, act_case(ActKind::kGeluTanh)},
      {"LeakyRelu", 13, {{"alpha", float_attr(0.1f)}}, act_case(ActKind::kLeakyRelu)},
  };
  std::mt19937 rng(8);
  for (SgemmIsa isa : supported_isas()) {
    ForceIsa force(isa);
    for (const A& a : ops)
      for (int64_t n : {5, 4099, 70001})
        for (int threads : {1, 3}) {
          std::vector<float> x = random_values(n, rng, -12, 12, true);
          OpCase oc{a.op, a.opset, a.attrs, {float_tensor({n}, x)}};
          Shape shape;
          std::vector<float> y = run_op(oc, threads, &shape);
          expect_act_close(a.c, x, y, oc.str() + " " + cpu::sgemm_isa_name(isa) + " t" + std::to_string(threads));
        }
  }
}

}  // namespace
}  // namespace minirt
