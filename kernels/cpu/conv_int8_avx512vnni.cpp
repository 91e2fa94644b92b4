// The int8 convolution's AVX-512 code: the input packing (floats on a
// quantization grid to uint8 codes), the products of a strip with
// AVX512-VNNI (vpdpbusd: uint8 times int8 quads, int32 accumulation, for
// hosts without AMX-INT8), and the epilogue both strips use. Layouts in
// conv_int8_isa.h. Compiled with -mavx512f -mavx512bw -mavx512vl
// -mavx512vnni -mavx2 -mfma (CMakeLists.txt); called only where
// int8_conv_isa() finds AVX512-VNNI or AMX-INT8 (conv_int8.cpp). The entry
// points are its only global symbols (tests/cli/isa_objects_test.sh).
#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/cpu/bf16_values_isa.h"  // Bf16PoolGeom
#include "kernels/cpu/conv_int8_isa.h"
#include "runtime/ops/activation.h"  // the Activation struct's fields

// vmath_avx512.h's register forms local to this object (MINIRT_VMATH_INLINE there).
#define MINIRT_VMATH_INLINE static inline
#include "kernels/cpu/vmath_avx512.h"  // act_avx512: always inlined, target avx512f,avx2,fma

namespace minirt::cpu {
namespace {

// rne(clamp(x / alpha, lo, hi)), NaN to lo: x * inv, which is the grid's k
// where x = alpha k (a value a pair put on the grid); off_grid (the image
// whose pair the stem took, ConvAttrs::in_grid), also the division where
// the product lands next to a midpoint, as QuantizeLinear divides (the test
// of quant_round_avx512, vmath_avx512.h).
inline __m512 quant_k(__m512 x, __m512 alpha, __m512 inv, __m512 flo, __m512 fhi, bool off_grid) {
  const __m512 t = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(x, inv), flo), fhi);  // NaN -> lo
  const __m512 k = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  if (!off_grid) return k;
  const __m512 half = _mm512_set1_ps(0.5f);
  const __m512 gap = _mm512_sub_ps(half, _mm512_abs_ps(_mm512_sub_ps(t, k)));
  const __mmask16 near = _mm512_cmp_ps_mask(gap, _mm512_mul_ps(_mm512_abs_ps(t), _mm512_set1_ps(0x1p-19f)), _CMP_LE_OQ);
  if (__builtin_expect(near != 0, 0)) {
    const __m512 q = _mm512_min_ps(_mm512_max_ps(_mm512_div_ps(x, alpha), flo), fhi);
    return _mm512_roundscale_ps(q, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  return k;
}

// N bytes from s to d (a word's load and store).
template <int N>
inline void copy_word(uint8_t* d, const uint8_t* s) {
  using W = std::conditional_t<N == 4, uint32_t, uint64_t>;
  W v;
  std::memcpy(&v, s, N);
  std::memcpy(d, &v, N);
}

// 64 bytes of `byte` at d.
inline void fill64(uint8_t* d, uint8_t byte) { _mm512_storeu_si512(d, _mm512_set1_epi8(static_cast<char>(byte))); }

// acc[r][n] += the first `quads` channel quads of 8 pixels (x) times blocks
// [0, NT) of one tap's weights (w, blocks wstride bytes apart); QUADS: the
// count known at compile time (16, a whole group), else 0.
template <int NT, int QUADS>
inline void quad_products(const uint32_t* xp, const int8_t* wp, int64_t wstride, int quads, __m512i (&acc)[8][NT]) {
  const int nq = QUADS ? QUADS : quads;
  for (int quad = 0; quad < nq; ++quad) {
    __m512i wv[NT];
    for (int n = 0; n < NT; ++n) wv[n] = _mm512_loadu_si512(wp + n * wstride + quad * 64);
    for (int r = 0; r < 8; ++r) {
      const __m512i xv = _mm512_set1_epi32(static_cast<int>(xp[r * 16 + quad]));
      for (int n = 0; n < NT; ++n) acc[r][n] = _mm512_dpbusd_epi32(acc[r][n], xv, wv[n]);
    }
  }
}

// 8 pixels from flat pixel f times blocks [b, b + NT), summed over every
// group, tap and channel quad; out[n * 256 + row * 16 + lane] (the rows of
// C tiles [n] of cbuf), as the bf16 strip's vdpbf16ps products with quads
// for pairs. The last group's quads past its channels have zero weights
// (their input bytes, the zero point, multiply nothing) and are skipped.
template <int NT>
void tile_products(const Int8ConvStrip& s, int64_t f, int64_t b, int32_t* out) {
  constexpr int rows = 8;
  const TileConvGeom& g = *s.s.g;
  __m512i acc[rows][NT];
  for (int r = 0; r < rows; ++r)
    for (int n = 0; n < NT; ++n) acc[r][n] = _mm512_setzero_si512();
  const int64_t group_px = g.phases * g.phase_pixels;
  const int64_t wstride = g.groups * g.taps * 1024;  // bytes per block
  for (int64_t grp = 0; grp < g.groups; ++grp) {
    const int quads = grp + 1 == g.groups ? static_cast<int>(g.last_words) : 16;
    for (int64_t t = 0; t < g.taps; ++t) {
      const uint32_t* xp = reinterpret_cast<const uint32_t*>(s.xin + (grp * group_px + g.tap_off[t] + f) * 64);
      const int8_t* wp = s.w + ((b * g.groups + grp) * g.taps + t) * 1024;
      if (quads == 16)
        quad_products<NT, 16>(xp, wp, wstride, 16, acc);
      else
        quad_products<NT, 0>(xp, wp, wstride, quads, acc);
    }
  }
  if (out) {
    for (int n = 0; n < NT; ++n)
      for (int r = 0; r < rows; ++r) _mm512_storeu_si512(out + (n * 16 + r) * 16, acc[r][n]);
    return;
  }
  // The first grid's codes straight from the registers (Int8ConvStrip::ubias,
  // a flat grid that is the plane: pixel f + r), as the epilogue's codes path.
  const int64_t pixels = g.oh * g.ow;
  const __m512 zero = _mm512_setzero_ps(), top = _mm512_set1_ps(s.grid->gamma - s.grid->beta);
  for (int n = 0; n < NT; ++n) {
    const int64_t blk = b + n;
    const __m512 mult = _mm512_loadu_ps(s.gmult + blk * 16), ub = _mm512_loadu_ps(s.ubias + blk * 16);
    uint8_t* yu = static_cast<uint8_t*>(s.s.y) + (blk / 4) * pixels * 64 + (blk % 4) * 16;
    for (int r = 0; r < rows && f + r < pixels; ++r) {
      __m512 v = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[r][n]), mult, ub);
      v = _mm512_min_ps(_mm512_max_ps(v, zero), top);  // max first: a NaN to code 0
      _mm_storeu_si128(reinterpret_cast<__m128i*>(yu + (f + r) * 64), _mm512_cvtusepi32_epi8(_mm512_cvtps_epi32(v)));
    }
  }
}

}  // namespace

