// Conv and ConvTranspose on the CPU.
//
// Conv picks one of five algorithms from the shape (and says which in
// describe()):
//   - depthwise:     one filter per channel (group == C == M), direct loops:
//                    on AVX-512 CPUs channel-blocked (rows of 16 channels
//                    transposed into [column][channel] on the fly, one FMA
//                    per tap for 16 channels), else along the rows;
//   - gemm_1x1:      1x1, stride 1, no padding: the input already is the GEMM
//                    operand, packed straight into B panels block by block;
//   - implicit_gemm: the input copied once per run with its zero padding, and
//                    split into stride phases, so that every (channel, ky, kx)
//                    row of the unrolled matrix is a plain offset into the
//                    copy: the microkernel reads it in place, no im2col;
//   - im2col_gemm:   the patches unrolled straight into the GEMM's packed B
//                    panels, block by block (narrow outputs, where a row of
//                    output is too short for the in-place tiles);
//   - winograd:      3x3, stride 1 (AVX-512 CPUs): Winograd F(2x2, 3x3), 16
//                    GEMMs over 2x2 output tiles with 2.25x fewer
//                    multiplications than the direct sum (weights transformed
//                    once, input transformed straight into B panels, bias
//                    and activation in the output transform).
// All of them multiply with the SGEMM engine of sgemm.h: the weights are
// packed into its A panels once, when the kernel is made; bias and the fused
// activation are applied to each tile while it is in registers.
#include "kernels/cpu/eigen_util.h"
#include "kernels/cpu/registry.h"
#include "kernels/cpu/sgemm.h"
#include "runtime/ops/conv.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MINIRT_CONV_AVX512 1
#else
#define MINIRT_CONV_AVX512 0
#endif

namespace minirt::cpu {

namespace {

// Geometry of a (1-D or) 2-D convolution; 1-D is 2-D with height 1.
struct Geometry {
  int64_t n, c, h, w;      // input
  int64_t m, oh, ow;       // output
  int64_t kh, kw, sh, sw, dh, dw, ph, pw;
  int64_t groups;
};

Geometry geometry(const Shape& x, const Shape& y, const WindowAttrs& a, int64_t groups) {
  Geometry q{};
  bool one_d = x.size() == 3;
  q.n = x[0];
  q.c = x[1];
  q.h = one_d ? 1 : x[2];
  q.w = one_d ? x[2] : x[3];
  q.m = y[1];
  q.oh = one_d ? 1 : y[2];
  q.ow = one_d ? y[2] : y[3];
  q.kh = one_d ? 1 : a.kernel_shape[0];
  q.kw = a.kernel_shape[one_d ? 0 : 1];
  q.sh = one_d ? 1 : a.strides[0];
  q.sw = a.strides[one_d ? 0 : 1];
  q.dh = one_d ? 1 : a.dilations[0];
  q.dw = a.dilations[one_d ? 0 : 1];
  q.ph = one_d ? 0 : a.pads[0];
  q.pw = one_d ? a.pads[0] : a.pads[1];
  q.groups = groups;
  return q;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

#if MINIRT_CONV_AVX512
// Lanes [lo, hi) of a 16-lane mask (empty when lo >= hi).
inline __mmask16 lanes(int64_t lo, int64_t hi) {
  lo = std::clamp<int64_t>(lo, 0, 16);
  hi = std::clamp<int64_t>(hi, 0, 16);
  return static_cast<__mmask16>(lo < hi ? ((1u << hi) - 1) & ~((1u << lo) - 1) : 0u);
}

// One (image, channel) plane of a depthwise convolution with stride 1 or 2
// (and at most 16 taps per window row): 16 outputs of a row per zmm,
// starting from the bias, one FMA per tap; the taps' loads are masked to the
// input (zero padding), and stride 2 takes the even lanes of two loads. The
// activation is applied before the single store when it has a vector form.
// Only called when the CPU has AVX-512.
// KW = 3 keeps one partial sum per tap column (three short FMA chains
// instead of one long one); KW = 0 reads the width at run time.
template <int SW, int KW>
__attribute__((target("avx512f"))) void depthwise_plane_avx512(const Geometry& q, const float* xp, const float* wc,
                                                               float bias, const Activation& act, float* yp) {
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const bool relu = act.kind == ActKind::kRelu, clip = act.kind == ActKind::kClip;
  const bool scalar_act = !act.none() && !relu && !clip;
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
      const int64_t n = std::min<int64_t>(16, ow - ow0);
      for (int64_t j = 0; j < kw; ++j) {
        int64_t iw0 = ow0 * SW - q.pw + j * q.dw;  // input column of lane 0
        off[j] = iw0;
        if (SW == 1) {
          m0[j] = lanes(-iw0, std::min(n, w - iw0));
        } else {
          // Lane t reads element 2t of the 32 from iw0: elements [-iw0, w - iw0) exist.
          int64_t ehi = std::min(2 * n - 1, w - iw0);
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
      if (relu) sum = _mm512_max_ps(sum, zero);
      else if (clip) sum = _mm512_min_ps(hi_v, _mm512_max_ps(lo_v, sum));
      _mm512_mask_storeu_ps(yr + ow0, lanes(0, n), sum);
    }
    if (scalar_act) act.apply(yr, ow);
  }
}


// In-register transpose of 16 rows of 16 floats.
__attribute__((target("avx512f"))) inline void transpose16(__m512 r[16]) {
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

// One output row of the channel-blocked depthwise: obuf[ow][16] from the
// window rows (nullptr: outside the input) of [padded column][16]. KW = 3 is
// a 3-wide window without dilation, unrolled; 0 reads the geometry.
template <int KW>
__attribute__((target("avx512f"))) inline void depthwise_row(const Geometry& q, const float* const* rows,
                                                             const __m512* wv, __m512 bias, const Activation& act,
                                                             float* obuf) {
  const bool relu = act.kind == ActKind::kRelu, clip = act.kind == ActKind::kClip;
  const bool leaky = act.kind == ActKind::kLeakyRelu;
  const __m512 zero = _mm512_setzero_ps(), lo_v = _mm512_set1_ps(act.alpha), hi_v = _mm512_set1_ps(act.beta);
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
    if (relu) v = _mm512_max_ps(v, zero);
    else if (clip) v = _mm512_min_ps(hi_v, _mm512_max_ps(lo_v, v));
    else if (leaky) v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, zero, _CMP_GE_OQ), _mm512_mul_ps(v, lo_v), v);
    _mm512_store_ps(obuf + ow * 16, v);
  }
}

// The same for the common 3x3 window: the nine filters in registers, three
// short FMA chains per output.
template <int SW>
__attribute__((target("avx512f"))) inline void depthwise_row3x3(int64_t ow, const float* const* r,
                                                                const __m512* wv, __m512 bias, const Activation& act,
                                                                float* obuf) {
  const bool relu = act.kind == ActKind::kRelu, clip = act.kind == ActKind::kClip;
  const bool leaky = act.kind == ActKind::kLeakyRelu;
  const __m512 zero = _mm512_setzero_ps(), lo_v = _mm512_set1_ps(act.alpha), hi_v = _mm512_set1_ps(act.beta);
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
    if (relu) v = _mm512_max_ps(v, zero);
    else if (clip) v = _mm512_min_ps(hi_v, _mm512_max_ps(lo_v, v));
    else if (leaky) v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, zero, _CMP_GE_OQ), _mm512_mul_ps(v, lo_v), v);
    _mm512_store_ps(obuf + o * 16, v);
  }
}

