// What the int8 matrix product's driver (gemm_int8.cpp) and its
// instruction-set file (gemm_int8_avx512vnni.cpp) share: plain structs and
// declarations only (see "ISA files" in ARCHITECTURE.md).
//
// C[m x n] = P Q in int32, exact (no saturation anywhere):
// P: m rows of `quads` * 4 int8 (zero past k), row-major, row stride ldp bytes.
// Q: uint8, in panels of 16 columns; a panel holds `quads` quads of 4 rows,
// each quad 16 columns x 4 rows, a column's 4 bytes adjacent:
//   q[(panel * quads + quad) * 64 + column * 4 + i] = Q[quad * 4 + i][panel * 16 + column]
// (zero past k and past n), so that one quad of a panel is one 64-byte
// vector, what vpdpbusd multiplies a broadcast quad of P with.
#pragma once

#include <cstdint>

namespace minirt::cpu {

// Rows [r0, r1) x panels [b0, b1) of C (row stride ldc int32s; n valid
// columns: the last panel's columns past n are not written).
struct Int8GemmTile {
  const int8_t* p;
  int64_t ldp;
  const uint8_t* q;
  int32_t* c;
  int64_t ldc, n, quads;
  int64_t r0, r1, b0, b1;
};

// The products with vpdpbusd (AVX512-VNNI); up to 6 rows x 4 panels a pass.
void int8_gemm_tile_avx512vnni(const Int8GemmTile& t);

}  // namespace minirt::cpu
