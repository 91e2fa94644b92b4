// The depthwise convolution's AVX-512 code: along the rows of one plane
// (depthwise_plane_avx512) or channel-blocked, 16 channels per zmm
// (depthwise_block_avx512); see conv_depthwise_avx512.h. Compiled with
// -mavx512f (CMakeLists.txt); the two entry points are its only global
// symbols, the rest is in an anonymous namespace (tests/cli/isa_objects_test.sh).
#include "kernels/cpu/conv_depthwise_avx512.h"

#include <immintrin.h>

#include <cstdint>

#include "runtime/ops/activation.h"  // the Activation struct's fields (no function of it is called here)

namespace minirt::cpu {
namespace {

// std::min, std::max and std::clamp as libstdc++ 12 writes them (by const
// reference, clamp as min(max(v, lo), hi)), so that the code is what it was
// with them, without a std template (ARCHITECTURE.md, "ISA files").
inline const int64_t& min64(const int64_t& a, const int64_t& b) { return b < a ? b : a; }
inline const int64_t& max64(const int64_t& a, const int64_t& b) { return a < b ? b : a; }
inline int64_t clamp16(int64_t v) {
  const int64_t lo = 0, hi = 16;
  return min64(max64(v, lo), hi);
}

// Lanes [lo, hi) of a 16-lane mask (empty when lo >= hi).
inline __mmask16 lanes(int64_t lo, int64_t hi) {
  lo = clamp16(lo);
  hi = clamp16(hi);
  return static_cast<__mmask16>(lo < hi ? ((1u << hi) - 1) & ~((1u << lo) - 1) : 0u);
}

// One (image, channel) plane of a depthwise convolution with stride 1 or 2
// (and at most 16 taps per window row): 16 outputs of a row per zmm,
// starting from the bias, one FMA per tap; the taps' loads are masked to the
// input (zero padding), and stride 2 takes the even lanes of two loads. The
// activation is applied before the single store when it has a vector form.
// KW = 3 keeps one partial sum per tap column (three short FMA chains
// instead of one long one); KW = 0 reads the width at run time.
template <int SW, int KW>
void plane(const Geometry& q, const float* xp, const float* wc, float bias, const Activation& act, float* yp) {
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const bool relu = act.kind == ActKind::kRelu, clip = act.kind == ActKind::kClip;
  const bool scalar_act = act.kind != ActKind::kNone && !relu && !clip;
  const __m512 lo_v = _mm512_set1_ps(act.alpha), hi_v = _mm512_set1_ps(act.beta), zero = _mm512_setzero_ps();
  const int64_t kh = q.kh, kw = KW ? KW : q.kw, w = q.w, ow = q.ow;
  // Per chunk and tap column: where lane 0 reads, and which lanes exist.
  int64_t off[16];
  __mmask16 m0[16], m1[16];
  const float* rows[16];
  __m512 wv[16 * 16];
  for (int64_t oh = 0; oh < q.oh; ++oh) {
    float* yr = yp + oh * ow;
    int64_t nrows = 0;
    for (int64_t i = 0; i < kh; ++i) {
      int64_t ih = oh * q.sh - q.ph + i * q.dh;
      if (ih < 0 || ih >= q.h) continue;
      rows[nrows] = xp + ih * w;
      for (int64_t j = 0; j < kw; ++j) wv[nrows * 16 + j] = _mm512_set1_ps(wc[i * kw + j]);
      ++nrows;
    }
    for (int64_t ow0 = 0; ow0 < ow; ow0 += 16) {
      const int64_t n = min64(16, ow - ow0);
      for (int64_t j = 0; j < kw; ++j) {
        int64_t iw0 = ow0 * SW - q.pw + j * q.dw;  // input column of lane 0
        off[j] = iw0;
        if (SW == 1) {
          m0[j] = lanes(-iw0, min64(n, w - iw0));
        } else {
          // Lane t reads element 2t of the 32 from iw0: elements [-iw0, w - iw0) exist.
          int64_t ehi = min64(2 * n - 1, w - iw0);
          m0[j] = lanes(-iw0, ehi);
          m1[j] = lanes(-iw0 - 16, ehi - 16);
        }
      }
      __m512 acc[3] = {_mm512_set1_ps(bias), zero, zero};
      for (int64_t r = 0; r < nrows; ++r) {
        const float* xr = rows[r];
        const __m512* wr = wv + r * 16;
#pragma GCC unroll 3
        for (int64_t j = 0; j < kw; ++j) {
          __m512 v;
          if (SW == 1) {
            v = _mm512_maskz_loadu_ps(m0[j], xr + off[j]);
          } else {
            v = _mm512_permutex2var_ps(_mm512_maskz_loadu_ps(m0[j], xr + off[j]), even,
                                       _mm512_maskz_loadu_ps(m1[j], xr + off[j] + 16));
          }
          int a = KW == 3 ? static_cast<int>(j) : 0;
          acc[a] = _mm512_fmadd_ps(wr[j], v, acc[a]);
        }
      }
      __m512 sum = KW == 3 ? _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), acc[2]) : acc[0];
      // As Activation::apply: max(lo, x) then min(hi, .), NaN kept.
      if (relu)
        sum = _mm512_max_ps(sum, zero);
      else if (clip)
        sum = _mm512_min_ps(hi_v, _mm512_max_ps(lo_v, sum));
      _mm512_mask_storeu_ps(yr + ow0, lanes(0, n), sum);
    }
    if (scalar_act) depthwise_scalar_activation(act, yr, ow);
  }
}