// Depthwise convolution of channels [c0, c0 + nc) (nc <= 16) of one image,
// channel-blocked: each input row the window needs is transposed once into
// a ring of `ring` rows of [padded column][16 channels] (zero where the
// window leaves the input), so a tap is one unmasked load and one FMA for 16
// channels; each output row is gathered as [column][16] and transposed back.
// `buf` holds (ring * wp + ow rounded up to 16 + wp) * 16 floats; wp = the
// padded row width the windows read. Only called when the CPU has AVX-512.
__attribute__((target("avx512f"))) void depthwise_block_avx512(const Geometry& q, const float* x, const float* w,
                                                               const float* b, const Activation& act, float* y,
                                                               int64_t c0, int64_t nc, int64_t ring, int64_t wp,
                                                               float* buf) {
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
  const bool scalar_act = !act.none() && act.kind != ActKind::kRelu && act.kind != ActKind::kClip &&
                          act.kind != ActKind::kLeakyRelu;
  const __m512 zero = _mm512_setzero_ps();
  float* obuf = buf + ring * wp * 16;
  float* zrow = obuf + ceil_div(q.ow, 16) * 16 * 16;
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
        for (int l = 0; l < 16; ++l)
          r16[l] = l < nc ? _mm512_maskz_loadu_ps(m, xc + l * hw + ih * q.w + iw0) : zero;
        transpose16(r16);
        int64_t n = std::min<int64_t>(16, wp - c);
        for (int64_t l = 0; l < n; ++l) _mm512_store_ps(slot + (c + l) * 16, r16[l]);
      }
    }
    if (q.kh == 3 && q.kw == 3 && q.dw == 1 && (q.sw == 1 || q.sw == 2)) {
      // Rows outside the input read the zero row instead.
      const float* r3[3] = {rows[0] ? rows[0] : zrow, rows[1] ? rows[1] : zrow, rows[2] ? rows[2] : zrow};
      if (q.sw == 1) depthwise_row3x3<1>(q.ow, r3, wv, bias, act, obuf);
      else depthwise_row3x3<2>(q.ow, r3, wv, bias, act, obuf);
    } else {
      depthwise_row<0>(q, rows, wv, bias, act, obuf);
    }
    // Back to one row per channel.
    for (int64_t c = 0; c < q.ow; c += 16) {
      int64_t n = std::min<int64_t>(16, q.ow - c);
      __m512 r16[16];
      for (int64_t l = 0; l < 16; ++l) r16[l] = l < n ? _mm512_load_ps(obuf + (c + l) * 16) : zero;
      transpose16(r16);
      for (int64_t l = 0; l < nc; ++l) {
        float* dst = y + (c0 + l) * ohw + oh * q.ow + c;
        _mm512_mask_storeu_ps(dst, lanes(0, n), r16[l]);
        if (scalar_act) act.apply(dst, n);
      }
    }
  }
  (void)chans;
}

#endif

// Winograd F(2x2, 3x3): Y = A^T [(G g G^T) . (B^T d B)] A for each 2x2 output
// tile, d its 4x4 input patch, g a 3x3 filter. The input is copied into four
// phase planes of the padded input (even/odd rows x even/odd columns), each
// tw + 1 wide: tile t = ty * (tw + 1) + tx then reads patch element (r, s) at
// plane (r % 2, s % 2), offset t + (r / 2) * (tw + 1) + s / 2, contiguous in
// t. The last tile of each row (tx = tw) is junk: computed, never stored.
struct WinogradGeom {
  int64_t c = 0, m = 0;    // input, output channels
  int64_t th = 0, tw = 0;  // tile rows and columns: ceil(oh / 2), ceil(ow / 2)
  int64_t wq = 0, hq = 0;  // phase plane width (tw + 1) and rows (th + 2)
  int64_t tiles = 0;       // th * wq: the GEMMs' N
  int64_t tb = 0;          // tiles per block (a multiple of 32, the B panel width)
  int64_t plane() const { return hq * wq; }
};

