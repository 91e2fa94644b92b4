// The SGEMM's AVX2 + FMA kernels: 4 x 24 tiles (three ymm of columns) and
// narrow tails of up to 3 columns along the 4 rows (xmm). Compiled with
// -mavx2 -mfma (CMakeLists.txt) and called only after cpuid says the CPU has
// them (sgemm.cpp). The one global symbol is sgemm_kernels_avx2; everything
// else is in an anonymous namespace (tests/cli/isa_objects_test.sh checks it).
#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/sgemm_isa.h"
#include "kernels/cpu/sgemm_ukr.h"

// vmath_avx2.h's register forms local to this object (MINIRT_VMATH_INLINE there).
#define MINIRT_VMATH_INLINE static inline
#include "kernels/cpu/vmath_avx2.h"  // act_avx2: always inlined, target avx2,fma

namespace minirt::cpu {
namespace {

// The narrow kernels' vector: the 4 rows of an A panel.
struct Xmm {
  static constexpr int kLanes = 4;
  using V = __m128;
  static V zero() { return _mm_setzero_ps(); }
  static V load(const float* p) { return _mm_loadu_ps(p); }
  static void store_aligned(float* p, V v) { _mm_store_ps(p, v); }
  static V set1(float v) { return _mm_set1_ps(v); }
  static V fmadd(V a, V b, V c) { return _mm_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm_add_ps(a, b); }
};

// vmaskmovps: the first n lanes of kLaneMask + 8 - n are set.
alignas(32) const int32_t kLaneMask[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

struct Ymm {
  static constexpr int kMr = kSgemmAvx2Shape.mr, kNr = kSgemmAvx2Shape.nr, kLanes = 8;
  static constexpr bool kMaskEveryInPlace = false;  // vmaskmovps is slower than vmovups: the last vector only
  using V = __m256;
  using Mask = __m256i;
  using Row = Xmm;
  static V zero() { return _mm256_setzero_ps(); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static V load(const float* p, Mask m) { return _mm256_maskload_ps(p, m); }
  static void store(float* p, Mask m, V v) { _mm256_maskstore_ps(p, m, v); }
  static V broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  static V set1(float v) { return _mm256_set1_ps(v); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static Mask mask(int n) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kLaneMask + 8 - n)); }
  static V act(V x, const Activation& a) { return act_avx2(x, a); }
};
static_assert(kSgemmAvx2Shape.vw == Ymm::kLanes);

constexpr SgemmKernels kKernels = Tile<Ymm>::make<kSgemmAvx2Shape.narrow_max>();

}  // namespace

const SgemmKernels& sgemm_kernels_avx2() { return kKernels; }

}  // namespace minirt::cpu
