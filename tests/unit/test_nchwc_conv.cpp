// The channel-blocked convolution kernels (kernels/cpu/nchwc_conv.h) against
// a naive convolution written here, accumulated in double.
//
// Both block sizes run where the CPU has them (8 with the AVX2 kernels, 16
// with the AVX-512 ones), over a grid of odd shapes: channels and filters
// that are not multiples of the block, 1x1 (the flat GEMM path, and strided
// or padded 1x1 that is not), 3x3, 5x5, 7x7 windows, strides 1 to 3,
// dilations, asymmetric padding, planes down to 1x1, rows and columns long
// enough for runs of several tiles per call, a plain input with 1 to 7
// channels (the stem path), batch 2, enough input channels to need
// several passes and enough filters to need several chunks, the residual,
// every activation the epilogue treats apart (none, Relu, Clip) and some it
// applies after the store (LeakyRelu, Sigmoid, HardSwish), an output that is
// a slice of a wider tensor (a Concat's), and 1, 2 and 3 threads.
//
// Tolerance: 1e-4 of the sum of the magnitudes of the terms of each output
// (times the activation's steepest slope, 1.5 for HardSwish), plus 1e-6 for
// outputs with no terms. Float rounding over K terms, in any order, moves a
// sum by about sqrt(K) * 6e-8 of that magnitude (3e-6 for the largest K
// here, 2800; the rigorous K * 6e-8 bound is never approached by random
// data), while a tap read from the wrong place, dropped or counted twice
// moves it by one term, on average 1 / K of it (3.6e-4 or more here).
//
// The input's and the residual's padding lanes hold large finite values (a
// producer's padding lanes are finite, not zero): they must not reach a real
// output. The output starts as a NaN pattern with guard floats after it:
// every real lane must be written, the padding lanes of the convolution's
// blocks must come out finite, and every block outside its slice, and the
// guard, must be left alone.
#include <gtest/gtest.h>
#include <minirt/error.h>
#include <minirt/half.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <sstream>
#include <vector>

#include "kernels/cpu/conv_int8.h"
#include "kernels/cpu/cpu_caps.h"
#include "kernels/cpu/nchwc.h"
#include "kernels/cpu/nchwc_conv.h"
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

struct Case {
  int64_t n = 1, c = 1, h = 1, w = 1, m = 1;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;  // pads: top, left, bottom, right
  bool depthwise = false, plain = false, residual = false, bias = true;
  Activation act;
  int64_t y_before = 0, y_after = 0;  // output blocks before the slice, channels after it
  DwBorder border = DwBorder::kAuto;  // depthwise: how the border is walked

  int64_t oh() const { return (h + pt + pb - ((kh - 1) * dh + 1)) / sh + 1; }
  int64_t ow() const { return (w + pl + pr - ((kw - 1) * dw + 1)) / sw + 1; }
  std::string str() const {
    std::ostringstream s;
    s << (depthwise ? "depthwise" : "direct") << " n" << n << " c" << c << " " << h << "x" << w << " m" << m << " k"
      << kh << "x" << kw << " s" << sh << "x" << sw << " d" << dh << "x" << dw << " pads " << pt << "," << pl << ","
      << pb << "," << pr << (plain ? " plain-input" : "") << (residual ? " residual" : "") << (bias ? "" : " no-bias")
      << (act.none() ? "" : " " + act.name());
    if (y_before || y_after) s << " slice(+" << y_before << " blocks, +" << y_after << " channels)";
    if (border != DwBorder::kAuto) s << (border == DwBorder::kPadded ? " border=padded" : " border=direct");
    return s.str();
  }
};

NchwcConvSpec spec_of(const Case& cs, Isa isa) {
  NchwcConvSpec s;
  Geometry& q = s.q;
  q.n = cs.n, q.c = cs.c, q.h = cs.h, q.w = cs.w, q.m = cs.m, q.oh = cs.oh(), q.ow = cs.ow();
  q.kh = cs.kh, q.kw = cs.kw, q.sh = cs.sh, q.sw = cs.sw, q.dh = cs.dh, q.dw = cs.dw, q.ph = cs.pt, q.pw = cs.pl;
  q.groups = cs.depthwise ? cs.c : 1;
  s.block = isa.block;
  s.isa = isa.isa;
  s.input_blocked = !cs.plain;
  s.act = cs.act;
  s.residual = cs.residual;
  s.y_channels = cs.y_before * isa.block + cs.m + cs.y_after;
  return s;
}

// Blocked copy of plain [n][c][hw] with padding lanes set to `pad`.
std::vector<float> blocked(const std::vector<float>& plain, int64_t n, int64_t c, int64_t hw, int b, float pad,
                           ThreadPool& pool) {
  std::vector<float> out(static_cast<size_t>(n * nchwc_padded(c, b) * hw));
  nchwc_reorder_to_blocked(plain.data(), out.data(), n, c, hw, b, pool);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = c; ch < nchwc_padded(c, b); ++ch)
      for (int64_t p = 0; p < hw; ++p)
        out[static_cast<size_t>(((i * nchwc_blocks(c, b) + ch / b) * hw + p) * b + ch % b)] = pad;
  return out;
}

