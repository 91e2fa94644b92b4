// The bf16 convolution (kernels/cpu/conv_bf16.h) and the CPU capabilities
// it runs on (kernels/cpu/cpu_caps.h).
//
// Yardstick: a naive convolution written here, in double, over the input
// and weights rounded to bfloat16 (round to nearest even) -- the semantics
// the kernels promise. The portable reference (Bf16Isa::kNone), the
// AVX512_BF16 kernel and the AMX kernel are each held to it, on every host
// for the reference and where the CPU has them for the others.
//
// Tolerance: 2e-5 of the sum of the magnitudes of each output's terms (times
// the activation's steepest slope), plus 1e-6. The operands are exact in
// bf16, their products exact in float32; only the float32 sums round (about
// sqrt(K) 6e-8 of that magnitude, 3e-6 at the largest K here), while a tap
// read from the wrong phase or pixel, a channel pair swapped or a group
// dropped moves a sum by one term, on average 1 / K of it (1e-4 or more).
// A kernel that rounded the operands differently (truncation) would be off
// by about 2^-9 of each term. A bf16 output (groups of 32 channels, as
// between two bf16 convolutions) is also allowed its own rounding, 2^-8 of
// the value; a bf16 residual enters the yardstick rounded.
//
// The input's and the residual's padding lanes hold large finite values;
// they must not reach a real output. The output starts as a NaN pattern
// with guard floats after it: every lane of every block must be written
// (padding lanes finite), and the guard left alone.
#include <gtest/gtest.h>
#include <minirt/half.h>

#include <cmath>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/cpu/conv_bf16.h"
#include "kernels/cpu/cpu_caps.h"
#include "kernels/cpu/nchwc.h"
#include "nchwc_test_util.h"
#include "runtime/thread_pool.h"

namespace minirt::cpu {
namespace {

using testing::act_of;
using testing::is_poison;
using testing::poison;

constexpr size_t kGuard = 64;

struct Case {
  int64_t n = 1, c = 16, h = 8, w = 8, m = 16;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  bool residual = false, bias = true;
  Activation act;
  bool plain = false;  // x plain [n][c][h][w] floats (the image): window columns folded into the channels

  int64_t oh() const { return (h + pt + pb - ((kh - 1) * dh + 1)) / sh + 1; }
  int64_t ow() const { return (w + pl + pr - ((kw - 1) * dw + 1)) / sw + 1; }
  std::string str() const {
    std::ostringstream s;
    s << "n" << n << " c" << c << " " << h << "x" << w << " m" << m << " k" << kh << "x" << kw << " s" << sh << "x"
      << sw << " d" << dh << "x" << dw << " pads " << pt << "," << pl << "," << pb << "," << pr
      << (residual ? " residual" : "") << (bias ? "" : " no-bias") << (act.none() ? "" : " " + act.name())
      << (plain ? " plain-input" : "");
    return s.str();
  }
};

NchwcConvSpec spec_of(const Case& cs) {
  NchwcConvSpec s;
  Geometry& q = s.q;
  q.n = cs.n, q.c = cs.c, q.h = cs.h, q.w = cs.w, q.m = cs.m, q.oh = cs.oh(), q.ow = cs.ow();
  q.kh = cs.kh, q.kw = cs.kw, q.sh = cs.sh, q.sw = cs.sw, q.dh = cs.dh, q.dw = cs.dw, q.ph = cs.pt, q.pw = cs.pl;
  q.groups = 1;
  s.block = 16;
  s.isa = SgemmIsa::kAvx512;
  s.input_blocked = !cs.plain;
  s.act = cs.act;
  s.residual = cs.residual;
  return s;
}

float rounded(float v) { return bfloat16_to_float(float_to_bfloat16(v)); }

// Blocked [n][ceil(c/16)][hw][16] of plain [n][c][hw], padding lanes `pad`
// (written here, so no AVX-512 reorder is needed on hosts without it).
std::vector<float> blocked(const std::vector<float>& plain, int64_t n, int64_t c, int64_t hw, float pad) {
  const int64_t cb = (c + 15) / 16;
  std::vector<float> out(static_cast<size_t>(n * cb * 16 * hw), pad);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p)
        out[static_cast<size_t>(((i * cb + ch / 16) * hw + p) * 16 + ch % 16)] =
            plain[static_cast<size_t>((i * c + ch) * hw + p)];
  return out;
}

double slope(const Activation& a) {
  if (a.kind == ActKind::kHardSwish) return 1.5;
  if (a.kind == ActKind::kSilu) return 1.1;
  return 1.0;
}

// bf16 [n][ceil(c/32)][hw][32] of plain [n][c][hw], rounded to nearest even,
// padding channels `pad`, and 32 pixels of slack holding NaNs (a reader may
// run into them only with rows whose results it drops).
std::vector<uint16_t> bf16_groups(const std::vector<float>& plain, int64_t n, int64_t c, int64_t hw, float pad) {
  const int64_t groups = (c + 31) / 32;
  std::vector<uint16_t> out(static_cast<size_t>(n * groups * hw * 32 + 32 * 32), float_to_bfloat16(pad));
  for (size_t i = static_cast<size_t>(n * groups * hw * 32); i < out.size(); ++i) out[i] = 0x7fc0;  // NaN
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p)
        out[static_cast<size_t>(((i * groups + ch / 32) * hw + p) * 32 + ch % 32)] =
            float_to_bfloat16(plain[static_cast<size_t>((i * c + ch) * hw + p)]);
  return out;
}

