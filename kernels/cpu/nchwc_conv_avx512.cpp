// The blocked float32 convolution's AVX-512 microkernels: tiles of up to 12
// pixels x 4 output blocks of 16 channels (nchwc_conv_isa.h), the body
// nchwc_conv_ukr.h, the vector traits here. Compiled with -mavx512f -mavx2
// -mfma (CMakeLists.txt) and reached only through specs whose ISA the CPU
// has (nchwc_direct_declined, nchwc_depthwise_declined). The one global
// symbol is nchwc_conv_kernels_avx512 (tests/cli/isa_objects_test.sh).
#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/nchwc_conv_isa.h"

// vmath_avx512.h's register forms local to this object (MINIRT_VMATH_INLINE there).
#define MINIRT_VMATH_INLINE static inline
#include "kernels/cpu/vmath_avx512.h"

// GCC 12 takes the self-initialized _mm512_undefined_ps() inside
// _mm512_min_ps for an uninitialized read when it inlines it into the
// microkernels: a false positive.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "kernels/cpu/nchwc_conv_ukr.h"

namespace minirt::cpu {
namespace {

struct Zmm {
  static constexpr int kLanes = 16;
  using V = __m512;
  static V zero() { return _mm512_setzero_ps(); }
  static V load(const float* p) { return _mm512_load_ps(p); }
  static V loadu(const float* p) { return _mm512_loadu_ps(p); }
  static void storeu(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V set1(float v) { return _mm512_set1_ps(v); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V max(V a, V b) { return _mm512_max_ps(a, b); }
  static V min(V a, V b) { return _mm512_min_ps(a, b); }
  static V act(V x, const Activation& a) { return act_avx512(x, a); }
  template <ActKind K>
  static V act_kind(V x, const Activation& a) {
    return act_kind_avx512<K>(x, a);
  }
  // The quantized SiLU by its table: the code of v on pre's grid looks up
  // act(v gate(sigmoid(v))) (quant_silu_table_avx512, built by the driver).
  __attribute__((noinline)) static void gated(float* y, int64_t ps, int64_t bs, int n, int nb,
                                              const nchwc_tiles::DwArgs& a) {
    const Activation& pre = *a.pre;
    const __m512 alpha = _mm512_set1_ps(pre.alpha), lo = _mm512_set1_ps(pre.beta), hi = _mm512_set1_ps(pre.gamma);
    const __m512 inv = quant_inverse_avx512(alpha);
    const __m512i ilo = _mm512_set1_epi32(static_cast<int32_t>(pre.beta));
    for (int p = 0; p < n; ++p)
      for (int o = 0; o < nb; ++o) {
        float* q = y + p * ps + o * bs;
        const __m512 k = quant_round_avx512(_mm512_loadu_ps(q), alpha, inv, lo, hi);
        _mm512_storeu_ps(q, lut256_avx512(a.table, _mm512_sub_epi32(_mm512_cvtps_epi32(k), ilo)));
      }
  }
};

using nchwc_tiles::kUr512;
constexpr nchwc_tiles::Kernels kKernels = ConvTiles<Zmm>::kernels<kUr512[0], kUr512[1], kUr512[2], kUr512[3]>();

}  // namespace

const nchwc_tiles::Kernels& nchwc_conv_kernels_avx512() { return kKernels; }

}  // namespace minirt::cpu

#pragma GCC diagnostic pop
