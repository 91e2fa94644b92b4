// The int8 convolution (kernels/cpu/conv_int8.h).
//
// Yardstick: a naive convolution written here over the integers: the input
// is x_scale * k with k drawn from the grid [lo, hi], the weights w_scale[m]
// * code with codes drawn from [-128, 127]; each output is x_scale *
// w_scale[m] * sum(k * code) (exact in int64) + bias (+ r), then the
// activation, in double. The portable reference (Int8ConvIsa::kReference)
// runs on every host, the AVX512-VNNI and AMX kernels where the CPU has them.
//
// Tolerance: 1e-6 of the sum of the magnitudes of the output's parts (the
// scaled sum, the bias, the residual) plus 1e-6: the kernel rounds the int32
// sum to float, multiplies once and adds twice (a few float32 roundings,
// 6e-8 each), while a tap read from the wrong pixel, a quad swapped or a
// zero point's correction left out moves a sum by at least one term, x_scale
// * w_scale (here 1e-3 of the output's scale or more).
//
// The input's padding lanes hold large values (they must not reach a real
// output); the output starts as a NaN pattern with guard floats after it.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/cpu/conv_int8.h"
#include "kernels/cpu/cpu_caps.h"
#include "nchwc_test_util.h"
#include "runtime/thread_pool.h"

namespace minirt::cpu {
namespace {

using testing::is_poison;
using testing::poison;

constexpr size_t kGuard = 64;

struct Case {
  int64_t n = 1, c = 16, h = 8, w = 8, m = 16;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  int32_t lo = -128, hi = 127;  // the input's grid
  bool per_channel = true, residual = false, bias = true;
  Activation act;
  bool plain = false;  // x plain [n][c][h][w] floats (the image): window columns folded into the channels

