// The pooling primitives for AVX2 (pool_isa.h: what each does): 8-float
// vectors, tails as an overlapping last step or scalar. Compiled with -mavx2
// -mfma (CMakeLists.txt) and called only where the CPU has AVX2 (pixel_ops
// in pool.cpp). The global symbols are pool_pixel_ops_avx2 and
// pool_direct_max_avx2, the direct MaxPool of nchwc_ops.cpp
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
  static __m256 v8(__m256 a, __m256 b) { return _mm256_max_ps(a, b); }
};
struct AddOp {
  static float s(float a, float b) { return a + b; }
  static __m256 v8(__m256 a, __m256 b) { return _mm256_add_ps(a, b); }
};

// The even lanes of two vectors: {a0, a2, a4, a6, b0, b2, b4, b6}.
inline __m256 evens8(__m256 a, __m256 b) {
  __m256 t = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));  // a0 a2 b0 b2 | a4 a6 b4 b6
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(t), _MM_SHUFFLE(3, 1, 2, 0)));
}

template <class Op>
inline void pair_row_avx2(float* dst, const float* a, const float* b, int64_t npix, int64_t lanes, int64_t sa) {
  if (sa == lanes) {
    int64_t n = npix * lanes, i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, Op::v8(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
    for (; i < n; ++i) dst[i] = Op::s(a[i], b[i]);
    return;
  }
  if (lanes == 8 || lanes == 16) {
    for (int64_t p = 0; p < npix; ++p)
      for (int64_t l = 0; l < lanes; l += 8)
        _mm256_storeu_ps(dst + p * lanes + l, Op::v8(_mm256_loadu_ps(a + p * sa + l), _mm256_loadu_ps(b + p * sa + l)));
    return;
  }
  int64_t p = 0;
  if (lanes == 1 && sa == 2) {
    for (; p + 8 < npix; p += 8) {
      const float* ap = a + 2 * p;
      const float* bp = b + 2 * p;
      __m256 lo = Op::v8(_mm256_loadu_ps(ap), _mm256_loadu_ps(bp));
      __m256 hi = Op::v8(_mm256_loadu_ps(ap + 8), _mm256_loadu_ps(bp + 8));
      _mm256_storeu_ps(dst + p, evens8(lo, hi));
    }
  }
  for (; p < npix; ++p)
    for (int64_t l = 0; l < lanes; ++l) dst[p * lanes + l] = Op::s(a[p * sa + l], b[p * sa + l]);
}

template <class Op>
void pair_avx2(float* dst, int64_t ldd, const float* a, int64_t lda, const float* b, int64_t ldb, int64_t rows,
               int64_t npix, int64_t lanes, int64_t sa) {
  merge_rows(rows, npix, lanes, sa, ldd, lda, ldb);
  for (int64_t r = 0; r < rows; ++r) pair_row_avx2<Op>(dst + r * ldd, a + r * lda, b + r * ldb, npix, lanes, sa);
}

inline void fill_avx2(float* d, int64_t n, __m256 v, float f) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(d + i, v);
  for (; i < n; ++i) d[i] = f;
}

void pad_rows_avx2(float* dst, int64_t ldd, const float* src, int64_t lds, int64_t rows, int64_t left, int64_t mid,
                   int64_t right, int64_t lanes, float fill, bool floor) {
  const __m256 fv = _mm256_set1_ps(fill);
  const float low = floor ? kLowest : -kInf;
  const __m256 lo = _mm256_set1_ps(low);
  const int64_t n = mid * lanes;
  for (int64_t r = 0; r < rows; ++r) {
    float* d = dst + r * ldd;
    const float* s = src + r * lds;
    fill_avx2(d, left * lanes, fv, fill);
    d += left * lanes;
    int64_t i = 0;
    if (n >= 8)  // the tail as a last step over the final 8, overlapping the one before
      for (int64_t next = 0; i < n; i = next) {
        i = min64(next, n - 8);
        next = i + 8;
        __m256 x = _mm256_loadu_ps(s + i);
        _mm256_storeu_ps(d + i, floor ? _mm256_max_ps(x, lo) : x);
      }
    for (; i < n; ++i) d[i] = !floor || s[i] > low ? s[i] : low;
    fill_avx2(d + n, right * lanes, fv, fill);
  }
}

