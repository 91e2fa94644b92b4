// The float32 Winograd convolution's AVX-512 kernels (winograd_isa.h): the
// body winograd_ukr.h, the vector traits here. Compiled with -mavx512f -mavx2 -mfma
// (CMakeLists.txt) and reached only through specs whose ISA the CPU has
// (nchwc_winograd_declined). The one global symbol is nchwc_winograd_kernels_avx512
// (tests/cli/isa_objects_test.sh).
#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/winograd_isa.h"

// vmath_avx512.h's register forms local to this object (MINIRT_VMATH_INLINE there).
#define MINIRT_VMATH_INLINE static inline
#include "kernels/cpu/vmath_avx512.h"

// GCC 12 takes the self-initialized _mm512_undefined_ps() inside
// _mm512_min_ps for an uninitialized read when it inlines it into the
// kernels: a false positive.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "kernels/cpu/winograd_ukr.h"

namespace minirt::cpu {
namespace {

struct Avx512 {
  using V = __m512;
  static constexpr int B = 16;
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static V loadu(const float* p) { return _mm512_loadu_ps(p); }
  static V load_aligned(const float* p) { return _mm512_load_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static void storeu(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V set1(float f) { return _mm512_set1_ps(f); }
  static V zero() { return _mm512_setzero_ps(); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  // k * a + c
  static V fma(float k, V a, V c) { return _mm512_fmadd_ps(_mm512_set1_ps(k), a, c); }
  static V fmav(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V max(V a, V b) { return _mm512_max_ps(a, b); }
  static V min(V a, V b) { return _mm512_min_ps(a, b); }
  static V act(V x, const Activation& a) { return act_avx512(x, a); }
  template <ActKind K>
  static V act_kind(V x, const Activation& a) {
    return act_kind_avx512<K>(x, a);
  }
};

constexpr winograd_tiles::Kernels kKernels =
    WinogradTiles<Avx512>::kernels<winograd_tiles::kUr512[0], winograd_tiles::kUr512[1], winograd_tiles::kUr512[2],
                                   winograd_tiles::kUr512[3]>();

}  // namespace

const winograd_tiles::Kernels& nchwc_winograd_kernels_avx512() { return kKernels; }

}  // namespace minirt::cpu

#pragma GCC diagnostic pop
