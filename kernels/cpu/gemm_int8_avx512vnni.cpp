// The int8 product's AVX512-VNNI code (layouts in gemm_int8_isa.h):
// vpdpbusd multiplies 16 columns x 4 rows of Q (uint8) with a broadcast
// quad of P (int8) and adds the four products of each column to its int32
// lane, exactly. Register blocks of up to 6 rows x 4 panels (24
// accumulators; a quad of each panel loaded once for the 6 rows). Compiled
// with the AVX-512 and VNNI flags (CMakeLists.txt); called only where
// int8_isa() says the CPU has them. The entry point is its only global
// symbol (tests/cli/isa_objects_test.sh).
#include <immintrin.h>

#include <cstring>

#include "kernels/cpu/gemm_int8_isa.h"

namespace minirt::cpu {
namespace {

template <int MR, int NB>
void block(const Int8GemmTile& t, int64_t r, int64_t b) {
  __m512i acc[MR][NB];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NB; ++j) acc[i][j] = _mm512_setzero_si512();
  const uint8_t* q = t.q + b * t.quads * 64;
  const int8_t* p = t.p + r * t.ldp;
  for (int64_t k = 0; k < t.quads; ++k) {
    __m512i qv[NB];
    for (int j = 0; j < NB; ++j) qv[j] = _mm512_loadu_si512(q + (j * t.quads + k) * 64);
    for (int i = 0; i < MR; ++i) {
      int32_t quad;
      std::memcpy(&quad, p + i * t.ldp + k * 4, 4);
      const __m512i pv = _mm512_set1_epi32(quad);
      for (int j = 0; j < NB; ++j) acc[i][j] = _mm512_dpbusd_epi32(acc[i][j], qv[j], pv);
    }
  }
  for (int j = 0; j < NB; ++j) {
    const int64_t col = (b + j) * 16;
    const int64_t valid = t.n - col;
    const __mmask16 mask = valid >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << valid) - 1);
    for (int i = 0; i < MR; ++i) _mm512_mask_storeu_epi32(t.c + (r + i) * t.ldc + col, mask, acc[i][j]);
  }
}

template <int NB>
void rows(const Int8GemmTile& t, int64_t b) {
  int64_t r = t.r0;
  for (; r + 6 <= t.r1; r += 6) block<6, NB>(t, r, b);
  switch (t.r1 - r) {
    case 5:
      return block<5, NB>(t, r, b);
    case 4:
      return block<4, NB>(t, r, b);
    case 3:
      return block<3, NB>(t, r, b);
    case 2:
      return block<2, NB>(t, r, b);
    case 1:
      return block<1, NB>(t, r, b);
    default:
      return;
  }
}

}  // namespace

void int8_gemm_tile_avx512vnni(const Int8GemmTile& t) {
  int64_t b = t.b0;
  for (; b + 4 <= t.b1; b += 4) rows<4>(t, b);
  switch (t.b1 - b) {
    case 3:
      return rows<3>(t, b);
    case 2:
      return rows<2>(t, b);
    case 1:
      return rows<1>(t, b);
    default:
      return;
  }
}

}  // namespace minirt::cpu