// Runs one case with one ISA at 1, 2 and 3 threads; false after the first failure.
bool run_case(const Case& cs, Isa isa) {
  const int b = isa.block;
  const int64_t oh = cs.oh(), ow = cs.ow(), ohw = oh * ow, cg = cs.depthwise ? 1 : cs.c;
  const int64_t taps = cs.kh * cs.kw;
  std::mt19937 rng(static_cast<uint32_t>(cs.c * 7919 + cs.m * 104729 + cs.h * 31 + cs.w * 17 + cs.kh * 5 + b));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  auto fill = [&](size_t n) {
    std::vector<float> v(n);
    for (float& f : v) f = u(rng);
    return v;
  };
  const std::vector<float> x = fill(static_cast<size_t>(cs.n * cs.c * cs.h * cs.w));
  const std::vector<float> w = fill(static_cast<size_t>(cs.m * cg * taps));
  const std::vector<float> bias = fill(static_cast<size_t>(cs.m));
  const std::vector<float> r = fill(static_cast<size_t>(cs.n * cs.m * ohw));

  // The reference, and each output's tolerance.
  double slope = cs.act.kind == ActKind::kHardSwish ? 1.5 : 1.0;
  std::vector<float> want(static_cast<size_t>(cs.n * cs.m * ohw));
  std::vector<double> tol(want.size());
  for (int64_t i = 0; i < cs.n; ++i)
    for (int64_t m = 0; m < cs.m; ++m)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          double s = cs.bias ? bias[static_cast<size_t>(m)] : 0.0, mag = std::fabs(s);
          for (int64_t c = 0; c < cg; ++c) {
            const int64_t ch = cs.depthwise ? m : c;
            for (int64_t ki = 0; ki < cs.kh; ++ki)
              for (int64_t kj = 0; kj < cs.kw; ++kj) {
                const int64_t iy = oy * cs.sh - cs.pt + ki * cs.dh, ix = ox * cs.sw - cs.pl + kj * cs.dw;
                if (iy < 0 || iy >= cs.h || ix < 0 || ix >= cs.w) continue;
                const double t =
                    static_cast<double>(x[static_cast<size_t>(((i * cs.c + ch) * cs.h + iy) * cs.w + ix)]) *
                    w[static_cast<size_t>(((m * cg + c) * cs.kh + ki) * cs.kw + kj)];
                s += t;
                mag += std::fabs(t);
              }
          }
          const size_t at = static_cast<size_t>((i * cs.m + m) * ohw + oy * ow + ox);
          if (cs.residual) {
            s += r[at];
            mag += std::fabs(r[at]);
          }
          want[at] = cs.act.apply(static_cast<float>(s));
          tol[at] = 1e-4 * mag * slope + 1e-6;
        }

  ThreadPool one(1);
  const NchwcConvSpec spec = spec_of(cs, isa);
  const std::vector<float> xin =
      cs.plain ? x : blocked(x, cs.n, cs.c, cs.h * cs.w, b, 1000.0f, one);  // padding lanes: finite, not zero
  const std::vector<float> rb = blocked(r, cs.n, cs.m, ohw, b, -500.0f, one);
  const int64_t ycb = nchwc_blocks(spec.y_channels, b), mb = nchwc_blocks(cs.m, b);
  const size_t ysize = static_cast<size_t>(cs.n * ycb * ohw * b);

  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    std::vector<float> y(ysize + kGuard);
    for (float& f : y) std::memcpy(&f, &kPoison, 4);
    const float* bp = cs.bias ? bias.data() : nullptr;
    const float* rp = cs.residual ? rb.data() : nullptr;
    const int64_t off = cs.y_before * b;
    if (cs.depthwise) {
      NchwcDepthwiseConv k(spec, w.data(), bp, threads, cs.border);
      if (cs.border == DwBorder::kDirect) {
        EXPECT_EQ(k.workspace_bytes(), 0u);
      }
      if (cs.border == DwBorder::kPadded && cs.kh * cs.kw > 1) {
        EXPECT_GT(k.workspace_bytes(), 0u) << cs.str();
      }
      // The workspace poisoned: the padded frames must be written before they are read.
      std::vector<float> ws(k.workspace_bytes() / sizeof(float) + 1);
      for (float& f : ws) std::memcpy(&f, &kPoison, 4);
      k.run(xin.data(), rp, y.data(), off, ws.data(), pool);
    } else {
      NchwcDirectConv k(spec, w.data(), bp, threads);
      EXPECT_EQ(k.workspace_bytes(), 0u);
      k.run(xin.data(), rp, y.data(), off, nullptr, pool);
    }
    int bad = 0;
    auto fail = [&](const std::string& what) {
      if (bad++ < 3) ADD_FAILURE() << cs.str() << " block " << b << " threads " << threads << ": " << what;
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
              const size_t k = static_cast<size_t>((i * cs.m + m) * ohw + p);
              if (!(std::fabs(static_cast<double>(got) - want[k]) <= tol[k])) {
                std::ostringstream e;
                e << at.str() << " (channel " << m << "): got " << got << ", expected " << want[k];
                fail(e.str());
              }
            }
          }
    if (bad) return false;
  }
  return true;
}

void run_grid(const std::vector<Case>& grid) {
  const auto isas = blocked_isas();
  if (isas.empty()) GTEST_SKIP() << "the CPU has neither AVX2 nor AVX-512";
  for (Isa isa : isas)
    for (const Case& cs : grid) {
      NchwcConvSpec s = spec_of(cs, isa);
      const std::string why = cs.depthwise ? nchwc_depthwise_declined(s) : nchwc_direct_declined(s);
      ASSERT_EQ(why, "") << cs.str();
      if (!run_case(cs, isa)) return;  // one case's report is enough
    }
}

// Rotates activations, residual, bias and an output slice over a list of shapes.
void vary(std::vector<Case>* grid) {
  const ActKind acts[] = {ActKind::kNone,    ActKind::kRelu,      ActKind::kClip,
                          ActKind::kSigmoid, ActKind::kLeakyRelu, ActKind::kHardSwish};
  for (size_t i = 0; i < grid->size(); ++i) {
    Case& c = (*grid)[i];
    c.act = act_of(acts[i % 6]);
    c.residual = i % 3 == 1;
    c.bias = i % 5 != 4;
    if (i % 4 == 3) c.y_before = 1, c.y_after = 9;
  }
}