// The epilogue of a step whose C tiles [t][n] (t < mt, n < nt) cbuf holds
// as int32 sums: flat pixels [f, f + 16 mt), blocks [b, b + nt) (conv_int8_isa.h).
void int8_conv_epilogue_avx512(const Int8ConvStrip& s, const int32_t* cbuf, int64_t f, int mt, int64_t b, int nt) {
  const TileConvGeom& g = *s.s.g;
  const Activation& act = *s.s.act;
  // The output's grid: act's, or a second grid's after it (a Concat's pair).
  const Activation& out = s.post ? *s.post : act;
  const int64_t pixels = g.oh * g.ow;
  // Where the rows land: the flat grid's pixel f + i is (oh, ow) = divmod(f + i, wq),
  // walked without a division per row; -1 for a dropped column or a row past the plane.
  // Where the flat grid is the plane (no dropped columns) and the rows lie
  // inside it, pixel f + i: no table (a 1x1 layer's epilogue spent a fifth
  // of its time making it, once per pair of blocks).
  const bool flat = g.wq == g.ow && f + mt * 16 <= pixels;
  int64_t at[32];
  if (!flat) {
    int64_t oh = f / g.wq, ow = f - oh * g.wq;
    for (int i = 0; i < mt * 16; ++i) {
      at[i] = oh < g.oh && ow < g.ow ? oh * g.ow + ow : -1;
      if (++ow == g.wq) ow = 0, ++oh;
    }
  }
  const __m512 r_scale = _mm512_set1_ps(s.r_scale);
  const __m512i r_lo = _mm512_set1_epi32(s.r_lo);
  // The output's grid when y holds its codes (the activation, kQuantGrid).
  const __m512 beta = _mm512_set1_ps(out.beta), gamma = _mm512_set1_ps(out.gamma);
  const __m512 out_alpha = _mm512_set1_ps(out.alpha), inv_alpha = _mm512_set1_ps(1.0f / out.alpha);
  const __m512i ibeta = _mm512_set1_epi32(static_cast<int32_t>(out.beta));
  // The first grid's (conv_int8_isa.h).
  const Activation* gr = s.grid;
  const __m512 g_alpha = _mm512_set1_ps(gr ? gr->alpha : 0.0f), g_lo = _mm512_set1_ps(gr ? gr->beta : 0.0f),
               g_hi = _mm512_set1_ps(gr ? gr->gamma : 0.0f);
  const __m512i g_ilo = _mm512_set1_epi32(gr ? static_cast<int32_t>(gr->beta) : 0);
  // The SiLU's gate grid.
  const Activation* ga = s.gate;
  const __m512 s_alpha = _mm512_set1_ps(ga ? ga->alpha : 0.0f), s_inv = _mm512_set1_ps(ga ? 1.0f / ga->alpha : 0.0f),
               s_lo = _mm512_set1_ps(ga ? ga->beta : 0.0f), s_hi = _mm512_set1_ps(ga ? ga->gamma : 0.0f);
  // The first grid is the output's unless a residual, a SiLU or a second grid (act after pre_act) follows.
  const bool direct_out = !s.s.r && !ga && !s.pre_act && !s.post;
  const Activation* go = s.gate_out;
  const __m512 o_alpha = _mm512_set1_ps(go ? go->alpha : 0.0f), o_inv = _mm512_set1_ps(go ? 1.0f / go->alpha : 0.0f),
               o_lo = _mm512_set1_ps(go ? go->beta : 0.0f), o_hi = _mm512_set1_ps(go ? go->gamma : 0.0f);
  if (s.ubias && gr && direct_out && s.y_u8) {
    // The first grid's codes out (Int8ConvStrip::ubias).
    const __m512 zero = _mm512_setzero_ps(), top = _mm512_set1_ps(gr->gamma - gr->beta);
    for (int n = 0; n < nt; ++n) {
      const int64_t blk = b + n;
      const __m512 mult = _mm512_loadu_ps(s.gmult + blk * 16), ub = _mm512_loadu_ps(s.ubias + blk * 16);
      uint8_t* yu = static_cast<uint8_t*>(s.s.y) + (blk / 4) * pixels * 64 + (blk % 4) * 16;
      for (int t = 0; t < mt; ++t) {
        const int32_t* c = cbuf + (t * 2 + n) * 256;
        for (int row = 0; row < 16; ++row) {
          const int64_t p = flat ? f + t * 16 + row : at[t * 16 + row];
          if (p < 0) continue;
          __m512 v = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c + row * 16)), mult, ub);
          v = _mm512_min_ps(_mm512_max_ps(v, zero), top);  // max first: a NaN to code 0, as max(v, lo) above
          _mm_storeu_si128(reinterpret_cast<__m128i*>(yu + p * 64), _mm512_cvtusepi32_epi8(_mm512_cvtps_epi32(v)));
        }
      }
    }
    return;
  }
  for (int n = 0; n < nt; ++n) {
    const int64_t blk = b + n;
    const __m512i comp = _mm512_loadu_si512(s.comp + blk * 16);
    const __m512 mult = _mm512_loadu_ps((gr ? s.gmult : s.mult) + blk * 16);
    const __m512 bias = _mm512_loadu_ps((gr ? s.gbias : s.s.bias) + blk * 16);
    // Block blk of a float value, or its 16 lanes of a 64-channel group of an int8 one.
    const int64_t f_at = blk * pixels * 16, u_at = (blk / 4) * pixels * 64 + (blk % 4) * 16;
    const float* rf = s.s.r && !s.r_u8 ? static_cast<const float*>(s.s.r) + f_at : nullptr;
    const uint8_t* ru = s.s.r && s.r_u8 ? static_cast<const uint8_t*>(s.s.r) + u_at : nullptr;
    float* yf = s.y_u8 ? nullptr : static_cast<float*>(s.s.y) + f_at;
    uint8_t* yu = s.y_u8 ? static_cast<uint8_t*>(s.s.y) + u_at : nullptr;
    for (int t = 0; t < mt; ++t) {
      const int32_t* c = cbuf + (t * 2 + n) * 256;
      for (int row = 0; row < 16; ++row) {
        const int64_t p = flat ? f + t * 16 + row : at[t * 16 + row];
        if (p < 0) continue;
        const __m512i acc = _mm512_add_epi32(_mm512_load_si512(c + row * 16), comp);
        __m512 v = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc), mult, bias);
        if (gr) {
          // Requantized onto the first grid: max(v, lo) sends a NaN to lo, as the reference.
          const __m512 k = _mm512_min_ps(_mm512_max_ps(v, g_lo), g_hi);
          if (direct_out && yu) {
            _mm_storeu_si128(reinterpret_cast<__m128i*>(yu + p * 64),
                             _mm512_cvtusepi32_epi8(_mm512_sub_epi32(_mm512_cvtps_epi32(k), g_ilo)));
            continue;
          }
          if (s.gate_table) {
            // The SiLU (and the grids after it) looked up by the code.
            v = lut256_avx512(s.gate_table, _mm512_sub_epi32(_mm512_cvtps_epi32(k), g_ilo));
            if (s.table_act && !yu) {
              _mm512_storeu_ps(yf + p * 16, v);
              continue;
            }
          } else {
            v = _mm512_mul_ps(g_alpha, _mm512_roundscale_ps(k, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
          }
          if (direct_out) {
            _mm512_storeu_ps(yf + p * 16, v);
            continue;
          }
        } else if (s.pre_act) {
          v = act_avx512(v, *s.pre_act);
        }
        if (ga && !s.gate_table) {
          const __m512 sg = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(sigmoid_avx512(v), s_inv), s_lo), s_hi);
          v = _mm512_mul_ps(
              v, _mm512_mul_ps(s_alpha, _mm512_roundscale_ps(sg, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
          if (go) {
            const __m512 k = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(v, o_inv), o_lo), o_hi);
            v = _mm512_mul_ps(o_alpha, _mm512_roundscale_ps(k, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
          }
        }
        if (rf) v = _mm512_add_ps(v, _mm512_loadu_ps(rf + p * 16));
        if (ru) {
          const __m512i u = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(ru + p * 64)));
          v = _mm512_add_ps(v, _mm512_mul_ps(r_scale, _mm512_cvtepi32_ps(_mm512_add_epi32(u, r_lo))));
        }
        // The second grid after act: act first, unless a table had both or the first grid was act's
        // (gr without pre_act: requantized onto it above).
        if (s.post && !s.table_act && !(gr && !s.pre_act)) v = act_avx512(v, act);
        if (yu) {
          // The output's grid, requantized by the reciprocal, as its codes: k - beta. After a
          // grid of its own (post) v sits on that grid, and a ratio of two scales puts many
          // such values on a midpoint of the second: there as the division rounds them.
          const __m512 k = s.post ? quant_round_avx512(v, out_alpha, inv_alpha, beta, gamma)
                                  : _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(v, inv_alpha), beta), gamma);
          _mm_storeu_si128(reinterpret_cast<__m128i*>(yu + p * 64),
                           _mm512_cvtusepi32_epi8(_mm512_sub_epi32(_mm512_cvtps_epi32(k), ibeta)));
        } else {
          _mm512_storeu_ps(yf + p * 16, act_avx512(v, out));
        }
      }
    }
  }
}