// U[xi][m][c] = (G g G^T)[xi] of each filter, in double.
std::vector<float> winograd_weights(const float* w, int64_t m, int64_t c) {
  std::vector<float> u(static_cast<size_t>(16 * m * c));
  for (int64_t o = 0; o < m; ++o)
    for (int64_t i = 0; i < c; ++i) {
      const float* g = w + (o * c + i) * 9;
      double t[4][3], v[4][4];
      for (int j = 0; j < 3; ++j) {
        double g0 = g[j], g1 = g[3 + j], g2 = g[6 + j];
        t[0][j] = g0;
        t[1][j] = 0.5 * (g0 + g1 + g2);
        t[2][j] = 0.5 * (g0 - g1 + g2);
        t[3][j] = g2;
      }
      for (int r = 0; r < 4; ++r) {
        v[r][0] = t[r][0];
        v[r][1] = 0.5 * (t[r][0] + t[r][1] + t[r][2]);
        v[r][2] = 0.5 * (t[r][0] - t[r][1] + t[r][2]);
        v[r][3] = t[r][2];
      }
      for (int xi = 0; xi < 16; ++xi) u[static_cast<size_t>((xi * m + o) * c + i)] = static_cast<float>(v[xi / 4][xi % 4]);
    }
  return u;
}

#if MINIRT_CONV_AVX512
// B^T d B of 16 tiles [t, t + 16) of every channel, into the B panels of the
// 16 GEMMs: V[xi] is c rows x tb columns in panels of 32 (column tl = t - t0).
__attribute__((target("avx512f"))) void winograd_input(const WinogradGeom& g, const float* planes, int64_t t0,
                                                       int64_t n, float* v) {
  const int64_t wq = g.wq, pl = g.plane(), vstride = g.c * g.tb;
  for (int64_t ci = 0; ci < g.c; ++ci) {
    const float* p0 = planes + ci * 4 * pl;
    for (int64_t tl = 0; tl < n; tl += 16) {
      const float* at = p0 + t0 + tl;
      __m512 d[4][4];
      for (int r = 0; r < 4; ++r)
        for (int s2 = 0; s2 < 4; ++s2) d[r][s2] = _mm512_loadu_ps(at + ((r % 2) * 2 + s2 % 2) * pl + (r / 2) * wq + s2 / 2);
      // B^T d: rows.
      __m512 b[4][4];
      for (int s2 = 0; s2 < 4; ++s2) {
        b[0][s2] = _mm512_sub_ps(d[0][s2], d[2][s2]);
        b[1][s2] = _mm512_add_ps(d[1][s2], d[2][s2]);
        b[2][s2] = _mm512_sub_ps(d[2][s2], d[1][s2]);
        b[3][s2] = _mm512_sub_ps(d[1][s2], d[3][s2]);
      }
      // (B^T d) B: columns, stored per xi = 4 r + s.
      float* out = v + (tl / 32) * g.c * 32 + ci * 32 + tl % 32;
      for (int r = 0; r < 4; ++r) {
        _mm512_storeu_ps(out + (4 * r + 0) * vstride, _mm512_sub_ps(b[r][0], b[r][2]));
        _mm512_storeu_ps(out + (4 * r + 1) * vstride, _mm512_add_ps(b[r][1], b[r][2]));
        _mm512_storeu_ps(out + (4 * r + 2) * vstride, _mm512_sub_ps(b[r][2], b[r][1]));
        _mm512_storeu_ps(out + (4 * r + 3) * vstride, _mm512_sub_ps(b[r][1], b[r][3]));
      }
    }
  }
}

// A^T M A of tiles [t0, t0 + n) for output channels [m0, m0 + mr) (M[xi] is
// mr x tb at mo + xi * mr * tb), plus bias, through the activation, into the
// 2x2 output tiles of y (one image, oh x ow planes); junk tiles and outputs
// past the edge are not stored.
__attribute__((target("avx512f"))) void winograd_output(const WinogradGeom& g, const float* mo, int64_t m0, int64_t mr,
                                                        int64_t t0, int64_t n, const float* bias, const Activation& act,
                                                        int64_t oh, int64_t ow, float* y) {
  const __m512i il_lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  const __m512i il_hi = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
  const bool relu = act.kind == ActKind::kRelu, clip = act.kind == ActKind::kClip;
  const bool leaky = act.kind == ActKind::kLeakyRelu;
  const bool scalar_act = !act.none() && !relu && !clip && !leaky;
  const __m512 zero = _mm512_setzero_ps(), lo_v = _mm512_set1_ps(act.alpha), hi_v = _mm512_set1_ps(act.beta);
  const int64_t ms = mr * g.tb;
  for (int64_t mi = 0; mi < mr; ++mi) {
    const __m512 bv = _mm512_set1_ps(bias ? bias[m0 + mi] : 0.0f);
    float* yp = y + (m0 + mi) * oh * ow;
    for (int64_t tl = 0; tl < n; tl += 16) {
      const float* at = mo + mi * g.tb + tl;
      __m512 u0[4], u1[4];
      for (int s2 = 0; s2 < 4; ++s2) {
        __m512 a0 = _mm512_loadu_ps(at + (0 + s2) * ms), a1 = _mm512_loadu_ps(at + (4 + s2) * ms);
        __m512 a2 = _mm512_loadu_ps(at + (8 + s2) * ms), a3 = _mm512_loadu_ps(at + (12 + s2) * ms);
        u0[s2] = _mm512_add_ps(_mm512_add_ps(a0, a1), a2);
        u1[s2] = _mm512_sub_ps(_mm512_sub_ps(a1, a2), a3);
      }
      __m512 out[2][2] = {
          {_mm512_add_ps(_mm512_add_ps(u0[0], u0[1]), u0[2]), _mm512_sub_ps(_mm512_sub_ps(u0[1], u0[2]), u0[3])},
          {_mm512_add_ps(_mm512_add_ps(u1[0], u1[1]), u1[2]), _mm512_sub_ps(_mm512_sub_ps(u1[1], u1[2]), u1[3])}};
      __m512 rows[2][2];  // [dy][half]: row dy of 16 tiles, interleaved columns
      for (int dy = 0; dy < 2; ++dy) {
        for (int dx = 0; dx < 2; ++dx) {
          __m512 x = _mm512_add_ps(out[dy][dx], bv);
          if (relu) x = _mm512_max_ps(x, zero);
          else if (clip) x = _mm512_min_ps(hi_v, _mm512_max_ps(lo_v, x));
          else if (leaky)
            x = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, zero, _CMP_GE_OQ), _mm512_mul_ps(x, lo_v), x);
          out[dy][dx] = x;
        }
        rows[dy][0] = _mm512_permutex2var_ps(out[dy][0], il_lo, out[dy][1]);
        rows[dy][1] = _mm512_permutex2var_ps(out[dy][0], il_hi, out[dy][1]);
      }
      // Runs of tiles in one tile row, without the junk tile.
      const int64_t cnt = std::min<int64_t>(16, n - tl);
      for (int64_t j = 0; j < cnt;) {
        const int64_t t = t0 + tl + j, ty = t / g.wq, tx = t % g.wq;
        if (tx >= g.tw) {
          ++j;
          continue;
        }
        const int64_t len = std::min(cnt - j, g.tw - tx);
        // Floats [2j, fe) of the 32 go to columns 2tx, 2tx + 1, ...
        const int64_t fe = std::min(2 * (j + len), 2 * j + (ow - 2 * tx));
        for (int dy = 0; dy < 2; ++dy) {
          int64_t row = 2 * ty + dy;
          if (row >= oh) continue;
          float* dst = yp + row * ow + 2 * tx - 2 * j;
          _mm512_mask_storeu_ps(dst, lanes(2 * j, fe), rows[dy][0]);
          _mm512_mask_storeu_ps(dst + 16, lanes(2 * j - 16, fe - 16), rows[dy][1]);
          if (scalar_act) act.apply(dst + 2 * j, fe - 2 * j);
        }
        j += len;
      }
    }
  }
}
#endif

