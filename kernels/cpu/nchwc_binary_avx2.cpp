// The blocked binary ops on 8 lanes (nchwc_binary_isa.h, the loop in
// nchwc_binary_ukr.h). Compiled with -mavx2 (CMakeLists.txt) and called only
// where cpuid says avx2 (nchwc_elementwise.cpp); the entry point is its only
// global symbol (tests/cli/isa_objects_test.sh).
#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/nchwc_binary_isa.h"
#include "kernels/cpu/nchwc_binary_ukr.h"

namespace minirt::cpu {
namespace {

struct Ymm {
  static constexpr int kLanes = 8;
  static __m256 load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, __m256 v) { _mm256_storeu_ps(p, v); }
  static __m256 add(__m256 a, __m256 c) { return _mm256_add_ps(a, c); }
  static __m256 sub(__m256 a, __m256 c) { return _mm256_sub_ps(a, c); }
  static __m256 mul(__m256 a, __m256 c) { return _mm256_mul_ps(a, c); }
  static __m256 max(__m256 a, __m256 c) { return _mm256_max_ps(a, c); }
  static __m256 min(__m256 a, __m256 c) { return _mm256_min_ps(a, c); }
  static __m256 div(__m256 a, __m256 c) { return _mm256_div_ps(a, c); }
  static __m256 prelu(__m256 a, __m256 c) {
    return _mm256_blendv_ps(a, _mm256_mul_ps(a, c), _mm256_cmp_ps(a, _mm256_setzero_ps(), _CMP_LT_OQ));
  }
};

}  // namespace

BlockedBinaryRun nchwc_binary_run_avx2(BinaryKind k) { return binary_table<Ymm>(k); }

}  // namespace minirt::cpu