void int8_pack_rows_avx512(const TileConvGeom& g, const float* x, uint8_t* xin, int64_t row0, int64_t row1, float scale,
                           bool off_grid, int32_t lo, int32_t hi) {
  const uint8_t zero = static_cast<uint8_t>(-lo);
  const int64_t plane = g.h * g.w * 16, in_blocks = (g.c + 15) / 16;
  const __m512 alpha = _mm512_set1_ps(scale), inv = _mm512_set1_ps(1.0f / scale);
  const __m512 flo = _mm512_set1_ps(static_cast<float>(lo)), fhi = _mm512_set1_ps(static_cast<float>(hi));
  const __m512i ilo = _mm512_set1_epi32(lo);
  const __m128i zero16 = _mm_set1_epi8(static_cast<char>(zero));
  for (int64_t row = row0; row < row1; ++row) {
    const int64_t a = row % (g.hq + 1), phase = (row / (g.hq + 1)) % g.phases, grp = row / ((g.hq + 1) * g.phases);
    uint8_t* base = xin + (grp * g.phases + phase) * g.phase_pixels * 64;
    if (a == g.hq) {
      for (int64_t p = g.hq * g.wq; p < g.phase_pixels; ++p) fill64(base + p * 64, zero);
      continue;
    }
    uint8_t* d = base + a * g.wq * 64;
    const int64_t ih = a * g.sh + phase / g.sw - g.ph;
    if (ih < 0 || ih >= g.h) {
      for (int64_t p = 0; p < g.wq; ++p) fill64(d + p * 64, zero);
      continue;
    }
    for (int64_t p = 0; p < g.wq; ++p) {
      const int64_t iw = p * g.sw + phase % g.sw - g.pw;
      uint8_t* dp = d + p * 64;
      if (iw < 0 || iw >= g.w) {
        fill64(dp, zero);
        continue;
      }
      for (int k = 0; k < 4; ++k) {
        const int64_t blk = grp * 4 + k;
        __m128i codes = zero16;
        if (blk < in_blocks) {
          const __m512 k =
              quant_k(_mm512_loadu_ps(x + blk * plane + (ih * g.w + iw) * 16), alpha, inv, flo, fhi, off_grid);
          const __m512i u = _mm512_sub_epi32(_mm512_cvtps_epi32(k), ilo);
          codes = _mm512_cvtusepi32_epi8(u);
        }
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dp + k * 16), codes);
      }
    }
  }
}