template <class Op>
void vert_run_avx2(float* d, const float* x, int64_t tstride, int64_t taps, int64_t n, float init) {
  const __m256 iv = _mm256_set1_ps(init);
  int64_t i = 0;
  if (n >= 8)  // the tail as a last step over the final 8, overlapping the one before
    for (int64_t next = 0; i < n; i = next) {
      i = min64(next, n - 8);
      next = i + 8;
      __m256 acc = iv;
      for (int64_t t = 0; t < taps; ++t) acc = Op::v8(_mm256_loadu_ps(x + t * tstride + i), acc);
      _mm256_storeu_ps(d + i, acc);
    }
  for (; i < n; ++i) {
    float acc = init;
    for (int64_t t = 0; t < taps; ++t) acc = Op::s(x[t * tstride + i], acc);
    d[i] = acc;
  }
}

void vert_avx2(float* dst, int64_t ldd, const float* x, int64_t ldx, int64_t h, int64_t first, int64_t sh, int64_t kh,
               int64_t dh, int64_t rows, int64_t left, int64_t mid, int64_t right, int64_t lanes, float fill,
               bool is_max) {
  const __m256 fv = _mm256_set1_ps(fill);
  for (int64_t r = 0; r < rows; ++r) {
    float* d = dst + r * ldd;
    int64_t start = first + r * sh, t0, t1;
    taps_inside(start, kh, dh, h, t0, t1);
    fill_avx2(d, left * lanes, fv, fill);
    const float* xr = t1 > t0 ? x + (start + t0 * dh) * ldx : x;
    if (is_max)
      vert_run_avx2<MaxOp>(d + left * lanes, xr, dh * ldx, t1 - t0, mid * lanes, kLowest);
    else
      vert_run_avx2<AddOp>(d + left * lanes, xr, dh * ldx, t1 - t0, mid * lanes, 0.0f);
    fill_avx2(d + (left + mid) * lanes, right * lanes, fv, fill);
  }
}

