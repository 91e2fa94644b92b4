// Conv and ConvTranspose on the CPU.
//
// Conv has six lowerings, each a named algorithm the tuner may pick or a
// caller force (make_conv_kernel); where no one chooses, fixed rules do
// (conv_heuristic_algorithm). describe() says which ran:
//   - depthwise_direct: one filter per channel (group == C == M), direct
//                    loops: on AVX-512 CPUs channel-blocked (rows of 16
//                    channels transposed into [column][channel] on the fly,
//                    one FMA per tap for 16 channels), else along the rows;
//   - gemm_1x1:      1x1, stride 1, no padding: the input already is the GEMM
//                    operand, packed straight into B panels block by block;
//   - implicit_gemm: the input copied once per run with its zero padding, and
//                    split into stride phases, so that every (channel, ky, kx)
//                    row of the unrolled matrix is a plain offset into the
//                    copy: the microkernel reads it in place, no im2col;
//   - im2col_gemm:   the patches unrolled straight into the GEMM's packed B
//                    panels, block by block; runs every Conv (the fallback);
//   - winograd_f2x2, winograd_f4x4: 3x3, stride 1, one group, constant
//                    weights: Winograd F(2x2, 3x3) / F(4x4, 3x3) on 16 / 36
//                    GEMMs (conv_winograd.h), on any CPU.
// All of them but depthwise_direct multiply with the SGEMM engine of
// sgemm.h: the weights are packed into its A panels once, when the kernel is
// made; bias and the fused activation are applied to each tile while it is
// in registers.
#include "kernels/cpu/conv_algorithms.h"
#include "kernels/cpu/conv_common.h"
#include "kernels/cpu/conv_winograd.h"
#include "kernels/cpu/eigen_util.h"
#include "kernels/cpu/registry.h"
#include "kernels/cpu/sgemm.h"
#include "kernels/cpu/vmath.h"
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

