// The channel-blocked Winograd convolution (kernels/cpu/nchwc_winograd.h)
// against a naive convolution written here, accumulated in double.
//
// Both tiles (F(2x2,3x3), F(4x4,3x3)) and both block sizes where the CPU has
// them (8 with the AVX2 kernels, 16 with the AVX-512 ones), over a grid of
// shapes: channels and filters that are not multiples of the block, planes
// from 1x1 to 56x56 whose sides are not multiples of the tile (partial edge
// tiles), padding 0, 1, 2 and asymmetric, batch 2, the residual, the
// activations the epilogue applies in registers (none, Relu, Clip) and some
// it applies after the store (LeakyRelu, Sigmoid, HardSwish, SiLU), an output
// that is a slice of a wider tensor (a Concat's), at 1, 2 and 3 threads;
// and layers wide enough for several tile groups and output chunks.
//
// Tolerance: 1e-4 of the sum of the magnitudes of the terms of each output
// (times the activation's steepest slope), plus 1e-6, as the direct
// kernel's test. Winograd's rounding error is not bounded by one output's
// own terms (every output of a tile mixes the whole (m+2)^2 patch through
// the transforms, whose entries reach 2.5 in B^T and 8 in A^T), but on this
// data (inputs and weights uniform in [-1, 1]) the largest error seen is
// 2e-6 of that sum for F4 (2e-7 for F2): a margin of 50x, while a tap
// read from the wrong place, dropped or counted twice moves an output by
// one term, about 1 / (9 C) of the sum (2e-3 or more here).
//
// The input's and the residual's padding lanes hold large finite values: they
// must not reach a real output. The output starts as a NaN pattern with
// guard floats after it: every real lane must be written, the padding lanes
// of the convolution's blocks must come out finite, and every block outside
// its slice, and the guard, must be left alone.
//
// Accuracy on realistic data (NchwcWinograd.AccuracyOnResNetLayers): inputs
// uniform in [0, 1) (post-ReLU activations have a positive mean, which the
// transforms partly cancel), weights N(0, 1 / (9 C)); prints the error
// relative to the output's RMS, and bounds it.
#include <gtest/gtest.h>
#include <minirt/error.h>

#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <sstream>
#include <vector>

#include "kernels/cpu/conv_bf16.h"
#include "kernels/cpu/cpu_caps.h"
#include "kernels/cpu/nchwc.h"
#include "kernels/cpu/nchwc_conv.h"
#include "kernels/cpu/nchwc_winograd.h"
#include "kernels/cpu/sgemm.h"
#include "runtime/thread_pool.h"
#include "nchwc_test_util.h"

namespace minirt::cpu {
namespace {

using testing::act_of;
using testing::blocked_isas;
using testing::is_poison;
using testing::Isa;
using testing::kPoison;

constexpr size_t kGuard = 64;

// A 64-byte aligned float buffer (the workspace's contract).
struct Aligned {
  explicit Aligned(size_t n) : v(n + 16) {
    const auto at = reinterpret_cast<uintptr_t>(v.data());
    p = v.data() + ((64 - at % 64) % 64) / sizeof(float);
  }
  std::vector<float> v;
  float* p;
};

struct Case {
  int64_t n = 1, c = 1, h = 1, w = 1, m = 1;
  int64_t pt = 1, pl = 1, pb = 1, pr = 1;  // pads: top, left, bottom, right
  bool residual = false, bias = true;
  Activation act;
  int64_t y_before = 0, y_after = 0;  // output blocks before the slice, channels after it