Case conv(int64_t c, int64_t h, int64_t w, int64_t m, int64_t k, int64_t s, int64_t p) {
  Case cs;
  cs.c = c, cs.h = h, cs.w = w, cs.m = m, cs.kh = cs.kw = k, cs.sh = cs.sw = s;
  cs.pt = cs.pl = cs.pb = cs.pr = p;
  return cs;
}

TEST(NchwcConv, DirectPointwiseMatchesNaiveConvolution) {
  std::vector<Case> g;
  for (int64_t c : {5, 16, 37})
    for (int64_t m : {3, 16, 24, 70})
      for (auto hw : {std::pair<int64_t, int64_t>{1, 1}, {2, 3}, {7, 7}, {9, 11}})
        g.push_back(conv(c, hw.first, hw.second, m, 1, 1, 0));
  // Not the flat path: strided (a ResNet downsample), padded.
  g.push_back(conv(24, 9, 9, 40, 1, 2, 0));
  g.push_back(conv(17, 5, 6, 20, 1, 1, 1));
  g.push_back(conv(16, 8, 7, 16, 1, 3, 0));
  vary(&g);
  g.push_back(conv(33, 6, 5, 29, 1, 1, 0));
  g.back().n = 2;
  g.back().residual = true;
  run_grid(g);
}

TEST(NchwcConv, DirectWindowsMatchNaiveConvolution) {
  std::vector<Case> g = {
      conv(16, 10, 12, 32, 3, 1, 1), conv(13, 9, 8, 21, 3, 2, 1),  conv(8, 11, 11, 40, 5, 1, 2),
      conv(20, 12, 13, 18, 5, 3, 1), conv(6, 15, 14, 70, 7, 2, 3), conv(9, 7, 7, 9, 3, 1, 1),
      conv(24, 1, 1, 16, 3, 1, 1),   conv(5, 2, 3, 30, 3, 1, 1),   conv(12, 3, 3, 8, 5, 1, 2),
      conv(7, 6, 6, 50, 3, 1, 0),    conv(10, 4, 4, 12, 7, 1, 3),  conv(11, 1, 9, 15, 3, 1, 1),
  };
  Case d = conv(14, 9, 10, 20, 3, 1, 2);  // dilation 2
  d.dh = d.dw = 2;
  g.push_back(d);
  d = conv(10, 12, 11, 24, 3, 2, 0);  // dilation 3 with stride 2, asymmetric pads
  d.dh = 3, d.dw = 2, d.pt = 0, d.pl = 2, d.pb = 3, d.pr = 1;
  g.push_back(d);
  d = conv(9, 7, 9, 17, 3, 1, 0);  // asymmetric pads, wider than the window on one side
  d.pt = 2, d.pl = 0, d.pb = 1, d.pr = 3;
  g.push_back(d);
  d = conv(8, 6, 10, 16, 1, 1, 0);  // 1x3, stride 1x2, padding on the columns only
  d.kh = 1, d.kw = 3, d.sw = 2, d.pl = d.pr = 1;
  g.push_back(d);
  d = conv(6, 1, 20, 11, 1, 1, 0);  // 1-D: height 1, a 5-wide window
  d.kw = 5, d.pl = 2, d.pr = 2;
  g.push_back(d);
  // Rows and columns long enough for runs of several tiles of each size in
  // one call (horizontal, and vertical at the edge columns).
  g.push_back(conv(8, 4, 45, 24, 3, 1, 1));
  g.push_back(conv(20, 41, 3, 40, 3, 1, 1));
  g.push_back(conv(9, 5, 53, 16, 3, 2, 1));
  vary(&g);
  Case b2 = conv(19, 8, 9, 27, 3, 2, 1);
  b2.n = 2;
  b2.residual = true;
  b2.act = act_of(ActKind::kRelu);
  g.push_back(b2);
  run_grid(g);
}

// Enough input channels for several passes accumulating into y, and enough
// filters for several chunks of output blocks, on both ISAs' budgets.
TEST(NchwcConv, DirectBlockedPassesAndChunksMatchNaiveConvolution) {
  std::vector<Case> g = {conv(200, 5, 6, 40, 3, 1, 1), conv(320, 4, 5, 20, 3, 2, 1), conv(96, 5, 5, 80, 3, 1, 1),
                         conv(2800, 3, 3, 64, 1, 1, 0), conv(64, 3, 4, 1100, 1, 1, 0)};
  vary(&g);
  g[0].residual = true;
  g[0].act = act_of(ActKind::kSigmoid);
  g[1].y_before = 2;
  g[1].y_after = 3;
  // The grid does reach those paths on each ISA.
  for (Isa isa : blocked_isas()) {
    auto plan = [&](const Case& c) { return NchwcDirectConv(spec_of(c, isa), nullptr, nullptr, 1).describe(); };
    EXPECT_NE(plan(g[1]).find(" passes="), std::string::npos) << plan(g[1]);
    EXPECT_NE(plan(g[3]).find(" passes="), std::string::npos) << plan(g[3]);
    EXPECT_NE(plan(g[3]).find(" flat"), std::string::npos) << plan(g[3]);
    EXPECT_NE(plan(g[2]).find(" chunks="), std::string::npos) << plan(g[2]);
    EXPECT_NE(plan(g[4]).find(" chunks="), std::string::npos) << plan(g[4]);
  }
  run_grid(g);
}

// Weights of 2 MB and more: each pass or group prefetches the weights the
// next one reads (the prefetches change no result; they must stay inside
// the packed weights).
TEST(NchwcConv, DirectLargeWeightsMatchNaiveConvolution) {
  std::vector<Case> g = {conv(512, 5, 4, 130, 3, 1, 1), conv(1030, 3, 4, 520, 1, 1, 0)};
  vary(&g);
  for (Isa isa : blocked_isas())
    for (const Case& c : g) {
      const std::string d = NchwcDirectConv(spec_of(c, isa), nullptr, nullptr, 1).describe();
      EXPECT_NE(d.find(" prefetch"), std::string::npos) << d;
    }
  run_grid(g);
}

