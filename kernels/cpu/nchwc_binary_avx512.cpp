// The blocked binary ops on 16 lanes (nchwc_binary_isa.h, the loop in
// nchwc_binary_ukr.h). Compiled with -mavx512f (CMakeLists.txt) and called
// only where cpuid says avx512f (nchwc_elementwise.cpp); the entry point is its
// only global symbol (tests/cli/isa_objects_test.sh).
#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/nchwc_binary_isa.h"
#include "kernels/cpu/nchwc_binary_ukr.h"

namespace minirt::cpu {
namespace {

struct Zmm {
  static constexpr int kLanes = 16;
  static __m512 load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, __m512 v) { _mm512_storeu_ps(p, v); }
  static __m512 add(__m512 a, __m512 c) { return _mm512_add_ps(a, c); }
  static __m512 sub(__m512 a, __m512 c) { return _mm512_sub_ps(a, c); }
  static __m512 mul(__m512 a, __m512 c) { return _mm512_mul_ps(a, c); }
  static __m512 max(__m512 a, __m512 c) { return _mm512_max_ps(a, c); }
  static __m512 min(__m512 a, __m512 c) { return _mm512_min_ps(a, c); }
  static __m512 div(__m512 a, __m512 c) { return _mm512_div_ps(a, c); }
  static __m512 prelu(__m512 a, __m512 c) {
    return _mm512_mask_mul_ps(a, _mm512_cmp_ps_mask(a, _mm512_setzero_ps(), _CMP_LT_OQ), a, c);
  }
};

}  // namespace

BlockedBinaryRun nchwc_binary_run_avx512(BinaryKind k) { return binary_table<Zmm>(k); }

}  // namespace minirt::cpu
