// MaxPool on bf16 values (kernels/cpu/bf16_values_isa.h: bf16_max_rows_avx512),
// the kernel that keeps ResNet's stem -> max pool -> first block and YOLO's
// SPPF in bf16 between bf16 convolutions.
//
// Yardstick: the per-element definition written here in float: the largest
// non-NaN value among the window's pixels inside the input, the lowest
// float where there is none, rounded to bf16. The inputs are bf16 numbers
// (some NaN, infinities, negative zeros and negatives), so max is exact and
// the kernel must match bit for bit -- except that both zeros compare equal,
// so a +0/-0 choice is not checked. Rows are run in two calls split at a
// middle row; every output pixel must be written and nothing past the last.
#include <gtest/gtest.h>
#include <minirt/half.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_caps.h"
#include "kernels/cpu/bf16_values_isa.h"

namespace minirt::cpu {
namespace {

std::string name_of(const Bf16PoolGeom& q) {
  return std::to_string(q.h) + "x" + std::to_string(q.w) + " -> " + std::to_string(q.oh) + "x" + std::to_string(q.ow) +
         " k" + std::to_string(q.kh) + "x" + std::to_string(q.kw) + " s" + std::to_string(q.sh) + "x" +
         std::to_string(q.sw) + " d" + std::to_string(q.dh) + "x" + std::to_string(q.dw) + " p" + std::to_string(q.ph) +
         "," + std::to_string(q.pw);
}

// Output size with begin and end pads pb, pe (ceil_mode rounds up, and the
// last window must start inside the input or the begin pad).
int64_t out_size(int64_t n, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe, bool ceil_mode) {
  const int64_t span = n + pb + pe - ((k - 1) * d + 1);
  int64_t o = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (o - 1) * s >= n + pb) --o;
  return o;
}

Bf16PoolGeom geom(int64_t h, int64_t w, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe, bool ceil_mode) {
  Bf16PoolGeom q;
  q.h = h, q.w = w, q.kh = q.kw = k, q.sh = q.sw = s, q.dh = q.dw = d, q.ph = q.pw = pb;
  q.oh = out_size(h, k, s, d, pb, pe, ceil_mode);
  q.ow = out_size(w, k, s, d, pb, pe, ceil_mode);
  return q;
}

uint16_t yardstick(const Bf16PoolGeom& q, const std::vector<uint16_t>& x, int64_t oh, int64_t ow, int lane) {
  float m = -FLT_MAX;
  for (int64_t i = 0; i < q.kh; ++i)
    for (int64_t j = 0; j < q.kw; ++j) {
      const int64_t ih = oh * q.sh - q.ph + i * q.dh, iw = ow * q.sw - q.pw + j * q.dw;
      if (ih < 0 || ih >= q.h || iw < 0 || iw >= q.w) continue;
      const float v = bfloat16_to_float(x[static_cast<size_t>((ih * q.w + iw) * 32 + lane)]);
      if (!std::isnan(v) && v > m) m = v;
    }
  return float_to_bfloat16(m);
}

TEST(PoolBf16, MaxMatchesTheDefinitionBitForBit) {
  if (bf16_isa() == Bf16Isa::kNone) GTEST_SKIP() << "no AVX512_BF16 here (" << cpu_features_line() << ")";
  const std::vector<Bf16PoolGeom> cases = {
      geom(112, 112, 3, 2, 1, 1, 1, false),                                     // ResNet's max pool
      geom(55, 55, 3, 2, 1, 0, 0, true),                                        // SqueezeNet's, ceil_mode
      geom(20, 20, 5, 1, 1, 2, 2, false),                                       // YOLO's SPPF
      geom(9, 11, 2, 2, 1, 0, 0, false),    geom(13, 7, 3, 1, 2, 2, 2, false),  // dilated
      geom(6, 5, 4, 3, 1, 1, 2, true),      geom(1, 1, 3, 1, 1, 1, 1, false),
  };
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  for (const Bf16PoolGeom& q : cases) {
    SCOPED_TRACE(name_of(q));
    std::vector<uint16_t> x(static_cast<size_t>(q.h * q.w * 32));
    for (size_t i = 0; i < x.size(); ++i) {
      const uint32_t r = rng() % 64;
      x[i] = r == 0   ? uint16_t{0x7fc0}  // NaN
             : r == 1 ? uint16_t{0xff80}  // -inf
             : r == 2 ? uint16_t{0x7f80}  // +inf
             : r == 3 ? uint16_t{0x8000}  // -0
                      : float_to_bfloat16(u(rng));
    }
    // Guard elements past the output.
    const size_t out = static_cast<size_t>(q.oh * q.ow * 32);
    std::vector<uint16_t> y(out + 64, 0x7fa5);
    const int64_t mid = q.oh / 2;
    bf16_max_rows_avx512(q, x.data(), y.data(), 0, mid);
    bf16_max_rows_avx512(q, x.data(), y.data(), mid, q.oh);
    int bad = 0;
    for (int64_t oh = 0; oh < q.oh && bad < 5; ++oh)
      for (int64_t ow = 0; ow < q.ow && bad < 5; ++ow)
        for (int lane = 0; lane < 32; ++lane) {
          const uint16_t want = yardstick(q, x, oh, ow, lane);
          const uint16_t got = y[static_cast<size_t>((oh * q.ow + ow) * 32 + lane)];
          const bool zeros = (want & 0x7fff) == 0 && (got & 0x7fff) == 0;
          if (got != want && !zeros) {
            ADD_FAILURE() << "pixel (" << oh << ", " << ow << ") lane " << lane << ": got 0x" << std::hex << got
                          << ", want 0x" << want << std::dec;
            ++bad;
          }
        }
    for (size_t i = out; i < y.size(); ++i) ASSERT_EQ(y[i], 0x7fa5) << "written past the output at " << i - out;
  }
}

}  // namespace
}  // namespace minirt::cpu