  int64_t oh() const { return (h + pt + pb - ((kh - 1) * dh + 1)) / sh + 1; }
  int64_t ow() const { return (w + pl + pr - ((kw - 1) * dw + 1)) / sw + 1; }
  std::string str() const {
    std::ostringstream s;
    s << "n" << n << " c" << c << " " << h << "x" << w << " m" << m << " k" << kh << "x" << kw << " s" << sh << "x"
      << sw << " d" << dh << "x" << dw << " pads " << pt << "," << pl << "," << pb << "," << pr << " grid [" << lo
      << "," << hi << "]" << (per_channel ? " per-channel" : " per-tensor") << (residual ? " residual" : "")
      << (bias ? "" : " no-bias") << (act.none() ? "" : " " + act.name()) << (plain ? " plain-input" : "");
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

// Blocked [n][ceil(c/16)][hw][16] of plain [n][c][hw], padding lanes `pad`.
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

// uint8 codes in groups of 64 channels ([n][ceil(c/64)][hw][64], conv_int8_isa.h)
// of the integers k (plain [n][c][hw]), u = k - lo; lanes past c hold `pad`,
// and 32 pixels of slack follow (a reader may run into them only with rows
// whose results it drops).
std::vector<uint8_t> u8_groups(const std::vector<int32_t>& k, int64_t n, int64_t c, int64_t hw, int32_t lo,
                               uint8_t pad) {
  const int64_t groups = (c + 63) / 64;
  std::vector<uint8_t> out(static_cast<size_t>(n * groups * hw * 64 + 32 * 64), pad);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p)
        out[static_cast<size_t>(((i * groups + ch / 64) * hw + p) * 64 + ch % 64)] =
            static_cast<uint8_t>(k[static_cast<size_t>((i * c + ch) * hw + p)] - lo);
  return out;
}

// Where x comes from, r from and y goes: blocked floats, or int8 values;
// `pre`: the grid before a fused residual (pre_act).
// `gate`: a QDQ SiLU after pre_act (v times its sigmoid on a grid).
// `post`: a second grid after the activation's (a Concat's pair).
struct Form {
  bool x_u8 = false, r_u8 = false, y_u8 = false, pre = false, gate = false, post = false;
  std::string str() const {
    return std::string(x_u8 ? " x=u8" : "") + (r_u8 ? " r=u8" : "") + (y_u8 ? " y=u8" : "") + (pre ? " pre_act" : "") +
           (gate ? " silu" : "") + (post ? " post" : "");
  }
};

// One case on one instruction set and form at 1 and 3 threads; false after the first failure.
bool run_case(const Case& cs, Int8ConvIsa isa, Form form = {}) {
  const int64_t oh = cs.oh(), ow = cs.ow(), ohw = oh * ow, taps = cs.kh * cs.kw;
  const int64_t mb = (cs.m + 15) / 16;
  std::mt19937 rng(static_cast<uint32_t>(cs.c * 7919 + cs.m * 104729 + cs.h * 31 + cs.kh * 5 + cs.lo));
  std::uniform_int_distribution<int32_t> kdist(cs.lo, cs.hi), cdist(-128, 127);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f), sdist(0.5f, 2.0f);
  Int8ConvQuant q;
  q.x_scale = 0.0137f;
  q.lo = cs.lo;
  q.hi = cs.hi;
  q.w_scales.resize(cs.per_channel ? static_cast<size_t>(cs.m) : 1);
  for (float& s : q.w_scales) s = 0.004f * sdist(rng);
  std::vector<int32_t> k(static_cast<size_t>(cs.n * cs.c * cs.h * cs.w));
  for (int32_t& v : k) v = kdist(rng);
  std::vector<int32_t> code(static_cast<size_t>(cs.m * cs.c * taps));
  for (int32_t& v : code) v = cdist(rng);
  std::vector<float> x(k.size()), w(code.size()), bias(static_cast<size_t>(cs.m)),
      r(static_cast<size_t>(cs.n * cs.m * ohw));
  for (size_t i = 0; i < k.size(); ++i) x[i] = static_cast<float>(k[i]) * q.x_scale;
  const int64_t per_m = cs.c * taps;
  for (size_t i = 0; i < code.size(); ++i)
    w[i] = static_cast<float>(code[i]) * q.w_scales[cs.per_channel ? i / static_cast<size_t>(per_m) : 0];
  for (float& v : bias) v = u(rng);
  // The residual: floats, or on a grid (scale 0.011, k in [-128, 127]) when read as an int8 value.
  std::vector<int32_t> rk(r.size());
  for (size_t i = 0; i < r.size(); ++i) {
    rk[i] = std::uniform_int_distribution<int32_t>(-128, 127)(rng);
    r[i] = form.r_u8 ? 0.011f * static_cast<float>(rk[i]) : u(rng);
  }
  q.r_scale = 0.011f;
  q.r_lo = -128;
  const std::vector<float> xb = blocked(x, cs.n, cs.c, cs.h * cs.w, 1e3f);
  const std::vector<float> rb = blocked(r, cs.n, cs.m, ohw, 1e3f);
  const std::vector<uint8_t> xu = u8_groups(k, cs.n, cs.c, cs.h * cs.w, cs.lo, 0xab);
  const std::vector<uint8_t> ru = u8_groups(rk, cs.n, cs.m, ohw, -128, 0xab);