void int8_pack_rows_folded_avx512(const TileConvGeom& g, const float* x, uint8_t* xin, int64_t row0, int64_t row1,
                                  float scale, bool off_grid, int32_t lo, int32_t hi) {
  const uint8_t zero = static_cast<uint8_t>(-lo);
  const __m512i zero64 = _mm512_set1_epi8(static_cast<char>(zero));
  const __m128i zero16 = _mm_set1_epi8(static_cast<char>(zero));
  const __m512 alpha = _mm512_set1_ps(scale), inv = _mm512_set1_ps(1.0f / scale);
  const __m512 flo = _mm512_set1_ps(static_cast<float>(lo)), fhi = _mm512_set1_ps(static_cast<float>(hi));
  const __m512i ilo = _mm512_set1_epi32(lo);
  // As the bf16 folded packing: each image row quantized once, per chunk of
  // pixels, into a uint8 copy per channel with the zero code for the
  // padding (row[ci][j]: column c0 + j); a pixel is then its channels'
  // windows, each one masked load placing kw bytes at byte ci kw of one
  // register, and one 64-byte store.
  constexpr int64_t kSpan = 512;  // columns of a chunk
  alignas(64) uint8_t row[64][kSpan + 64];
  const int64_t chunk = (kSpan - g.kw) / g.sw + 1;  // pixels of a chunk
  // Row copy k = ci fold_kh + i: window row i of channel ci (fold_kh > 1:
  // the rows folded too), placed at byte k kw of a pixel.
  const int64_t copies = g.c * g.fold_kh;
  const int64_t kw = g.kw, sw = g.sw;
  __mmask64 window[64];
  for (int64_t k = 0; k < copies; ++k) window[k] = ((uint64_t{1} << kw) - 1) << (k * kw);
  // Words of 4 or 8 bytes where the last copy's word stays inside the pixel.
  int64_t word = kw <= 4 ? 4 : kw <= 8 ? 8 : 0;
  const int64_t tail_end = word && (copies - 1) * kw + word <= 64 ? (copies - 1) * kw + word : 0;
  if (!tail_end) word = 0;
  for (int64_t r = row0; r < row1; ++r) {
    const int64_t a = r % (g.hq + 1), phase = r / (g.hq + 1);
    uint8_t* base = xin + phase * g.phase_pixels * 64;
    if (a == g.hq) {  // the phase's slack
      for (int64_t p = g.hq * g.wq; p < g.phase_pixels; ++p) _mm512_storeu_si512(base + p * 64, zero64);
      continue;
    }
    uint8_t* d = base + a * g.wq * 64;
    const int64_t ih0 = a * g.sh + phase - g.ph;
    for (int64_t b0 = 0; b0 < g.wq; b0 += chunk) {
      const int64_t b1 = b0 + chunk < g.wq ? b0 + chunk : g.wq;
      const int64_t c0 = b0 * g.sw - g.pw, span = (b1 - 1 - b0) * g.sw + g.kw;
      for (int64_t k = 0; k < copies; ++k) {
        const int64_t ci = k / g.fold_kh, ih = ih0 + (k % g.fold_kh) * g.dh;
        const bool inside = ih >= 0 && ih < g.h;  // else the zero code: the padding rows
        const float* src = x + (ci * g.h + (inside ? ih : 0)) * g.w;
        for (int64_t j = 0; j < span; j += 16) {
          // Lanes l with column c0 + j + l inside the image.
          const int64_t iw = c0 + j;
          const int64_t in0 = iw < 0 ? -iw : 0, in1 = g.w - iw < 16 ? g.w - iw : 16;
          __m128i codes = zero16;
          if (inside && in0 < in1) {
            const __mmask16 m = static_cast<__mmask16>(((1u << in1) - 1) & ~((1u << in0) - 1));
            const __m512 k = quant_k(_mm512_maskz_loadu_ps(m, src + iw), alpha, inv, flo, fhi, off_grid);
            codes =
                _mm_mask_blend_epi8(m, zero16, _mm512_cvtusepi32_epi8(_mm512_sub_epi32(_mm512_cvtps_epi32(k), ilo)));
          }
          _mm_store_si128(reinterpret_cast<__m128i*>(&row[k][j]), codes);
        }
      }
      if (word) {
        // Copy k's kw bytes as one word-sized load and store at byte k kw;
        // the next copy's store overwrites the extra bytes, and those of the
        // last (past the folded channels) get the zero code back. Masked
        // byte loads, each split over two cache lines, took 3-4x longer.
        for (int64_t b = b0; b < b1; ++b) {
          const int64_t off = (b - b0) * sw;
          uint8_t* dp = d + b * 64;
          _mm512_storeu_si512(dp, zero64);
          if (word == 4)
            for (int64_t k = 0; k < copies; ++k) copy_word<4>(dp + k * kw, &row[k][off]);
          else
            for (int64_t k = 0; k < copies; ++k) copy_word<8>(dp + k * kw, &row[k][off]);
          for (int64_t i = copies * kw; i < tail_end; ++i) dp[i] = zero;
        }
        continue;
      }
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t off = (b - b0) * sw;
        __m512i p = zero64;
        for (int64_t k = 0; k < copies; ++k) p = _mm512_mask_loadu_epi8(p, window[k], &row[k][off] - k * kw);
        _mm512_storeu_si512(d + b * 64, p);
      }
    }
  }
}

