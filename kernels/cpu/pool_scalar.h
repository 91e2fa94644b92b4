// The pooling primitives' scalar pieces, which the engines (pool.cpp) and
// the ISA files (pool_avx512.cpp, pool_avx2.cpp) both use: everything in an
// anonymous namespace, so each object has its own copy, and no std template
// (an instantiation in an ISA object would be a weak symbol).
#pragma once

#include <cstdint>

namespace minirt::cpu {
namespace {

constexpr float kLowest = -3.40282347e+38f;  // std::numeric_limits<float>::lowest()
constexpr float kInf = __builtin_inff();

inline int64_t min64(int64_t a, int64_t b) { return b < a ? b : a; }
inline int64_t max64(int64_t a, int64_t b) { return a < b ? b : a; }

// The taps [t0, t1) of a k-tap window with step d starting at row `start`
// that fall in [0, h).
inline void taps_inside(int64_t start, int64_t k, int64_t d, int64_t h, int64_t& t0, int64_t& t1) {
  t0 = start >= 0 ? 0 : min64(k, (-start + d - 1) / d);
  t1 = start >= h ? 0 : min64(k, (h - start + d - 1) / d);
  t1 = max64(t0, t1);
}

// A strided 2-D run whose rows are back to back is one contiguous row.
inline void merge_rows(int64_t& rows, int64_t& npix, int64_t lanes, int64_t sa, int64_t ldd, int64_t lda, int64_t ldb) {
  int64_t n = npix * lanes;
  if (rows > 1 && sa == lanes && ldd == n && lda == n && ldb == n) {
    npix *= rows;
    rows = 1;
  }
}

// Portable reductions (out[l] over the npix pixels of a), the ISA files' fallback for other lane counts.
inline void reduce_max_generic(float* out, const float* a, int64_t npix, int64_t lanes) {
  for (int64_t l = 0; l < lanes; ++l) {
    float m = -kInf;
    for (int64_t p = 0; p < npix; ++p) m = a[p * lanes + l] > m ? a[p * lanes + l] : m;
    out[l] = m;
  }
}

inline void reduce_mean_generic(float* out, const float* a, int64_t npix, int64_t lanes) {
  for (int64_t l = 0; l < lanes; ++l) {
    double s = 0;
    for (int64_t p = 0; p < npix; ++p) s += static_cast<double>(a[p * lanes + l]);
    out[l] = static_cast<float>(s / static_cast<double>(npix));
  }
}

}  // namespace
}  // namespace minirt::cpu
