// The bf16 convolution's AVX512_BF16 code: the input packing (vcvtne2ps2bf16,
// round to nearest even), the products of a strip with vdpbf16ps (fp32
// accumulation), and the AVX-512 epilogue both strips use. Layouts in
// conv_bf16_isa.h. Compiled with -mavx512f -mavx512bw -mavx512vl
// -mavx512bf16 -mavx2 -mfma (CMakeLists.txt) and called only where
// cpu_isa() is avx512_bf16 or amx (conv_bf16.cpp); the entry points are its
// only global symbols (tests/cli/isa_objects_test.sh).
#include <immintrin.h>

#include <algorithm>

#include <cstdint>

#include "kernels/cpu/conv_bf16_isa.h"
#include "runtime/ops/activation.h"  // the Activation struct's fields

// vmath_avx512.h's register forms local to this object (MINIRT_VMATH_INLINE there).
#define MINIRT_VMATH_INLINE static inline
#include "kernels/cpu/vmath_avx512.h"  // act_avx512: always inlined, target avx512f,avx2,fma

namespace minirt::cpu {
namespace {

// Lanes [0, n) of 16 (n clamped to [0, 16]).
inline __mmask16 first_lanes(int64_t n) {
  if (n <= 0) return 0;
  if (n >= 16) return 0xffff;
  return static_cast<__mmask16>((1u << n) - 1);
}

// acc[r][n] += the first `pairs` channel pairs of 8 pixels (x) times blocks
// [0, NT) of one tap's weights (w, blocks wstride uint16s apart); PAIRS: the
// count known at compile time (16, a whole group), else 0.
template <int NT, int PAIRS>
inline void pair_products(const uint32_t* xp, const uint16_t* wp, int64_t wstride, int pairs, __m512 (&acc)[8][NT]) {
  const int np = PAIRS ? PAIRS : pairs;
  for (int pair = 0; pair < np; ++pair) {
    __m512bh wv[NT];
    for (int n = 0; n < NT; ++n) wv[n] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(wp + n * wstride + pair * 32));
    for (int r = 0; r < 8; ++r) {
      __m512bh xv = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(xp[r * 16 + pair])));
      for (int n = 0; n < NT; ++n) acc[r][n] = _mm512_dpbf16_ps(acc[r][n], xv, wv[n]);
    }
  }
}

// 8 pixels from flat pixel f times blocks [b, b + NT), summed
// over every group, tap and channel pair; out[n * 256 + row * 16 + lane]
// (the rows of C tiles [n] of cbuf). The last group's pairs past its
// channels are zero and not multiplied (a 1x1 from 16 channels: 8 of 16; a
// folded 7x7 stem on 3 channels: 11).
template <int NT>
void tile_products(const TileConvStrip& s, int64_t f, int64_t b, float* out) {
  const TileConvGeom& g = *s.g;
  __m512 acc[8][NT];
  for (int r = 0; r < 8; ++r)
    for (int n = 0; n < NT; ++n) acc[r][n] = _mm512_setzero_ps();
  const int64_t group_px = g.phases * g.phase_pixels;
  const int64_t wstride = g.groups * g.taps * 512;  // uint16s per block
  for (int64_t grp = 0; grp < g.groups; ++grp) {
    const int pairs = grp + 1 == g.groups ? static_cast<int>(g.last_words) : 16;
    for (int64_t t = 0; t < g.taps; ++t) {
      const uint32_t* xp = reinterpret_cast<const uint32_t*>(s.xin + (grp * group_px + g.tap_off[t] + f) * 32);
      const uint16_t* wp = s.w + ((b * g.groups + grp) * g.taps + t) * 512;
      if (pairs == 16)
        pair_products<NT, 16>(xp, wp, wstride, 16, acc);
      else
        pair_products<NT, 0>(xp, wp, wstride, pairs, acc);
    }
  }
  for (int n = 0; n < NT; ++n)
    for (int r = 0; r < 8; ++r) _mm512_storeu_ps(out + (n * 16 + r) * 16, acc[r][n]);
}

}  // namespace