// Where x comes from and y goes: blocked floats, or bf16 groups of 32 channels.
struct Form {
  bool x_bf16 = false, y_bf16 = false, r_bf16 = false;
};

// One case on one instruction set and form at 1 and 3 threads; false after the first failure.
bool run_case(const Case& cs, Bf16Isa isa, Form form = {}) {
  const int64_t oh = cs.oh(), ow = cs.ow(), ohw = oh * ow, taps = cs.kh * cs.kw;
  const int64_t mb = (cs.m + 15) / 16;
  std::mt19937 rng(static_cast<uint32_t>(cs.c * 7919 + cs.m * 104729 + cs.h * 31 + cs.w * 17 + cs.kh * 5));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  auto fill = [&](size_t n) {
    std::vector<float> v(n);
    for (float& f : v) f = u(rng);
    return v;
  };
  const std::vector<float> x = fill(static_cast<size_t>(cs.n * cs.c * cs.h * cs.w));
  const std::vector<float> w = fill(static_cast<size_t>(cs.m * cs.c * taps));
  const std::vector<float> bias = fill(static_cast<size_t>(cs.m));
  const std::vector<float> r = fill(static_cast<size_t>(cs.n * cs.m * ohw));
  const std::vector<float> xb = blocked(x, cs.n, cs.c, cs.h * cs.w, 1e3f);
  const std::vector<uint16_t> xg = bf16_groups(x, cs.n, cs.c, cs.h * cs.w, 1e3f);
  const std::vector<float> rb = blocked(r, cs.n, cs.m, ohw, 1e3f);
  const std::vector<uint16_t> rg = bf16_groups(r, cs.n, cs.m, ohw, 1e3f);

  // The yardstick, with the magnitude of each output's terms.
  std::vector<double> want(static_cast<size_t>(cs.n * cs.m * ohw)), mag(want.size());
  for (int64_t i = 0; i < cs.n; ++i)
    for (int64_t co = 0; co < cs.m; ++co)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t z = 0; z < ow; ++z) {
          double s = cs.bias ? bias[static_cast<size_t>(co)] : 0.0, a = std::fabs(s);
          for (int64_t ci = 0; ci < cs.c; ++ci)
            for (int64_t ky = 0; ky < cs.kh; ++ky)
              for (int64_t kx = 0; kx < cs.kw; ++kx) {
                int64_t iy = y * cs.sh - cs.pt + ky * cs.dh, ix = z * cs.sw - cs.pl + kx * cs.dw;
                if (iy < 0 || iy >= cs.h || ix < 0 || ix >= cs.w) continue;
                double t =
                    static_cast<double>(rounded(x[static_cast<size_t>(((i * cs.c + ci) * cs.h + iy) * cs.w + ix)])) *
                    rounded(w[static_cast<size_t>(((co * cs.c + ci) * cs.kh + ky) * cs.kw + kx)]);
                s += t;
                a += std::fabs(t);
              }
          size_t at = static_cast<size_t>((i * cs.m + co) * ohw + y * ow + z);
          if (cs.residual) {
            const double rv = form.r_bf16 ? rounded(r[at]) : r[at];
            s += rv;
            a += std::fabs(rv);
          }
          want[at] = cs.act.apply(static_cast<float>(s));
          mag[at] = a;
        }

  for (int threads : {1, 3}) {
    ThreadPool pool(threads);
    NchwcConvSpec s = spec_of(cs);
    s.x_bf16 = form.x_bf16;
    s.y_bf16 = form.y_bf16;
    s.r_bf16 = form.r_bf16;
    Bf16Conv conv(s, isa, w.data(), cs.bias ? bias.data() : nullptr);
    std::vector<uint8_t> ws(conv.workspace_bytes() + 64);
    void* wsp = ws.data() + (64 - reinterpret_cast<uintptr_t>(ws.data()) % 64) % 64;
    std::vector<float> y(static_cast<size_t>(cs.n * mb * 16 * ohw) + kGuard);
    poison(y.data(), y.size());
    const int64_t yg_groups = (cs.m + 31) / 32;
    std::vector<uint16_t> yg(static_cast<size_t>(cs.n * yg_groups * ohw * 32) + kGuard, 0xffff);  // NaN
    const void* xin = cs.plain      ? static_cast<const void*>(x.data())
                      : form.x_bf16 ? static_cast<const void*>(xg.data())
                                    : static_cast<const void*>(xb.data());
    void* yout = form.y_bf16 ? static_cast<void*>(yg.data()) : static_cast<void*>(y.data());
    const void* rin = !cs.residual  ? nullptr
                      : form.r_bf16 ? static_cast<const void*>(rg.data())
                                    : static_cast<const void*>(rb.data());
    conv.run(xin, rin, yout, wsp, pool);
    const std::string where = cs.str() + " isa=" + bf16_isa_name(isa) + (form.x_bf16 ? " x=bf16" : "") +
                              (form.y_bf16 ? " y=bf16" : "") + (form.r_bf16 ? " r=bf16" : "") +
                              " threads=" + std::to_string(threads) + " (" + conv.describe() + ")";
    if (form.y_bf16) {
      // Every lane of every group written (padding lanes finite), each real
      // one within the tolerance plus the final rounding to bf16 (2^-9 of it).
      for (int64_t i = 0; i < cs.n; ++i)
        for (int64_t grp = 0; grp < yg_groups; ++grp)
          for (int64_t p = 0; p < ohw; ++p)
            for (int64_t l = 0; l < 32; ++l) {
              int64_t co = grp * 32 + l;
              float got = bfloat16_to_float(yg[static_cast<size_t>(((i * yg_groups + grp) * ohw + p) * 32 + l)]);
              if (co >= cs.m) {
                if (!std::isfinite(got)) {
                  ADD_FAILURE() << where << ": padding lane " << co << " of pixel " << p << " is " << got;
                  return false;
                }
                continue;
              }
              size_t at = static_cast<size_t>((i * cs.m + co) * ohw + p);
              double tol = 2e-5 * mag[at] * slope(cs.act) + std::ldexp(std::fabs(want[at]), -8) + 1e-6;
              if (!(std::fabs(got - want[at]) <= tol)) {
                ADD_FAILURE() << where << ": image " << i << " channel " << co << " pixel " << p << ": got " << got
                              << ", want " << want[at] << " (tolerance " << tol << ")";
                return false;
              }
            }
      for (size_t k = yg.size() - kGuard; k < yg.size(); ++k)
        if (yg[k] != 0xffff) {
          ADD_FAILURE() << where << ": wrote past the output";
          return false;
        }
      continue;
    }
    for (int64_t i = 0; i < cs.n; ++i)
      for (int64_t blk = 0; blk < mb; ++blk)
        for (int64_t p = 0; p < ohw; ++p)
          for (int64_t l = 0; l < 16; ++l) {
            int64_t co = blk * 16 + l;
            float got = y[static_cast<size_t>(((i * mb + blk) * ohw + p) * 16 + l)];
            if (co >= cs.m) {
              if (!std::isfinite(got)) {
                ADD_FAILURE() << where << ": padding lane " << co << " of pixel " << p << " is " << got;
                return false;
              }
              continue;
            }
            size_t at = static_cast<size_t>((i * cs.m + co) * ohw + p);
            double tol = 2e-5 * mag[at] * slope(cs.act) + 1e-6;
            if (!(std::fabs(got - want[at]) <= tol)) {
              ADD_FAILURE() << where << ": image " << i << " channel " << co << " pixel " << p << ": got " << got
                            << ", want " << want[at] << " (tolerance " << tol << ")";
              return false;
            }
          }
    for (size_t k = y.size() - kGuard; k < y.size(); ++k)
      if (!is_poison(y[k])) {
        ADD_FAILURE() << where << ": wrote past the output";
        return false;
      }
  }
  return true;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  auto add = [&](Case c) { out.push_back(c); };
  // 1x1: the flat grid with no dropped columns; channels in and out not
  // multiples of 32 or 16; strides 2 (phase split).
  add({.c = 64, .h = 7, .w = 7, .m = 64});
  add({.c = 24, .h = 5, .w = 9, .m = 40});
  add({.c = 48, .h = 14, .w = 14, .m = 16, .sh = 2, .sw = 2});
  add({.n = 2, .c = 16, .h = 3, .w = 3, .m = 8});
  // 3x3: stride 1 and 2, dilation, asymmetric padding, planes of 1 pixel.
  add({.c = 32, .h = 7, .w = 7, .m = 32, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1});
  add({.c = 40, .h = 13, .w = 11, .m = 48, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .pt = 1, .pl = 1, .pb = 1, .pr = 1});
  add({.c = 16, .h = 9, .w = 10, .m = 24, .kh = 3, .kw = 3, .dh = 2, .dw = 2, .pt = 2, .pl = 2, .pb = 2, .pr = 2});
  add({.c = 32, .h = 6, .w = 8, .m = 16, .kh = 3, .kw = 3, .pt = 0, .pl = 1, .pb = 2, .pr = 0});
  add({.c = 64, .h = 1, .w = 1, .m = 32, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1});
  // Larger windows, strides 3 and 1x2, a long row (several 32-pixel steps and units).
  add({.c = 16, .h = 12, .w = 12, .m = 16, .kh = 5, .kw = 5, .sh = 3, .sw = 3, .pt = 2, .pl = 2, .pb = 2, .pr = 2});
  add({.c = 32, .h = 9, .w = 17, .m = 16, .kh = 7, .kw = 1, .sh = 1, .sw = 2, .pt = 3, .pb = 3});
  add({.c = 96, .h = 20, .w = 40, .m = 80, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1});
  // The epilogue: residual, no bias, activations in registers and out of line, batch 2.
  add({.n = 2,
       .c = 32,
       .h = 6,
       .w = 6,
       .m = 24,
       .kh = 3,
       .kw = 3,
       .pt = 1,
       .pl = 1,
       .pb = 1,
       .pr = 1,
       .residual = true,
       .act = act_of(ActKind::kRelu)});
  add({.c = 48, .h = 5, .w = 7, .m = 16, .bias = false, .act = act_of(ActKind::kClip)});
  // A 1x1 residual (AMX adds a bf16 one on the tiles): two 32-pixel steps,
  // the last short, and a lone last block of 16 channels.
  add({.c = 64, .h = 9, .w = 7, .m = 48, .residual = true, .act = act_of(ActKind::kRelu)});
  add({.c = 32,
       .h = 4,
       .w = 4,
       .m = 16,
       .kh = 3,
       .kw = 3,
       .pt = 1,
       .pl = 1,
       .pb = 1,
       .pr = 1,
       .act = act_of(ActKind::kSigmoid)});
  add({.n = 2,
       .c = 16,
       .h = 8,
       .w = 8,
       .m = 32,
       .sh = 2,
       .sw = 2,
       .residual = true,
       .act = act_of(ActKind::kHardSwish)});
  // SiLU (YOLO's, EfficientNet's): the epilogue's inlined kinds are SiLU, Sigmoid and HardSwish.
  add({.c = 40, .h = 6, .w = 5, .m = 48, .residual = true, .act = act_of(ActKind::kSilu)});
  // Plain inputs (a model's image): ResNet's 7x7 stride-2 stem, MobileNetV2's
  // 3x3 stride 2, a 1-channel 5x5 with dilation, C x kw of exactly 32.
  add({.c = 3,
       .h = 23,
       .w = 21,
       .m = 64,
       .kh = 7,
       .kw = 7,
       .sh = 2,
       .sw = 2,
       .pt = 3,
       .pl = 3,
       .pb = 3,
       .pr = 3,
       .act = act_of(ActKind::kRelu),
       .plain = true});
  add({.n = 2,
       .c = 3,
       .h = 17,
       .w = 16,
       .m = 32,
       .kh = 3,
       .kw = 3,
       .sh = 2,
       .sw = 2,
       .pt = 1,
       .pl = 1,
       .pb = 1,
       .pr = 1,
       .act = act_of(ActKind::kClip),
       .plain = true});
  add({.c = 1,
       .h = 12,
       .w = 13,
       .m = 24,
       .kh = 5,
       .kw = 5,
       .dh = 2,
       .dw = 2,
       .pt = 4,
       .pl = 4,
       .pb = 4,
       .pr = 4,
       .plain = true});
  add({.c = 4,
       .h = 9,
       .w = 10,
       .m = 16,
       .kh = 8,
       .kw = 8,
       .sh = 1,
       .sw = 3,
       .pt = 2,
       .pl = 2,
       .pb = 2,
       .pr = 2,
       .plain = true});
  // Rows wider than the folded packer's 512-column chunks (three chunks each).
  add({.c = 3,
       .h = 5,
       .w = 1100,
       .m = 16,
       .kh = 7,
       .kw = 7,
       .sh = 2,
       .sw = 2,
       .pt = 3,
       .pl = 3,
       .pb = 3,
       .pr = 3,
       .plain = true});
  add({.c = 2, .h = 4, .w = 1030, .m = 16, .kh = 3, .kw = 5, .pt = 1, .pl = 2, .pb = 1, .pr = 2, .plain = true});
  return out;
}

