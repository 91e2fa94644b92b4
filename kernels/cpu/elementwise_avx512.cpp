// The float binary ops' and Pow's loops for AVX-512 (elementwise_isa.h).
// Compiled with -mavx512f -mavx2 -mfma (CMakeLists.txt) and called only where the CPU has
// the set (pick_inner_float, pow_special in elementwise.cpp); the entry point
// is its one global symbol (tests/cli/isa_objects_test.sh).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/cpu/elementwise_isa.h"
#include "kernels/cpu/elementwise_ukr.h"

// vmath_avx512.h's register forms local to this object (MINIRT_VMATH_INLINE there).
#define MINIRT_VMATH_INLINE static inline
#include "kernels/cpu/vmath_avx512.h"  // vmath_detail::kInf

// GCC 12 takes the self-initialized _mm512_undefined_ps() inside
// _mm512_min_ps for an uninitialized read when it inlines it: a false
// positive.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace minirt::cpu {
namespace {

template <VecBinary K>
inline __m512 bin512(__m512 a, __m512 b) {
  if constexpr (K == VecBinary::kAdd)
    return _mm512_add_ps(a, b);
  else if constexpr (K == VecBinary::kSub)
    return _mm512_sub_ps(a, b);
  else if constexpr (K == VecBinary::kMul)
    return _mm512_mul_ps(a, b);
  else if constexpr (K == VecBinary::kDiv)
    return _mm512_div_ps(a, b);
  else if constexpr (K == VecBinary::kMax)
    return _mm512_max_ps(a, b);  // a > b ? a : b
  else if constexpr (K == VecBinary::kMin)
    return _mm512_min_ps(a, b);  // a < b ? a : b
  else
    return _mm512_mask_mul_ps(a, _mm512_cmp_ps_mask(a, _mm512_setzero_ps(), _CMP_LT_OQ), a, b);  // PRelu
}

template <VecBinary K>
void inner_avx512(const float* a, int64_t sa, const float* b, int64_t sb, float* y, int64_t n) {
  if (!sa && !sb) {
    const float v = scalar_bin<K>(*a, *b);
    for (int64_t i = 0; i < n; ++i) y[i] = v;
    return;
  }
  const __m512 av = _mm512_set1_ps(*a), bv = _mm512_set1_ps(*b);
  int64_t i = 0;
  // Two vectors a step: the loads of one overlap the arithmetic of the other.
  if (sa && sb) {
    for (; i + 32 <= n; i += 32) {
      _mm512_storeu_ps(y + i, bin512<K>(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i)));
      _mm512_storeu_ps(y + i + 16, bin512<K>(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16)));
    }
  } else if (sa) {
    for (; i + 32 <= n; i += 32) {
      _mm512_storeu_ps(y + i, bin512<K>(_mm512_loadu_ps(a + i), bv));
      _mm512_storeu_ps(y + i + 16, bin512<K>(_mm512_loadu_ps(a + i + 16), bv));
    }
  } else {
    for (; i + 32 <= n; i += 32) {
      _mm512_storeu_ps(y + i, bin512<K>(av, _mm512_loadu_ps(b + i)));
      _mm512_storeu_ps(y + i + 16, bin512<K>(av, _mm512_loadu_ps(b + i + 16)));
    }
  }
  for (; i < n; i += 16) {
    __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (n - i)) - 1);
    // Masked-off lanes read 1s, so that no division by zero is even computed.
    __m512 x = sa ? _mm512_mask_loadu_ps(_mm512_set1_ps(1.0f), m, a + i) : av;
    __m512 z = sb ? _mm512_mask_loadu_ps(_mm512_set1_ps(1.0f), m, b + i) : bv;
    _mm512_mask_storeu_ps(y + i, m, bin512<K>(x, z));
  }
}

template <PowBy P>
inline __m512 pow512(__m512 x) {
  if constexpr (P == PowBy::kTwo) {
    return _mm512_mul_ps(x, x);
  } else if constexpr (P == PowBy::kThree) {
    __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(x));
    __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)));
    lo = _mm512_mul_pd(_mm512_mul_pd(lo, lo), lo);
    hi = _mm512_mul_pd(_mm512_mul_pd(hi, hi), hi);
    // (insertf64x4 rather than insertf32x8, which is AVX-512DQ)
    __m512d both = _mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(_mm512_cvtpd_ps(lo))),
                                      _mm256_castps_pd(_mm512_cvtpd_ps(hi)), 1);
    return _mm512_castpd_ps(both);
  } else if constexpr (P == PowBy::kHalf) {
    __m512 r = _mm512_add_ps(_mm512_sqrt_ps(x), _mm512_setzero_ps());  // sqrt(-0) + 0 = +0
    __mmask16 ninf = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-vmath_detail::kInf), _CMP_EQ_OQ);
    return _mm512_mask_mov_ps(r, ninf, _mm512_set1_ps(vmath_detail::kInf));
  } else {
    return _mm512_div_ps(_mm512_set1_ps(1.0f), x);  // kMinusOne
  }
}

template <PowBy P>
void pow_avx512(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m, pow512<P>(_mm512_mask_loadu_ps(_mm512_set1_ps(1.0f), m, x + i)));
  }
}

// The loops as make_kernels (elementwise_ukr.h) takes them.
struct Loops {
  template <VecBinary K>
  static constexpr FloatBinaryFn inner = &inner_avx512<K>;
  template <PowBy P>
  static constexpr FloatPowFn pow = &pow_avx512<P>;
};
constexpr ElementwiseKernels kKernels = make_kernels<Loops>();

}  // namespace

const ElementwiseKernels& elementwise_kernels_avx512() { return kKernels; }

}  // namespace minirt::cpu

#pragma GCC diagnostic pop
