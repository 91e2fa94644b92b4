// The depthwise convolution's AVX-512 code (depthwise_direct in conv.cpp):
// the entry points of conv_depthwise_avx512.cpp, an ISA file compiled with
// -mavx512f (CMakeLists.txt). Call them only where cpuid says avx512f
// (conv.cpp asks sgemm_default_isa()).
//
//   depthwise_plane_avx512(q, x_plane, filter, bias, act, y_plane);  // q.sw 1 or 2, kh, kw <= 16
//   depthwise_block_avx512(q, x, w, b, act, y, c0, nc, ring, wp, buf);
#pragma once

#include <cstdint>

#include "kernels/cpu/conv_geometry.h"

namespace minirt {
struct Activation;
}

namespace minirt::cpu {

// One (image, channel) plane of a depthwise convolution with stride 1 or 2
// and at most 16 taps per window row, along the rows, 16 outputs per zmm.
void depthwise_plane_avx512(const Geometry& q, const float* xp, const float* wc, float bias, const Activation& act,
                            float* yp);

// Channels [c0, c0 + nc) (nc <= 16) of one image, channel-blocked; `buf`
// holds (ring * wp + ow rounded up to 16 + wp) * 16 floats, wp the padded
// row width the windows read (conv.cpp's plan_depthwise sizes it).
void depthwise_block_avx512(const Geometry& q, const float* x, const float* w, const float* b, const Activation& act,
                            float* y, int64_t c0, int64_t nc, int64_t ring, int64_t wp, float* buf);

// The activations without a vector form here, over n floats in place: in
// conv.cpp, compiled for the baseline with Activation::apply.
void depthwise_scalar_activation(const Activation& act, float* p, int64_t n);

}  // namespace minirt::cpu