// Every form on the ISA kernels; the scalar reference (slow under the
// sanitizers) takes the two that cover its code: floats in and out, bf16 in and out.
void run_all(Bf16Isa isa) {
  for (const Case& c : cases())
    for (Form f : {Form{false, false, false}, Form{true, true, true}, Form{true, false, false},
                   Form{false, true, false}, Form{true, false, true}}) {
      if (isa == Bf16Isa::kNone && (f.x_bf16 != f.y_bf16 || f.y_bf16 != f.r_bf16)) continue;
      Form g = f;
      if (c.plain && (f.x_bf16 || f.r_bf16)) continue;  // a plain input is floats
      if (!c.residual) {
        if (f.r_bf16 && !f.y_bf16) continue;  // the same as {x, y, false} without a residual
        g.r_bf16 = false;
      }
      if (!run_case(c, isa, g)) return;
    }
}

TEST(ConvBf16, ReferenceMatchesRoundedOperands) { run_all(Bf16Isa::kNone); }

TEST(ConvBf16, Avx512Bf16MatchesRoundedOperands) {
  if (!cpu_isa_supported(CpuIsa::kAvx512Bf16))
    GTEST_SKIP() << "this CPU has no AVX512_BF16 (" << cpu_features_line() << ")";
  run_all(Bf16Isa::kAvx512Bf16);
}

