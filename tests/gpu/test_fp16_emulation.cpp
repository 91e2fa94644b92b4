// The 16-bit math modes emulated on the CPU (fp16_emulation.h), on every
// machine, no GPU needed: the tolerances of GpuOps.Fp16MathStaysClose and
// Bf16MathStaysClose (kFp16MathTol, kBf16MathTol) hold with margin on their
// network and on the same network with other seeds, where the elementwise
// bounds they had (atol + rtol * |y|) fail; and a --math fp16 convolution's
// output rounds to float16 before its bias, so a sum beyond float16's range
// is inf whatever the bias (issue 29, items 4 and 6).
#include "fp16_emulation.h"
#include "gpu_test_util.h"

namespace minirt::gputest {
namespace {

using emu::Math;

std::vector<float> values(const Shape& s, uint64_t seed) {
  Tensor t = random_tensor(s, seed);
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

// GpuOps' sixteen_bit_math network (test_gpu_ops.cpp) under `m`, its seeds
// shifted by `shift` (0: the test's own): the outputs y, z, a and t.
std::vector<std::vector<float>> sixteen_bit_network(Math m, uint64_t shift) {
  const auto x = values({2, 16, 10, 10}, 2404 + shift);
  // Conv 3x3 with bias, ReLU; a 1x1 Conv with weights given at run time; Flatten; Gemm with a bias.
  auto r = emu::conv2d(x, {2, 16, 10, 10}, values({32, 16, 3, 3}, 2400 + shift), {32, 16, 3, 3},
                       values({32}, 2401 + shift), {1, 1, 1, 1}, m, /*relu=*/true);
  auto c2 = emu::conv2d(r, {2, 32, 10, 10}, values({8, 32, 1, 1}, 2405 + shift), {8, 32, 1, 1}, {}, {0, 0, 0, 0}, m);
  auto y = emu::gemm(c2, values({800, 10}, 2402 + shift), values({10}, 2403 + shift), 2, 10, 800, false, m);
  // A batched MatMul (3 products of 5x7 by 7x4), unbiased.
  const auto p = values({3, 5, 7}, 2406 + shift), q = values({3, 7, 4}, 2407 + shift);
  std::vector<float> z;
  for (int64_t b = 0; b < 3; ++b) {
    std::vector<float> pb(p.begin() + b * 35, p.begin() + (b + 1) * 35),
        qb(q.begin() + b * 28, q.begin() + (b + 1) * 28);
    auto zb = emu::gemm(pb, qb, {}, 5, 4, 7, false, m);
    z.insert(z.end(), zb.begin(), zb.end());
  }
  // A 2x2 Conv with asymmetric padding; a Gemm with a transposed B.
  auto a = emu::conv2d(x, {2, 16, 10, 10}, values({4, 16, 2, 2}, 2408 + shift), {4, 16, 2, 2}, {}, {0, 1, 1, 0}, m);
  auto t = emu::gemm(values({4, 6}, 2410 + shift), values({3, 6}, 2409 + shift), {}, 4, 3, 6, true, m);
  return {y, z, a, t};
}

// Whether every element is within atol + rtol * |cpu| (the tests' former bounds).
bool elementwise_close(const std::vector<float>& got, const std::vector<float>& want, Tol tol) {
  for (size_t i = 0; i < want.size(); ++i)
    if (!(std::fabs(static_cast<double>(got[i]) - want[i]) <= tol.atol + tol.rtol * std::fabs(want[i]))) return false;
  return true;
}

void check_bound(Math m, ScaleTol tol, Tol old_y, const char* type) {
  SCOPED_TRACE(type);
  constexpr int kSeeds = 100;
  int old_failed = 0;
  for (uint64_t shift = 0; shift < kSeeds * 100; shift += 100) {
    SCOPED_TRACE("seeds shifted by " + std::to_string(shift));
    const auto want = sixteen_bit_network(Math::kFloat32, shift);
    const auto got = sixteen_bit_network(m, shift);
    for (size_t o = 0; o < want.size(); ++o) {
      // With margin: within a quarter of the bound.
      ScaleTol quarter{tol.rel / 4, tol.abs / 4};
      EXPECT_TRUE(close_to_scale(got[o].data(), want[o].data(), static_cast<int64_t>(want[o].size()), quarter))
          << "output " << o;
      // The rounding is there to be bounded: not a bound that passes anything.
      EXPECT_FALSE(close_to_scale(got[o].data(), want[o].data(), static_cast<int64_t>(want[o].size()),
                                  ScaleTol{tol.rel / 1000, 0}))
          << "output " << o << " shows no " << type << " rounding";
    }
    if (!elementwise_close(got[0], want[0], old_y)) {
      ++old_failed;
      if (shift == 0) std::printf("%s: the former bound fails on the test's own seeds\n", type);
    }
  }
  // The former elementwise bound on the K = 800 Gemm fails for some seeds
  // (about one in eight): an output near zero gets a bound below the error
  // of the sums of large products it comes from (about 0.1 rms in float16).
  std::printf("%s: the former bound atol %g + rtol %g * |y| fails on %d of %d seeds\n", type, old_y.atol, old_y.rtol,
              old_failed, kSeeds);
  EXPECT_GE(old_failed, kSeeds / 20);
}

TEST(Fp16Emulation, TheScaleBoundHoldsWhereTheElementwiseOneFails) {
  check_bound(Math::kFp16, kFp16MathTol, Tol{5e-2, 2e-2}, "float16");
}

TEST(Fp16Emulation, Bf16TheScaleBoundHoldsWhereTheElementwiseOneFails) {
  check_bound(Math::kBf16, kBf16MathTol, Tol{4e-1, 1.6e-1}, "bfloat16");
}

// cuDNN writes a --math fp16 convolution's output in float16: the sum is
// rounded to float16 before the float32 bias, so a sum beyond the largest
// float16 (65504; inf from 65520 on) is inf even when the bias would bring
// it back into range, and a sum within range keeps 11 significant bits.
TEST(Fp16Emulation, ConvOutputRoundsToFloat16BeforeTheBias) {
  const Shape xs = {1, 16, 1, 2}, ws = {4, 16, 1, 1};
  // A 1x1 convolution over 16 channels, 14 of 4096 and 2 of 8 (every value a
  // float16): each output is w * 57360, exact in float32.
  std::vector<float> x(16 * 2);
  for (size_t c = 0; c < 16; ++c) x[c * 2] = x[c * 2 + 1] = c < 14 ? 4096.0f : 8.0f;
  const float per_output[4] = {1.25f, 1.0f, -1.25f, 1.140625f};  // float16 values
  std::vector<float> w(4 * 16);
  for (size_t o = 0; o < 4; ++o)
    for (size_t c = 0; c < 16; ++c) w[o * 16 + c] = per_output[o];
  const std::vector<float> bias = {-20000.0f, 0.5f, 20000.0f, 0.0f};
  const auto f32 = emu::conv2d(x, xs, w, ws, bias, {0, 0, 0, 0}, Math::kFloat32);
  const auto f16 = emu::conv2d(x, xs, w, ws, bias, {0, 0, 0, 0}, Math::kFp16);
  const auto bf16 = emu::conv2d(x, xs, w, ws, bias, {0, 0, 0, 0}, Math::kBf16);
  for (size_t px = 0; px < 2; ++px) {
    SCOPED_TRACE("pixel " + std::to_string(px));
    // 71700 is beyond float16: inf, which the bias -20000 does not bring back (float32: 51700).
    EXPECT_EQ(f32[0 + px], 51700.0f);
    EXPECT_EQ(f16[0 + px], INFINITY);
    EXPECT_EQ(f32[4 + px], -51700.0f);
    EXPECT_EQ(f16[4 + px], -INFINITY);
    // 57360 lies halfway between the float16s 57344 and 57376 (the step is
    // 32 there): to the even one, then + 0.5 in float32.
    EXPECT_EQ(f32[2 + px], 57360.5f);
    EXPECT_EQ(f16[2 + px], 57344.5f);
    // 65426.25 rounds to 65440, still finite: below 65520 nothing overflows.
    EXPECT_EQ(f32[6 + px], 65426.25f);
    EXPECT_EQ(f16[6 + px], 65440.0f);
    // bfloat16 keeps float32's range: 71700 to 8 significant bits (the step is 512) is 71680.
    EXPECT_EQ(bf16[0 + px], 71680.0f - 20000.0f);
  }
}

}  // namespace
}  // namespace minirt::gputest