TEST(NchwcConv, DirectPlainInputMatchesNaiveConvolution) {
  std::vector<Case> g;
  for (int64_t c : {1, 3, 4, 7}) {
    g.push_back(conv(c, 23, 22, 32, 3, 2, 1));
    g.push_back(conv(c, 20, 21, 64, 7, 2, 3));
    g.push_back(conv(c, 5, 6, 19, 1, 1, 0));
  }
  g.push_back(conv(3, 9, 9, 24, 5, 3, 2));
  vary(&g);
  for (Case& c : g) c.plain = true;
  g[0].n = 2;
  run_grid(g);
}

TEST(NchwcConv, DepthwiseMatchesNaiveConvolution) {
  std::vector<Case> g;
  for (int64_t c : {8, 16, 19, 40}) {
    g.push_back(conv(c, 14, 13, c, 3, 1, 1));
    g.push_back(conv(c, 13, 15, c, 3, 2, 1));
    g.push_back(conv(c, 11, 12, c, 5, 1, 2));
    g.push_back(conv(c, 12, 11, c, 5, 2, 2));
  }
  g.push_back(conv(24, 9, 9, 24, 7, 1, 3));
  g.push_back(conv(24, 10, 10, 24, 3, 3, 1));
  g.push_back(conv(17, 1, 1, 17, 3, 1, 1));
  g.push_back(conv(17, 2, 3, 17, 3, 1, 1));
  g.push_back(conv(32, 7, 7, 32, 3, 1, 1));
  g.push_back(conv(12, 6, 7, 12, 1, 1, 0));
  g.push_back(conv(12, 6, 7, 12, 3, 1, 0));
  g.push_back(conv(16, 5, 40, 16, 3, 1, 1));  // runs of several tiles along a row
  g.push_back(conv(24, 40, 5, 24, 5, 1, 2));  // ... and down the edge columns
  g.push_back(conv(16, 6, 61, 16, 3, 2, 1));  // stride 2 along a long row
  Case d = conv(20, 12, 11, 20, 3, 1, 2);
  d.dh = d.dw = 2;
  g.push_back(d);
  d = conv(21, 9, 13, 21, 3, 2, 0);
  d.pt = 0, d.pl = 1, d.pb = 2, d.pr = 0;
  g.push_back(d);
  for (Case& c : g) c.depthwise = true;
  vary(&g);
  g[2].n = 2;
  // Every case with the border walked in place and in a padded frame, and as
  // the kernel chooses.
  const size_t n = g.size();
  for (size_t i = 0; i < n; ++i)
    for (DwBorder b : {DwBorder::kPadded, DwBorder::kDirect}) {
      g.push_back(g[i]);
      g.back().border = b;
    }
  run_grid(g);
}

TEST(NchwcConv, DeclinesWhatItCannotRun) {
  const auto isas = blocked_isas();
  if (isas.empty()) GTEST_SKIP() << "the CPU has neither AVX2 nor AVX-512";
  const Isa isa = isas.back();
  NchwcConvSpec s = spec_of(conv(16, 8, 8, 16, 3, 1, 1), isa);
  EXPECT_EQ(nchwc_direct_declined(s), "");
  EXPECT_EQ(nchwc_depthwise_declined(s), "needs groups == channels == filters");
  s.q.groups = 2;
  EXPECT_EQ(nchwc_direct_declined(s), "needs groups == 1");
  s.q.groups = 16;
  EXPECT_EQ(nchwc_depthwise_declined(s), "");
  s.input_blocked = false;
  EXPECT_EQ(nchwc_depthwise_declined(s), "needs a blocked input");
  s = spec_of(conv(16, 8, 8, 16, 3, 1, 1), isa);
  s.block = isa.block == 16 ? 8 : 16;
  EXPECT_EQ(nchwc_direct_declined(s), "needs block 16 with avx512, 8 with avx2");
  s.block = isa.block;
  s.isa = SgemmIsa::kGeneric;
  EXPECT_EQ(nchwc_direct_declined(s), "needs isa avx2 or avx512");
  s = spec_of(conv(16, 8, 8, 16, 3, 1, 1), isa);
  s.y_channels = 8;
  EXPECT_EQ(nchwc_direct_declined(s), "needs y_channels of at least the output channels");
  s.y_channels = 0;
  s.q.c = 0;
  EXPECT_EQ(nchwc_direct_declined(s), "needs at least one input channel");
  s = spec_of(conv(16, 8, 8, 16, 3, 1, 1), isa);
  s.q.sw = 0;
  EXPECT_EQ(nchwc_direct_declined(s), "needs a window, strides and dilations of at least 1");
  if (!sgemm_isa_supported(SgemmIsa::kAvx512)) {
    s = spec_of(conv(16, 8, 8, 16, 3, 1, 1), Isa{SgemmIsa::kAvx512, 16});
    EXPECT_EQ(nchwc_direct_declined(s), "needs a CPU with avx512");
  }
  // A kernel made for a spec it declines throws, naming why.
  s = spec_of(conv(16, 8, 8, 16, 3, 1, 1), isa);
  s.q.groups = 2;
  EXPECT_THROW(NchwcDirectConv(s, nullptr, nullptr, 1), Error);
}

// An empty batch computes nothing and touches nothing.
TEST(NchwcConv, EmptyBatchWritesNothing) {
  const auto isas = blocked_isas();
  if (isas.empty()) GTEST_SKIP() << "the CPU has neither AVX2 nor AVX-512";
  NchwcConvSpec s = spec_of(conv(16, 8, 8, 16, 3, 1, 1), isas.back());
  s.q.n = 0;
  std::vector<float> w(16 * 16 * 9, 1.0f);
  NchwcDirectConv k(s, w.data(), nullptr, 2);
  ThreadPool pool(2);
  k.run(nullptr, nullptr, nullptr, 0, nullptr, pool);
}