  int64_t oh() const { return h + pt + pb - 2; }
  int64_t ow() const { return w + pl + pr - 2; }
  std::string str() const {
    std::ostringstream s;
    s << "n" << n << " c" << c << " " << h << "x" << w << " m" << m << " pads " << pt << "," << pl << "," << pb << ","
      << pr << (residual ? " residual" : "") << (bias ? "" : " no-bias") << (act.none() ? "" : " " + act.name());
    if (y_before || y_after) s << " slice(+" << y_before << " blocks, +" << y_after << " channels)";
    return s.str();
  }
};

NchwcConvSpec spec_of(const Case& cs, Isa isa) {
  NchwcConvSpec s;
  Geometry& q = s.q;
  q.n = cs.n, q.c = cs.c, q.h = cs.h, q.w = cs.w, q.m = cs.m, q.oh = cs.oh(), q.ow = cs.ow();
  q.kh = q.kw = 3, q.sh = q.sw = 1, q.dh = q.dw = 1, q.ph = cs.pt, q.pw = cs.pl;
  q.groups = 1;
  s.block = isa.block;
  s.isa = isa.isa;
  s.input_blocked = true;
  s.act = cs.act;
  s.residual = cs.residual;
  s.y_channels = cs.y_before * isa.block + cs.m + cs.y_after;
  return s;
}

// Blocked copy of plain [n][c][hw] with padding lanes set to `pad`.
std::vector<float> blocked(const std::vector<float>& plain, int64_t n, int64_t c, int64_t hw, int b, float pad) {
  ThreadPool one(1);
  std::vector<float> out(static_cast<size_t>(n * nchwc_padded(c, b) * hw));
  nchwc_reorder_to_blocked(plain.data(), out.data(), n, c, hw, b, one);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = c; ch < nchwc_padded(c, b); ++ch)
      for (int64_t p = 0; p < hw; ++p)
        out[static_cast<size_t>(((i * nchwc_blocks(c, b) + ch / b) * hw + p) * b + ch % b)] = pad;
  return out;
}

// The convolution in double: out[i][m][oy][ox] without bias, and the sum of
// the terms' magnitudes.
void reference(const Case& cs, const std::vector<float>& x, const std::vector<float>& w, std::vector<double>* out,
               std::vector<double>* mag) {
  const int64_t oh = cs.oh(), ow = cs.ow();
  out->assign(static_cast<size_t>(cs.n * cs.m * oh * ow), 0.0);
  mag->assign(out->size(), 0.0);
  for (int64_t i = 0; i < cs.n; ++i)
    for (int64_t m = 0; m < cs.m; ++m)
      for (int64_t c = 0; c < cs.c; ++c) {
        const float* xc = x.data() + (i * cs.c + c) * cs.h * cs.w;
        const float* wc = w.data() + (m * cs.c + c) * 9;
        double* o = out->data() + (i * cs.m + m) * oh * ow;
        double* g = mag->data() + (i * cs.m + m) * oh * ow;
        for (int64_t oy = 0; oy < oh; ++oy)
          for (int64_t ox = 0; ox < ow; ++ox) {
            double s = 0, a = 0;
            for (int64_t ki = 0; ki < 3; ++ki) {
              const int64_t iy = oy - cs.pt + ki;
              if (iy < 0 || iy >= cs.h) continue;
              for (int64_t kj = 0; kj < 3; ++kj) {
                const int64_t ix = ox - cs.pl + kj;
                if (ix < 0 || ix >= cs.w) continue;
                const double t = static_cast<double>(xc[iy * cs.w + ix]) * wc[ki * 3 + kj];
                s += t;
                a += std::fabs(t);
              }
            }
            o[oy * ow + ox] += s;
            g[oy * ow + ox] += a;
          }
      }
}

// Whether this process can run the bf16 products (AVX512_BF16 and the 16-channel blocks).
bool bf16_products_run(Isa isa) { return nchwc_winograd_declined(spec_of(Case{}, isa), 2, /*bf16=*/true).empty(); }

// Runs one case with one ISA and tile at 1, 2 and 3 threads; false after the
// first failure. bf16 products: the input and the weights are integers in
// [-2, 2], which F(2x2)'s transforms keep exact in bf16 (V: sums of 4
// inputs; U: multiples of 1/4 up to 18), so the tolerance stays the float
// kernels'.
bool run_case(const Case& cs, Isa isa, int tile, bool bf16 = false) {
  const int b = isa.block;
  const int64_t ohw = cs.oh() * cs.ow();
  std::mt19937 rng(static_cast<uint32_t>(cs.c * 7919 + cs.m * 104729 + cs.h * 31 + cs.w * 17 + b));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_int_distribution<int> small(-2, 2);
  auto fill = [&](size_t n) {
    std::vector<float> v(n);
    for (float& f : v) f = u(rng);
    return v;
  };
  auto fill_exact = [&](size_t n) {
    std::vector<float> v(n);
    for (float& f : v) f = bf16 ? static_cast<float>(small(rng)) : u(rng);
    return v;
  };
  const std::vector<float> x = fill_exact(static_cast<size_t>(cs.n * cs.c * cs.h * cs.w));
  const std::vector<float> w = fill_exact(static_cast<size_t>(cs.m * cs.c * 9));
  const std::vector<float> bias = fill(static_cast<size_t>(cs.m));
  const std::vector<float> r = fill(static_cast<size_t>(cs.n * cs.m * ohw));

  std::vector<double> conv, mag;
  reference(cs, x, w, &conv, &mag);
  const double slope = cs.act.kind == ActKind::kHardSwish ? 1.5 : cs.act.kind == ActKind::kSilu ? 1.1 : 1.0;
  std::vector<float> want(conv.size());
  std::vector<double> tol(conv.size());
  for (int64_t i = 0; i < cs.n; ++i)
    for (int64_t m = 0; m < cs.m; ++m)
      for (int64_t p = 0; p < ohw; ++p) {
        const size_t at = static_cast<size_t>((i * cs.m + m) * ohw + p);
        double s = conv[at], a = mag[at];
        if (cs.bias) s += bias[static_cast<size_t>(m)], a += std::fabs(bias[static_cast<size_t>(m)]);
        if (cs.residual) s += r[at], a += std::fabs(r[at]);
        want[at] = cs.act.apply(static_cast<float>(s));
        tol[at] = 1e-4 * a * slope + 1e-6;
      }

  const NchwcConvSpec spec = spec_of(cs, isa);
  const std::vector<float> xin = blocked(x, cs.n, cs.c, cs.h * cs.w, b, 1000.0f);  // padding lanes: finite, not zero
  const std::vector<float> rb = blocked(r, cs.n, cs.m, ohw, b, -500.0f);
  const int64_t ycb = nchwc_blocks(spec.y_channels, b), mb = nchwc_blocks(cs.m, b);
  const size_t ysize = static_cast<size_t>(cs.n * ycb * ohw * b);

  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    std::vector<float> y(ysize + kGuard);
    for (float& f : y) std::memcpy(&f, &kPoison, 4);
    NchwcWinogradConv k(spec, tile, w.data(), cs.bias ? bias.data() : nullptr, threads, bf16);
    Aligned ws(k.workspace_bytes() / sizeof(float));
    k.run(xin.data(), cs.residual ? rb.data() : nullptr, y.data(), cs.y_before * b, ws.p, pool);
    int bad = 0;
    auto fail = [&](const std::string& what) {
      if (bad++ < 3)
        ADD_FAILURE() << "F" << tile << " " << cs.str() << " block " << b << " threads " << threads << " ("
                      << k.describe() << "): " << what;
    };
    for (size_t g = 0; g < kGuard; ++g)
      if (!is_poison(y[ysize + g])) fail("guard after y overwritten");
    for (int64_t i = 0; i < cs.n; ++i)
      for (int64_t blk = 0; blk < ycb; ++blk)
        for (int64_t p = 0; p < ohw; ++p)
          for (int l = 0; l < b; ++l) {
            const float got = y[static_cast<size_t>(((i * ycb + blk) * ohw + p) * b + l)];
            const int64_t ob = blk - cs.y_before, m = ob * b + l;
            std::ostringstream at;
            at << "image " << i << " block " << blk << " pixel " << p << " lane " << l;
            if (ob < 0 || ob >= mb) {
              if (!is_poison(got)) fail(at.str() + ": outside the slice, written");
            } else if (m >= cs.m) {
              if (!std::isfinite(got)) fail(at.str() + ": padding lane not finite");
            } else {
              const size_t k2 = static_cast<size_t>((i * cs.m + m) * ohw + p);
              if (!(std::fabs(static_cast<double>(got) - want[k2]) <= tol[k2])) {
                std::ostringstream e;
                e << at.str() << " (channel " << m << "): got " << got << ", expected " << want[k2];
                fail(e.str());
              }
            }
          }
    if (bad) return false;
  }
  return true;
}