  NchwcConvSpec s = spec_of(cs);
  s.x_u8 = form.x_u8;
  s.r_u8 = form.r_u8;
  s.y_u8 = form.y_u8;
  Activation grid;  // the output's grid when y is an int8 value, and the pre_act one
  grid.kind = ActKind::kQuantGrid;
  grid.alpha = 0.04f, grid.beta = -100, grid.gamma = 155;
  if (form.y_u8) s.act = grid;
  if (form.pre) s.pre_act = grid;
  Activation gate;  // the sigmoid's grid
  gate.kind = ActKind::kQuantGrid;
  gate.alpha = 1.0f / 255.0f, gate.beta = 0, gate.gamma = 255;
  if (form.gate) s.gate = gate;
  Activation gate_out;  // the pair after the SiLU's Mul, when a residual follows it
  gate_out.kind = ActKind::kQuantGrid;
  gate_out.alpha = 0.05f, gate_out.beta = -128, gate_out.gamma = 127;
  if (form.gate && cs.residual) s.gate_out = gate_out;
  Activation post;  // the second grid: 0.06 is 1.5 of the first's steps, so many values fall on its midpoints
  post.kind = ActKind::kQuantGrid;
  post.alpha = 0.06f, post.beta = -128, post.gamma = 127;
  if (form.post) s.act = grid, s.post = post;
  // The output's grid when y is an int8 value.
  const Activation& out_grid = form.post ? post : grid;
  if (std::string why = int8_conv_declined(s, q, w.data()); !why.empty()) {
    ADD_FAILURE() << cs.str() << ": declined: " << why;
    return false;
  }
  std::vector<double> want(static_cast<size_t>(cs.n * cs.m * ohw)), mag(want.size());
  for (int64_t i = 0; i < cs.n; ++i)
    for (int64_t co = 0; co < cs.m; ++co)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t z = 0; z < ow; ++z) {
          int64_t sum = 0;
          for (int64_t ci = 0; ci < cs.c; ++ci)
            for (int64_t ky = 0; ky < cs.kh; ++ky)
              for (int64_t kx = 0; kx < cs.kw; ++kx) {
                int64_t iy = y * cs.sh - cs.pt + ky * cs.dh, ix = z * cs.sw - cs.pl + kx * cs.dw;
                if (iy < 0 || iy >= cs.h || ix < 0 || ix >= cs.w) continue;
                sum += static_cast<int64_t>(k[static_cast<size_t>(((i * cs.c + ci) * cs.h + iy) * cs.w + ix)]) *
                       code[static_cast<size_t>(((co * cs.c + ci) * cs.kh + ky) * cs.kw + kx)];
              }
          const double prod =
              static_cast<double>(q.x_scale) * q.w_scales[cs.per_channel ? static_cast<size_t>(co) : 0] * sum;
          double v = prod + (cs.bias ? bias[static_cast<size_t>(co)] : 0.0);
          double a = std::fabs(prod) + std::fabs(cs.bias ? bias[static_cast<size_t>(co)] : 0.0);
          const size_t at = static_cast<size_t>((i * cs.m + co) * ohw + y * ow + z);
          if (form.pre) v = s.pre_act.apply(static_cast<float>(v));  // within half a step: checked loosely below
          if (form.gate) {
            const double sg = 1.0 / (1.0 + std::exp(-v));
            a = std::fabs(v);  // the tolerance below scales with the value the SiLU multiplies
            v *=
                gate.alpha * std::nearbyint(std::min<double>(gate.gamma, std::max<double>(gate.beta, sg / gate.alpha)));
            if (cs.residual)
              v = gate_out.alpha *
                  std::nearbyint(std::min<double>(gate_out.gamma, std::max<double>(gate_out.beta, v / gate_out.alpha)));
          }
          if (cs.residual) {
            v += r[at];
            a += std::fabs(r[at]);
          }
          // y_u8: the value before the grid (the kernel's code is checked against it).
          if (form.post) v = s.act.apply(static_cast<float>(v));  // the first grid, then post's
          want[at] = form.y_u8 ? v : (form.post ? s.post : s.act).apply(static_cast<float>(v));
          mag[at] = a;
        }