TEST(ConvBf16, AmxMatchesRoundedOperands) {
  if (!cpu_isa_supported(CpuIsa::kAmx)) {
    std::string why;
    amx_permission(&why);
    GTEST_SKIP() << "no AMX-BF16 tiles here (" << cpu_features_line() << ") " << why;
  }
  run_all(Bf16Isa::kAmx);
}

// The accuracy policy and the shapes it leaves to float32, each with its reason.
TEST(ConvBf16, DeclinesWithReasons) {
  NchwcConvSpec s = spec_of({});
  EXPECT_EQ(bf16_conv_declined(s, Bf16Isa::kAmx), "");
  NchwcConvSpec g = s;
  g.q.groups = 2;
  EXPECT_EQ(bf16_conv_declined(g, Bf16Isa::kAmx), "needs groups == 1");
  NchwcConvSpec plain = s;
  plain.input_blocked = false;
  plain.q.c = 3, plain.q.kh = plain.q.kw = 7;
  EXPECT_EQ(bf16_conv_declined(plain, Bf16Isa::kAmx), "") << "the stem: 3 x 7 columns fold into 32";
  plain.q.c = 5;
  EXPECT_NE(bf16_conv_declined(plain, Bf16Isa::kAmx).find("C x kw > 32"), std::string::npos);
  NchwcConvSpec avx2 = s;
  avx2.block = 8;
  EXPECT_NE(bf16_conv_declined(avx2, Bf16Isa::kAmx).find("16-channel"), std::string::npos);
  NchwcConvSpec slice = s;
  slice.y_channels = 64;
  EXPECT_NE(bf16_conv_declined(slice, Bf16Isa::kAmx).find("y_channels"), std::string::npos);
}