Geometry conv_geometry(const Shape& x, const Shape& y, const WindowAttrs& a, int64_t groups) {
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

namespace {

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

// The fixed rules' thresholds, from ConvAlgo/* in bench/kernels_bench.cpp
// (ResNet-18/50, MobileNetV2, SqueezeNet layers) on an AVX2 EPYC, 1 and 2
// threads.
// Winograd: fewer channels than this leave too little GEMM to pay for the
// transforms.
constexpr int64_t kMinWinogradChannels = 16;
// F(4x4) needs a plane of at least this many outputs: on smaller ones its
// few tiles per image are too narrow a GEMM for 36 transformed filters (4x
// the weights) to stream past, and the edge tiles waste more; F(2x2) takes
// them down to 7x7 (ResNet's 14x14 and 7x7 layers: F2 3.7 and 5.6 ms, F4 5.7
// and 7.0, im2col 7.1 and 7.0; its 56x56 and 28x28 ones: F4 3.1 and 2.6 ms,
// F2 4.9 and 4.2, im2col 8.9 and 7.8).
constexpr int64_t kMinWinograd4Outputs = 400, kMinWinograd2Outputs = 49;
// implicit_gemm, on AVX-512 only (where it was measured to win): output rows
// at least this long (strided: the second). On AVX2 im2col_gemm beat it on
// every measured layer (stems, strided 3x3, 3x3 stride 1) by 1.1 to 3x.
constexpr int64_t kMinImplicitRow = 12, kMinImplicitRowStrided = 32;

// The Conv lowerings, in the order algorithms() lists them.
enum class Algo { kIm2col, kImplicit, kGemm1x1, kDepthwise, kWinograd2, kWinograd4 };
constexpr Algo kAlgos[] = {Algo::kIm2col,    Algo::kImplicit,   Algo::kGemm1x1,
                           Algo::kDepthwise, Algo::kWinograd2, Algo::kWinograd4};

const char* algo_name(Algo a) {
  switch (a) {
    case Algo::kIm2col: return "im2col_gemm";
    case Algo::kImplicit: return "implicit_gemm";
    case Algo::kGemm1x1: return "gemm_1x1";
    case Algo::kDepthwise: return "depthwise_direct";
    case Algo::kWinograd2: return "winograd_f2x2";
    case Algo::kWinograd4: return "winograd_f4x4";
  }
  return "?";
}

bool algo_named(const std::string& name, Algo* out) {
  for (Algo a : kAlgos)
    if (name == algo_name(a)) {
      *out = a;
      return true;
    }
  return false;
}

// What the rules read about a Conv node.
struct ConvShape {
  Geometry q;
  bool two_d = false;
  bool const_weights = false;
};

ConvShape conv_shape(const Graph& g, const Node& n) {
  const auto& a = n.attrs_as<ConvAttrs>();
  ConvShape s;
  s.q = conv_geometry(in_shape(g, n, 0), out_shape(g, n, 0), a, a.group);
  s.two_d = in_shape(g, n, 0).size() == 4;
  s.const_weights = in_const(g, n, 1) != nullptr;
  return s;
}

bool is_pointwise(const Geometry& q) {
  return q.kh == 1 && q.kw == 1 && q.sh == 1 && q.sw == 1 && q.ph == 0 && q.pw == 0 && q.oh == q.h && q.ow == q.w;
}

// Why lowering `a` cannot run this convolution; empty when it can.
std::string declined(const ConvShape& s, Algo a) {
  const Geometry& q = s.q;
  switch (a) {
    case Algo::kIm2col:
    case Algo::kImplicit: return {};  // any window, stride, dilation, padding, groups
    case Algo::kGemm1x1: return is_pointwise(q) ? "" : "1x1 stride 1 without padding only";
    case Algo::kDepthwise:
      return q.groups == q.c && q.m == q.c ? "" : "needs group == channels == filters";
    case Algo::kWinograd2:
    case Algo::kWinograd4:
      if (!s.two_d || q.kh != 3 || q.kw != 3 || q.sh != 1 || q.sw != 1 || q.dh != 1 || q.dw != 1)
        return "needs a 3x3 window at stride 1 and dilation 1";
      if (q.groups != 1) return "needs one group";
      // (They are transformed once, when the kernel is made.)
      if (!s.const_weights) return "needs constant weights";
      return {};
  }
  return "unknown algorithm";
}

// The fixed rules: the measured winner where the benchmarks cover a case.
Algo heuristic(const ConvShape& s, SgemmIsa isa) {
  const Geometry& q = s.q;
  if (declined(s, Algo::kDepthwise).empty()) return Algo::kDepthwise;
  if (is_pointwise(q)) return Algo::kGemm1x1;
  const int64_t cols = q.oh * q.ow;
  if (declined(s, Algo::kWinograd4).empty() && q.c >= kMinWinogradChannels && q.m >= kMinWinogradChannels) {
    if (cols >= kMinWinograd4Outputs) return Algo::kWinograd4;
    if (cols >= kMinWinograd2Outputs) return Algo::kWinograd2;
  }
  if (isa == SgemmIsa::kAvx512 && q.kh * q.kw > 1 &&
      q.ow >= (q.sw == 1 ? kMinImplicitRow : kMinImplicitRowStrided))
    return Algo::kImplicit;
  return Algo::kIm2col;
}

// The rules' pick. (One lowering for a whole model is TuningMode::kFixed,
// runmodel --tune ALGO: it goes through the tuner and its report.)
Algo default_algo(const ConvShape& s) { return heuristic(s, sgemm_default_isa()); }

class ConvKernel final : public Kernel {
 public:
  // `algo` must accept the node (declined() empty). plan_only: the split and
  // the workspace only, the weights neither read nor packed (for sizing).
  ConvKernel(const Graph& g, const Node& n, int threads, Algo algo, bool plan_only = false)
      : isa_(sgemm_default_isa()), algo_(algo) {
    const auto& a = n.attrs_as<ConvAttrs>();
    q_ = conv_geometry(in_shape(g, n, 0), out_shape(g, n, 0), a, a.group);
    act_ = a.act;
    has_bias_ = n.input(2) >= 0;
    // A fused residual (input 3): the lowering computes the convolution and
    // bias, then one pass adds the residual and applies the activation.
    residual_ = n.input(3) >= 0;
    if (residual_) {
      post_act_ = act_;
      act_ = Activation{};
    }
    const Tensor* wc = in_const(g, n, 1);
    const_w_ = wc != nullptr;
    cg_ = q_.c / q_.groups;
    mg_ = q_.m / q_.groups;
    k_ = cg_ * q_.kh * q_.kw;
    cols_ = q_.oh * q_.ow;
    // An empty batch (N = 0) has nothing to compute.
    empty_ = q_.n == 0 || q_.m == 0 || cols_ == 0;
    if (algo_ == Algo::kDepthwise) {
      plan_depthwise(threads);
      return;
    }
    if (empty_) return;
    if (algo_ == Algo::kWinograd2 || algo_ == Algo::kWinograd4) {
      winograd_ = std::make_unique<WinogradConv>(q_, algo_ == Algo::kWinograd2 ? 2 : 4, isa_, threads,
                                                 plan_only ? nullptr : wc->data<float>());
      ws_floats_ = winograd_->workspace_floats();
      return;
    }

    a_group_ = static_cast<int64_t>(sgemm_packed_a_floats(isa_, mg_, k_));
    if (!const_w_) a_group_ = (a_group_ + 15) / 16 * 16;  // packed per run, into the workspace
    if (const_w_ && !plan_only) {
      const float* wp = wc->data<float>();
      packed_w_ = AlignedFloats(static_cast<size_t>(a_group_ * q_.groups));
      for (int64_t gi = 0; gi < q_.groups; ++gi)
        sgemm_pack_a(isa_, wp + gi * mg_ * k_, k_, 1, mg_, k_, packed_w_.data() + gi * a_group_);
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
    size_t off = const_w_ ? 0 : static_cast<size_t>(a_group_ * q_.groups);
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
    std::string s = std::string("algo=") + algo_name(algo_);
    if (algo_ == Algo::kDepthwise)
      return s + (dw_blocked_ ? " isa=avx512 channel-blocked" : depthwise_avx512() ? " isa=avx512" : "");
    return s + " isa=" + sgemm_isa_name(isa_);
  }

  void run(const KernelArgs& args) override {
    if (empty_) return;
    run_conv(args);
    if (residual_) {
      const float* r = static_cast<const float*>(args.inputs[3]);
      float* y = static_cast<float*>(args.outputs[0]);
      const Activation act = post_act_;
      auto body = [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) y[i] += r[i];
        apply_activation(act, y + b, e - b);
      };
      args.pool->parallel_for(q_.n * q_.m * cols_, body, 16384);
    }
  }

 private:
  void run_conv(const KernelArgs& args) {
    const float* x = static_cast<const float*>(args.inputs[0]);
    const float* w = static_cast<const float*>(args.inputs[1]);
    const float* b = has_bias_ ? static_cast<const float*>(args.inputs[2]) : nullptr;
    float* y = static_cast<float*>(args.outputs[0]);
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
    if (winograd_) return winograd_->run(x, b, act_, y, static_cast<float*>(args.workspace), *args.pool);
    float* ws = static_cast<float*>(args.workspace);
    ThreadPool& pool = *args.pool;
    const float* a = packed_w_.data();
    if (!const_w_) {
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
  Algo algo_;
  Activation act_;
  bool has_bias_ = false;
  bool residual_ = false;
  Activation post_act_;  // with a residual: applied after adding it
  bool const_w_ = false;
  bool empty_ = false;
  int64_t cg_ = 0, mg_ = 0, k_ = 0, cols_ = 0;
  AlignedFloats packed_w_;     // A panels per group, when the weights are constant
  int64_t a_group_ = 0;        // floats of packed A per group
  std::vector<int64_t> koff_;  // implicit_gemm: offset of each K row in the phase planes
  PhasePlanes pp_;             // implicit_gemm
  Im2colGeom im2col_{};        // im2col_gemm
  SgemmSplit split_;
  size_t planes_at_ = 0, scratch_at_ = 0, ws_floats_ = 0;  // workspace layout, in floats
  std::unique_ptr<WinogradConv> winograd_;                 // winograd_f2x2, winograd_f4x4
  // depthwise, channel-blocked: ring rows, padded row width, (image, block)
  // units, tasks, each task's buffer in floats.
  bool dw_blocked_ = false;
  int64_t dw_ring_ = 0, dw_wp_ = 0, dw_blocks_ = 0, dw_tasks_ = 1;
  size_t dw_task_floats_ = 0;
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
    q_ = conv_geometry(y, x, a, a.group);
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
  return std::make_unique<ConvKernel>(g, n, threads, default_algo(conv_shape(g, n)));
}
std::unique_ptr<Kernel> make_conv_transpose(const Graph& g, const Node& n, int threads) {
  return std::make_unique<ConvTransposeKernel>(g, n, threads);
}

// The lowering a caller named, or a sentence naming the node and op.
Algo checked_algo(const Graph& g, const Node& n, const std::string& name) {
  Algo a;
  if (!algo_named(name, &a)) {
    std::string known;
    for (Algo k : kAlgos) known += std::string(known.empty() ? "" : ", ") + algo_name(k);
    node_fail(ErrorCode::kInvalidArgument, g, n,
              "the CPU backend has no Conv algorithm named '" + name + "' (it has " + known + ")");
  }
  std::string why = declined(conv_shape(g, n), a);
  if (!why.empty())
    node_fail(ErrorCode::kInvalidArgument, g, n, std::string("Conv algorithm ") + algo_name(a) +
                                                     " cannot run this node: " + why);
  return a;
}

}  // namespace

const std::vector<std::string>& conv_algorithm_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (Algo a : kAlgos) v.push_back(algo_name(a));
    return v;
  }();
  return names;
}

std::string conv_algorithm_declined(const Graph& g, const Node& n, const std::string& algo) {
  Algo a;
  if (!algo_named(algo, &a)) return "is not a CPU Conv algorithm";
  return declined(conv_shape(g, n), a);
}

std::string conv_heuristic_algorithm(const Graph& g, const Node& n, int threads) {
  return algo_name(default_algo(conv_shape(g, n)));
}

std::unique_ptr<Kernel> make_conv_kernel(const Graph& g, const Node& n, int threads, const std::string& algo) {
  return std::make_unique<ConvKernel>(g, n, threads, checked_algo(g, n, algo));
}

size_t conv_workspace_bytes(const Graph& g, const Node& n, int threads, const std::string& algo) {
  return ConvKernel(g, n, threads, checked_algo(g, n, algo), /*plan_only=*/true).workspace_bytes();
}

void add_conv_kernels(std::vector<KernelEntry>& out) {
  out.push_back({"Conv", make_conv});
  out.push_back({"ConvTranspose", make_conv_transpose});
}

}  // namespace minirt::cpu
