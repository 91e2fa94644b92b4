// The Winograd convolution's bf16 products on AVX512_BF16 (layouts in
// winograd_bf16_isa.h): per input-channel pair a broadcast pair of V times
// a 64-byte pair-vector of U, vdpbf16ps, float32 accumulators in registers
// (the float32 kernels' register tiles, half the instructions). Compiled
// with the AVX512_BF16 flags (CMakeLists.txt) and reached only where the
// CPU has them (nchwc_winograd_declined); the entry points are its only
// global symbols (tests/cli/isa_objects_test.sh).
#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/winograd_bf16_isa.h"

namespace minirt::cpu {
namespace {

constexpr int kMaxUr = 12;

// UR tiles x NB output blocks over every input block.
template <int UR, int NB>
void tile_gemm(const WinogradBf16Gemm& a, const uint16_t* v, float* m) {
  __m512 acc[UR][NB];
  for (int p = 0; p < UR; ++p)
    for (int o = 0; o < NB; ++o) acc[p][o] = _mm512_setzero_ps();
  const uint16_t* u = a.u;
  for (int64_t cb = 0; cb < a.cbs; ++cb, v += a.vcb, u += 8 * NB * 32) {
    const uint32_t* vp = reinterpret_cast<const uint32_t*>(v);
    for (int k = 0; k < 8; ++k) {
      __m512bh w[NB];
      for (int o = 0; o < NB; ++o) {
        w[o] = reinterpret_cast<__m512bh>(_mm512_load_si512(u + (k * NB + o) * 32));
      }
      for (int p = 0; p < UR; ++p) {
        const __m512bh x = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(vp[p * 8 + k])));
        for (int o = 0; o < NB; ++o) acc[p][o] = _mm512_dpbf16_ps(acc[p][o], x, w[o]);
      }
    }
  }
  for (int p = 0; p < UR; ++p)
    for (int o = 0; o < NB; ++o) _mm512_storeu_ps(m + o * a.mob + p * 16, acc[p][o]);
}

using TileFn = void (*)(const WinogradBf16Gemm&, const uint16_t*, float*);

// row[u - 1] = tile_gemm<u, NB> for u in [1, U] (no std template in an ISA file).
template <int NB, int U>
constexpr void fill_row(TileFn* row) {
  row[U - 1] = &tile_gemm<U, NB>;
  if constexpr (U > 1) fill_row<NB, U - 1>(row);
}

// [nb - 1][ur - 1]; ur up to 12 for nb 1 and 2, 8 for 3, 6 for 4.
struct Table {
  TileFn fn[4][kMaxUr] = {};
  constexpr Table() {
    fill_row<1, 12>(fn[0]);
    fill_row<2, 12>(fn[1]);
    fill_row<3, 8>(fn[2]);
    fill_row<4, 6>(fn[3]);
  }
};
constexpr Table kTable;

}  // namespace

void winograd_bf16_gemm_avx512bf16(const WinogradBf16Gemm& g) {
  const TileFn* row = kTable.fn[g.nb - 1];
  const int64_t parts = (g.nt + g.ur - 1) / g.ur;
  for (int64_t j = 0; j < parts; ++j) {
    const int64_t p0 = g.nt * j / parts, p1 = g.nt * (j + 1) / parts;
    row[p1 - p0 - 1](g, g.v + p0 * 16, g.m + p0 * 16);
  }
}

void winograd_bf16_narrow_avx512bf16(float* v, int64_t n) {
  // Forward: bf16 i lands at byte 2 i, below float i's byte 4 i, which is read first.
  uint16_t* out = reinterpret_cast<uint16_t*>(v);
  for (int64_t i = 0; i < n; i += 16) {
    const __m256bh b = _mm512_cvtneps_pbh(_mm512_load_ps(v + i));
    _mm256_store_si256(reinterpret_cast<__m256i*>(out + i), reinterpret_cast<__m256i>(b));
  }
}

}  // namespace minirt::cpu
