// The Resize row primitives' portable forms (resize_isa.h: what each does),
// used by resize.cpp and, for lane counts without a vector form, by the ISA
// files: everything in an anonymous namespace, no std template, so each
// object has its own copy.
#pragma once

#include <cstdint>

namespace minirt::cpu {
namespace {

inline void dup2_generic(float* dst, const float* src, int64_t npix, int64_t lanes) {
  for (int64_t p = 0; p < npix; ++p)
    for (int64_t l = 0; l < lanes; ++l) dst[2 * p * lanes + l] = dst[(2 * p + 1) * lanes + l] = src[p * lanes + l];
}
inline void blend_generic(float* dst, const float* h0, const float* h1, float a, float b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = a * h0[i] + b * h1[i];
}
inline void scale_generic(float* dst, const float* h0, float a, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = a * h0[i];
}
inline void hblend_generic(float* dst, const float* src, const int64_t* i0, const int64_t* i1, const float* w0,
                           const float* w1, int64_t npix, int64_t lanes) {
  for (int64_t o = 0; o < npix; ++o) {
    const float* s0 = src + i0[o] * lanes;
    const float* s1 = src + i1[o] * lanes;
    for (int64_t l = 0; l < lanes; ++l) dst[o * lanes + l] = w0[o] * s0[l] + w1[o] * s1[l];
  }
}

}  // namespace
}  // namespace minirt::cpu