// ---- CPU capabilities

// The flags Linux lists for the first CPU.
std::string proc_flags() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("flags", 0) == 0) return line + " ";
  return {};
}

TEST(CpuCaps, FeaturesAgreeWithProcCpuinfo) {
  std::string flags = proc_flags();
  if (flags.empty()) GTEST_SKIP() << "no /proc/cpuinfo flags line";
  const CpuFeatures& f = cpu_features();
  auto listed = [&](const char* name) { return flags.find(std::string(" ") + name + " ") != std::string::npos; };
  // Linux lists a feature only when the OS enables its state, as cpu_features requires.
  EXPECT_EQ(f.avx2, listed("avx2"));
  EXPECT_EQ(f.avx512f, listed("avx512f"));
  EXPECT_EQ(f.avx512_bf16, listed("avx512_bf16"));
  EXPECT_EQ(f.avx512_vnni, listed("avx512_vnni"));
  EXPECT_EQ(f.amx_bf16, listed("amx_bf16"));
  EXPECT_EQ(f.amx_tile, listed("amx_tile"));
  EXPECT_EQ(f.amx_int8, listed("amx_int8"));
  std::ifstream info("/proc/cpuinfo");
  std::string line, vendor;
  while (vendor.empty() && std::getline(info, line))
    if (line.rfind("vendor_id", 0) == 0) vendor = line.substr(line.find(':') + 1);
  EXPECT_EQ(f.amd, vendor.find("AuthenticAMD") != std::string::npos) << vendor;
}