void floats_to_u8_lanes_avx512(const float* src, uint8_t* dst, int64_t stride, int64_t n, float alpha, int32_t lo,
                               int32_t hi) {
  const __m512 a = _mm512_set1_ps(alpha), inv = quant_inverse_avx512(a);
  const __m512 flo = _mm512_set1_ps(static_cast<float>(lo)), fhi = _mm512_set1_ps(static_cast<float>(hi));
  const __m512i ilo = _mm512_set1_epi32(lo);
  for (int64_t p = 0; p < n; ++p) {
    const __m512 k = quant_round_avx512(_mm512_loadu_ps(src + p * 16), a, inv, flo, fhi);  // integers in [lo, hi]
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + p * stride),
                     _mm512_cvtusepi32_epi8(_mm512_sub_epi32(_mm512_cvtps_epi32(k), ilo)));
  }
}

void u8_lanes_to_code_floats_avx512(const uint8_t* src, int64_t stride, float* dst, int64_t n) {
  for (int64_t p = 0; p < n; ++p)
    _mm512_storeu_ps(
        dst + p * 16,
        _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + p * stride)))));
}

void code_floats_to_u8_lanes_avx512(const float* src, uint8_t* dst, int64_t stride, int64_t n, float top) {
  const __m512 zero = _mm512_setzero_ps(), hi = _mm512_set1_ps(top);
  for (int64_t p = 0; p < n; ++p) {
    // max first: a NaN (from NaN weights) becomes code 0, as max(v, lo) does elsewhere.
    const __m512 v = _mm512_min_ps(_mm512_max_ps(_mm512_loadu_ps(src + p * 16), zero), hi);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + p * stride), _mm512_cvtusepi32_epi8(_mm512_cvtps_epi32(v)));
  }
}

