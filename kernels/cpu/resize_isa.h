// What the Resize engine (resize.cpp) and its instruction-set files
// (resize_avx512.cpp, resize_avx2.cpp) share: the table of row primitives,
// declarations only (see "ISA files" in ARCHITECTURE.md). Their portable
// forms, which the ISA files fall back on for other lane counts, are
// resize_scalar.h.
#pragma once

#include <cstdint>

namespace minirt::cpu {

// Rows of pixels of `lanes` floats, vectorized for one ISA.
struct ResizeOps {
  // dst[2p] = dst[2p + 1] = src[p] (pixels), p < npix.
  void (*dup2)(float* dst, const float* src, int64_t npix, int64_t lanes);
  // dst[i] = a * h0[i] + b * h1[i], i < n.
  void (*blend)(float* dst, const float* h0, const float* h1, float a, float b, int64_t n);
  // dst[i] = a * h0[i], i < n.
  void (*scale)(float* dst, const float* h0, float a, int64_t n);
  // Pixel o of dst = w0[o] * pixel i0[o] of src + w1[o] * pixel i1[o] of src.
  void (*hblend)(float* dst, const float* src, const int64_t* i0, const int64_t* i1, const float* w0, const float* w1,
                 int64_t npix, int64_t lanes);
};

// The primitives for AVX-512 and for AVX2, called only where the CPU has the set.
const ResizeOps& resize_ops_avx512();
const ResizeOps& resize_ops_avx2();

}  // namespace minirt::cpu