  for (int threads : {1, 3}) {
    ThreadPool pool(threads);
    Int8Conv conv(s, isa, q, w.data(), cs.bias ? bias.data() : nullptr);
    std::vector<uint8_t> ws(conv.workspace_bytes() + 64);
    void* wsp = ws.data() + (64 - reinterpret_cast<uintptr_t>(ws.data()) % 64) % 64;
    std::vector<float> y(static_cast<size_t>(cs.n * mb * 16 * ohw) + kGuard);
    poison(y.data(), y.size());
    const int64_t yg = (cs.m + 63) / 64;
    std::vector<uint8_t> yu(static_cast<size_t>(cs.n * yg * ohw * 64) + kGuard, 0xcd);
    const void* xin = cs.plain    ? static_cast<const void*>(x.data())
                      : form.x_u8 ? static_cast<const void*>(xu.data())
                                  : static_cast<const void*>(xb.data());
    const void* rin = !cs.residual ? nullptr
                      : form.r_u8  ? static_cast<const void*>(ru.data())
                                   : static_cast<const void*>(rb.data());
    conv.run(xin, rin, form.y_u8 ? static_cast<void*>(yu.data()) : static_cast<void*>(y.data()), wsp, pool);
    const std::string where = cs.str() + form.str() + " isa=" + int8_conv_isa_name(isa) +
                              " threads=" + std::to_string(threads) + " (" + conv.describe() + ")";
    if (form.y_u8) {
      // Each code one the grid's rounding of the value may give: alpha * (code + beta)
      // within half a step (plus the tolerance) of the value clamped to the grid.
      for (int64_t i = 0; i < cs.n; ++i)
        for (int64_t co = 0; co < cs.m; ++co)
          for (int64_t p = 0; p < ohw; ++p) {
            const uint8_t code = yu[static_cast<size_t>(((i * yg + co / 64) * ohw + p) * 64 + co % 64)];
            const size_t at = static_cast<size_t>((i * cs.m + co) * ohw + p);
            const double v = std::min(out_grid.alpha * static_cast<double>(out_grid.gamma),
                                      std::max(out_grid.alpha * static_cast<double>(out_grid.beta), want[at]));
            const double got = out_grid.alpha * (static_cast<double>(code) + out_grid.beta);
            // A SiLU's gate may round either way next to a midpoint, and pre_act's grid before it.
            const double silu =
                form.gate ? 0.04 + (gate.alpha + 0.25 * 0.04) * mag[at] + (cs.residual ? gate_out.alpha : 0.0) : 0.0;
            // With post, the first grid's rounding may go either way too (a step of it).
            const double tol = out_grid.alpha * 0.5 + 1e-6 * mag[at] + 1e-6 + silu + (form.post ? grid.alpha : 0.0);
            if (!(std::fabs(got - v) <= tol) || code > out_grid.gamma - out_grid.beta) {
              ADD_FAILURE() << where << ": image " << i << " channel " << co << " pixel " << p << ": code " << int{code}
                            << " (" << got << "), want the grid's rounding of " << v;
              return false;
            }
          }
      for (size_t kk = yu.size() - kGuard; kk < yu.size(); ++kk)
        if (yu[kk] != 0xcd) {
          ADD_FAILURE() << where << ": wrote past the output";
          return false;
        }
      continue;
    }
    for (int64_t i = 0; i < cs.n; ++i)
      for (int64_t blk = 0; blk < mb; ++blk)
        for (int64_t p = 0; p < ohw; ++p)
          for (int64_t l = 0; l < 16; ++l) {
            const int64_t co = blk * 16 + l;
            const float got = y[static_cast<size_t>(((i * mb + blk) * ohw + p) * 16 + l)];
            if (co >= cs.m) {
              if (!std::isfinite(got)) {
                ADD_FAILURE() << where << ": padding lane " << co << " of pixel " << p << " is " << got;
                return false;
              }
              continue;
            }
            const size_t at = static_cast<size_t>((i * cs.m + co) * ohw + p);
            // A pre_act grid's rounding may go either way on a value within the tolerance of a midpoint.
            const double silu =
                form.gate ? (gate.alpha + 0.25 * 0.04) * mag[at] + (cs.residual ? gate_out.alpha : 0.0) : 0.0;
            const double tol =
                1e-6 * mag[at] + 1e-6 + (form.pre ? 0.04 : 0.0) + silu + (form.post ? grid.alpha + post.alpha : 0.0);
            const double on_post = form.post ? got / post.alpha - std::nearbyint(got / post.alpha) : 0.0;
            if (!(std::fabs(got - want[at]) <= tol) || !(std::fabs(on_post) < 1e-3)) {
              ADD_FAILURE() << where << ": image " << i << " channel " << co << " pixel " << p << ": got " << got
                            << ", want " << want[at] << " (tolerance " << tol << ")";
              return false;
            }
          }
    for (size_t kk = y.size() - kGuard; kk < y.size(); ++kk)
      if (!is_poison(y[kk])) {
        ADD_FAILURE() << where << ": wrote past the output";
        return false;
      }
  }
  return true;
}

// The shapes quantized CNNs have, and the corners of the layout: channels
// short of a 64-channel group or a 16-channel block, odd output blocks,
// strides (phases), dilation, asymmetric padding, batches, and the grids of
// int8 and uint8 activations with their zero points.
std::vector<Case> cases() {
  std::vector<Case> v;
  auto add = [&](Case c) { v.push_back(c); };
  Case c;
  add(c);                                                              // 1x1, one block
  c.c = 64, c.m = 64, c.kh = c.kw = 3, c.pt = c.pl = c.pb = c.pr = 1;  // a ResNet 3x3
  add(c);
  c.lo = 0, c.hi = 255;  // uint8, zero point 0 (after a Relu)
  add(c);
  c.lo = -100, c.hi = 155;  // uint8, zero point 100
  add(c);
  c.lo = -255, c.hi = 0;  // int8 with zero point 127
  c.per_channel = false;
  add(c);
  Case s2;
  s2.c = 80, s2.m = 40, s2.h = s2.w = 13, s2.kh = s2.kw = 3, s2.sh = s2.sw = 2, s2.pt = s2.pl = 1, s2.pb = s2.pr = 0;
  add(s2);  // two groups, the last partial; three output blocks; stride 2, asymmetric padding
  Case ds;
  ds.c = 128, ds.m = 32, ds.h = ds.w = 14, ds.sh = ds.sw = 2, ds.lo = 0, ds.hi = 255;
  add(ds);  // a 1x1 stride-2 downsample (one phase of four read)
  Case dil;
  dil.c = 24, dil.m = 16, dil.h = 11, dil.w = 9, dil.kh = 3, dil.kw = 2, dil.dh = 2, dil.dw = 3, dil.pt = 2, dil.pl = 1,
  dil.pb = 1, dil.pr = 3;
  add(dil);
  Case res;
  res.n = 2, res.c = 48, res.m = 64, res.h = res.w = 7, res.kh = res.kw = 3, res.pt = res.pl = res.pb = res.pr = 1;
  res.residual = true;
  res.act.kind = ActKind::kQuantGrid;  // the pair after a residual Add
  res.act.alpha = 0.02f, res.act.beta = -128, res.act.gamma = 127;
  add(res);
  Case relu;
  relu.c = 32, relu.m = 24, relu.h = 20, relu.w = 6, relu.kh = relu.kw = 1, relu.bias = false;
  relu.act.kind = ActKind::kRelu;
  add(relu);
  Case wide;
  wide.c = 16, wide.m = 32, wide.h = wide.w = 40, wide.kh = wide.kw = 7, wide.sh = wide.sw = 2,
  wide.pt = wide.pl = wide.pb = wide.pr = 3;
  add(wide);  // a stem-like 7x7 stride 2 on a blocked input
  // Plain inputs (the image), window columns folded into the channels.
  Case stem;
  stem.c = 3, stem.m = 64, stem.h = 31, stem.w = 29, stem.kh = stem.kw = 7, stem.sh = stem.sw = 2;
  stem.pt = stem.pl = stem.pb = stem.pr = 3, stem.plain = true, stem.lo = 0, stem.hi = 255;
  add(stem);  // ResNet's stem
  Case yolo;
  yolo.c = 3, yolo.m = 16, yolo.h = 20, yolo.w = 22, yolo.kh = yolo.kw = 6, yolo.sh = yolo.sw = 2;
  yolo.pt = yolo.pl = yolo.pb = yolo.pr = 2, yolo.plain = true;
  add(yolo);  // YOLOv5's 6x6 stem
  Case eight;
  eight.c = 8, eight.m = 24, eight.h = eight.w = 9, eight.kh = eight.kw = 3, eight.pt = eight.pl = 1, eight.pb = 0,
  eight.pr = 2, eight.plain = true;
  eight.act.kind = ActKind::kRelu;
  add(eight);  // 24 folded channels, asymmetric padding
  Case dilated;
  dilated.c = 4, dilated.m = 16, dilated.h = 12, dilated.w = 13, dilated.kh = dilated.kw = 3, dilated.dh = 2,
  dilated.dw = 2, dilated.pt = dilated.pl = dilated.pb = dilated.pr = 2, dilated.plain = true;
  add(dilated);  // dw 2: the portable packing, also under AMX (36 lanes: the window's rows folded too)
  Case mobile;
  mobile.c = 3, mobile.m = 32, mobile.h = 23, mobile.w = 21, mobile.kh = mobile.kw = 3, mobile.sh = mobile.sw = 2;
  mobile.pt = mobile.pl = mobile.pb = mobile.pr = 1, mobile.plain = true, mobile.lo = 0, mobile.hi = 255;
  mobile.act.kind = ActKind::kRelu;
  add(mobile);  // MobileNet's 3x3 stem: 27 lanes, the whole window folded, one tap
  Case tall;
  tall.c = 2, tall.m = 16, tall.h = 9, tall.w = 11, tall.kh = 5, tall.kw = 3, tall.pt = 2, tall.pl = 1, tall.pb = 0,
  tall.pr = 2, tall.plain = true;
  add(tall);  // 30 lanes, stride 1, asymmetric padding: rows past the image's bottom are zero codes
  return v;
}

TEST(ConvInt8, ReferenceMatchesIntegerYardstick) {
  for (const Case& c : cases())
    if (!run_case(c, Int8ConvIsa::kReference)) return;
}

TEST(ConvInt8, AmxMatchesIntegerYardstick) {
  std::string why;
  if (int8_conv_isa(&why) != Int8ConvIsa::kAmx) GTEST_SKIP() << "no AMX-INT8 here: " << why;
  for (const Case& c : cases())
    if (!run_case(c, Int8ConvIsa::kAmx)) return;
}

// The AVX512-VNNI strip (hosts without AMX-INT8; here AMX's hosts have it too).
bool vnni_here() {
  const CpuFeatures& f = cpu_features();
  return f.avx512f && f.avx512bw && f.avx512vl && f.avx512_vnni && f.os_avx512 && f.avx2 && f.fma;
}

TEST(ConvInt8, Avx512VnniMatchesIntegerYardstick) {
  if (!vnni_here()) GTEST_SKIP() << "no AVX512-VNNI here";
  for (const Case& c : cases())
    if (!run_case(c, Int8ConvIsa::kAvx512Vnni)) return;
}

// The int8 values between int8 convolutions: an input of uint8 codes (read
// in place by a 1x1 stride-1 convolution, copied by pixels for the others),
// a residual of codes on its own grid, codes out, the grid a fused residual
// Add came after, and a QDQ SiLU after it.
TEST(ConvInt8, Int8ValuesInAndOut) {
  std::vector<Int8ConvIsa> isas = {Int8ConvIsa::kReference};
  if (vnni_here()) isas.push_back(Int8ConvIsa::kAvx512Vnni);
  if (int8_conv_isa() == Int8ConvIsa::kAmx) isas.push_back(Int8ConvIsa::kAmx);
  std::vector<Form> forms;
  for (int bits = 1; bits < 64; ++bits)
    forms.push_back(
        {(bits & 1) != 0, (bits & 2) != 0, (bits & 4) != 0, (bits & 8) != 0, (bits & 16) != 0, (bits & 32) != 0});
  for (Int8ConvIsa isa : isas)
    for (const Case& c : cases())
      for (const Form& f : forms) {
        if ((f.r_u8 || f.pre) && !c.residual && !f.gate) continue;
        if (f.gate && !f.pre) continue;  // a SiLU after the convolution's own grid (with a residual: and its pair)
        if (f.x_u8 && c.plain) continue;
        if (!run_case(c, isa, f)) return;
      }
}

TEST(ConvInt8, DeclinesWhatItCannotRunExactly) {
  Case cs;
  cs.c = 16, cs.m = 16;
  NchwcConvSpec s = spec_of(cs);
  Int8ConvQuant q{0.01f, -128, 127, {0.5f}};
  std::vector<float> w(16 * 16, 1.0f);  // codes 2 at scale 0.5
  EXPECT_EQ(int8_conv_declined(s, q, w.data()), "");
  w[37] = 0.7f;  // between codes
  EXPECT_EQ(int8_conv_declined(s, q, w.data()), "weight 5 of output channel 2 is not an int8 code times its scale");
  w[37] = 64.5f;  // code 129: past int8
  EXPECT_EQ(int8_conv_declined(s, q, w.data()), "weight 5 of output channel 2 is not an int8 code times its scale");
  w[37] = 1.0f;
  Int8ConvQuant wide = q;
  wide.hi = 200;  // a grid of 329 steps
  EXPECT_EQ(int8_conv_declined(s, wide, w.data()), "needs its input on an 8-bit quantization grid");
  Int8ConvQuant scales = q;
  scales.w_scales = {0.5f, 0.5f};
  EXPECT_EQ(int8_conv_declined(s, scales, w.data()), "needs one weight scale, or one per output channel");
  NchwcConvSpec grouped = s;
  grouped.q.groups = 2;
  EXPECT_EQ(int8_conv_declined(grouped, q, w.data()), "needs groups == 1");
  NchwcConvSpec plain = s;
  plain.input_blocked = false;  // 16 plain channels of a 1x1 window fold into 64
  EXPECT_EQ(int8_conv_declined(plain, q, w.data()), "");
  plain.q.kw = 5;
  EXPECT_EQ(int8_conv_declined(plain, q, nullptr),
            "reads plain channels whose window columns do not fold into 64 (C x kw > 64)");
  NchwcConvSpec big = s;
  big.q.c = 4096, big.q.kh = big.q.kw = 3;
  EXPECT_NE(int8_conv_declined(big, q, nullptr).find("past exact int32"), std::string::npos);
}

}  // namespace
}  // namespace minirt::cpu
