// The pooling primitives for AVX-512 (pool_isa.h: what each does): 16-float
// vectors, masked tails; pixels of 8 floats in ymm. Compiled with -mavx512f
// -mavx2 -mfma (CMakeLists.txt) and called only where the CPU has AVX-512
// (pixel_ops in pool.cpp). The global symbols are pool_pixel_ops_avx512 and
// pool_direct_max_avx512, the direct MaxPool of nchwc_ops.cpp
// (tests/cli/isa_objects_test.sh).
#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/pool_isa.h"
#include "kernels/cpu/pool_scalar.h"
#include "kernels/cpu/pool_ukr.h"

namespace minirt::cpu {
namespace {

struct MaxOp {
  static float s(float a, float b) { return a > b ? a : b; }
  static __m512 v16(__m512 a, __m512 b) { return _mm512_max_ps(a, b); }
  static __m256 v8(__m256 a, __m256 b) { return _mm256_max_ps(a, b); }
};
struct AddOp {
  static float s(float a, float b) { return a + b; }
  static __m512 v16(__m512 a, __m512 b) { return _mm512_add_ps(a, b); }
  static __m256 v8(__m256 a, __m256 b) { return _mm256_add_ps(a, b); }
};

inline __mmask16 tail_mask16(int64_t n) { return static_cast<__mmask16>((1u << n) - 1); }

// The even lanes of two vectors: {a0, a2, ..., a14, b0, b2, ..., b14}.
inline __m512 evens16(__m512 a, __m512 b) {
  const __m512i idx = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  return _mm512_permutex2var_ps(a, idx, b);
}

template <class Op>
inline void pair_row_avx512(float* dst, const float* a, const float* b, int64_t npix, int64_t lanes, int64_t sa) {
  if (sa == lanes) {
    int64_t n = npix * lanes, i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, Op::v16(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i)));
    if (i < n) {
      __mmask16 m = tail_mask16(n - i);
      _mm512_mask_storeu_ps(dst + i, m, Op::v16(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i)));
    }
    return;
  }
  if (lanes == 16) {
    for (int64_t p = 0; p < npix; ++p)
      _mm512_storeu_ps(dst + p * 16, Op::v16(_mm512_loadu_ps(a + p * sa), _mm512_loadu_ps(b + p * sa)));
    return;
  }
  if (lanes == 8) {
    for (int64_t p = 0; p < npix; ++p)
      _mm256_storeu_ps(dst + p * 8, Op::v8(_mm256_loadu_ps(a + p * sa), _mm256_loadu_ps(b + p * sa)));
    return;
  }
  int64_t p = 0;
  if (lanes == 1 && sa == 2) {
    // 16 outputs from 32 source floats; the last source float read is
    // 2p + 31, inside the run while p + 16 < npix.
    for (; p + 16 < npix; p += 16) {
      const float* ap = a + 2 * p;
      const float* bp = b + 2 * p;
      __m512 lo = Op::v16(_mm512_loadu_ps(ap), _mm512_loadu_ps(bp));
      __m512 hi = Op::v16(_mm512_loadu_ps(ap + 16), _mm512_loadu_ps(bp + 16));
      _mm512_storeu_ps(dst + p, evens16(lo, hi));
    }
  }
  for (; p < npix; ++p)
    for (int64_t l = 0; l < lanes; ++l) dst[p * lanes + l] = Op::s(a[p * sa + l], b[p * sa + l]);
}

template <class Op>
void pair_avx512(float* dst, int64_t ldd, const float* a, int64_t lda, const float* b, int64_t ldb, int64_t rows,
                 int64_t npix, int64_t lanes, int64_t sa) {
  merge_rows(rows, npix, lanes, sa, ldd, lda, ldb);
  for (int64_t r = 0; r < rows; ++r) pair_row_avx512<Op>(dst + r * ldd, a + r * lda, b + r * ldb, npix, lanes, sa);
}

inline void fill_avx512(float* d, int64_t n, __m512 v) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(d + i, v);
  if (i < n) _mm512_mask_storeu_ps(d + i, tail_mask16(n - i), v);
}

void pad_rows_avx512(float* dst, int64_t ldd, const float* src, int64_t lds, int64_t rows, int64_t left, int64_t mid,
                     int64_t right, int64_t lanes, float fill, bool floor) {
  const __m512 fv = _mm512_set1_ps(fill);
  // max(x, lowest) is x > lowest ? x : lowest, so NaN gives the lowest float.
  const __m512 lo = _mm512_set1_ps(floor ? kLowest : -kInf);
  const int64_t n = mid * lanes;
  for (int64_t r = 0; r < rows; ++r) {
    float* d = dst + r * ldd;
    const float* s = src + r * lds;
    fill_avx512(d, left * lanes, fv);
    d += left * lanes;
    int64_t i = 0;
    if (floor) {
      for (; i + 16 <= n; i += 16) _mm512_storeu_ps(d + i, _mm512_max_ps(_mm512_loadu_ps(s + i), lo));
      if (i < n) {
        __mmask16 m = tail_mask16(n - i);
        _mm512_mask_storeu_ps(d + i, m, _mm512_max_ps(_mm512_maskz_loadu_ps(m, s + i), lo));
      }
    } else {
      for (; i + 16 <= n; i += 16) _mm512_storeu_ps(d + i, _mm512_loadu_ps(s + i));
      if (i < n) {
        __mmask16 m = tail_mask16(n - i);
        _mm512_mask_storeu_ps(d + i, m, _mm512_maskz_loadu_ps(m, s + i));
      }
    }
    fill_avx512(d + n, right * lanes, fv);
  }
}