void u8_max_rows_avx512(const Bf16PoolGeom& q, const uint8_t* x, uint8_t* y, int64_t row0, int64_t row1) {
  // The window's rows and columns inside the input: [first, end).
  auto first = [](int64_t a, int64_t d) { return a >= 0 ? int64_t{0} : (-a + d - 1) / d; };
  auto end = [](int64_t a, int64_t d, int64_t k, int64_t n) {  // no std::min: nothing inline from outside here
    const int64_t inside = (n - 1 - a) / d + 1;
    return a >= n ? int64_t{0} : inside < k ? inside : k;
  };
  for (int64_t oh = row0; oh < row1; ++oh) {
    const int64_t ih0 = oh * q.sh - q.ph;
    const int64_t i0 = first(ih0, q.dh), i1 = end(ih0, q.dh, q.kh, q.h);
    for (int64_t ow = 0; ow < q.ow; ++ow) {
      const int64_t iw0 = ow * q.sw - q.pw;
      const int64_t j0 = first(iw0, q.dw), j1 = end(iw0, q.dw, q.kw, q.w);
      __m512i m = _mm512_setzero_si512();
      for (int64_t i = i0; i < i1; ++i) {
        const uint8_t* row = x + ((ih0 + i * q.dh) * q.w + iw0) * 64;
        for (int64_t j = j0; j < j1; ++j) m = _mm512_max_epu8(m, _mm512_loadu_si512(row + j * q.dw * 64));
      }
      _mm512_storeu_si512(y + (oh * q.ow + ow) * 64, m);
    }
  }
}