template <class Op>
void hwin_row_avx2(float* d, const float* v, int64_t npix, int64_t lanes, int64_t sa, int64_t k, int64_t step,
                   const float* q) {
  int64_t p = 0;
  if (lanes == 1 && sa == 1 && npix >= 8) {
    // The tail is a last step over the final 8 outputs, overlapping the one
    // before (outputs are written, never read).
    for (int64_t next = 0; p < npix; p = next) {
      p = min64(next, npix - 8);
      next = p + 8;
      __m256 acc = _mm256_loadu_ps(v + p);
      for (int64_t t = 1; t < k; ++t) acc = Op::v8(_mm256_loadu_ps(v + p + t * step), acc);
      if (q) acc = _mm256_div_ps(acc, _mm256_loadu_ps(q + p));
      _mm256_storeu_ps(d + p, acc);
    }
  } else if (lanes == 1 && sa == 2) {
    for (; p + 8 < npix; p += 8) {
      const float* s = v + 2 * p;
      __m256 lo = _mm256_loadu_ps(s), hi = _mm256_loadu_ps(s + 8);
      for (int64_t t = 1; t < k; ++t) {
        lo = Op::v8(_mm256_loadu_ps(s + t * step), lo);
        hi = Op::v8(_mm256_loadu_ps(s + t * step + 8), hi);
      }
      __m256 acc = evens8(lo, hi);
      if (q) acc = _mm256_div_ps(acc, _mm256_loadu_ps(q + p));
      _mm256_storeu_ps(d + p, acc);
    }
  } else if (lanes == 8 || lanes == 16) {
    for (; p < npix; ++p) {
      const float* s = v + p * sa;
      for (int64_t l = 0; l < lanes; l += 8) {
        __m256 acc = _mm256_loadu_ps(s + l);
        for (int64_t t = 1; t < k; ++t) acc = Op::v8(_mm256_loadu_ps(s + t * step + l), acc);
        if (q) acc = _mm256_div_ps(acc, _mm256_set1_ps(q[p]));
        _mm256_storeu_ps(d + p * lanes + l, acc);
      }
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

void hwin_avx2(float* dst, int64_t ldd, const float* v, int64_t ldv, int64_t rows, int64_t npix, int64_t lanes,
               int64_t sa, int64_t k, int64_t step, bool is_max, const float* q, int64_t ldq) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* qr = q ? q + r * ldq : nullptr;
    if (is_max)
      hwin_row_avx2<MaxOp>(dst + r * ldd, v + r * ldv, npix, lanes, sa, k, step, qr);
    else
      hwin_row_avx2<AddOp>(dst + r * ldd, v + r * ldv, npix, lanes, sa, k, step, qr);
  }
}

inline void widen_add8(__m256 v, __m256d& lo, __m256d& hi) {
  lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
  hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
}

void reduce_max_avx2(float* out, const float* a, int64_t npix, int64_t lanes) {
  const __m256 ninf = _mm256_set1_ps(-kInf);
  if (lanes == 1) {
    __m256 m = ninf;
    int64_t i = 0;
    for (; i + 8 <= npix; i += 8) m = _mm256_max_ps(_mm256_loadu_ps(a + i), m);
    alignas(32) float t[8];
    _mm256_store_ps(t, m);
    float r = -kInf;
    for (float v : t) r = v > r ? v : r;
    for (; i < npix; ++i) r = a[i] > r ? a[i] : r;
    out[0] = r;
    return;
  }
  if (lanes == 8 || lanes == 16) {
    for (int64_t l = 0; l < lanes; l += 8) {
      __m256 m = ninf;
      for (int64_t p = 0; p < npix; ++p) m = _mm256_max_ps(_mm256_loadu_ps(a + p * lanes + l), m);
      _mm256_storeu_ps(out + l, m);
    }
    return;
  }
  reduce_max_generic(out, a, npix, lanes);
}

void reduce_mean_avx2(float* out, const float* a, int64_t npix, int64_t lanes) {
  const double n = static_cast<double>(npix);
  if (lanes == 1) {
    __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
    int64_t i = 0;
    for (; i + 8 <= npix; i += 8) widen_add8(_mm256_loadu_ps(a + i), lo, hi);
    alignas(32) double t[4];
    _mm256_store_pd(t, _mm256_add_pd(lo, hi));
    double s = (t[0] + t[1]) + (t[2] + t[3]);
    for (; i < npix; ++i) s += static_cast<double>(a[i]);
    out[0] = static_cast<float>(s / n);
    return;
  }
  if (lanes == 8 || lanes == 16) {
    const __m256d nv = _mm256_set1_pd(n);
    for (int64_t l = 0; l < lanes; l += 8) {
      __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
      for (int64_t p = 0; p < npix; ++p) widen_add8(_mm256_loadu_ps(a + p * lanes + l), lo, hi);
      _mm_storeu_ps(out + l, _mm256_cvtpd_ps(_mm256_div_pd(lo, nv)));
      _mm_storeu_ps(out + l + 4, _mm256_cvtpd_ps(_mm256_div_pd(hi, nv)));
    }
    return;
  }
  reduce_mean_generic(out, a, npix, lanes);
}

constexpr PixelOps kOps{pair_avx2<MaxOp>, pad_rows_avx2, vert_avx2, hwin_avx2, reduce_max_avx2, reduce_mean_avx2};

// The direct MaxPool's vectors (pool_ukr.h).
struct Ymm {
  static constexpr int64_t kLanes = 8;
  using V = __m256;
  static V set1(float v) { return _mm256_set1_ps(v); }
  static V loadu(const float* p) { return _mm256_loadu_ps(p); }
  static void storeu(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }
};
constexpr DirectMaxPool kDirectMax = DirectMax<Ymm>::kernels();

}  // namespace

const DirectMaxPool& pool_direct_max_avx2() { return kDirectMax; }

const PixelOps& pool_pixel_ops_avx2() { return kOps; }

}  // namespace minirt::cpu