template <class Op>
void vert_run_avx512(float* d, const float* x, int64_t tstride, int64_t taps, int64_t n, __m512 init) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 acc = init;
    for (int64_t t = 0; t < taps; ++t) acc = Op::v16(_mm512_loadu_ps(x + t * tstride + i), acc);
    _mm512_storeu_ps(d + i, acc);
  }
  if (i < n) {
    __mmask16 m = tail_mask16(n - i);
    __m512 acc = init;
    for (int64_t t = 0; t < taps; ++t) acc = Op::v16(_mm512_maskz_loadu_ps(m, x + t * tstride + i), acc);
    _mm512_mask_storeu_ps(d + i, m, acc);
  }
}

void vert_avx512(float* dst, int64_t ldd, const float* x, int64_t ldx, int64_t h, int64_t first, int64_t sh, int64_t kh,
                 int64_t dh, int64_t rows, int64_t left, int64_t mid, int64_t right, int64_t lanes, float fill,
                 bool is_max) {
  const __m512 fv = _mm512_set1_ps(fill);
  // max(x, acc) is x > acc ? x : acc: a NaN never enters the accumulator.
  const __m512 init = _mm512_set1_ps(is_max ? kLowest : 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    float* d = dst + r * ldd;
    int64_t start = first + r * sh, t0, t1;
    taps_inside(start, kh, dh, h, t0, t1);
    fill_avx512(d, left * lanes, fv);
    const float* xr = t1 > t0 ? x + (start + t0 * dh) * ldx : x;
    if (is_max)
      vert_run_avx512<MaxOp>(d + left * lanes, xr, dh * ldx, t1 - t0, mid * lanes, init);
    else
      vert_run_avx512<AddOp>(d + left * lanes, xr, dh * ldx, t1 - t0, mid * lanes, init);
    fill_avx512(d + (left + mid) * lanes, right * lanes, fv);
  }
}

template <class Op>
void hwin_row_avx512(float* d, const float* v, int64_t npix, int64_t lanes, int64_t sa, int64_t k, int64_t step,
                     const float* q) {
  int64_t p = 0;
  if (lanes == 1 && sa == 1) {
    // Rows are short (a 13-wide SPP plane): the tail is one masked step.
    for (; p < npix; p += 16) {
      __mmask16 m = tail_mask16(min64(16, npix - p));
      __m512 acc = _mm512_maskz_loadu_ps(m, v + p);
      for (int64_t t = 1; t < k; ++t) acc = Op::v16(_mm512_maskz_loadu_ps(m, v + p + t * step), acc);
      if (q) acc = _mm512_div_ps(acc, _mm512_mask_loadu_ps(_mm512_set1_ps(1.0f), m, q + p));
      _mm512_mask_storeu_ps(d + p, m, acc);
    }
  } else if (lanes == 1 && sa == 2) {
    // 16 outputs from 32 floats per tap, of which the last output needs the
    // first: 2 * (npix - p) - 1 source floats, masked at the tail.
    for (; p < npix; p += 16) {
      const float* s = v + 2 * p;
      int64_t n = min64(32, 2 * (npix - p) - 1);
      __mmask16 ml = tail_mask16(min64(16, n)), mh = tail_mask16(max64(0, n - 16));
      __m512 lo = _mm512_maskz_loadu_ps(ml, s), hi = _mm512_maskz_loadu_ps(mh, s + 16);
      for (int64_t t = 1; t < k; ++t) {
        lo = Op::v16(_mm512_maskz_loadu_ps(ml, s + t * step), lo);
        hi = Op::v16(_mm512_maskz_loadu_ps(mh, s + t * step + 16), hi);
      }
      __mmask16 m = tail_mask16(min64(16, npix - p));
      __m512 acc = evens16(lo, hi);
      if (q) acc = _mm512_div_ps(acc, _mm512_mask_loadu_ps(_mm512_set1_ps(1.0f), m, q + p));
      _mm512_mask_storeu_ps(d + p, m, acc);
    }
  } else if (lanes == 16) {
    for (; p < npix; ++p) {
      const float* s = v + p * sa;
      __m512 acc = _mm512_loadu_ps(s);
      for (int64_t t = 1; t < k; ++t) acc = Op::v16(_mm512_loadu_ps(s + t * step), acc);
      if (q) acc = _mm512_div_ps(acc, _mm512_set1_ps(q[p]));
      _mm512_storeu_ps(d + p * 16, acc);
    }
  } else if (lanes == 8) {
    for (; p < npix; ++p) {
      const float* s = v + p * sa;
      __m256 acc = _mm256_loadu_ps(s);
      for (int64_t t = 1; t < k; ++t) acc = Op::v8(_mm256_loadu_ps(s + t * step), acc);
      if (q) acc = _mm256_div_ps(acc, _mm256_set1_ps(q[p]));
      _mm256_storeu_ps(d + p * 8, acc);
    }
  }
  for (; p < npix; ++p)
    for (int64_t l = 0; l < lanes; ++l) {
      const float* s = v + p * sa + l;
      float acc = s[0];
      for (int64_t t = 1; t < k; ++t) acc = Op::s(s[t * step], acc);
      d[p * lanes + l] = q ? acc / q[p] : acc;
    }
}

