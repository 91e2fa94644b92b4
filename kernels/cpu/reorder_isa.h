// The blocked layout's reorders (nchwc.cpp) in vector registers, in ISA
// files of their own: reorder_avx512.cpp (blocks of 16) and reorder_avx2.cpp
// (blocks of 8). Declarations only (see "ISA files" in ARCHITECTURE.md).
#pragma once

#include <cstdint>

namespace minirt::cpu {

// One block of B channels (nc of them real) of one image: plain rows of hw
// floats at x (stride hw) into pixels of B lanes at y when to_blocked, else
// back (only the nc real rows written), for whole tiles of B pixels from p0
// while they fit before p1. Returns the first pixel not done (the caller
// finishes [that, p1) with its portable loop). Call only where the CPU has
// the set.
int64_t nchwc_reorder_tiles_avx512(const float* x, float* y, int64_t hw, int64_t nc, int64_t p0, int64_t p1,
                                   bool to_blocked);
int64_t nchwc_reorder_tiles_avx2(const float* x, float* y, int64_t hw, int64_t nc, int64_t p0, int64_t p1,
                                 bool to_blocked);

}  // namespace minirt::cpu