// In-register transpose of 16 rows of 16 floats.
inline void transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  // u[4g + m], lane L: column 4L + m of rows 4g .. 4g + 3.
  __m512 u[16];
  for (int g = 0; g < 4; ++g) {
    __m512d a = _mm512_castps_pd(t[4 * g]), b = _mm512_castps_pd(t[4 * g + 2]);
    __m512d c = _mm512_castps_pd(t[4 * g + 1]), d = _mm512_castps_pd(t[4 * g + 3]);
    u[4 * g + 0] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
    u[4 * g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
    u[4 * g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(c, d));
    u[4 * g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(c, d));
  }
  for (int m = 0; m < 4; ++m) {
    __m512 v = _mm512_shuffle_f32x4(u[m], u[4 + m], 0x44), w = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0x44);
    __m512 v2 = _mm512_shuffle_f32x4(u[m], u[4 + m], 0xee), w2 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0xee);
    r[m] = _mm512_shuffle_f32x4(v, w, 0x88);
    r[4 + m] = _mm512_shuffle_f32x4(v, w, 0xdd);
    r[8 + m] = _mm512_shuffle_f32x4(v2, w2, 0x88);
    r[12 + m] = _mm512_shuffle_f32x4(v2, w2, 0xdd);
  }
}

// The activations the channel-blocked rows fuse (Relu, Clip, LeakyRelu),
// as Activation::apply computes them (Clip: max(lo, x) then min(hi, .)).
struct BlockEpilogue {
  explicit BlockEpilogue(const Activation& act)
      : relu(act.kind == ActKind::kRelu),
        clip(act.kind == ActKind::kClip),
        leaky(act.kind == ActKind::kLeakyRelu),
        zero(_mm512_setzero_ps()),
        lo(_mm512_set1_ps(act.alpha)),
        hi(_mm512_set1_ps(act.beta)) {}
  __m512 operator()(__m512 v) const {
    if (relu) return _mm512_max_ps(v, zero);
    if (clip) return _mm512_min_ps(hi, _mm512_max_ps(lo, v));
    if (leaky) return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, zero, _CMP_GE_OQ), _mm512_mul_ps(v, lo), v);
    return v;
  }
  bool relu, clip, leaky;
  __m512 zero, lo, hi;
};