// A quantized SiLU after a depthwise convolution (EfficientNet's in QDQ
// form; ConvAttrs::gate): v = pre(conv) on a grid, then act(v gate(sigmoid(v))),
// each grid rounding as its pair does. Against the same steps computed here
// from a sum in double: each output on act's grid, nearly all equal, and the
// rest within what a midpoint rounded the other way moves (a step of pre's
// grid times at most 1.1 in the SiLU, plus a step of act's). The AVX-512
// kernel looks the SiLU up by v's code; the AVX2 one computes it.
TEST(NchwcConv, DepthwiseTakesTheQuantizedSilu) {
  const auto isas = blocked_isas();
  if (isas.empty()) GTEST_SKIP() << "the CPU has neither AVX2 nor AVX-512";
  auto grid = [](float alpha, float lo, float hi) {
    Activation a;
    a.kind = ActKind::kQuantGrid;
    a.alpha = alpha, a.beta = lo, a.gamma = hi;
    return a;
  };
  const Activation pre = grid(0.04f, -100, 155), gate = grid(1.0f / 255.0f, 0, 255), out = grid(0.03f, -120, 135);
  auto on = [](const Activation& g, double v) {
    return g.alpha * std::nearbyint(std::min<double>(g.gamma, std::max<double>(g.beta, v / g.alpha)));
  };
  std::vector<Case> cases = {conv(40, 14, 13, 40, 3, 1, 1), conv(24, 9, 9, 24, 5, 2, 2), conv(19, 7, 7, 19, 5, 1, 2)};
  cases[1].n = 2;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.5f, 1.5f);
  for (Isa isa : isas)
    for (Case cs : cases)
      for (DwBorder border : {DwBorder::kPadded, DwBorder::kDirect}) {
        cs.depthwise = true;
        SCOPED_TRACE(cs.str() + " block " + std::to_string(isa.block) +
                     (border == DwBorder::kPadded ? " padded" : " direct"));
        const int64_t hw = cs.h * cs.w, ohw = cs.oh() * cs.ow(), cb = nchwc_blocks(cs.c, isa.block);
        ThreadPool pool(2);
        std::vector<float> x(static_cast<size_t>(cs.n * cs.c * hw)), w(static_cast<size_t>(cs.c * cs.kh * cs.kw)),
            bias(static_cast<size_t>(cs.c));
        for (float& f : x) f = u(rng);
        for (float& f : w) f = u(rng);
        for (float& f : bias) f = u(rng);
        NchwcConvSpec s = spec_of(cs, isa);
        s.pre_act = pre;
        s.gate = gate;
        s.act = out;
        ASSERT_EQ(nchwc_depthwise_declined(s), "");
        NchwcDepthwiseConv k(s, w.data(), bias.data(), 2, border);
        std::vector<float> ws(k.workspace_bytes() / sizeof(float) + 1);
        const std::vector<float> xb = blocked(x, cs.n, cs.c, hw, isa.block, 1000.0f, pool);
        std::vector<float> y(static_cast<size_t>(cs.n * cb * ohw * isa.block) + kGuard);
        for (float& f : y) std::memcpy(&f, &kPoison, 4);
        k.run(xb.data(), nullptr, y.data(), 0, ws.data(), pool);
        int64_t same = 0, total = 0, bad = 0;
        for (int64_t i = 0; i < cs.n; ++i)
          for (int64_t c = 0; c < cs.c; ++c)
            for (int64_t oy = 0; oy < cs.oh(); ++oy)
              for (int64_t ox = 0; ox < cs.ow(); ++ox) {
                double sum = bias[static_cast<size_t>(c)];
                for (int64_t ki = 0; ki < cs.kh; ++ki)
                  for (int64_t kj = 0; kj < cs.kw; ++kj) {
                    const int64_t iy = oy * cs.sh - cs.pt + ki, ix = ox * cs.sw - cs.pl + kj;
                    if (iy < 0 || iy >= cs.h || ix < 0 || ix >= cs.w) continue;
                    sum += static_cast<double>(x[static_cast<size_t>(((i * cs.c + c) * cs.h + iy) * cs.w + ix)]) *
                           w[static_cast<size_t>((c * cs.kh + ki) * cs.kw + kj)];
                  }
                const double v = on(pre, static_cast<float>(sum));
                const double want = on(out, v * on(gate, 1.0 / (1.0 + std::exp(-v))));
                const int64_t p = oy * cs.ow() + ox;
                const float got =
                    y[static_cast<size_t>(((i * cb + c / isa.block) * ohw + p) * isa.block + c % isa.block)];
                const double code = got / out.alpha;
                if (!(std::fabs(code - std::nearbyint(code)) < 1e-3) ||
                    !(std::fabs(got - want) <= out.alpha + 1.1 * pre.alpha + 1e-6)) {
                  if (bad++ < 3)
                    ADD_FAILURE() << "image " << i << " channel " << c << " pixel " << p << ": " << got << ", want "
                                  << want;
                }
                same += got == static_cast<float>(want);
                ++total;
              }
        EXPECT_GE(same * 100, total * 97) << same << " of " << total << " equal";
        for (size_t g = y.size() - kGuard; g < y.size(); ++g) ASSERT_TRUE(is_poison(y[g])) << "written past y";
      }
  // What it declines: a gate without a grid before it, with a residual, on bf16 values.
  NchwcConvSpec s = spec_of(cases[0], isas.back());
  s.q.groups = s.q.c;
  s.gate = gate;
  s.act = out;
  EXPECT_NE(nchwc_depthwise_declined(s), "");
  s.pre_act = pre;
  EXPECT_EQ(nchwc_depthwise_declined(s), "");
  s.residual = true;
  EXPECT_NE(nchwc_depthwise_declined(s), "");
  s.residual = false;
  s.gate_out = out;
  EXPECT_NE(nchwc_depthwise_declined(s), "");
  s.gate_out = Activation{};
  s.pre_act = grid(0.04f, -200, 155);  // 356 codes: no table
  EXPECT_NE(nchwc_depthwise_declined(s), "");
  // The dense kernel takes no such SiLU.
  s = spec_of(cases[0], isas.back());
  EXPECT_EQ(nchwc_direct_declined(s), "");
  s.pre_act = pre;
  s.gate = gate;
  EXPECT_NE(nchwc_direct_declined(s), "");
}