void bf16_pack_rows_avx512bf16(const TileConvGeom& g, const float* x, uint16_t* xin, int64_t row0, int64_t row1) {
  const int64_t cblocks = (g.c + 15) / 16;
  const int64_t plane = g.h * g.w * 16;
  const __m512i zero = _mm512_setzero_si512();
  for (int64_t row = row0; row < row1; ++row) {
    const int64_t a = row % (g.hq + 1);
    const int64_t ph_index = (row / (g.hq + 1)) % g.phases;
    const int64_t grp = row / ((g.hq + 1) * g.phases);
    uint16_t* phase_base = xin + (grp * g.phases + ph_index) * g.phase_pixels * 32;
    if (a == g.hq) {  // the phase's slack: zeros
      uint16_t* d = phase_base + g.hq * g.wq * 32;
      for (int64_t p = 0; p < g.phase_pixels - g.hq * g.wq; ++p) _mm512_storeu_si512(d + p * 32, zero);
      continue;
    }
    uint16_t* d = phase_base + a * g.wq * 32;
    const int64_t pa = ph_index / g.sw, pb = ph_index % g.sw;
    const int64_t ih = a * g.sh + pa - g.ph;
    if (ih < 0 || ih >= g.h) {
      for (int64_t p = 0; p < g.wq; ++p) _mm512_storeu_si512(d + p * 32, zero);
      continue;
    }
    const int64_t cb0 = grp * 2, cb1 = grp * 2 + 1;
    const __mmask16 m0 = first_lanes(g.c - cb0 * 16), m1 = first_lanes(g.c - cb1 * 16);
    const float* x0 = x + cb0 * plane + ih * g.w * 16;
    const float* x1 = cb1 < cblocks ? x + cb1 * plane + ih * g.w * 16 : nullptr;
    for (int64_t b = 0; b < g.wq; ++b) {
      const int64_t iw = b * g.sw + pb - g.pw;
      if (iw < 0 || iw >= g.w) {
        _mm512_storeu_si512(d + b * 32, zero);
        continue;
      }
      __m512 lo = _mm512_maskz_loadu_ps(m0, x0 + iw * 16);
      __m512 hi = x1 ? _mm512_maskz_loadu_ps(m1, x1 + iw * 16) : _mm512_setzero_ps();
      __m512bh v = _mm512_cvtne2ps_pbh(hi, lo);  // lanes 0-15 from lo, 16-31 from hi
      _mm512_storeu_si512(d + b * 32, reinterpret_cast<__m512i>(v));
    }
  }
}