// One output row of the channel-blocked depthwise: obuf[ow][16] from the
// window rows (nullptr: outside the input) of [padded column][16]. KW = 3 is
// a 3-wide window without dilation, unrolled; 0 reads the geometry.
template <int KW>
inline void depthwise_row(const Geometry& q, const float* const* rows, const __m512* wv, __m512 bias,
                          const Activation& act, float* obuf) {
  const BlockEpilogue epilogue(act);
  const __m512 zero = _mm512_setzero_ps();
  const int64_t kw = KW ? KW : q.kw, dw16 = (KW ? 1 : q.dw) * 16, step = q.sw * 16;
  for (int64_t ow = 0; ow < q.ow; ++ow) {
    __m512 acc[KW ? KW : 2];
    acc[0] = bias;
    for (int a = 1; a < (KW ? KW : 2); ++a) acc[a] = zero;
    for (int64_t i = 0; i < q.kh; ++i) {
      if (!rows[i]) continue;
      const float* rp = rows[i] + ow * step;
      const __m512* wr = wv + i * kw;
      if (KW) {
#pragma GCC unroll 8
        for (int j = 0; j < KW; ++j) acc[j] = _mm512_fmadd_ps(wr[j], _mm512_load_ps(rp + j * 16), acc[j]);
      } else {
        for (int64_t j = 0; j < kw; ++j) acc[j & 1] = _mm512_fmadd_ps(wr[j], _mm512_load_ps(rp + j * dw16), acc[j & 1]);
      }
    }
    __m512 v = acc[0];
    for (int a = 1; a < (KW ? KW : 2); ++a) v = _mm512_add_ps(v, acc[a]);
    v = epilogue(v);
    _mm512_store_ps(obuf + ow * 16, v);
  }
}

// The same for the common 3x3 window: the nine filters in registers, three
// short FMA chains per output.
template <int SW>
inline void depthwise_row3x3(int64_t ow, const float* const* r, const __m512* wv, __m512 bias, const Activation& act,
                             float* obuf) {
  const BlockEpilogue epilogue(act);
  const __m512 w0 = wv[0], w1 = wv[1], w2 = wv[2], w3 = wv[3], w4 = wv[4], w5 = wv[5], w6 = wv[6], w7 = wv[7],
               w8 = wv[8];
  const float *p0 = r[0], *p1 = r[1], *p2 = r[2];
  for (int64_t o = 0; o < ow; ++o, p0 += SW * 16, p1 += SW * 16, p2 += SW * 16) {
    __m512 a0 = _mm512_fmadd_ps(w0, _mm512_load_ps(p0), bias);
    __m512 a1 = _mm512_mul_ps(w1, _mm512_load_ps(p0 + 16));
    __m512 a2 = _mm512_mul_ps(w2, _mm512_load_ps(p0 + 32));
    a0 = _mm512_fmadd_ps(w3, _mm512_load_ps(p1), a0);
    a1 = _mm512_fmadd_ps(w4, _mm512_load_ps(p1 + 16), a1);
    a2 = _mm512_fmadd_ps(w5, _mm512_load_ps(p1 + 32), a2);
    a0 = _mm512_fmadd_ps(w6, _mm512_load_ps(p2), a0);
    a1 = _mm512_fmadd_ps(w7, _mm512_load_ps(p2 + 16), a1);
    a2 = _mm512_fmadd_ps(w8, _mm512_load_ps(p2 + 32), a2);
    __m512 v = _mm512_add_ps(_mm512_add_ps(a0, a1), a2);
    v = epilogue(v);
    _mm512_store_ps(obuf + o * 16, v);
  }
}