void int8_conv_strip_avx512vnni(const Int8ConvStrip& s) {
  alignas(64) int32_t cbuf[4 * 256];
  // Codes out from the registers where the epilogue's codes path would run on a flat grid that is the plane.
  const bool in_registers = s.ubias && s.grid && s.y_u8 && s.s.g->wq == s.s.g->ow;
  for (int64_t f = s.s.f0; f < s.s.f1; f += 32) {
    const int mt = s.s.f1 - f > 16 ? 2 : 1;
    for (int64_t b = s.s.b0; b < s.s.b1; b += 2) {
      const int nt = s.s.b1 - b > 1 ? 2 : 1;
      for (int t = 0; t < mt; ++t)
        // A half wholly past the strip's end (the plane's end) is not
        // computed; the epilogue drops its rows (as the bf16 strip).
        for (int half = 0; half < 2 && f + t * 16 + half * 8 < s.s.f1; ++half) {
          int32_t* out = in_registers ? nullptr : cbuf + t * 2 * 256 + half * 8 * 16;
          if (nt == 2)
            tile_products<2>(s, f + t * 16 + half * 8, b, out);
          else
            tile_products<1>(s, f + t * 16 + half * 8, b, out);
        }
      if (!in_registers) int8_conv_epilogue_avx512(s, cbuf, f, mt, b, nt);
    }
  }
}

}  // namespace minirt::cpu