// int8 values (uint8 codes in groups of 64 channels, nchwc_int8_values)
// read and written by the depthwise convolution: the convolution of the
// dequantized input, on the activation's grid, as codes (or as floats on that
// grid). Its grids are folded into the weights, so the code is checked
// against the exact one (sums in double): equal, or one off where the exact
// quotient lies within 1e-3 of a midpoint, and the float kernel (the grid
// applied after a float sum) is held to the same. Every form: int8 in, int8
// out, both; a last group of fewer than 4 blocks; lanes of other blocks of
// the group left alone.
TEST(NchwcConv, DepthwiseOnInt8ValuesIsTheFloatFrameRequantized) {
  // int8 values exist only where the int8 convolution runs (AVX512-VNNI or AMX-INT8, with AVX-512).
  std::string why;
  if (int8_conv_isa(&why) == Int8ConvIsa::kReference) GTEST_SKIP() << "no int8 values here: " << why;
  const Isa isa{SgemmIsa::kAvx512, 16};
  Activation xg, yg;
  xg.kind = yg.kind = ActKind::kQuantGrid;
  xg.alpha = 0.02f, xg.beta = -128, xg.gamma = 127;
  yg.alpha = 0.05f, yg.beta = -10, yg.gamma = 245;
  std::vector<Case> cases = {conv(96, 12, 11, 96, 3, 2, 1), conv(40, 9, 10, 40, 3, 1, 1),
                             conv(144, 7, 7, 144, 5, 1, 2)};
  cases[1].n = 2;
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> code(0, 255);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (Case cs : cases) {
    cs.depthwise = true;
    cs.act = yg;
    const int64_t hw = cs.h * cs.w, ohw = cs.oh() * cs.ow(), cb = nchwc_blocks(cs.c, 16), g64 = (cs.c + 63) / 64;
    ThreadPool pool(2);
    std::vector<uint8_t> xu(static_cast<size_t>(cs.n * g64 * hw * 64), 0);
    std::vector<float> x(static_cast<size_t>(cs.n * cs.c * hw)), w(static_cast<size_t>(cs.c * cs.kh * cs.kw)),
        bias(static_cast<size_t>(cs.c));
    for (int64_t i = 0; i < cs.n; ++i)
      for (int64_t c = 0; c < cs.c; ++c)
        for (int64_t p = 0; p < hw; ++p) {
          const int k = code(rng);
          xu[static_cast<size_t>(((i * g64 + c / 64) * hw + p) * 64 + c % 64)] = static_cast<uint8_t>(k);
          x[static_cast<size_t>((i * cs.c + c) * hw + p)] = xg.alpha * static_cast<float>(k + xg.beta);
        }
    for (float& f : w) f = u(rng);
    for (float& f : bias) f = u(rng);
    // The exact quotient of each output by the grid's scale, before rounding.
    auto exact = [&](int64_t i, int64_t c, int64_t p) {
      const int64_t oy = p / cs.ow(), ox = p % cs.ow();
      double v = bias[static_cast<size_t>(c)];
      for (int64_t ki = 0; ki < cs.kh; ++ki)
        for (int64_t kj = 0; kj < cs.kw; ++kj) {
          const int64_t iy = oy * cs.sh - cs.pt + ki * cs.dh, ix = ox * cs.sw - cs.pl + kj * cs.dw;
          if (iy < 0 || iy >= cs.h || ix < 0 || ix >= cs.w) continue;
          v += static_cast<double>(w[static_cast<size_t>((c * cs.kh + ki) * cs.kw + kj)]) *
               x[static_cast<size_t>((i * cs.c + c) * hw + iy * cs.w + ix)];
        }
      return std::clamp(v / yg.alpha, static_cast<double>(yg.beta), static_cast<double>(yg.gamma));
    };
    // A code (k on the grid, before the offset) against the exact quotient t.
    int64_t one_off = 0, checked = 0;
    auto near = [&](long k, double t) {
      ++checked;
      const double want = std::nearbyint(t);
      if (static_cast<double>(k) == want) return true;
      ++one_off;
      return std::abs(static_cast<double>(k) - want) == 1.0 && std::abs(std::abs(t - std::floor(t)) - 0.5) < 1e-3;
    };
    const std::vector<float> xb = blocked(x, cs.n, cs.c, hw, 16, 0.0f, pool);
    const NchwcConvSpec fs = spec_of(cs, isa);
    NchwcDepthwiseConv fk(fs, w.data(), bias.data(), 2, DwBorder::kPadded);
    std::vector<float> fws(fk.workspace_bytes() / sizeof(float) + 1);
    std::vector<float> yf(static_cast<size_t>(cs.n * cb * ohw * 16));
    fk.run(xb.data(), nullptr, yf.data(), 0, fws.data(), pool);
    for (int64_t i = 0; i < cs.n; ++i)
      for (int64_t c = 0; c < cs.c; ++c)
        for (int64_t p = 0; p < ohw; ++p) {
          const float got = yf[static_cast<size_t>(((i * cb + c / 16) * ohw + p) * 16 + c % 16)];
          const double t = exact(i, c, p);
          if (!near(std::lround(got / yg.alpha), t))
            ADD_FAILURE() << "float kernel: image " << i << " channel " << c << " pixel " << p << ": " << got
                          << ", exact " << t * yg.alpha;
        }
    for (int form = 0; form < 3; ++form) {
      NchwcConvSpec s = fs;
      s.x_u8 = form != 1;
      s.y_u8 = form != 0;
      if (s.x_u8) s.x_grid = xg;
      SCOPED_TRACE(cs.str() + (s.x_u8 ? " x int8" : "") + (s.y_u8 ? " y int8" : ""));
      ASSERT_EQ(nchwc_depthwise_declined(s), "");
      NchwcDepthwiseConv k(s, w.data(), bias.data(), 2);
      std::vector<float> ws(k.workspace_bytes() / sizeof(float) + 1);
      for (float& f : ws) std::memcpy(&f, &kPoison, 4);
      const size_t ysize = s.y_u8 ? static_cast<size_t>(cs.n * g64 * ohw * 64) : yf.size();
      std::vector<uint8_t> yu(ysize + 64, 0xa5);
      std::vector<float> y32(ysize + 64);
      for (float& f : y32) std::memcpy(&f, &kPoison, 4);
      const float* xin = s.x_u8 ? reinterpret_cast<const float*>(xu.data()) : xb.data();
      float* yout = s.y_u8 ? reinterpret_cast<float*>(yu.data()) : y32.data();
      k.run(xin, nullptr, yout, 0, ws.data(), pool);
      int bad = 0;
      for (int64_t i = 0; i < cs.n && bad < 5; ++i)
        for (int64_t c = 0; c < (s.y_u8 ? g64 * 64 : cs.c) && bad < 5; ++c)
          for (int64_t p = 0; p < ohw && bad < 5; ++p) {
            if (s.y_u8) {
              const uint8_t got = yu[static_cast<size_t>(((i * g64 + c / 64) * ohw + p) * 64 + c % 64)];
              if (c >= cb * 16) {  // a block the convolution does not have: untouched
                if (got != 0xa5) ADD_FAILURE() << "channel " << c << " pixel " << p << " written", ++bad;
                continue;
              }
              if (c >= cs.c) {  // a lane past C in the last block: the code of zero
                if (got != static_cast<uint8_t>(-yg.beta))
                  ADD_FAILURE() << "channel " << c << " pixel " << p << ": code " << int{got}, ++bad;
                continue;
              }
              const double t = exact(i, c, p);
              if (!near(static_cast<long>(got) + static_cast<long>(yg.beta), t)) {
                ADD_FAILURE() << "image " << i << " channel " << c << " pixel " << p << ": code " << int{got}
                              << ", exact " << t - yg.beta;
                ++bad;
              }
            } else {
              const float got = y32[static_cast<size_t>(((i * cb + c / 16) * ohw + p) * 16 + c % 16)];
              const double t = exact(i, c, p);
              const long k = std::lround(got / yg.alpha);  // and got on the grid: alpha k within rounding
              if (!near(k, t) || std::abs(got - yg.alpha * static_cast<float>(k)) > 1e-6f * (1.0f + std::abs(got))) {
                ADD_FAILURE() << "image " << i << " channel " << c << " pixel " << p << ": " << got << ", exact "
                              << t * yg.alpha;
                ++bad;
              }
            }
          }
      for (size_t i = ysize; i < ysize + 64; ++i) {
        if (s.y_u8) {
          ASSERT_EQ(yu[i], 0xa5) << "written past the output";
        } else {
          ASSERT_TRUE(is_poison(y32[i])) << "written past the output";
        }
      }
    }
    // One off only at a midpoint: a handful of the outputs at most.
    EXPECT_LE(one_off * 200, checked) << one_off << " of " << checked << " codes one off";
  }
  // What it declines with int8 values: no grid for x, an activation that is no grid for y, a residual, a 1x1 scale.
  NchwcConvSpec s = spec_of(cases[0], isa);
  s.q.groups = s.q.c;
  s.x_u8 = true;
  EXPECT_NE(nchwc_depthwise_declined(s), "");
  s.x_grid = xg;
  EXPECT_EQ(nchwc_depthwise_declined(s), "");
  s.y_u8 = true;
  EXPECT_NE(nchwc_depthwise_declined(s), "");
  s.act = yg;
  EXPECT_EQ(nchwc_depthwise_declined(s), "");
  s.residual = true;
  EXPECT_NE(nchwc_depthwise_declined(s), "");
}