// The input as implicit_gemm reads it: per channel, one plane per stride
// phase (ry, rx) the kernel taps use, holding padded rows ry, ry + sh, ... and
// columns rx, rx + sw, ... Tap (i, j) of output (oy, ox) is then element
// (oy + i*dh/sh, ox + j*dw/sw) of phase ((i*dh) % sh, (j*dw) % sw): for a
// fixed tap, consecutive outputs of a row are consecutive floats.
struct PhasePlanes {
  int64_t hq = 0, wq = 0;                  // plane height, width
  std::vector<int64_t> ry, rx;             // each plane's phase
  int64_t planes() const { return static_cast<int64_t>(ry.size()); }
  int64_t channel_stride() const { return planes() * hq * wq; }
};

PhasePlanes phase_planes(const Geometry& q, std::vector<int64_t>* koff) {
  PhasePlanes pp;
  int64_t hp = (q.oh - 1) * q.sh + (q.kh - 1) * q.dh + 1;  // padded extent the output reads
  int64_t wp = (q.ow - 1) * q.sw + (q.kw - 1) * q.dw + 1;
  pp.hq = ceil_div(hp, q.sh);
  pp.wq = ceil_div(wp, q.sw);
  // The phases in use, and each tap's plane.
  std::vector<int64_t> plane_of(static_cast<size_t>(q.kh * q.kw));
  for (int64_t i = 0; i < q.kh; ++i)
    for (int64_t j = 0; j < q.kw; ++j) {
      int64_t ry = (i * q.dh) % q.sh, rx = (j * q.dw) % q.sw, p = 0;
      while (p < pp.planes() && !(pp.ry[p] == ry && pp.rx[p] == rx)) ++p;
      if (p == pp.planes()) {
        pp.ry.push_back(ry);
        pp.rx.push_back(rx);
      }
      plane_of[i * q.kw + j] = p;
    }
  int64_t cg = q.c / q.groups;
  koff->resize(static_cast<size_t>(cg * q.kh * q.kw));
  for (int64_t ci = 0, k = 0; ci < cg; ++ci)
    for (int64_t i = 0; i < q.kh; ++i)
      for (int64_t j = 0; j < q.kw; ++j, ++k)
        (*koff)[k] = ci * pp.channel_stride() + plane_of[i * q.kw + j] * pp.hq * pp.wq +
                     (i * q.dh) / q.sh * pp.wq + (j * q.dw) / q.sw;
  return pp;
}

// Fills the phase planes of channels [p0, p1) (over all images) from x.
void fill_planes(const Geometry& q, const PhasePlanes& pp, const float* x, float* out, int64_t p0, int64_t p1) {
  for (int64_t p = p0; p < p1; ++p) {
    const float* xc = x + p * q.h * q.w;
    float* dst = out + p * pp.channel_stride();
    for (int64_t ph = 0; ph < pp.planes(); ++ph) {
      for (int64_t r = 0; r < pp.hq; ++r, dst += pp.wq) {
        int64_t ih = pp.ry[ph] + r * q.sh - q.ph;
        if (ih < 0 || ih >= q.h) {
          std::fill(dst, dst + pp.wq, 0.0f);
          continue;
        }
        const float* xr = xc + ih * q.w;
        // Columns s with 0 <= rx + s*sw - pw < w.
        int64_t first = pp.rx[ph] - q.pw;  // input column of s = 0
        int64_t lo = first >= 0 ? 0 : std::min(pp.wq, ceil_div(-first, q.sw));
        int64_t hi = q.w - first <= 0 ? lo : std::clamp(ceil_div(q.w - first, q.sw), lo, pp.wq);
        std::fill(dst, dst + lo, 0.0f);
        if (q.sw == 1) {
          std::memcpy(dst + lo, xr + first + lo, static_cast<size_t>(hi - lo) * sizeof(float));
        } else {
          for (int64_t s = lo; s < hi; ++s) dst[s] = xr[first + s * q.sw];
        }
        std::fill(dst + hi, dst + pp.wq, 0.0f);
      }
    }
  }
}

