// The float32 Winograd convolution's AVX2 kernels (winograd_isa.h): the
// body winograd_ukr.h, the vector traits here. Compiled with -mavx2 -mfma
// (CMakeLists.txt) and reached only through specs whose ISA the CPU has
// (nchwc_winograd_declined). The one global symbol is nchwc_winograd_kernels_avx2
// (tests/cli/isa_objects_test.sh).
#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/winograd_isa.h"

// vmath_avx2.h's register forms local to this object (MINIRT_VMATH_INLINE there).
#define MINIRT_VMATH_INLINE static inline
#include "kernels/cpu/vmath_avx2.h"

#include "kernels/cpu/winograd_ukr.h"

namespace minirt::cpu {
namespace {

struct Avx2 {
  using V = __m256;
  static constexpr int B = 8;
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static V loadu(const float* p) { return _mm256_loadu_ps(p); }
  static V load_aligned(const float* p) { return _mm256_load_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static void storeu(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V set1(float f) { return _mm256_set1_ps(f); }
  static V zero() { return _mm256_setzero_ps(); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V fma(float k, V a, V c) { return _mm256_fmadd_ps(_mm256_set1_ps(k), a, c); }
  static V fmav(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }
  static V min(V a, V b) { return _mm256_min_ps(a, b); }
  static V act(V x, const Activation& a) { return act_avx2(x, a); }
  template <ActKind K>
  static V act_kind(V x, const Activation& a) {
    return act_kind_avx2<K>(x, a);
  }
};

constexpr winograd_tiles::Kernels kKernels =
    WinogradTiles<Avx2>::kernels<winograd_tiles::kUr256[0], winograd_tiles::kUr256[1], winograd_tiles::kUr256[2]>();

}  // namespace

const winograd_tiles::Kernels& nchwc_winograd_kernels_avx2() { return kKernels; }

}  // namespace minirt::cpu
