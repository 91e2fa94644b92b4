// The strided-copy engine's (strided_copy.cpp) AVX2 transpose: a
// declaration only (see "ISA files" in ARCHITECTURE.md).
#pragma once

#include <cstdint>

namespace minirt::cpu {

// dst[a * ld_dst + b] = src[a + b * ld_src] for a < rows, b < cols, 4-byte
// elements, in 8 x 8 blocks of AVX2 registers; call only where the CPU has AVX2.
void transpose_tile32_avx2(const char* src, int64_t ld_src, char* dst, int64_t ld_dst, int64_t rows, int64_t cols);

}  // namespace minirt::cpu