void bf16_pack_rows_folded_avx512bf16(const TileConvGeom& g, const float* x, uint16_t* xin, int64_t row0,
                                      int64_t row1) {
  const __m512i zero = _mm512_setzero_si512();
  // Each image row is converted once, per chunk of pixels, into a bf16 copy
  // per channel with zeros for the padding (row[ci][j]: column c0 + j); a
  // pixel is then its channels' windows, each one masked load placing kw
  // words at word ci kw of one register, and one 64-byte store. (Converting
  // and storing per pixel and channel, masked, took four times as long:
  // perf, the ResNet stem.)
  constexpr int64_t kSpan = 512;  // columns of a chunk
  alignas(64) uint16_t row[32][kSpan + 32];
  const int64_t chunk = (kSpan - g.kw) / g.sw + 1;  // pixels of a chunk
  // Row copy k = ci fold_kh + i: window row i of channel ci (fold_kh > 1:
  // the rows folded too), placed at word k kw of a pixel.
  const int64_t copies = g.c * g.fold_kh;
  __mmask32 window[32];
  for (int64_t k = 0; k < copies; ++k) window[k] = static_cast<__mmask32>(((uint64_t{1} << g.kw) - 1) << (k * g.kw));
  for (int64_t r = row0; r < row1; ++r) {
    const int64_t a = r % (g.hq + 1), phase = r / (g.hq + 1);
    uint16_t* base = xin + phase * g.phase_pixels * 32;
    if (a == g.hq) {  // the phase's slack
      for (int64_t p = g.hq * g.wq; p < g.phase_pixels; ++p) _mm512_storeu_si512(base + p * 32, zero);
      continue;
    }
    uint16_t* d = base + a * g.wq * 32;
    const int64_t ih0 = a * g.sh + phase - g.ph;
    for (int64_t b0 = 0; b0 < g.wq; b0 += chunk) {
      const int64_t b1 = std::min(g.wq, b0 + chunk);
      const int64_t c0 = b0 * g.sw - g.pw, span = (b1 - 1 - b0) * g.sw + g.kw;
      for (int64_t k = 0; k < copies; ++k) {
        const int64_t ci = k / g.fold_kh, ih = ih0 + (k % g.fold_kh) * g.dh;
        const bool inside = ih >= 0 && ih < g.h;  // else zeros: the padding rows
        const float* src = x + (ci * g.h + (inside ? ih : 0)) * g.w;
        for (int64_t j = 0; j < span; j += 16) {
          // Lanes l with column c0 + j + l inside the image.
          const int64_t iw = c0 + j;
          const int64_t lo = std::max<int64_t>(0, -iw), hi = std::min<int64_t>(16, g.w - iw);
          __m256i v = _mm256_setzero_si256();
          if (inside && lo < hi) {
            const __mmask16 m = static_cast<__mmask16>(((1u << hi) - 1) & ~((1u << lo) - 1));
            v = reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, src + iw)));
          }
          _mm256_store_si256(reinterpret_cast<__m256i*>(&row[k][j]), v);
        }
      }
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t off = (b - b0) * g.sw;
        __m512i p = zero;
        for (int64_t k = 0; k < copies; ++k) p = _mm512_mask_loadu_epi16(p, window[k], &row[k][off] - k * g.kw);
        _mm512_storeu_si512(d + b * 32, p);
      }
    }
  }
}

namespace {

// The epilogue's activation: one kind inlined (SiLU, Sigmoid, HardSwish: a
// call per vector to act_costly_avx512 spilled the loop's registers, and the
// epilogue took 17% of EfficientNet-B0's time, the products 20%; a call of
// apply_activation per 16-row tile instead measured 2-4% slower than this),
// or act_avx512's switch (None, Relu, Clip, LeakyRelu, QuantGrid inline, the
// rest a call). The exp tables they read are this object's own
// (MINIRT_VMATH_TABLE in vmath.h).
template <ActKind K>
struct ActKindOf {
  static __m512 apply(__m512 v, const Activation& a) { return act_kind_avx512<K>(v, a); }
};
struct ActAny {
  static __m512 apply(__m512 v, const Activation& a) { return act_avx512(v, a); }
};

template <class Act>
void epilogue(const TileConvStrip& s, const float* cbuf, int64_t f, int mt, int64_t b, int nt) {
  const TileConvGeom& g = *s.g;
  const Activation& act = *s.act;
  const int64_t pixels = g.oh * g.ow, plane = pixels * 16;
  // Where the rows land: the flat grid's pixel f + i is (oh, ow) = divmod(f + i, wq),
  // walked without a division per row; -1 for a dropped column or a row past the plane.
  int64_t at[32];
  int64_t oh = f / g.wq, ow = f - oh * g.wq;
  for (int i = 0; i < mt * 16; ++i) {
    at[i] = oh < g.oh && ow < g.ow ? oh * g.ow + ow : -1;
    if (++ow == g.wq) ow = 0, ++oh;
  }
  // The residual of block b + n at pixel p, as floats.
  const float* rf = g.r_bf16 ? nullptr : static_cast<const float*>(s.r);
  const uint16_t* rh = g.r_bf16 ? static_cast<const uint16_t*>(s.r) : nullptr;
  auto residual = [&](int64_t blk, int64_t p) {
    if (rf) return _mm512_loadu_ps(rf + blk * plane + p * 16);
    __m256i h =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rh + ((blk / 2) * pixels + p) * 32 + (blk % 2) * 16));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  };
  const bool has_r = s.r != nullptr;
  if (g.y_bf16) {
    // Blocks b and b + 1 (b even) are one group of 32 bf16 channels per pixel.
    const __m512 bias0 = _mm512_loadu_ps(s.bias + b * 16);
    const __m512 bias1 = nt > 1 ? _mm512_loadu_ps(s.bias + (b + 1) * 16) : _mm512_setzero_ps();
    uint16_t* yg = static_cast<uint16_t*>(s.y) + (b / 2) * pixels * 32;
    for (int t = 0; t < mt; ++t) {
      const float* c0 = cbuf + t * 2 * 256;
      for (int row = 0; row < 16; ++row) {
        const int64_t p = at[t * 16 + row];
        if (p < 0) continue;
        __m512 v0 = _mm512_add_ps(_mm512_load_ps(c0 + row * 16), bias0);
        if (has_r) v0 = _mm512_add_ps(v0, residual(b, p));
        v0 = Act::apply(v0, act);
        __m512 v1 = _mm512_setzero_ps();
        if (nt > 1) {
          v1 = _mm512_add_ps(_mm512_load_ps(c0 + 256 + row * 16), bias1);
          if (has_r) v1 = _mm512_add_ps(v1, residual(b + 1, p));
          v1 = Act::apply(v1, act);
        }
        _mm512_storeu_si512(yg + p * 32, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(v1, v0)));
      }
    }
    return;
  }
  for (int n = 0; n < nt; ++n) {
    const int64_t blk = b + n;
    const __m512 bias = _mm512_loadu_ps(s.bias + blk * 16);
    float* yb = static_cast<float*>(s.y) + blk * plane;
    for (int t = 0; t < mt; ++t) {
      const float* c = cbuf + (t * 2 + n) * 256;
      for (int row = 0; row < 16; ++row) {
        const int64_t p = at[t * 16 + row];
        if (p < 0) continue;
        __m512 v = _mm512_add_ps(_mm512_load_ps(c + row * 16), bias);
        if (has_r) v = _mm512_add_ps(v, residual(blk, p));
        _mm512_storeu_ps(yb + p * 16, Act::apply(v, act));
      }
    }
  }
}

}  // namespace

