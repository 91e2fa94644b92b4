#include "kernels/cpu/conv_int8.h"

#include "kernels/cpu/vmath.h"  // quant_silu_table_avx512

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu/conv_common.h"
#include "kernels/cpu/conv_tile.h"
#include "kernels/cpu/cpu_caps.h"
#include "runtime/ops/activation.h"
#include "runtime/thread_pool.h"

namespace minirt::cpu {

namespace {

// Products per output value the int32 sums hold exactly: |u| <= 255 and
// |code| <= 128, and |sum + comp| <= 2 x 255 x 128 x this < 2^31.
constexpr int64_t kMaxProducts = 32000;

// The portable forms of the ISA file's entry points, over the same layouts
// and arithmetic.
void pack_rows_reference(const TileConvGeom& g, const float* x, uint8_t* xin, int64_t row0, int64_t row1, float scale,
                         bool, int32_t lo, int32_t hi) {
  const uint8_t zero = static_cast<uint8_t>(-lo);
  const int64_t plane = g.h * g.w * 16;
  for (int64_t row = row0; row < row1; ++row) {
    const PackedRow pr = tile_packed_row(g, xin, row, zero);
    if (!pr.d) continue;
    const int64_t ih = pr.a * g.sh + pr.phase / g.sw - g.ph;
    for (int64_t b = 0; b < g.wq; ++b) {
      const int64_t iw = b * g.sw + pr.phase % g.sw - g.pw;
      for (int64_t k = 0; k < 64; ++k) {
        const int64_t ch = pr.grp * 64 + k;
        uint8_t u = zero;
        if (ih >= 0 && ih < g.h && iw >= 0 && iw < g.w && ch < (g.c + 15) / 16 * 16) {
          float v = x[(ch / 16) * plane + (ih * g.w + iw) * 16 + ch % 16] / scale;
          v = v > static_cast<float>(lo) ? v : static_cast<float>(lo);  // NaN -> lo
          v = v < static_cast<float>(hi) ? v : static_cast<float>(hi);
          u = static_cast<uint8_t>(static_cast<int32_t>(std::nearbyint(v)) - lo);
        }
        pr.d[b * 64 + k] = u;
      }
    }
  }
}

// The same rows of a folded input (conv_tile_isa.h), from the plain image x
// [C][H][W] floats: channel ci kw + j of pixel (a, b) of phase pa is column
// b sw - pw + j dw of row a sh + pa - ph.
void pack_rows_folded_reference(const TileConvGeom& g, const float* x, uint8_t* xin, int64_t row0, int64_t row1,
                                float scale, bool, int32_t lo, int32_t hi) {
  const uint8_t zero = static_cast<uint8_t>(-lo);
  for (int64_t row = row0; row < row1; ++row) {
    const PackedRow pr = tile_packed_row(g, xin, row, zero);
    if (!pr.d) continue;
    std::memset(pr.d, zero, static_cast<size_t>(g.wq * 64));
    // Window row i of channel ci (i < fold_kh) at channels (ci fold_kh + i) kw.
    for (int64_t ci = 0; ci < g.c; ++ci)
      for (int64_t i = 0; i < g.fold_kh; ++i) {
        const int64_t ih = pr.a * g.sh + pr.phase - g.ph + i * g.dh;
        if (ih < 0 || ih >= g.h) continue;
        for (int64_t b = 0; b < g.wq; ++b)
          for (int64_t j = 0; j < g.kw; ++j) {
            const int64_t iw = b * g.sw - g.pw + j * g.dw;
            if (iw < 0 || iw >= g.w) continue;
            float v = x[(ci * g.h + ih) * g.w + iw] / scale;
            v = v > static_cast<float>(lo) ? v : static_cast<float>(lo);  // NaN -> lo
            v = v < static_cast<float>(hi) ? v : static_cast<float>(hi);
            pr.d[b * 64 + (ci * g.fold_kh + i) * g.kw + j] =
                static_cast<uint8_t>(static_cast<int32_t>(std::nearbyint(v)) - lo);
          }
      }
  }
}

// The same rows from an int8 value ([groups][h][w][64] codes of this grid):
// whole pixels copied, -lo outside (portable: a copy per pixel).
void pack_rows_from_u8(const TileConvGeom& g, const uint8_t* x, uint8_t* xin, int64_t row0, int64_t row1, int32_t lo) {
  const uint8_t zero = static_cast<uint8_t>(-lo);
  for (int64_t row = row0; row < row1; ++row) {
    const PackedRow pr = tile_packed_row(g, xin, row, zero);
    if (!pr.d) continue;
    const int64_t ih = pr.a * g.sh + pr.phase / g.sw - g.ph;
    if (ih < 0 || ih >= g.h) {
      std::memset(pr.d, zero, static_cast<size_t>(g.wq * 64));
      continue;
    }
    const uint8_t* src = x + (pr.grp * g.h + ih) * g.w * 64;
    for (int64_t b = 0; b < g.wq; ++b) {
      const int64_t iw = b * g.sw + pr.phase % g.sw - g.pw;
      if (iw < 0 || iw >= g.w)
        std::memset(pr.d + b * 64, zero, 64);
      else
        std::memcpy(pr.d + b * 64, src + iw * 64, 64);
    }
  }
}

void strip_reference(const Int8ConvStrip& st) {
  const TileConvStrip& s = st.s;
  const TileConvGeom& g = *s.g;
  const int64_t pixels = g.oh * g.ow;
  const int64_t group_px = g.phases * g.phase_pixels;
  const Activation& act = *s.act;
  for (int64_t f = s.f0; f < s.f1; ++f) {
    const int64_t oh = f / g.wq, ow = f % g.wq;
    if (oh >= g.oh || ow >= g.ow) continue;
    const int64_t p = oh * g.ow + ow;
    for (int64_t b = s.b0; b < s.b1; ++b) {
      for (int n = 0; n < 16; ++n) {
        int32_t acc = 0;
        for (int64_t grp = 0; grp < g.groups; ++grp)
          for (int64_t t = 0; t < g.taps; ++t) {
            const uint8_t* xp = st.xin + (grp * group_px + g.tap_off[t] + f) * 64;
            const int8_t* wp = st.w + ((b * g.groups + grp) * g.taps + t) * 1024;
            for (int k = 0; k < 64; ++k) acc += static_cast<int32_t>(xp[k]) * wp[(k / 4) * 64 + n * 4 + k % 4];
          }
        const int64_t ch = b * 16 + n;
        // Element (channel ch, pixel p) of a float value, or of an int8 one.
        const int64_t f_at = b * pixels * 16 + p * 16 + n, u_at = ((ch / 64) * pixels + p) * 64 + ch % 64;
        uint8_t* yu = static_cast<uint8_t*>(s.y);
        float* yf = static_cast<float*>(s.y);
        const Activation* gr = st.grid;
        float v;
        if (gr) {
          // Requantized onto the first grid (conv_int8_isa.h); a NaN goes to lo.
          const float pre = std::fma(static_cast<float>(acc + st.comp[ch]), st.gmult[ch], st.gbias[ch]);
          const float k = std::min(gr->gamma, std::max(gr->beta, pre));
          // The first grid is the output's unless a residual, a SiLU or a second grid (act after pre_act) follows.
          const bool direct_out = !s.r && !st.gate && !st.pre_act && !st.post;
          if (direct_out && st.y_u8) {
            yu[u_at] = static_cast<uint8_t>(static_cast<int32_t>(std::nearbyint(k)) - static_cast<int32_t>(gr->beta));
            continue;
          }
          v = gr->alpha * std::nearbyint(k);
          if (direct_out) {
            yf[f_at] = v;
            continue;
          }
        } else {
          v = std::fma(static_cast<float>(acc + st.comp[ch]), st.mult[ch], s.bias[ch]);
          if (st.pre_act) v = st.pre_act->apply(v);
        }
        if (st.gate) {
          // The SiLU: v times its sigmoid on the gate's grid (by the reciprocal of its scale).
          const Activation& ga = *st.gate;
          const float sg = std::min(ga.gamma, std::max(ga.beta, (1.0f / (1.0f + std::exp(-v))) * (1.0f / ga.alpha)));
          v = v * (ga.alpha * std::nearbyint(sg));
          if (st.gate_out) {
            const Activation& go = *st.gate_out;
            v = go.alpha * std::nearbyint(std::min(go.gamma, std::max(go.beta, v * (1.0f / go.alpha))));
          }
        }
        if (s.r && st.r_u8)
          v += st.r_scale * static_cast<float>(static_cast<const uint8_t*>(s.r)[u_at] + st.r_lo);
        else if (s.r)
          v += static_cast<const float*>(s.r)[f_at];
        // A second grid (a Concat's pair) after act: the output's grid is post's.
        if (st.post) v = act.apply(v);
        const Activation& out = st.post ? *st.post : act;
        if (st.y_u8) {
          // The output's grid, requantized by the reciprocal, as its code k - beta.
          const float k = std::min(out.gamma, std::max(out.beta, st.post ? v / out.alpha : v * (1.0f / out.alpha)));
          yu[u_at] = static_cast<uint8_t>(static_cast<int32_t>(std::nearbyint(k)) - static_cast<int32_t>(out.beta));
        } else {
          yf[f_at] = out.apply(v);
        }
      }
    }
  }
}

// Output channel m's scale.
float w_scale(const Int8ConvQuant& q, int64_t m) {
  return q.w_scales.size() == 1 ? q.w_scales[0] : q.w_scales[static_cast<size_t>(m)];
}

// The int8 code of weight w under scale s: the k with float(k) * s == w
// (DequantizeLinear's product), or false.
// (w * (1 / s) is within 2^-15 of k for |k| <= 128; the product checks it.)
bool weight_code(float w, float s, float inv_s, int8_t* code) {
  const float k = std::nearbyint(w * inv_s);
  if (!(k >= -128.0f && k <= 127.0f) || k * s != w) return false;
  *code = static_cast<int8_t>(k);
  return true;
}

}  // namespace

const char* int8_conv_isa_name(Int8ConvIsa isa) {
  return isa == Int8ConvIsa::kAmx ? "amx" : isa == Int8ConvIsa::kAvx512Vnni ? "avx512_vnni" : "reference";
}

Int8ConvIsa int8_conv_isa(std::string* why) {
  const CpuFeatures& f = cpu_features();
  if (f.amx_int8 && cpu_isa() == CpuIsa::kAmx) return Int8ConvIsa::kAmx;
  const bool vnni = f.avx512f && f.avx512bw && f.avx512vl && f.avx512_vnni && f.os_avx512 && f.avx2 && f.fma;
  if (vnni && static_cast<int>(cpu_isa()) >= static_cast<int>(CpuIsa::kAvx512)) return Int8ConvIsa::kAvx512Vnni;
  if (why)
    *why = !vnni ? "this CPU has neither AMX-INT8 nor AVX512-VNNI instructions"
                 : "MINIRT_CPU_ISA leaves AVX-512 out (cpu_isa " + std::string(cpu_isa_name(cpu_isa())) + ")";
  return Int8ConvIsa::kReference;
}

std::string int8_conv_declined(const NchwcConvSpec& s, const Int8ConvQuant& q, const float* w) {
  const Geometry& g = s.q;
  if (g.groups != 1) return "needs groups == 1";
  if (s.block != 16) return "needs the 16-channel blocked layout (AVX-512)";
  if (!s.input_blocked && g.c * g.kw > 64)
    return "reads plain channels whose window columns do not fold into 64 (C x kw > 64)";
  if (s.x_bf16 || s.y_bf16 || s.r_bf16) return "reads and writes no bf16 value";
  if (s.y_u8 && (s.post.none() ? s.act : s.post).kind != ActKind::kQuantGrid)
    return "writes an int8 value only through a quantization grid";
  if (!s.gate.none() && (s.gate.kind != ActKind::kQuantGrid || (s.residual && s.gate_out.none())))
    return "takes a SiLU only on a quantization grid, and a residual after it only through the pair after its Mul";
  if (!s.post.none() && (s.post.kind != ActKind::kQuantGrid || s.act.kind != ActKind::kQuantGrid))
    return "takes a second grid only after a grid of its own";
  if (!s.gate_out.none() && (s.gate.none() || s.gate_out.kind != ActKind::kQuantGrid))
    return "takes the pair after a SiLU's Mul only with the SiLU";
  if (s.y_channels != 0 && s.y_channels != g.m) return "writes only an output of its own (y_channels == m)";
  if (g.c * g.kh * g.kw > kMaxProducts)
    return "sums more than " + std::to_string(kMaxProducts) + " products per output (C x kh x kw), past exact int32";
  if (!(std::isfinite(q.x_scale) && q.x_scale > 0) || q.lo > q.hi || q.hi - q.lo > 255)
    return "needs its input on an 8-bit quantization grid";
  if (q.w_scales.size() != 1 && q.w_scales.size() != static_cast<size_t>(g.m))
    return "needs one weight scale, or one per output channel";
  for (float ws : q.w_scales)
    if (!(std::isfinite(ws) && ws > 0)) return "needs finite positive weight scales";
  if (!w) return {};
  const int64_t per_m = g.c * g.kh * g.kw;
  for (int64_t m = 0; m < g.m; ++m) {
    const float sc = w_scale(q, m), inv = 1.0f / sc;
    for (int64_t i = 0; i < per_m; ++i) {
      int8_t code;
      if (!weight_code(w[m * per_m + i], sc, inv, &code))
        return "weight " + std::to_string(i) + " of output channel " + std::to_string(m) +
               " is not an int8 code times its scale";
    }
  }
  return {};
}

Int8Conv::Int8Conv(const NchwcConvSpec& s, Int8ConvIsa isa, const Int8ConvQuant& q, const float* w, const float* bias)
    : s_(s), isa_(isa), q_(q) {
  const Geometry& gq = s.q;
  TileConvGeom& g = g_;
  // An int8 input of a 1x1, stride-1, unpadded convolution is read in place
  // (conv_int8_isa.h); every other input is packed per run.
  direct_ = s.x_u8 && gq.kh == 1 && gq.kw == 1 && gq.sh == 1 && gq.sw == 1 && gq.ph == 0 && gq.pw == 0 &&
            gq.oh == gq.h && gq.ow == gq.w;
  // A convolution reading plain channels (the image) folds its window's
  // columns into the 64 channels of a pixel (conv_tile_isa.h).
  folded_ = !s.input_blocked;
  tile_conv_geometry(gq, 64, folded_, direct_, &g, &tap_off_, &phases_read_);
  image_bytes_ = static_cast<size_t>(g.groups * g.phases * g.phase_pixels * 64);
  ws_bytes_ = direct_ ? 0 : (static_cast<size_t>(gq.n) * image_bytes_ + 63) / 64 * 64;
  // Units: blocks whose packed weights fit about 512 KiB of L2 (an even
  // number, for the 2-block steps), times strips of 32-pixel steps.
  const int64_t block_bytes = g.groups * g.taps * 1024;
  blocks_per_unit_ = std::clamp<int64_t>((512 * 1024) / std::max<int64_t>(block_bytes, 1) / 2 * 2, 2, 64);
  blocks_per_unit_ = std::min(blocks_per_unit_, (g.blocks + 1) / 2 * 2);
  pixels_per_unit_ = 128;
  if (!w) return;
  w_.assign(static_cast<size_t>(g.blocks * g.groups * g.taps * 1024), 0);
  comp_.assign(static_cast<size_t>(g.blocks * 16), 0);
  mult_.assign(static_cast<size_t>(g.blocks * 16), 0.0f);
  bias_.assign(static_cast<size_t>(g.blocks * 16), 0.0f);
  // Locals for the loop: its int8 stores may alias any member, which the
  // compiler would otherwise load again for every weight (ResNet-50: 25M).
  const bool folded = folded_, rows = g.fold_kh > 1;
  const int64_t groups = g.groups, taps = g.taps, cin = gq.c, kh = gq.kh, kw = gq.kw;
  int8_t* const wp = w_.data();
  for (int64_t co = 0; co < gq.m; ++co) {
    const float sc = w_scale(q, co), inv = 1.0f / sc;
    int8_t* const wb = wp + (co / 16) * groups * taps * 1024 + (co % 16) * 4;
    const float* const wc = w + co * cin * kh * kw;
    int32_t sum = 0;
    for (int64_t ci = 0; ci < cin; ++ci)
      for (int64_t i = 0; i < kh; ++i)
        for (int64_t j = 0; j < kw; ++j) {
          int8_t code = 0;
          weight_code(wc[(ci * kh + i) * kw + j], sc, inv, &code);  // checked by int8_conv_declined
          // Folded: tap i (a window row), channel ci kw + j; with the rows
          // folded too, tap 0, channel (ci kh + i) kw + j; else tap i kw + j, channel ci.
          const int64_t t = folded ? (rows ? 0 : i) : i * kw + j;
          const int64_t ch = folded ? ((rows ? ci * kh + i : ci) * kw + j) : ci;
          const int64_t grp = ch / 64, k = ch % 64;
          wb[((grp * taps + t) * 16 + k / 4) * 64 + k % 4] = code;
          sum += code;
        }
    comp_[static_cast<size_t>(co)] = q.lo * sum;
    mult_[static_cast<size_t>(co)] = q.x_scale * sc;
  }
  if (bias) std::copy(bias, bias + gq.m, bias_.begin());
  // The first grid, requantized in the epilogue (conv_int8_isa.h).
  if (s.pre_act.kind == ActKind::kQuantGrid)
    grid_ = s_.pre_act;
  else if (s.pre_act.none() && !s.residual && s.gate.none() && s.act.kind == ActKind::kQuantGrid)
    grid_ = s_.act;
  if (grid_.kind == ActKind::kQuantGrid) {
    gmult_.resize(mult_.size());
    gbias_.resize(bias_.size());
    for (size_t i = 0; i < mult_.size(); ++i) {
      gmult_[i] = mult_[i] / grid_.alpha;
      gbias_[i] = bias_[i] / grid_.alpha;
    }
    // Codes straight out (the AVX-512 epilogue): the compensation and the
    // grid's offset in the bias, one fma, clamp and round per value.
    if (s.y_u8 && !s.residual && s.gate.none() && s.pre_act.none() && s.post.none()) {
      ubias_.resize(bias_.size());
      for (size_t i = 0; i < bias_.size(); ++i)
        ubias_[i] = static_cast<float>(static_cast<double>(gbias_[i]) +
                                       static_cast<double>(comp_[i]) * static_cast<double>(gmult_[i]) - grid_.beta);
    }
  }
  // A SiLU after the first grid: at most 256 codes in, so one table lookup
  // replaces the sigmoid and the grids after it (and the activation, when
  // no residual is added after them).
  if (isa_ != Int8ConvIsa::kReference && grid_.kind == ActKind::kQuantGrid && !s.gate.none() &&
      grid_.gamma - grid_.beta <= 255) {
    table_act_ = !s.residual;
    gate_table_ = AlignedFloats(256);
    quant_silu_table_avx512(gate_table_.data(), grid_, s_.gate, s_.gate_out.none() ? nullptr : &s_.gate_out,
                            table_act_ ? &s_.act : nullptr, table_act_ && !s_.post.none() ? &s_.post : nullptr);
  }
}

void Int8Conv::run(const void* x, const void* r, void* y, void* workspace, ThreadPool& pool) const {
  const TileConvGeom& g = g_;
  const int64_t n = s_.q.n, pixels = g.oh * g.ow;
  // Elements (floats or uint8 codes) per image of x, r and y.
  const int64_t x_image = folded_   ? g.c * g.h * g.w
                          : s_.x_u8 ? ceil_div(g.c, 64) * g.h * g.w * 64
                                    : ceil_div(g.c, 16) * g.h * g.w * 16;
  const int64_t y_image = s_.y_u8 ? ceil_div(g.m, 64) * pixels * 64 : g.blocks * pixels * 16;
  const int64_t r_image = s_.r_u8 ? ceil_div(g.m, 64) * pixels * 64 : g.blocks * pixels * 16;
  const uint8_t* xin = static_cast<const uint8_t*>(direct_ ? x : workspace);
  const int64_t xin_image = direct_ ? x_image : static_cast<int64_t>(image_bytes_);
  const int64_t punits = ceil_div(g.flat, pixels_per_unit_);
  const int64_t bpu = tile_blocks_per_unit(blocks_per_unit_, g.blocks, n * punits, pool);
  const int64_t bunits = ceil_div(g.blocks, bpu);
  const bool affine = tile_affine(punits, pool);
  if (!direct_) {
    uint8_t* dst = static_cast<uint8_t*>(workspace);
    using FloatPack =
        void (*)(const TileConvGeom&, const float*, uint8_t*, int64_t, int64_t, float, bool, int32_t, int32_t);
    const bool avx512 = isa_ != Int8ConvIsa::kReference;
    const FloatPack pack =
        folded_  ? (avx512 && g.dw == 1 && g.kw <= 16 ? int8_pack_rows_folded_avx512 : pack_rows_folded_reference)
        : avx512 ? int8_pack_rows_avx512
                 : pack_rows_reference;
    tile_pack_images(g, phases_read_, n, affine, pool, [&](int64_t img, int64_t r0, int64_t r1) {
      uint8_t* d = dst + img * xin_image;
      if (s_.x_u8)
        pack_rows_from_u8(g, static_cast<const uint8_t*>(x) + img * x_image, d, r0, r1, q_.lo);
      else
        pack(g, static_cast<const float*>(x) + img * x_image, d, r0, r1, q_.x_scale, q_.x_off_grid, q_.lo, q_.hi);
    });
  }
  auto strip = isa_ == Int8ConvIsa::kAmx          ? int8_conv_strip_amx
               : isa_ == Int8ConvIsa::kAvx512Vnni ? int8_conv_strip_avx512vnni
                                                  : strip_reference;
  const size_t r_elem = s_.r_u8 ? 1 : sizeof(float), y_elem = s_.y_u8 ? 1 : sizeof(float);
  tile_run_units(n, bunits, punits, affine, pool, [&](int64_t img, int64_t bu, int64_t pu) {
    Int8ConvStrip st{};
    st.s.g = &g;
    st.s.bias = bias_.data();
    st.s.r = r ? static_cast<const char*>(r) + static_cast<size_t>(img * r_image) * r_elem : nullptr;
    st.s.act = &s_.act;
    st.s.y = static_cast<char*>(y) + static_cast<size_t>(img * y_image) * y_elem;
    st.s.f0 = pu * pixels_per_unit_;
    st.s.f1 = std::min(g.flat, st.s.f0 + pixels_per_unit_);
    st.s.b0 = bu * bpu;
    st.s.b1 = std::min(g.blocks, st.s.b0 + bpu);
    st.xin = xin + img * xin_image;
    st.w = w_.data();
    st.comp = comp_.data();
    st.mult = mult_.data();
    st.pre_act = s_.pre_act.none() ? nullptr : &s_.pre_act;
    st.grid = grid_.kind == ActKind::kQuantGrid ? &grid_ : nullptr;
    st.gate = s_.gate.none() ? nullptr : &s_.gate;
    st.gate_out = s_.gate_out.none() ? nullptr : &s_.gate_out;
    st.post = s_.post.none() ? nullptr : &s_.post;
    st.gate_table = gate_table_.empty() ? nullptr : gate_table_.data();
    st.table_act = table_act_;
    st.gmult = gmult_.data();
    st.gbias = gbias_.data();
    st.ubias = ubias_.empty() ? nullptr : ubias_.data();
    st.r_u8 = s_.r_u8;
    st.y_u8 = s_.y_u8;
    st.r_scale = q_.r_scale;
    st.r_lo = q_.r_lo;
    strip(st);
  });
}

std::string Int8Conv::describe() const {
  return std::string("nchwc_int8 isa=") + int8_conv_isa_name(isa_) + " groups64=" + std::to_string(g_.groups) +
         " phases=" + std::to_string(g_.phases) + " flat=" + std::to_string(g_.flat) + "/" +
         std::to_string(g_.oh * g_.ow) + " x_scale=" + std::to_string(q_.x_scale) + " grid=[" + std::to_string(q_.lo) +
         "," + std::to_string(q_.hi) + "]" + (q_.w_scales.size() == 1 ? " w=per tensor" : " w=per channel") +
         (direct_   ? " in=int8 in place"
          : s_.x_u8 ? " in=int8 repacked"
                    : "") +
         (s_.y_u8 ? " out=int8" : "") + (s_.r_u8 ? " residual=int8" : "") +
         (folded_ ? g_.fold_kh > 1 ? " in=plain, window folded" : " in=plain, window columns folded" : "");
}

}  // namespace minirt::cpu
