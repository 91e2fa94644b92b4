// What the Conv lowerings share (conv.cpp, conv_winograd.cpp): the geometry
// of a 2-D (or 1-D) convolution, and the padded, stride-phase-split copy of
// the input that implicit_gemm and Winograd read their windows from.
#pragma once

#include "kernels/cpu/conv_geometry.h"
#include "runtime/graph.h"
#include "runtime/ops/conv.h"

#include <cstdint>
#include <vector>

namespace minirt::cpu {

// Geometry (of a 1-D or 2-D convolution): conv_geometry.h.

Geometry conv_geometry(const Shape& x, const Shape& y, const WindowAttrs& a, int64_t groups);

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The input as a convolution reads it: per channel, one plane per stride
// phase (ry, rx) in use, holding padded rows ry, ry + sh, ... and columns
// rx, rx + sw, ... Tap (i, j) of output (oy, ox) is then element
// (oy + i*dh/sh, ox + j*dw/sw) of phase ((i*dh) % sh, (j*dw) % sw): for a
// fixed tap, consecutive outputs of a row are consecutive floats.
struct PhasePlanes {
  int64_t hq = 0, wq = 0;       // plane height, width
  std::vector<int64_t> ry, rx;  // each plane's phase
  int64_t planes() const { return static_cast<int64_t>(ry.size()); }
  int64_t channel_stride() const { return planes() * hq * wq; }
};

// Fills the phase planes of channels [p0, p1) (over all images) from x; rows
// and columns outside the input are zero. Only q's h, w, sh, sw, ph, pw are read.
void fill_planes(const Geometry& q, const PhasePlanes& pp, const float* x, float* out, int64_t p0, int64_t p1);

}  // namespace minirt::cpu