TEST(CpuCaps, LadderAndForcing) {
  EXPECT_TRUE(cpu_isa_supported(CpuIsa::kGeneric));
  CpuIsa best = cpu_best_isa();
  for (int i = 0; i <= static_cast<int>(best); ++i) EXPECT_TRUE(cpu_isa_supported(static_cast<CpuIsa>(i))) << i;
  for (int i = static_cast<int>(best) + 1; i < kCpuIsaCount; ++i)
    EXPECT_FALSE(cpu_isa_supported(static_cast<CpuIsa>(i))) << i;
  // Capped below bf16: no bf16 path, and a reason that names the cap.
  cpu_force_isa(CpuIsa::kGeneric);
  EXPECT_EQ(bf16_isa(), Bf16Isa::kNone);
  EXPECT_NE(bf16_isa_reason().find("leaves bf16 out"), std::string::npos) << bf16_isa_reason();
  if (cpu_isa_supported(CpuIsa::kAvx512Bf16)) {
    cpu_force_isa(CpuIsa::kAvx512Bf16);
    EXPECT_EQ(bf16_isa(), Bf16Isa::kAvx512Bf16);
    EXPECT_NE(bf16_isa_reason().find("AVX512_BF16 without AMX"), std::string::npos) << bf16_isa_reason();
  }
  cpu_reset_isa();
  if (best == CpuIsa::kAmx) {
    EXPECT_EQ(bf16_isa(), Bf16Isa::kAmx);
    EXPECT_EQ(bf16_isa_reason(), "");
  }
  for (int i = 0; i < kCpuIsaCount; ++i) EXPECT_STRNE(cpu_isa_name(static_cast<CpuIsa>(i)), "");
}

TEST(CpuCaps, PermissionIsAskedOnceAndAnswered) {
  std::string why;
  bool first = amx_permission(&why);
  bool second = amx_permission();
  EXPECT_EQ(first, second);
  if (!cpu_features().amx_tile) {
    EXPECT_FALSE(first);
  } else if (!first) {
    EXPECT_NE(why.find("refused"), std::string::npos) << why;
  }
}

}  // namespace
}  // namespace minirt::cpu