void hwin_avx512(float* dst, int64_t ldd, const float* v, int64_t ldv, int64_t rows, int64_t npix, int64_t lanes,
                 int64_t sa, int64_t k, int64_t step, bool is_max, const float* q, int64_t ldq) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* qr = q ? q + r * ldq : nullptr;
    if (is_max)
      hwin_row_avx512<MaxOp>(dst + r * ldd, v + r * ldv, npix, lanes, sa, k, step, qr);
    else
      hwin_row_avx512<AddOp>(dst + r * ldd, v + r * ldv, npix, lanes, sa, k, step, qr);
  }
}

// Two float vectors' lanes widened to doubles, added to (lo, hi).
inline void widen_add16(__m512 v, __m512d& lo, __m512d& hi) {
  lo = _mm512_add_pd(lo, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
  hi = _mm512_add_pd(hi, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
}

void reduce_max_avx512(float* out, const float* a, int64_t npix, int64_t lanes) {
  const __m512 ninf = _mm512_set1_ps(-kInf);
  if (lanes == 1) {
    __m512 m = ninf;
    int64_t i = 0;
    for (; i + 16 <= npix; i += 16) m = _mm512_max_ps(_mm512_loadu_ps(a + i), m);
    if (i < npix) m = _mm512_max_ps(_mm512_mask_loadu_ps(ninf, tail_mask16(npix - i), a + i), m);
    out[0] = _mm512_reduce_max_ps(m);
    return;
  }
  if (lanes == 16) {
    __m512 m = ninf;
    for (int64_t p = 0; p < npix; ++p) m = _mm512_max_ps(_mm512_loadu_ps(a + p * 16), m);
    _mm512_storeu_ps(out, m);
    return;
  }
  reduce_max_generic(out, a, npix, lanes);
}

void reduce_mean_avx512(float* out, const float* a, int64_t npix, int64_t lanes) {
  __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
  const double n = static_cast<double>(npix);
  if (lanes == 1) {
    int64_t i = 0;
    for (; i + 16 <= npix; i += 16) widen_add16(_mm512_loadu_ps(a + i), lo, hi);
    if (i < npix) widen_add16(_mm512_maskz_loadu_ps(tail_mask16(npix - i), a + i), lo, hi);
    out[0] = static_cast<float>((_mm512_reduce_add_pd(lo) + _mm512_reduce_add_pd(hi)) / n);
    return;
  }
  if (lanes == 16) {
    for (int64_t p = 0; p < npix; ++p) widen_add16(_mm512_loadu_ps(a + p * 16), lo, hi);
    const __m512d nv = _mm512_set1_pd(n);
    _mm256_storeu_ps(out, _mm512_cvtpd_ps(_mm512_div_pd(lo, nv)));
    _mm256_storeu_ps(out + 8, _mm512_cvtpd_ps(_mm512_div_pd(hi, nv)));
    return;
  }
  reduce_mean_generic(out, a, npix, lanes);
}

constexpr PixelOps kOps{pair_avx512<MaxOp>, pad_rows_avx512,   vert_avx512,
                        hwin_avx512,        reduce_max_avx512, reduce_mean_avx512};

// The direct MaxPool's vectors (pool_ukr.h).
struct Zmm {
  static constexpr int64_t kLanes = 16;
  using V = __m512;
  static V set1(float v) { return _mm512_set1_ps(v); }
  static V loadu(const float* p) { return _mm512_loadu_ps(p); }
  static void storeu(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V max(V a, V b) { return _mm512_max_ps(a, b); }
};
constexpr DirectMaxPool kDirectMax = DirectMax<Zmm>::kernels();

}  // namespace

const DirectMaxPool& pool_direct_max_avx512() { return kDirectMax; }

const PixelOps& pool_pixel_ops_avx512() { return kOps; }

}  // namespace minirt::cpu