// Float products with both tiles on every ISA; then F(2x2) with bf16
// products where the CPU has them (on exact data: run_case).
void run_grid(const std::vector<Case>& grid) {
  const auto isas = blocked_isas();
  if (isas.empty()) GTEST_SKIP() << "the CPU has neither AVX2 nor AVX-512";
  for (Isa isa : isas)
    for (int tile : {2, 4})
      for (const Case& cs : grid) {
        ASSERT_EQ(nchwc_winograd_declined(spec_of(cs, isa), tile), "") << cs.str();
        if (!run_case(cs, isa, tile)) return;  // one case's report is enough
      }
  for (Isa isa : isas) {
    if (!bf16_products_run(isa)) continue;
    for (const Case& cs : grid) {
      ASSERT_EQ(nchwc_winograd_declined(spec_of(cs, isa), 2, true), "") << cs.str();
      if (!run_case(cs, isa, 2, /*bf16=*/true)) return;
    }
  }
}

// Rotates activations, residual, bias and an output slice over a list of shapes.
void vary(std::vector<Case>* grid) {
  const ActKind acts[] = {ActKind::kNone,      ActKind::kRelu,      ActKind::kClip, ActKind::kSigmoid,
                          ActKind::kLeakyRelu, ActKind::kHardSwish, ActKind::kSilu};
  for (size_t i = 0; i < grid->size(); ++i) {
    Case& c = (*grid)[i];
    c.act = act_of(acts[i % 7]);
    c.residual = i % 3 == 1;
    c.bias = i % 5 != 4;
    if (i % 4 == 3) c.y_before = 1, c.y_after = 9;
  }
}