class ConvKernel final : public Kernel {
 public:
  ConvKernel(const Graph& g, const Node& n, int threads) : isa_(sgemm_default_isa()) {
    const auto& a = n.attrs_as<ConvAttrs>();
    q_ = geometry(in_shape(g, n, 0), out_shape(g, n, 0), a, a.group);
    act_ = a.act;
    has_bias_ = n.input(2) >= 0;
    cg_ = q_.c / q_.groups;
    mg_ = q_.m / q_.groups;
    k_ = cg_ * q_.kh * q_.kw;
    cols_ = q_.oh * q_.ow;
    // An empty batch (N = 0) has nothing to compute.
    empty_ = q_.n == 0 || q_.m == 0 || cols_ == 0;
    if (q_.groups == q_.c && q_.m == q_.c) {
      algo_ = Algo::kDepthwise;
      plan_depthwise(threads);
      return;
    }
    bool pointwise = q_.kh == 1 && q_.kw == 1 && q_.sh == 1 && q_.sw == 1 && q_.ph == 0 && q_.pw == 0 &&
                     q_.oh == q_.h && q_.ow == q_.w;
    // Winograd needs the AVX-512 transforms and its B panels, a 3x3 window at
    // stride 1, one group, and weights known now (they are transformed once).
    bool winograd = MINIRT_CONV_AVX512 && isa_ == SgemmIsa::kAvx512 && q_.kh == 3 && q_.kw == 3 && q_.sh == 1 &&
                    q_.sw == 1 && q_.dh == 1 && q_.dw == 1 && q_.groups == 1 && in_const(g, n, 1) != nullptr;
    if (pointwise) algo_ = Algo::kGemm1x1;
    else if (winograd && cg_ >= kMinWinogradChannels && mg_ >= kMinWinogradChannels && cols_ >= kMinWinogradOutputs)
      algo_ = Algo::kWinograd;
    else if (q_.ow >= (q_.sw == 1 ? kMinImplicitRow : kMinImplicitRowStrided) && q_.kh * q_.kw > 1)
      algo_ = Algo::kImplicit;
    else algo_ = Algo::kIm2col;
    // Tests and benchmarks may force a lowering (MINIRT_CONV_ALGO=implicit_gemm,
    // im2col_gemm, or gemm_1x1 and winograd where they apply).
    if (const char* f = std::getenv("MINIRT_CONV_ALGO")) {
      if (std::strcmp(f, "implicit_gemm") == 0) algo_ = Algo::kImplicit;
      else if (std::strcmp(f, "im2col_gemm") == 0) algo_ = Algo::kIm2col;
      else if (std::strcmp(f, "gemm_1x1") == 0 && pointwise) algo_ = Algo::kGemm1x1;
      else if (std::strcmp(f, "winograd") == 0 && winograd) algo_ = Algo::kWinograd;
    }
    if (empty_) return;
    if (algo_ == Algo::kWinograd) {
      plan_winograd(in_const(g, n, 1)->data<float>(), threads);
      return;
    }

    if (const Tensor* w = in_const(g, n, 1)) {
      const float* wp = w->data<float>();
      a_group_ = static_cast<int64_t>(sgemm_packed_a_floats(isa_, mg_, k_));
      packed_w_ = AlignedFloats(static_cast<size_t>(a_group_ * q_.groups));
      for (int64_t gi = 0; gi < q_.groups; ++gi)
        sgemm_pack_a(isa_, wp + gi * mg_ * k_, k_, 1, mg_, k_, packed_w_.data() + gi * a_group_);
    } else {
      a_group_ = static_cast<int64_t>((sgemm_packed_a_floats(isa_, mg_, k_) + 15) / 16 * 16);
    }

    int64_t row_w = 0;
    bool packs_b = false;
    if (algo_ == Algo::kGemm1x1) {
      packs_b = true;
    } else if (algo_ == Algo::kImplicit) {
      pp_ = phase_planes(q_, &koff_);
      row_w = q_.ow;
    } else {
      im2col_ = Im2colGeom{cg_, q_.h, q_.w, q_.oh, q_.ow, q_.kh, q_.kw, q_.sh, q_.sw, q_.dh, q_.dw, q_.ph, q_.pw};
      packs_b = true;
    }
    split_ = sgemm_split(isa_, q_.n * q_.groups, mg_, cols_, k_, threads, row_w, packs_b);
    // Workspace: [packed weights when they are not constant][phase planes][per-task B blocks].
    size_t off = packed_w_.empty() ? static_cast<size_t>(a_group_ * q_.groups) : 0;
    planes_at_ = off;
    if (algo_ == Algo::kImplicit) off += static_cast<size_t>((q_.n * q_.c * pp_.channel_stride() + 15) / 16 * 16);
    scratch_at_ = off;
    off += sgemm_workspace_bytes(split_, isa_, k_, cols_, packs_b) / sizeof(float);
    ws_floats_ = off;
  }

  size_t workspace_bytes() const override {
    if (empty_ || (algo_ == Algo::kDepthwise && !dw_blocked_)) return 0;
    return ws_floats_ * sizeof(float);
  }

  std::string describe() const override {
    std::string isa = std::string(" isa=") + sgemm_isa_name(isa_);
    switch (algo_) {
      case Algo::kDepthwise:
        return dw_blocked_ ? "algo=depthwise isa=avx512 channel-blocked"
                           : depthwise_avx512() ? "algo=depthwise isa=avx512" : "algo=depthwise";
      case Algo::kGemm1x1: return "algo=gemm_1x1" + isa;
      case Algo::kImplicit: return "algo=implicit_gemm" + isa;
      case Algo::kIm2col: return "algo=im2col_gemm" + isa;
      case Algo::kWinograd: return "algo=winograd" + isa;
    }
    return {};
  }