// The depthwise kernel on bf16 values (MathMode::kBf16's [N][C/32][H][W][32]
// bfloat16 between bf16 convolutions): bf16 in and out read and written in
// place (dw_bf16_isa.h; a SiLU through the frame), bf16 in only or out only
// through the padded frame's float rows; the math float32, each output
// rounded to nearest even. Against the float32 kernel with the padded frame
// on the same (bf16-exact) numbers, whose sums take the taps in the same
// order, the results must be the float ones rounded, bit for bit; a lone
// last block's partner lanes zero; nothing written past the output.
TEST(NchwcConv, DepthwiseOnBf16ValuesIsTheFloatFrameRounded) {
  // bf16 values exist only where the CPU has AVX512_BF16 (their conversions use it).
  if (bf16_isa() == Bf16Isa::kNone) GTEST_SKIP() << "no AVX512_BF16 here: " << bf16_isa_reason();
  const Isa isa{SgemmIsa::kAvx512, 16};
  // bf16 in and out runs in place (dw_bf16_isa.h): the 3x3 and 5x5 windows
  // at strides 1 and 2 in tiles of 8 and shorter ones, the rest (dilation,
  // 7x7, the border columns) pixel by pixel; a SiLU goes through the frame.
  std::vector<Case> cases = {conv(96, 12, 11, 96, 3, 2, 1), conv(40, 9, 10, 40, 3, 1, 1),
                             conv(48, 7, 7, 48, 5, 1, 2),   conv(16, 6, 13, 16, 3, 2, 0),
                             conv(72, 20, 23, 72, 5, 1, 2), conv(33, 15, 17, 33, 5, 2, 2),
                             conv(64, 3, 2, 64, 3, 1, 1),   conv(32, 9, 9, 32, 7, 1, 3),
                             conv(48, 11, 12, 48, 3, 1, 1), conv(32, 10, 29, 32, 3, 2, 1)};
  cases[1].n = 2;
  cases[1].act = act_of(ActKind::kClip);
  cases[2].dh = cases[2].dw = 2;
  cases[2].pt = cases[2].pl = cases[2].pb = cases[2].pr = 4;
  cases[3].act = act_of(ActKind::kRelu);
  cases[4].act = act_of(ActKind::kHardSwish);
  cases[5].act = act_of(ActKind::kLeakyRelu);
  cases[6].act = act_of(ActKind::kClip);
  cases[8].act = act_of(ActKind::kSilu);
  cases[9].pr = 0;  // asymmetric: the right border has no padding
  cases[9].act = act_of(ActKind::kRelu);
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  auto round_bf16 = [](float f) { return bfloat16_to_float(float_to_bfloat16(f)); };
  for (Case cs : cases) {
    cs.depthwise = true;
    const int64_t hw = cs.h * cs.w, ohw = cs.oh() * cs.ow(), cb = nchwc_blocks(cs.c, 16), g32 = (cs.c + 31) / 32;
    ThreadPool pool(2);
    std::vector<float> x(static_cast<size_t>(cs.n * cs.c * hw)), w(static_cast<size_t>(cs.c * cs.kh * cs.kw)),
        bias(static_cast<size_t>(cs.c));
    for (float& f : x) f = round_bf16(u(rng));
    for (float& f : w) f = u(rng);
    for (float& f : bias) f = u(rng);
    const std::vector<float> xb = blocked(x, cs.n, cs.c, hw, 16, 0.0f, pool);
    // The same numbers as a bf16 value, padding lanes zero.
    std::vector<uint16_t> xh(static_cast<size_t>(cs.n * g32 * hw * 32), 0);
    for (int64_t i = 0; i < cs.n; ++i)
      for (int64_t c = 0; c < cs.c; ++c)
        for (int64_t p = 0; p < hw; ++p)
          xh[static_cast<size_t>(((i * g32 + c / 32) * hw + p) * 32 + c % 32)] =
              float_to_bfloat16(x[static_cast<size_t>((i * cs.c + c) * hw + p)]);
    const NchwcConvSpec fs = spec_of(cs, isa);
    NchwcDepthwiseConv fk(fs, w.data(), bias.data(), 2, DwBorder::kPadded);
    std::vector<float> fws(fk.workspace_bytes() / sizeof(float) + 1);
    std::vector<float> yf(static_cast<size_t>(cs.n * cb * ohw * 16));
    fk.run(xb.data(), nullptr, yf.data(), 0, fws.data(), pool);
    for (int form = 0; form < 3; ++form) {
      NchwcConvSpec s = fs;
      s.x_bf16 = form != 2;
      s.y_bf16 = form != 1;
      SCOPED_TRACE(cs.str() + (s.x_bf16 ? " x bf16" : "") + (s.y_bf16 ? " y bf16" : ""));
      ASSERT_EQ(nchwc_depthwise_declined(s), "");
      NchwcDepthwiseConv k(s, w.data(), bias.data(), 2);
      const bool in_place = form == 0 && cs.act.kind != ActKind::kSilu;
      EXPECT_EQ(k.describe().find("bf16 in place") != std::string::npos, in_place) << k.describe();
      std::vector<float> ws(k.workspace_bytes() / sizeof(float) + 1);
      for (float& f : ws) std::memcpy(&f, &kPoison, 4);
      const size_t ysize = s.y_bf16 ? static_cast<size_t>(cs.n * g32 * ohw * 32) : yf.size();
      std::vector<uint16_t> yh(ysize + 64, 0x7fa5);
      std::vector<float> y32(ysize + 64);
      for (float& f : y32) std::memcpy(&f, &kPoison, 4);
      const float* xin = s.x_bf16 ? reinterpret_cast<const float*>(xh.data()) : xb.data();
      float* yout = s.y_bf16 ? reinterpret_cast<float*>(yh.data()) : y32.data();
      k.run(xin, nullptr, yout, 0, ws.data(), pool);
      int bad = 0;
      for (int64_t i = 0; i < cs.n && bad < 5; ++i)
        for (int64_t c = 0; c < (s.y_bf16 ? g32 * 32 : cb * 16) && bad < 5; ++c)
          for (int64_t p = 0; p < ohw && bad < 5; ++p) {
            const float want = c < cs.c ? yf[static_cast<size_t>(((i * cb + c / 16) * ohw + p) * 16 + c % 16)] : 0.0f;
            if (s.y_bf16) {
              const uint16_t got = yh[static_cast<size_t>(((i * g32 + c / 32) * ohw + p) * 32 + c % 32)];
              if (c >= cb * 16 ? got != 0 : (c < cs.c && got != float_to_bfloat16(want))) {
                ADD_FAILURE() << "image " << i << " channel " << c << " pixel " << p << ": 0x" << std::hex << got
                              << ", want 0x" << float_to_bfloat16(want) << std::dec;
                ++bad;
              }
            } else if (c < cs.c) {
              const float got = y32[static_cast<size_t>(((i * cb + c / 16) * ohw + p) * 16 + c % 16)];
              if (got != want) {
                ADD_FAILURE() << "image " << i << " channel " << c << " pixel " << p << ": " << got << ", want "
                              << want;
                ++bad;
              }
            }
          }
      for (size_t i = ysize; i < ysize + 64; ++i) {
        if (s.y_bf16) {
          ASSERT_EQ(yh[i], 0x7fa5) << "written past the output";
        } else {
          ASSERT_TRUE(is_poison(y32[i])) << "written past the output";
        }
      }
    }
  }
}

}  // namespace
}  // namespace minirt::cpu
