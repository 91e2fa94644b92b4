// The depthwise convolution between bf16 values, read and written in place:
// one 64-byte load per pixel and tap gives a group's 32 channels as its even
// and odd channels (a shift and an AND), two FMAs add them in, and the sums
// leave as one 64-byte store (two registers rounded to bf16, interleaved
// back). Along a row, each input pixel is converted once for every output
// of the tile whose window reaches it. Compiled with the AVX512_BF16 flags
// (CMakeLists.txt); called only on bf16 values, which exist only where
// cpu_isa() has AVX512_BF16. Layouts in dw_bf16_isa.h; its entry point is
// its only global symbol (tests/cli/isa_objects_test.sh).
#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/dw_bf16_isa.h"

namespace minirt::cpu {
namespace {

// GCC 12 takes the self-initialized _mm512_undefined_epi32() inside
// _mm512_slli_epi32 for an uninitialized read when it inlines it into the
// tiles below: a false positive.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"

inline int64_t min64(int64_t a, int64_t b) { return b < a ? b : a; }
inline int64_t max64(int64_t a, int64_t b) { return a < b ? b : a; }
// First i in [0, k) with a + i d >= 0, and one past the last with a + i d < n.
inline int64_t first_inside(int64_t a, int64_t d) { return a >= 0 ? 0 : (-a + d - 1) / d; }
inline int64_t end_inside(int64_t a, int64_t d, int64_t k, int64_t n) {
  if (a >= n) return 0;
  return min64(k, (n - 1 - a) / d + 1);
}

// The epilogue's constants, made once per call.
struct Epi {
  DwBf16Act kind;
  __m512 lo, hi, slope, sixth, half, one, zero;
  __m512i interleave;  // 16-bit lane 2k from lane k, 2k + 1 from lane 16 + k
  __mmask32 keep;      // the group's real channels
  __m512i top;         // 0xffff0000 in each 32-bit lane: the odd channel
};

inline __m512 even_of(__m512i v) { return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16)); }
inline __m512 odd_of(__m512i v, __m512i top) { return _mm512_castsi512_ps(_mm512_and_si512(v, top)); }

// As Activation::apply: Relu max(v, 0) (NaN to 0), Clip max(lo, v) then
// min(hi, .) (NaN kept), LeakyRelu v < 0 ? alpha v : v, HardSwish
// v min(max(v / 6 + 1/2, 0), 1).
inline __m512 act(const Epi& e, __m512 v) {
  switch (e.kind) {
    case DwBf16Act::kNone:
      return v;
    case DwBf16Act::kRelu:
      return _mm512_max_ps(v, e.zero);
    case DwBf16Act::kClip:
      return _mm512_min_ps(e.hi, _mm512_max_ps(e.lo, v));
    case DwBf16Act::kLeakyRelu:
      return _mm512_mask_mul_ps(v, _mm512_cmp_ps_mask(v, e.zero, _CMP_LT_OQ), v, e.slope);
    case DwBf16Act::kHardSwish: {
      const __m512 t = _mm512_add_ps(_mm512_div_ps(v, e.sixth), e.half);
      return _mm512_mul_ps(v, _mm512_min_ps(_mm512_max_ps(t, e.zero), e.one));
    }
  }
  return v;
}

// One output pixel of the group: its even and odd sums, finished, rounded
// and interleaved into channel order.
inline void store(const Epi& e, uint16_t* y, __m512 even, __m512 odd) {
  const __m512i r = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(act(e, odd), act(e, even)));
  _mm512_storeu_si512(y, _mm512_maskz_permutexvar_epi16(e.keep, e.interleave, r));
}