Case conv(int64_t c, int64_t h, int64_t w, int64_t m, int64_t p = 1) {
  Case cs;
  cs.c = c, cs.h = h, cs.w = w, cs.m = m;
  cs.pt = cs.pl = cs.pb = cs.pr = p;
  return cs;
}

TEST(NchwcWinograd, SmallPlanesMatchNaiveConvolution) {
  std::vector<Case> g;
  for (int64_t c : {5, 16, 37})
    for (int64_t m : {3, 16, 24, 70})
      for (auto hw : {std::pair<int64_t, int64_t>{1, 1}, {2, 3}, {5, 7}, {7, 7}})
        g.push_back(conv(c, hw.first, hw.second, m));
  vary(&g);
  run_grid(g);
}

TEST(NchwcWinograd, PaddingAndLargerPlanesMatchNaiveConvolution) {
  std::vector<Case> g = {conv(8, 13, 13, 16),  conv(19, 13, 13, 21, 0), conv(3, 56, 56, 20),  conv(16, 56, 56, 16),
                         conv(7, 9, 14, 9, 0), conv(12, 6, 5, 40, 2),   conv(33, 11, 10, 17), conv(1, 4, 4, 1)};
  Case d = conv(9, 7, 9, 17, 0);  // asymmetric pads, wider than the window on one side
  d.pt = 2, d.pl = 0, d.pb = 1, d.pr = 3;
  g.push_back(d);
  d = conv(10, 12, 11, 24, 0);  // pads on one side only
  d.pl = 1, d.pb = 1;
  g.push_back(d);
  d = conv(6, 3, 8, 5, 0);  // only the bottom and the right: an output smaller than a tile in height
  d.pb = 1, d.pr = 2;
  g.push_back(d);
  vary(&g);
  Case b2 = conv(19, 8, 9, 27);  // batch 2, residual
  b2.n = 2;
  b2.residual = true;
  b2.act = act_of(ActKind::kRelu);
  g.push_back(b2);
  b2 = conv(16, 14, 14, 32);  // batch 2, a slice
  b2.n = 2;
  b2.y_before = 2;
  b2.y_after = 5;
  b2.act = act_of(ActKind::kClip);
  g.push_back(b2);
  run_grid(g);
}

// The number after " key=" in a describe() string.
int64_t field(const std::string& d, const std::string& key) {
  const size_t at = d.find(" " + key + "=");
  return at == std::string::npos ? -1 : std::stoll(d.substr(at + key.size() + 2));
}

// Enough channels, filters and tiles for several tile groups and several
// output chunks (the grid does reach both, on each ISA, at 3 threads).
TEST(NchwcWinograd, TileGroupsAndChunksMatchNaiveConvolution) {
  std::vector<Case> g = {conv(64, 30, 30, 40), conv(150, 6, 6, 200), conv(40, 20, 17, 130, 2)};
  vary(&g);
  g[1].residual = true;
  g[1].act = act_of(ActKind::kSigmoid);
  g[2].n = 2;
  for (Isa isa : blocked_isas()) {
    bool groups = false, chunks = false;
    for (const Case& c : g)
      for (int tile : {2, 4})
        for (int threads : {1, 2, 3}) {
          const std::string d = NchwcWinogradConv(spec_of(c, isa), tile, nullptr, nullptr, threads).describe();
          groups |= field(d, "tiles/group") < field(d, "tiles");
          chunks |= field(d, "chunks") > 1;
        }
    EXPECT_TRUE(groups) << "block " << isa.block << ": no case with several tile groups";
    EXPECT_TRUE(chunks) << "block " << isa.block << ": no case with several output chunks";
  }
  run_grid(g);
}

