// The bf16 matrix product's AVX512_BF16 code (layouts in gemm_bf16_isa.h):
// a broadcast pair of A times a 64-byte pair-vector of W, vdpbf16ps, float32
// accumulation. Compiled with the AVX512_BF16 flags (CMakeLists.txt) and
// called only where cpu_isa() is avx512_bf16 or amx (gemm_bf16.cpp); the
// entry point is its only global symbol (tests/cli/isa_objects_test.sh).
#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/gemm_bf16_isa.h"
#include "runtime/ops/activation.h"  // the Activation struct's fields

// vmath_avx512.h's register forms local to this object (MINIRT_VMATH_INLINE there).
#define MINIRT_VMATH_INLINE static inline
#include "kernels/cpu/vmath_avx512.h"  // act_avx512: always inlined, target avx512f,avx2,fma

namespace minirt::cpu {
namespace {

inline __mmask16 first_lanes(int64_t n) {
  if (n <= 0) return 0;
  if (n >= 16) return 0xffff;
  return static_cast<__mmask16>((1u << n) - 1);
}

// R rows from r x NT blocks from b: R * NT accumulators in registers, each
// pair-vector of W loaded once for the R rows.
template <int R, int NT>
void rows_blocks(const Bf16GemmTile& t, int64_t r, int64_t b) {
  __m512 acc[R][NT];
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < NT; ++j) acc[i][j] = _mm512_setzero_ps();
  const int64_t pairs = t.groups * 16, kp = t.groups * 32;
  const uint32_t* a = reinterpret_cast<const uint32_t*>(t.a + r * kp);
  const uint16_t* w = t.w + b * pairs * 32;
  for (int64_t p = 0; p < pairs; ++p) {
    __m512bh wv[NT];
    for (int j = 0; j < NT; ++j) wv[j] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(w + (j * pairs + p) * 32));
    for (int i = 0; i < R; ++i) {
      const __m512bh av = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(a[i * (kp / 2) + p])));
      for (int j = 0; j < NT; ++j) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], av, wv[j]);
    }
  }
  const __m512 alpha = _mm512_set1_ps(t.alpha);
  for (int j = 0; j < NT; ++j) {
    const int64_t col = (b + j) * 16;
    const __mmask16 keep = first_lanes(t.n - col);
    const __m512 bias = t.bias ? _mm512_loadu_ps(t.bias + col) : _mm512_setzero_ps();
    for (int i = 0; i < R; ++i) {
      const __m512 v = act_avx512(_mm512_fmadd_ps(acc[i][j], alpha, bias), *t.act);
      _mm512_mask_storeu_ps(t.y + (r + i) * t.ldy + col, keep, v);
    }
  }
}

template <int R>
void rows(const Bf16GemmTile& t, int64_t r) {
  for (int64_t b = t.b0; b < t.b1; b += 2) {
    if (t.b1 - b > 1)
      rows_blocks<R, 2>(t, r, b);
    else
      rows_blocks<R, 1>(t, r, b);
  }
}

}  // namespace

void bf16_gemm_tile_avx512bf16(const Bf16GemmTile& t) {
  for (int64_t r = t.r0; r < t.r1; r += 8) {
    switch (t.r1 - r >= 8 ? 8 : t.r1 - r) {
      case 8:
        rows<8>(t, r);
        break;
      case 7:
        rows<7>(t, r);
        break;
      case 6:
        rows<6>(t, r);
        break;
      case 5:
        rows<5>(t, r);
        break;
      case 4:
        rows<4>(t, r);
        break;
      case 3:
        rows<3>(t, r);
        break;
      case 2:
        rows<2>(t, r);
        break;
      default:
        rows<1>(t, r);
        break;
    }
  }
}

}  // namespace minirt::cpu