// UR outputs of one row, SW input pixels apart, whose windows' KW columns
// (dilation 1) are all inside the input: x at the first output's window,
// row i0, column 0; w at window row i0; ni rows of the window, xdi uint16s
// apart. Input pixel c of a window row feeds output p at tap j = c - p SW.
template <int UR, int KW, int SW>
void tile(const Epi& e, const uint16_t* x, int64_t xdi, int64_t ni, const float* w, const float* bias, uint16_t* y) {
  __m512 ae[UR], ao[UR];
  const __m512 be = _mm512_loadu_ps(bias), bo = _mm512_loadu_ps(bias + 16);
#pragma GCC unroll 8
  for (int p = 0; p < UR; ++p) ae[p] = be, ao[p] = bo;
  for (int64_t i = 0; i < ni; ++i) {
    const uint16_t* xr = x + i * xdi;
    const float* wr = w + i * KW * 32;
#pragma GCC unroll 32
    for (int c = 0; c < (UR - 1) * SW + KW; ++c) {
      const __m512i v = _mm512_loadu_si512(xr + c * 32);
      const __m512 xe = even_of(v), xo = odd_of(v, e.top);
#pragma GCC unroll 8
      for (int j = 0; j < KW; ++j) {
        const int d = c - j;
        if (d < 0 || d % SW != 0 || d / SW >= UR) continue;
        ae[d / SW] = _mm512_fmadd_ps(xe, _mm512_loadu_ps(wr + j * 32), ae[d / SW]);
        ao[d / SW] = _mm512_fmadd_ps(xo, _mm512_loadu_ps(wr + j * 32 + 16), ao[d / SW]);
      }
    }
  }
#pragma GCC unroll 8
  for (int p = 0; p < UR; ++p) store(e, y + p * 32, ae[p], ao[p]);
}

// Any output pixel: the window's taps inside the input, one load each.
void pixel(const Epi& e, const DwBf16Geom& q, const uint16_t* x, const float* w, const float* bias, int64_t oh,
           int64_t ow, uint16_t* y) {
  const int64_t ih0 = oh * q.sh - q.ph, iw0 = ow * q.sw - q.pw;
  const int64_t i0 = first_inside(ih0, q.dh), i1 = end_inside(ih0, q.dh, q.kh, q.h);
  const int64_t j0 = first_inside(iw0, q.dw), j1 = end_inside(iw0, q.dw, q.kw, q.w);
  __m512 ae = _mm512_loadu_ps(bias), ao = _mm512_loadu_ps(bias + 16);
  for (int64_t i = i0; i < i1; ++i)
    for (int64_t j = j0; j < j1; ++j) {
      const __m512i v = _mm512_loadu_si512(x + ((ih0 + i * q.dh) * q.w + iw0 + j * q.dw) * 32);
      const float* wt = w + (i * q.kw + j) * 32;
      ae = _mm512_fmadd_ps(even_of(v), _mm512_loadu_ps(wt), ae);
      ao = _mm512_fmadd_ps(odd_of(v, e.top), _mm512_loadu_ps(wt + 16), ao);
    }
  store(e, y + (oh * q.ow + ow) * 32, ae, ao);
}

constexpr int kUr = 8;

// A tile of n < kUr outputs.
template <int KW, int SW>
void short_tile(int n, const Epi& e, const uint16_t* x, int64_t xdi, int64_t ni, const float* w, const float* bias,
                uint16_t* y) {
  switch (n) {
    case 1:
      return tile<1, KW, SW>(e, x, xdi, ni, w, bias, y);
    case 2:
      return tile<2, KW, SW>(e, x, xdi, ni, w, bias, y);
    case 3:
      return tile<3, KW, SW>(e, x, xdi, ni, w, bias, y);
    case 4:
      return tile<4, KW, SW>(e, x, xdi, ni, w, bias, y);
    case 5:
      return tile<5, KW, SW>(e, x, xdi, ni, w, bias, y);
    case 6:
      return tile<6, KW, SW>(e, x, xdi, ni, w, bias, y);
    case 7:
      return tile<7, KW, SW>(e, x, xdi, ni, w, bias, y);
    default:
      return;
  }
}