TEST(NchwcWinograd, DeclinesWhatItCannotRun) {
  const auto isas = blocked_isas();
  if (isas.empty()) GTEST_SKIP() << "the CPU has neither AVX2 nor AVX-512";
  const Isa isa = isas.back();
  const NchwcConvSpec ok = spec_of(conv(16, 8, 8, 16), isa);
  EXPECT_EQ(nchwc_winograd_declined(ok, 2), "");
  EXPECT_EQ(nchwc_winograd_declined(ok, 4), "");
  EXPECT_EQ(nchwc_winograd_declined(ok, 3), "needs tile 2 (F(2x2,3x3)) or 4 (F(4x4,3x3))");
  NchwcConvSpec s = ok;
  s.q.groups = 2;
  EXPECT_EQ(nchwc_winograd_declined(s, 4), "needs groups == 1");
  s = ok;
  s.q.kh = 5;
  EXPECT_EQ(nchwc_winograd_declined(s, 4), "needs a 3x3 window");
  s = ok;
  s.q.sw = 2;
  EXPECT_EQ(nchwc_winograd_declined(s, 4), "needs stride 1");
  s = ok;
  s.q.dh = 2;
  EXPECT_EQ(nchwc_winograd_declined(s, 4), "needs dilation 1");
  s = ok;
  s.input_blocked = false;
  EXPECT_EQ(nchwc_winograd_declined(s, 4), "needs a blocked input");
  s = ok;
  s.block = isa.block == 16 ? 8 : 16;
  EXPECT_EQ(nchwc_winograd_declined(s, 4), "needs block 16 with avx512, 8 with avx2");
  s = ok;
  s.y_channels = 8;
  EXPECT_EQ(nchwc_winograd_declined(s, 4), "needs y_channels of at least the output channels");
  s = ok;
  s.q.groups = 2;
  EXPECT_THROW(NchwcWinogradConv(s, 4, nullptr, nullptr, 1), Error);
  // bf16 products: the 16-channel blocks on a CPU with AVX512_BF16, or a sentence naming what is missing.
  const std::string why = nchwc_winograd_declined(ok, 2, true);
  if (isa.block == 16 && cpu_features().avx512_bf16 && cpu_isa() >= CpuIsa::kAvx512Bf16) {
    EXPECT_EQ(why, "");
  } else {
    EXPECT_NE(why.find("bf16 products"), std::string::npos) << why;
  }
  for (Isa other : isas) {
    if (other.block == 16) continue;
    EXPECT_NE(nchwc_winograd_declined(spec_of(conv(16, 8, 8, 16), other), 2, true), "");
  }
}

// An empty batch computes nothing, needs no workspace and touches nothing.
TEST(NchwcWinograd, EmptyBatchWritesNothing) {
  const auto isas = blocked_isas();
  if (isas.empty()) GTEST_SKIP() << "the CPU has neither AVX2 nor AVX-512";
  NchwcConvSpec s = spec_of(conv(16, 8, 8, 16), isas.back());
  s.q.n = 0;
  std::vector<float> w(16 * 16 * 9, 1.0f);
  NchwcWinogradConv k(s, 4, w.data(), nullptr, 2);
  EXPECT_EQ(k.workspace_bytes(), 0u);
  ThreadPool pool(2);
  k.run(nullptr, nullptr, nullptr, 0, nullptr, pool);
}