  void run(const KernelArgs& args) override {
    const float* x = static_cast<const float*>(args.inputs[0]);
    const float* w = static_cast<const float*>(args.inputs[1]);
    const float* b = has_bias_ ? static_cast<const float*>(args.inputs[2]) : nullptr;
    float* y = static_cast<float*>(args.outputs[0]);
    if (empty_) return;
    if (algo_ == Algo::kDepthwise) {
#if MINIRT_CONV_AVX512
      if (dw_blocked_) {
        float* ws = static_cast<float*>(args.workspace);
        const int64_t per_img = ceil_div(q_.c, 16);
        auto body = [&](int64_t t0, int64_t t1) {
          for (int64_t t = t0; t < t1; ++t) {
            float* buf = ws + static_cast<size_t>(t) * dw_task_floats_;
            for (int64_t u = dw_blocks_ * t / dw_tasks_; u < dw_blocks_ * (t + 1) / dw_tasks_; ++u) {
              int64_t img = u / per_img, c0 = (u % per_img) * 16;
              depthwise_block_avx512(q_, x + img * q_.c * q_.h * q_.w, w, b, act_, y + img * q_.c * q_.oh * q_.ow,
                                     c0, std::min<int64_t>(16, q_.c - c0), dw_ring_, dw_wp_, buf);
            }
          }
        };
        args.pool->parallel_for(dw_tasks_, body);
        return;
      }
#endif
      return depthwise(x, w, b, y, *args.pool);
    }
    if (algo_ == Algo::kWinograd) return run_winograd(x, b, y, static_cast<float*>(args.workspace), *args.pool);
    float* ws = static_cast<float*>(args.workspace);
    ThreadPool& pool = *args.pool;
    const float* a = packed_w_.data();
    if (!a) {
      for (int64_t gi = 0; gi < q_.groups; ++gi)
        sgemm_pack_a_parallel(pool, isa_, w + gi * mg_ * k_, k_, 1, mg_, k_, ws + gi * a_group_);
      a = ws;
    }
    const float* planes = nullptr;
    if (algo_ == Algo::kImplicit) {
      float* pl = ws + planes_at_;
      auto fill = [&](int64_t p0, int64_t p1) { fill_planes(q_, pp_, x, pl, p0, p1); };
      pool.parallel_for(q_.n * q_.c, fill, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, pp_.channel_stride())));
      planes = pl;
    }
    float* scratch = ws + scratch_at_;
    auto make = [&](int64_t batch, SgemmArgs& gm) {
      int64_t gi = batch % q_.groups, img = batch / q_.groups;
      int64_t ch = img * q_.c + gi * cg_;  // first input channel of this image and group
      gm.isa = isa_;
      gm.m = mg_;
      gm.n = cols_;
      gm.k = k_;
      gm.a = a + gi * a_group_;
      switch (algo_) {
        case Algo::kGemm1x1: gm.b = SgemmB::matrix(x + ch * cols_, cols_, 1); break;
        case Algo::kImplicit:
          gm.b = SgemmB::indirect(planes + ch * pp_.channel_stride(), koff_.data(), q_.ow, pp_.wq);
          break;
        default: gm.b = SgemmB::im2col(x + ch * q_.h * q_.w, &im2col_); break;
      }
      gm.c = y + (img * q_.m + gi * mg_) * cols_;
      gm.ldc = cols_;
      gm.ep.row_bias = b ? b + gi * mg_ : nullptr;
      gm.ep.act = act_;
    };
    sgemm_run_batch(pool, split_, isa_, mg_, cols_, k_, scratch, make);
  }

 private:
  enum class Algo { kDepthwise, kGemm1x1, kImplicit, kIm2col, kWinograd };
  // Fewer channels than this leave too little GEMM to pay for the transforms;
  // on smaller outputs, the transformed weights (16/9 of the originals) cost
  // more to stream than the multiplications saved.
  static constexpr int64_t kMinWinogradChannels = 16;
  static constexpr int64_t kMinWinogradOutputs = 100;
  // Output rows shorter than this unroll into packed panels instead: tiles of
  // a few columns would waste most of each vector.
  // Strided, a packed panel's contiguous reads win for longer.
  static constexpr int64_t kMinImplicitRow = 12, kMinImplicitRowStrided = 32;

  // Winograd: tiles, blocks and the work split; the transformed weights
  // packed into A panels, one GEMM per xi.
  void plan_winograd(const float* w, int threads) {
    WinogradGeom& wg = wg_;
    wg.c = q_.c;
    wg.m = q_.m;
    wg.th = ceil_div(q_.oh, 2);
    wg.tw = ceil_div(q_.ow, 2);
    wg.wq = wg.tw + 1;
    wg.hq = wg.th + 2;
    wg.tiles = wg.th * wg.wq;
    const int64_t mr = sgemm_tile(isa_).mr;
    // Blocks of tiles: one per image at least; the output channels split
    // when there are fewer blocks than threads.
    int64_t tb = std::clamp<int64_t>(8192 / (wg.c + wg.m) / 32 * 32, 32, 512);
    tb = std::min(tb, ceil_div(wg.tiles, 32) * 32);
    int64_t blocks = ceil_div(wg.tiles, tb);
    if (q_.n * blocks >= threads && q_.n < threads) blocks = ceil_div(blocks, threads) * threads;  // even per thread
    tb = ceil_div(ceil_div(wg.tiles, blocks), 32) * 32;                                             // even blocks
    wg.tb = tb;
    wblocks_ = ceil_div(wg.tiles, tb);
    int64_t base = q_.n * wblocks_;
    wmparts_ = base >= threads ? 1 : std::min(ceil_div(threads, base), ceil_div(wg.m, mr));
    wmpart_ = ceil_div(ceil_div(wg.m, wmparts_), mr) * mr;
    wmparts_ = ceil_div(wg.m, wmpart_);
    wunits_ = base * wmparts_;
    wtasks_ = std::max<int64_t>(1, std::min<int64_t>(threads, wunits_));
    // Packed per xi and per part of the output channels.
    std::vector<float> u = winograd_weights(w, wg.m, wg.c);
    a_group_ = static_cast<int64_t>((sgemm_packed_a_floats(isa_, wmpart_, wg.c) + 15) / 16 * 16);
    packed_w_ = AlignedFloats(static_cast<size_t>(16 * wmparts_ * a_group_));
    for (int64_t xi = 0; xi < 16; ++xi)
      for (int64_t part = 0; part < wmparts_; ++part) {
        int64_t m0 = part * wmpart_, mr = std::min(wmpart_, wg.m - m0);
        sgemm_pack_a(isa_, u.data() + (xi * wg.m + m0) * wg.c, wg.c, 1, mr, wg.c,
                     packed_w_.data() + (xi * wmparts_ + part) * a_group_);
      }
    // Workspace: [phase planes of every image, and slack for the last tiles'
    // reads][per task: V (16 x c x tb), M (16 x mpart x tb)].
    planes_at_ = 0;
    scratch_at_ = static_cast<size_t>((q_.n * wg.c * 4 * wg.plane() + 64 + 15) / 16 * 16);
    wtask_floats_ = static_cast<size_t>(16 * tb * (wg.c + wmpart_));
    ws_floats_ = scratch_at_ + wtask_floats_ * static_cast<size_t>(wtasks_);
  }

  void run_winograd(const float* x, const float* b, float* y, float* ws, ThreadPool& pool) const {
#if MINIRT_CONV_AVX512
    const WinogradGeom& wg = wg_;
    // The phase planes: a stride-2 phase split of the padded input.
    Geometry q2 = q_;
    q2.sh = q2.sw = 2;
    PhasePlanes pp;
    pp.hq = wg.hq;
    pp.wq = wg.wq;
    pp.ry = {0, 0, 1, 1};
    pp.rx = {0, 1, 0, 1};
    float* planes = ws + planes_at_;
    auto fill = [&](int64_t p0, int64_t p1) { fill_planes(q2, pp, x, planes, p0, p1); };
    pool.parallel_for(q_.n * wg.c, fill, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, 4 * wg.plane())));
    std::fill(planes + q_.n * wg.c * 4 * wg.plane(), planes + q_.n * wg.c * 4 * wg.plane() + 64, 0.0f);
    const int64_t plane_floats = wg.c * 4 * wg.plane();
    auto body = [&](int64_t t0, int64_t t1) {
      for (int64_t task = t0; task < t1; ++task) {
        float* v = ws + scratch_at_ + static_cast<size_t>(task) * wtask_floats_;
        float* mo = v + 16 * wg.c * wg.tb;
        for (int64_t unit = wunits_ * task / wtasks_; unit < wunits_ * (task + 1) / wtasks_; ++unit) {
          int64_t part = unit % wmparts_, blk = (unit / wmparts_) % wblocks_, img = unit / wmparts_ / wblocks_;
          int64_t tile0 = blk * wg.tb, nt = std::min(wg.tb, wg.tiles - tile0);
          int64_t m0 = part * wmpart_, mr = std::min(wmpart_, wg.m - m0);
          winograd_input(wg, planes + img * plane_floats, tile0, nt, v);
          for (int64_t xi = 0; xi < 16; ++xi) {
            SgemmArgs g;
            g.isa = isa_;
            g.m = mr;
            g.n = nt;
            g.k = wg.c;
            g.a = packed_w_.data() + (xi * wmparts_ + part) * a_group_;
            g.b = SgemmB::prepacked(v + xi * wg.c * wg.tb);
            g.c = mo + xi * mr * wg.tb;
            g.ldc = wg.tb;
            sgemm_compute(g, 0, mr, 0, nt, nullptr);
          }
          winograd_output(wg, mo, m0, mr, tile0, nt, b, act_, q_.oh, q_.ow, y + img * q_.m * q_.oh * q_.ow);
        }
      }
    };
    pool.parallel_for(wtasks_, body);