// Rows of a window KW wide (dilation 1 across) at stride SW: the columns
// whose windows are all inside the input in tiles of kUr, the rest pixel by
// pixel.
template <int KW, int SW>
void rows_tiled(const Epi& e, const DwBf16Geom& q, const uint16_t* x, const float* w, const float* bias, uint16_t* y,
                int64_t row0, int64_t row1) {
  // Output columns [c0, c1): iw0 = ow SW - pw >= 0 and iw0 + KW <= w.
  const int64_t c0 = min64(q.ow, (q.pw + SW - 1) / SW);
  const int64_t reach = q.w - KW + q.pw;  // the largest iw0 + pw whose window fits
  const int64_t c1 = max64(c0, reach < 0 ? 0 : min64(q.ow, reach / SW + 1));
  const int64_t xdi = q.dh * q.w * 32;
  for (int64_t oh = row0; oh < row1; ++oh) {
    const int64_t ih0 = oh * q.sh - q.ph;
    const int64_t i0 = first_inside(ih0, q.dh), i1 = end_inside(ih0, q.dh, q.kh, q.h);
    for (int64_t ow = 0; ow < c0; ++ow) pixel(e, q, x, w, bias, oh, ow, y);
    int64_t ow = c0;
    if (i0 < i1) {
      const uint16_t* xr = x + (ih0 + i0 * q.dh) * q.w * 32;
      const float* wr = w + i0 * KW * 32;
      uint16_t* yr = y + oh * q.ow * 32;
      for (; ow + kUr <= c1; ow += kUr)
        tile<kUr, KW, SW>(e, xr + (ow * SW - q.pw) * 32, xdi, i1 - i0, wr, bias, yr + ow * 32);
      if (ow < c1)
        short_tile<KW, SW>(static_cast<int>(c1 - ow), e, xr + (ow * SW - q.pw) * 32, xdi, i1 - i0, wr, bias,
                           yr + ow * 32);
      ow = c1;
    }
    for (; ow < q.ow; ++ow) pixel(e, q, x, w, bias, oh, ow, y);
  }
}

}  // namespace

void dw_bf16_rows_avx512bf16(const DwBf16Geom& q, const uint16_t* x, const float* w, const float* bias,
                             const DwBf16Epilogue& ep, int64_t lanes, uint16_t* y, int64_t row0, int64_t row1) {
  Epi e;
  e.kind = ep.kind;
  e.lo = _mm512_set1_ps(ep.lo);
  e.hi = _mm512_set1_ps(ep.hi);
  e.slope = _mm512_set1_ps(ep.slope);
  e.sixth = _mm512_set1_ps(6.0f);
  e.half = _mm512_set1_ps(0.5f);
  e.one = _mm512_set1_ps(1.0f);
  e.zero = _mm512_setzero_ps();
  alignas(64) int16_t order[32];
  for (int l = 0; l < 32; ++l) order[l] = static_cast<int16_t>(l % 2 == 0 ? l / 2 : 16 + l / 2);
  e.interleave = _mm512_load_si512(order);
  e.keep = lanes >= 32 ? static_cast<__mmask32>(0xffffffffu)
                       : static_cast<__mmask32>((1u << static_cast<unsigned>(max64(lanes, 0))) - 1u);
  e.top = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  if (q.dw == 1 && q.kw == 3 && q.sw == 1) return rows_tiled<3, 1>(e, q, x, w, bias, y, row0, row1);
  if (q.dw == 1 && q.kw == 3 && q.sw == 2) return rows_tiled<3, 2>(e, q, x, w, bias, y, row0, row1);
  if (q.dw == 1 && q.kw == 5 && q.sw == 1) return rows_tiled<5, 1>(e, q, x, w, bias, y, row0, row1);
  if (q.dw == 1 && q.kw == 5 && q.sw == 2) return rows_tiled<5, 2>(e, q, x, w, bias, y, row0, row1);
  for (int64_t oh = row0; oh < row1; ++oh)
    for (int64_t ow = 0; ow < q.ow; ++ow) pixel(e, q, x, w, bias, oh, ow, y);
}

#pragma GCC diagnostic pop

}  // namespace minirt::cpu