void tile_conv_epilogue_avx512(const TileConvStrip& s, const float* cbuf, int64_t f, int mt, int64_t b, int nt) {
  // The common activations inline, the others through act_avx512.
  const ActKind k = s.act->kind;
  if (k == ActKind::kSilu) return epilogue<ActKindOf<ActKind::kSilu>>(s, cbuf, f, mt, b, nt);
  if (k == ActKind::kSigmoid) return epilogue<ActKindOf<ActKind::kSigmoid>>(s, cbuf, f, mt, b, nt);
  if (k == ActKind::kHardSwish) return epilogue<ActKindOf<ActKind::kHardSwish>>(s, cbuf, f, mt, b, nt);
  return epilogue<ActAny>(s, cbuf, f, mt, b, nt);
}

void bf16_conv_strip_avx512bf16(const TileConvStrip& s) {
  alignas(64) float cbuf[4 * 256];
  for (int64_t f = s.f0; f < s.f1; f += 32) {
    const int mt = s.f1 - f > 16 ? 2 : 1;
    for (int64_t b = s.b0; b < s.b1; b += 2) {
      const int nt = s.b1 - b > 1 ? 2 : 1;
      for (int t = 0; t < mt; ++t) {
        // Two halves of 8 pixels: 8 x NT accumulators stay in registers. A
        // half wholly past the strip's end (the plane's end: strips are
        // 32-pixel aligned) is not computed; its rows' results are dropped
        // by the epilogue (a 7x7 plane: 56 of 49 pixels computed, not 64).
        for (int half = 0; half < 2 && f + t * 16 + half * 8 < s.f1; ++half) {
          float* out = cbuf + t * 2 * 256 + half * 8 * 16;
          if (nt == 2)
            tile_products<2>(s, f + t * 16 + half * 8, b, out);
          else
            tile_products<1>(s, f + t * 16 + half * 8, b, out);
        }
      }
      tile_conv_epilogue_avx512(s, cbuf, f, mt, b, nt);
    }
  }
}

}  // namespace minirt::cpu