#else
    (void)x, (void)b, (void)y, (void)ws, (void)pool;
#endif
  }

  bool depthwise_avx512() const {
    return MINIRT_CONV_AVX512 && isa_ == SgemmIsa::kAvx512 && (q_.sw == 1 || q_.sw == 2) && q_.kh <= 16 &&
           q_.kw <= 16;
  }

  // The channel-blocked depthwise: a ring of transposed input rows per task.
  void plan_depthwise(int threads) {
    dw_ring_ = (q_.kh - 1) * q_.dh + 1;
    dw_wp_ = ceil_div((q_.ow - 1) * q_.sw + (q_.kw - 1) * q_.dw + 1, 16) * 16;
    dw_blocks_ = q_.n * ceil_div(q_.c, 16);
    bool fits = dw_ring_ <= 64 && q_.kh <= 64 && q_.kh * q_.kw <= 64 && dw_ring_ * dw_wp_ * 16 <= 64 * 1024;
    dw_blocked_ = MINIRT_CONV_AVX512 && isa_ == SgemmIsa::kAvx512 && fits && !empty_;
    if (!dw_blocked_) return;
    dw_tasks_ = std::max<int64_t>(1, std::min<int64_t>(threads, dw_blocks_));
    // [ring rows][output row][a zero row]
    dw_task_floats_ = static_cast<size_t>((dw_ring_ * dw_wp_ + ceil_div(q_.ow, 16) * 16 + dw_wp_) * 16);
    ws_floats_ = dw_task_floats_ * static_cast<size_t>(dw_tasks_);
  }

  void depthwise(const float* x, const float* w, const float* b, float* y, ThreadPool& pool) const {
    const Geometry& q = q_;
    const bool simd = depthwise_avx512();
    (void)simd;
    auto body = [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        int64_t c = p % q.c;
        const float* xp = x + p * q.h * q.w;
        const float* wc = w + c * q.kh * q.kw;
        float* yp = y + p * q.oh * q.ow;
        float bias = b ? b[c] : 0.0f;
#if MINIRT_CONV_AVX512
        if (simd) {
          bool k3 = q.kw == 3;
          if (q.sw == 1) (k3 ? depthwise_plane_avx512<1, 3> : depthwise_plane_avx512<1, 0>)(q, xp, wc, bias, act_, yp);
          else (k3 ? depthwise_plane_avx512<2, 3> : depthwise_plane_avx512<2, 0>)(q, xp, wc, bias, act_, yp);
          continue;
        }
#endif
        for (int64_t oh = 0; oh < q.oh; ++oh) {
          float* yr = yp + oh * q.ow;
          std::fill(yr, yr + q.ow, bias);
          for (int64_t i = 0; i < q.kh; ++i) {
            int64_t ih = oh * q.sh - q.ph + i * q.dh;
            if (ih < 0 || ih >= q.h) continue;
            const float* xr = xp + ih * q.w;
            for (int64_t j = 0; j < q.kw; ++j) {
              float wv = wc[i * q.kw + j];
              int64_t off = j * q.dw - q.pw;  // iw = ow * sw + off
              // Valid ow: 0 <= ow*sw + off < w.
              int64_t lo = off >= 0 ? 0 : (-off + q.sw - 1) / q.sw;
              int64_t hi = q.w - off <= 0 ? 0 : std::min(q.ow, (q.w - off + q.sw - 1) / q.sw);
              if (q.sw == 1) {
                const float* xs = xr + off;
                for (int64_t ow = lo; ow < hi; ++ow) yr[ow] += wv * xs[ow];
              } else {
                for (int64_t ow = lo; ow < hi; ++ow) yr[ow] += wv * xr[ow * q.sw + off];
              }
            }
          }
          act_.apply(yr, q.ow);
        }
      }
    };
    pool.parallel_for(q.n * q.c, body);
  }

  Geometry q_;
  SgemmIsa isa_;
  Activation act_;
  bool has_bias_ = false;
  bool empty_ = false;
  int64_t cg_ = 0, mg_ = 0, k_ = 0, cols_ = 0;
  Algo algo_ = Algo::kIm2col;
  AlignedFloats packed_w_;     // A panels per group, when the weights are constant
  int64_t a_group_ = 0;        // floats of packed A per group
  std::vector<int64_t> koff_;  // implicit_gemm: offset of each K row in the phase planes
  PhasePlanes pp_;             // implicit_gemm
  Im2colGeom im2col_{};        // im2col_gemm
  SgemmSplit split_;
  size_t planes_at_ = 0, scratch_at_ = 0, ws_floats_ = 0;  // workspace layout, in floats
  // winograd: tiles and blocks, the work split (units of one block of tiles
  // and a part of the output channels), each task's V and M in floats.
  WinogradGeom wg_;
  // depthwise, channel-blocked: ring rows, padded row width, (image, block)
  // units, tasks, each task's buffer in floats.
  bool dw_blocked_ = false;
  int64_t dw_ring_ = 0, dw_wp_ = 0, dw_blocks_ = 0, dw_tasks_ = 1;
  size_t dw_task_floats_ = 0;
  int64_t wblocks_ = 1, wmparts_ = 1, wmpart_ = 0, wunits_ = 1, wtasks_ = 1;
  size_t wtask_floats_ = 0;
};

