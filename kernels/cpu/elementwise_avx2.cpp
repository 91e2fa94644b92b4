// The float binary ops' and Pow's loops for AVX2 (elementwise_isa.h).
// Compiled with -mavx2 -mfma (CMakeLists.txt) and called only where the CPU has
// the set (pick_inner_float, pow_special in elementwise.cpp); the entry point
// is its one global symbol (tests/cli/isa_objects_test.sh).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/cpu/elementwise_isa.h"
#include "kernels/cpu/elementwise_ukr.h"

// vmath_avx2.h's register forms local to this object (MINIRT_VMATH_INLINE there).
#define MINIRT_VMATH_INLINE static inline
#include "kernels/cpu/vmath_avx2.h"  // vmath_detail::kInf

namespace minirt::cpu {
namespace {

template <VecBinary K>
inline __m256 bin256(__m256 a, __m256 b) {
  if constexpr (K == VecBinary::kAdd)
    return _mm256_add_ps(a, b);
  else if constexpr (K == VecBinary::kSub)
    return _mm256_sub_ps(a, b);
  else if constexpr (K == VecBinary::kMul)
    return _mm256_mul_ps(a, b);
  else if constexpr (K == VecBinary::kDiv)
    return _mm256_div_ps(a, b);
  else if constexpr (K == VecBinary::kMax)
    return _mm256_max_ps(a, b);
  else if constexpr (K == VecBinary::kMin)
    return _mm256_min_ps(a, b);
  else
    return _mm256_blendv_ps(a, _mm256_mul_ps(a, b), _mm256_cmp_ps(a, _mm256_setzero_ps(), _CMP_LT_OQ));
}

template <VecBinary K>
void inner_avx2(const float* a, int64_t sa, const float* b, int64_t sb, float* y, int64_t n) {
  if (!sa && !sb) {
    const float v = scalar_bin<K>(*a, *b);
    for (int64_t i = 0; i < n; ++i) y[i] = v;
    return;
  }
  const __m256 av = _mm256_set1_ps(*a), bv = _mm256_set1_ps(*b);
  int64_t i = 0;
  if (sa && sb) {
    for (; i + 16 <= n; i += 16) {
      _mm256_storeu_ps(y + i, bin256<K>(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
      _mm256_storeu_ps(y + i + 8, bin256<K>(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8)));
    }
  } else if (sa) {
    for (; i + 16 <= n; i += 16) {
      _mm256_storeu_ps(y + i, bin256<K>(_mm256_loadu_ps(a + i), bv));
      _mm256_storeu_ps(y + i + 8, bin256<K>(_mm256_loadu_ps(a + i + 8), bv));
    }
  } else {
    for (; i + 16 <= n; i += 16) {
      _mm256_storeu_ps(y + i, bin256<K>(av, _mm256_loadu_ps(b + i)));
      _mm256_storeu_ps(y + i + 8, bin256<K>(av, _mm256_loadu_ps(b + i + 8)));
    }
  }
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, bin256<K>(sa ? _mm256_loadu_ps(a + i) : av, sb ? _mm256_loadu_ps(b + i) : bv));
  // The tail in scalar: the same IEEE operations and comparisons.
  for (; i < n; ++i) y[i] = scalar_bin<K>(a[sa ? i : 0], b[sb ? i : 0]);
}

template <PowBy P>
inline __m256 pow256(__m256 x) {
  if constexpr (P == PowBy::kTwo) {
    return _mm256_mul_ps(x, x);
  } else if constexpr (P == PowBy::kThree) {
    __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(x));
    __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1));
    lo = _mm256_mul_pd(_mm256_mul_pd(lo, lo), lo);
    hi = _mm256_mul_pd(_mm256_mul_pd(hi, hi), hi);
    return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm256_cvtpd_ps(lo)), _mm256_cvtpd_ps(hi), 1);
  } else if constexpr (P == PowBy::kHalf) {
    __m256 r = _mm256_add_ps(_mm256_sqrt_ps(x), _mm256_setzero_ps());
    __m256 ninf = _mm256_cmp_ps(x, _mm256_set1_ps(-vmath_detail::kInf), _CMP_EQ_OQ);
    return _mm256_blendv_ps(r, _mm256_set1_ps(vmath_detail::kInf), ninf);
  } else {
    return _mm256_div_ps(_mm256_set1_ps(1.0f), x);
  }
}

template <PowBy P>
void pow_avx2(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, pow256<P>(_mm256_loadu_ps(x + i)));
  if (i < n) {
    alignas(32) float t[8] = {};
    size_t bytes = static_cast<size_t>(n - i) * sizeof(float);
    std::memcpy(t, x + i, bytes);
    _mm256_store_ps(t, pow256<P>(_mm256_load_ps(t)));
    std::memcpy(y + i, t, bytes);
  }
}

// The loops as make_kernels (elementwise_ukr.h) takes them.
struct Loops {
  template <VecBinary K>
  static constexpr FloatBinaryFn inner = &inner_avx2<K>;
  template <PowBy P>
  static constexpr FloatPowFn pow = &pow_avx2<P>;
};
constexpr ElementwiseKernels kKernels = make_kernels<Loops>();

}  // namespace

const ElementwiseKernels& elementwise_kernels_avx2() { return kKernels; }

}  // namespace minirt::cpu
