// The blocked float32 convolution's AVX2 + FMA microkernels: tiles of up to
// 8 pixels x 3 output blocks of 8 channels (nchwc_conv_isa.h), the body
// nchwc_conv_ukr.h, the vector traits here. Compiled with -mavx2 -mfma
// (CMakeLists.txt) and reached only through specs whose ISA the CPU has
// (nchwc_direct_declined, nchwc_depthwise_declined). The one global symbol
// is nchwc_conv_kernels_avx2 (tests/cli/isa_objects_test.sh).
#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/nchwc_conv_isa.h"

// vmath_avx2.h's register forms local to this object (MINIRT_VMATH_INLINE there).
#define MINIRT_VMATH_INLINE static inline
#include "kernels/cpu/vmath_avx2.h"

#include "kernels/cpu/nchwc_conv_ukr.h"

namespace minirt::cpu {
namespace {

struct Ymm {
  static constexpr int kLanes = 8;
  using V = __m256;
  static V zero() { return _mm256_setzero_ps(); }
  static V load(const float* p) { return _mm256_load_ps(p); }
  static V loadu(const float* p) { return _mm256_loadu_ps(p); }
  static void storeu(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V set1(float v) { return _mm256_set1_ps(v); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }
  static V min(V a, V b) { return _mm256_min_ps(a, b); }
  static V act(V x, const Activation& a) { return act_avx2(x, a); }
  template <ActKind K>
  static V act_kind(V x, const Activation& a) {
    return act_kind_avx2<K>(x, a);
  }
  // The quantized SiLU as the steps it replaces compute it: v = pre(y), then
  // act(v gate(sigmoid(v))), each grid the pair's exact rounding.
  __attribute__((noinline)) static void gated(float* y, int64_t ps, int64_t bs, int n, int nb,
                                              const nchwc_tiles::DwArgs& a) {
    for (int p = 0; p < n; ++p)
      for (int o = 0; o < nb; ++o) {
        float* q = y + p * ps + o * bs;
        const __m256 v = act_avx2(_mm256_loadu_ps(q), *a.pre);
        const __m256 sg = act_kind_avx2<ActKind::kQuantGrid>(act_kind_avx2<ActKind::kSigmoid>(v, *a.gate), *a.gate);
        _mm256_storeu_ps(q, act_avx2(_mm256_mul_ps(v, sg), *a.act));
      }
  }
};

using nchwc_tiles::kUr256;
constexpr nchwc_tiles::Kernels kKernels = ConvTiles<Ymm>::kernels<kUr256[0], kUr256[1], kUr256[2]>();
constexpr nchwc_tiles::PlainKernels kPlainKernels = ConvTiles<Ymm>::plain_kernels<kUr256[0], kUr256[1], kUr256[2]>();

}  // namespace

const nchwc_tiles::Kernels& nchwc_conv_kernels_avx2() { return kKernels; }
const nchwc_tiles::PlainKernels& nchwc_conv_plain_kernels_avx2() { return kPlainKernels; }

}  // namespace minirt::cpu
