// Vectorized math for the CPU kernels: activations over arrays and over one
// SIMD register (for the epilogues of Conv and Gemm kernels, applied while a
// tile is still in registers).
//
//   apply_activation(act, p, n);               // in place over n floats, any ISA
//   __m512 v = act_avx512(v, act);             // inside an avx512f-targeted function
//   __m256 v = act_avx2(v, act);               // inside an avx2,fma-targeted function
//
// STATUS: interface stub. The register forms do Relu, Clip and LeakyRelu in
// vector instructions and every other activation through the scalar
// Activation::apply, lane by lane; the vmath work replaces the bodies with
// polynomial approximations and keeps these signatures.
#pragma once

#include "runtime/ops/activation.h"

#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MINIRT_VMATH_X86 1
#define MINIRT_TARGET_AVX512 __attribute__((target("avx512f,avx512dq,avx2,fma")))
#define MINIRT_TARGET_AVX2 __attribute__((target("avx2,fma")))
#else
#define MINIRT_VMATH_X86 0
#endif

namespace minirt::cpu {

// act over p[0, n), in place; vectorized for the best ISA the CPU has.
void apply_activation(const Activation& act, float* p, int64_t n);

#if MINIRT_VMATH_X86

MINIRT_TARGET_AVX512 inline __m512 act_avx512(__m512 x, const Activation& a) {
  switch (a.kind) {
    case ActKind::kNone: return x;
    case ActKind::kRelu: return _mm512_max_ps(x, _mm512_setzero_ps());
    case ActKind::kClip: return _mm512_min_ps(_mm512_set1_ps(a.beta), _mm512_max_ps(_mm512_set1_ps(a.alpha), x));
    case ActKind::kLeakyRelu: {
      __mmask16 ge = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GE_OQ);
      return _mm512_mask_blend_ps(ge, _mm512_mul_ps(x, _mm512_set1_ps(a.alpha)), x);
    }
    default: {
      alignas(64) float t[16];
      _mm512_store_ps(t, x);
      for (float& v : t) v = a.apply(v);
      return _mm512_load_ps(t);
    }
  }
}

MINIRT_TARGET_AVX2 inline __m256 act_avx2(__m256 x, const Activation& a) {
  switch (a.kind) {
    case ActKind::kNone: return x;
    case ActKind::kRelu: return _mm256_max_ps(x, _mm256_setzero_ps());
    case ActKind::kClip: return _mm256_min_ps(_mm256_set1_ps(a.beta), _mm256_max_ps(_mm256_set1_ps(a.alpha), x));
    case ActKind::kLeakyRelu: {
      __m256 ge = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GE_OQ);
      return _mm256_blendv_ps(_mm256_mul_ps(x, _mm256_set1_ps(a.alpha)), x, ge);
    }
    default: {
      alignas(32) float t[8];
      _mm256_store_ps(t, x);
      for (float& v : t) v = a.apply(v);
      return _mm256_load_ps(t);
    }
  }
}

#endif

}  // namespace minirt::cpu