// ConvTranspose: per image and group, col = W_g^T * X_g, then col2im adds
// each column into the output window it came from.
class ConvTransposeKernel final : public Kernel {
 public:
  ConvTransposeKernel(const Graph& g, const Node& n, int) {
    const auto& a = n.attrs_as<ConvAttrs>();
    const Shape& x = in_shape(g, n, 0);
    const Shape& y = out_shape(g, n, 0);
    // Geometry of the forward conv that maps y -> x.
    q_ = geometry(y, x, a, a.group);
    q_.m = x[1];
    q_.c = y[1];
    has_bias_ = n.input(2) >= 0;
    cg_ = q_.c / q_.groups;  // output channels per group
    mg_ = q_.m / q_.groups;  // input channels per group
    k_ = cg_ * q_.kh * q_.kw;
  }
  size_t workspace_bytes() const override {
    return static_cast<size_t>(q_.n * q_.groups * k_ * q_.oh * q_.ow) * sizeof(float);
  }
  void run(const KernelArgs& args) override {
    const float* x = static_cast<const float*>(args.inputs[0]);
    const float* w = static_cast<const float*>(args.inputs[1]);
    const float* b = has_bias_ ? static_cast<const float*>(args.inputs[2]) : nullptr;
    float* y = static_cast<float*>(args.outputs[0]);
    float* ws = static_cast<float*>(args.workspace);
    int64_t hw_in = q_.oh * q_.ow;  // the transposed conv's input plane
    int64_t hw_out = q_.h * q_.w;
    auto body = [&](int64_t i0, int64_t i1) {
      for (int64_t it = i0; it < i1; ++it) {
        int64_t g = it % q_.groups, img = it / q_.groups;
        float* col = ws + it * k_ * hw_in;
        const float* xg = x + (img * q_.m + g * mg_) * hw_in;
        const float* wg = w + g * mg_ * k_;  // [mg, k] row-major
        mat(col, k_, hw_in, hw_in).noalias() = cmat(wg, mg_, k_, k_).transpose() * cmat(xg, mg_, hw_in, hw_in);
        float* yg = y + (img * q_.c + g * cg_) * hw_out;
        for (int64_t c = 0; c < cg_; ++c) {
          float* yc = yg + c * hw_out;
          std::fill(yc, yc + hw_out, b ? b[g * cg_ + c] : 0.0f);
          for (int64_t i = 0; i < q_.kh; ++i)
            for (int64_t j = 0; j < q_.kw; ++j) {
              const float* cr = col + ((c * q_.kh + i) * q_.kw + j) * hw_in;
              for (int64_t oh = 0; oh < q_.oh; ++oh) {
                int64_t ih = oh * q_.sh - q_.ph + i * q_.dh;
                if (ih < 0 || ih >= q_.h) continue;
                for (int64_t ow = 0; ow < q_.ow; ++ow) {
                  int64_t iw = ow * q_.sw - q_.pw + j * q_.dw;
                  if (iw >= 0 && iw < q_.w) yc[ih * q_.w + iw] += cr[oh * q_.ow + ow];
                }
              }
            }
        }
      }
    };
    args.pool->parallel_for(q_.n * q_.groups, body);
  }

 private:
  Geometry q_;
  bool has_bias_ = false;
  int64_t cg_ = 0, mg_ = 0, k_ = 0;
};

std::unique_ptr<Kernel> make_conv(const Graph& g, const Node& n, int threads) {
  return std::make_unique<ConvKernel>(g, n, threads);
}
std::unique_ptr<Kernel> make_conv_transpose(const Graph& g, const Node& n, int threads) {
  return std::make_unique<ConvTransposeKernel>(g, n, threads);
}

}  // namespace

void add_conv_kernels(std::vector<KernelEntry>& out) {
  out.push_back({"Conv", make_conv});
  out.push_back({"ConvTranspose", make_conv_transpose});
}

}  // namespace minirt::cpu