// Depthwise convolution of channels [c0, c0 + nc) (nc <= 16) of one image,
// channel-blocked: each input row the window needs is transposed once into
// a ring of `ring` rows of [padded column][16 channels] (zero where the
// window leaves the input), so a tap is one unmasked load and one FMA for 16
// channels; each output row is gathered as [column][16] and transposed back.
// `buf` holds (ring * wp + ow rounded up to 16 + wp) * 16 floats; wp = the
// padded row width the windows read.
void block(const Geometry& q, const float* x, const float* w, const float* b, const Activation& act, float* y,
           int64_t c0, int64_t nc, int64_t ring, int64_t wp, float* buf) {
  const int64_t taps = q.kh * q.kw, hw = q.h * q.w, ohw = q.oh * q.ow;
  const __mmask16 chans = static_cast<__mmask16>((1u << nc) - 1);
  // Filters and bias as [tap][16 channels].
  __m512 wv[64];
  for (int64_t t = 0; t < taps; ++t) {
    alignas(64) float lanes16[16] = {};
    for (int64_t l = 0; l < nc; ++l) lanes16[l] = w[(c0 + l) * taps + t];
    wv[t] = _mm512_load_ps(lanes16);
  }
  alignas(64) float bl[16] = {};
  for (int64_t l = 0; l < nc; ++l) bl[l] = b ? b[c0 + l] : 0.0f;
  const __m512 bias = _mm512_load_ps(bl);
  const bool scalar_act = act.kind != ActKind::kNone && act.kind != ActKind::kRelu && act.kind != ActKind::kClip &&
                          act.kind != ActKind::kLeakyRelu;
  const __m512 zero = _mm512_setzero_ps();
  float* obuf = buf + ring * wp * 16;
  float* zrow = obuf + (q.ow + 15) / 16 * 16 * 16;
  for (int64_t c = 0; c < wp; ++c) _mm512_store_ps(zrow + c * 16, zero);
  int64_t tag[64];
  for (int64_t r = 0; r < ring; ++r) tag[r] = -1;
  const float* xc = x + c0 * hw;
  for (int64_t oh = 0; oh < q.oh; ++oh) {
    // The window's rows, transposed into the ring as needed.
    const float* rows[64];
    for (int64_t i = 0; i < q.kh; ++i) {
      int64_t ih = oh * q.sh - q.ph + i * q.dh;
      if (ih < 0 || ih >= q.h) {
        rows[i] = nullptr;
        continue;
      }
      float* slot = buf + (ih % ring) * wp * 16;
      rows[i] = slot;
      if (tag[ih % ring] == ih) continue;
      tag[ih % ring] = ih;
      // Padded column c holds input column c - pw.
      for (int64_t c = 0; c < wp; c += 16) {
        int64_t iw0 = c - q.pw;
        __mmask16 m = lanes(-iw0, q.w - iw0);
        __m512 r16[16];
        for (int l = 0; l < 16; ++l) r16[l] = l < nc ? _mm512_maskz_loadu_ps(m, xc + l * hw + ih * q.w + iw0) : zero;
        transpose16(r16);
        int64_t n = min64(16, wp - c);
        for (int64_t l = 0; l < n; ++l) _mm512_store_ps(slot + (c + l) * 16, r16[l]);
      }
    }
    if (q.kh == 3 && q.kw == 3 && q.dw == 1 && (q.sw == 1 || q.sw == 2)) {
      // Rows outside the input read the zero row instead.
      const float* r3[3] = {rows[0] ? rows[0] : zrow, rows[1] ? rows[1] : zrow, rows[2] ? rows[2] : zrow};
      if (q.sw == 1)
        depthwise_row3x3<1>(q.ow, r3, wv, bias, act, obuf);
      else
        depthwise_row3x3<2>(q.ow, r3, wv, bias, act, obuf);
    } else {
      depthwise_row<0>(q, rows, wv, bias, act, obuf);
    }
    // Back to one row per channel.
    for (int64_t c = 0; c < q.ow; c += 16) {
      int64_t n = min64(16, q.ow - c);
      __m512 r16[16];
      for (int64_t l = 0; l < 16; ++l) r16[l] = l < n ? _mm512_load_ps(obuf + (c + l) * 16) : zero;
      transpose16(r16);
      for (int64_t l = 0; l < nc; ++l) {
        float* dst = y + (c0 + l) * ohw + oh * q.ow + c;
        _mm512_mask_storeu_ps(dst, lanes(0, n), r16[l]);
        if (scalar_act) depthwise_scalar_activation(act, dst, n);
      }
    }
  }
  (void)chans;
}

}  // namespace

void depthwise_plane_avx512(const Geometry& q, const float* xp, const float* wc, float bias, const Activation& act,
                            float* yp) {
  const bool k3 = q.kw == 3;
  if (q.sw == 1)
    (k3 ? plane<1, 3> : plane<1, 0>)(q, xp, wc, bias, act, yp);
  else
    (k3 ? plane<2, 3> : plane<2, 0>)(q, xp, wc, bias, act, yp);
}

void depthwise_block_avx512(const Geometry& q, const float* x, const float* w, const float* b, const Activation& act,
                            float* y, int64_t c0, int64_t nc, int64_t ring, int64_t wp, float* buf) {
  block(q, x, w, b, act, y, c0, nc, ring, wp, buf);
}

}  // namespace minirt::cpu