// The error on realistic data, per ResNet-like layer (C = M, padding 1, one
// image): printed relative to the output's RMS (worst element and RMS of
// the error), next to the direct kernel's, on each ISA. Measured when this
// was written (AVX-512; AVX2 alike), worst / RMS:
//   C=M=64 56x56    direct 4.3e-6 / 4.1e-7   F2 1.4e-6 / 1.9e-7   F4 5.6e-6 / 5.8e-7
//   C=M=128 28x28   direct 5.7e-6 / 5.9e-7   F2 2.0e-6 / 2.6e-7   F4 6.9e-6 / 7.8e-7
//   C=M=256 14x14   direct 6.9e-6 / 8.5e-7   F2 2.6e-6 / 3.8e-7   F4 9.1e-6 / 1.1e-6
//   C=M=512 7x7     direct 1.0e-5 / 1.1e-6   F2 4.0e-6 / 5.2e-7   F4 1.2e-5 / 1.4e-6
// F2 sums each point over C terms where the direct kernel sums 9 C, so it
// is the more accurate; F4's transforms cost it about 3x F2's error, close
// to the direct kernel's. Bounded here at about 10x those values.
// With bf16 products (AVX512_BF16 hosts; EPYC Zen 4, 2026-12-06) F2 is
// 1.25e-2 ... 1.47e-2 / 2.97e-3 ... 3.12e-3, the direct bf16 kernel
// (Bf16Conv, printed for scale) 9.4e-3 ... 9.9e-3 / 2.1e-3 ... 2.3e-3:
// bounded at 2x (3e-2 worst, 6e-3 RMS).
TEST(NchwcWinograd, AccuracyOnResNetLayers) {
  const auto isas = blocked_isas();
  if (isas.empty()) GTEST_SKIP() << "the CPU has neither AVX2 nor AVX-512";
  struct Layer {
    int64_t c, hw;
  };
  for (Layer l : {Layer{64, 56}, Layer{128, 28}, Layer{256, 14}, Layer{512, 7}}) {
    Case cs = conv(l.c, l.hw, l.hw, l.c);
    cs.bias = false;
    std::mt19937 rng(static_cast<uint32_t>(l.c));
    std::uniform_real_distribution<float> u01(0.0f, 1.0f);
    std::normal_distribution<float> nw(0.0f, static_cast<float>(1.0 / std::sqrt(9.0 * l.c)));
    std::vector<float> x(static_cast<size_t>(l.c * l.hw * l.hw)), w(static_cast<size_t>(l.c * l.c * 9));
    for (float& f : x) f = u01(rng);
    for (float& f : w) f = nw(rng);
    std::vector<double> want, mag;
    reference(cs, x, w, &want, &mag);
    double rms = 0;
    for (double v : want) rms += v * v;
    rms = std::sqrt(rms / static_cast<double>(want.size()));
    for (Isa isa : isas) {
      const int b = isa.block;
      const std::vector<float> xb = blocked(x, 1, l.c, l.hw * l.hw, b, 0.0f);
      const NchwcConvSpec spec = spec_of(cs, isa);
      ThreadPool pool(2);
      // 0: the direct kernel; -2: F2 with bf16 products; -1: the direct bf16 kernel (Bf16Conv), for scale.
      for (int tile : {0, 2, 4, -2, -1}) {
        if (tile < 0 && !bf16_products_run(isa)) continue;
        std::vector<float> yb(xb.size()), y(x.size());
        if (tile == -1) {
          Bf16Conv k(spec, bf16_isa(), w.data(), nullptr);
          Aligned ws(k.workspace_bytes() / sizeof(float));
          k.run(xb.data(), nullptr, yb.data(), ws.p, pool);
        } else if (tile == 0) {
          NchwcDirectConv k(spec, w.data(), nullptr, 2);
          k.run(xb.data(), nullptr, yb.data(), 0, nullptr, pool);
        } else {
          NchwcWinogradConv k(spec, std::abs(tile), w.data(), nullptr, 2, tile < 0);
          Aligned ws(k.workspace_bytes() / sizeof(float));
          k.run(xb.data(), nullptr, yb.data(), 0, ws.p, pool);
        }
        nchwc_reorder_to_plain(yb.data(), y.data(), 1, l.c, l.hw * l.hw, b, pool);
        double worst = 0, sq = 0;
        for (size_t i = 0; i < y.size(); ++i) {
          const double e = std::fabs(y[i] - want[i]);
          worst = std::max(worst, e);
          sq += e * e;
        }
        const double worst_rel = worst / rms, rms_rel = std::sqrt(sq / static_cast<double>(y.size())) / rms;
        std::printf("[ accuracy ] %-7s block %2d  C=M=%3lld %2lldx%-2lld  error / output RMS: worst %.2e, RMS %.2e\n",
                    tile == 0    ? "direct"
                    : tile == 2  ? "F2"
                    : tile == 4  ? "F4"
                    : tile == -2 ? "F2 bf16"
                                 : "bf16",
                    b, static_cast<long long>(l.c), static_cast<long long>(l.hw), static_cast<long long>(l.hw),
                    worst_rel, rms_rel);
        const double bound = tile == 2 ? 4e-5 : tile >= 0 ? 1.2e-4 : 3e-2;
        EXPECT_LT(worst_rel, bound) << (tile ? "F" + std::to_string(tile) : std::string("direct")) << " C=" << l.c
                                    << " block " << b;
        if (tile < 0) {
          EXPECT_LT(rms_rel, 6e-3) << "tile " << tile << " C=" << l.c;
        }
      }
    }
  }
}

}  // namespace
}  // namespace minirt::cpu
