// The geometry of a convolution, a plain struct: conv_common.h's users and
// the ISA file conv_depthwise_avx512.cpp, which may include only plain
// structs and declarations (see "ISA files" in ARCHITECTURE.md).
#pragma once

#include <cstdint>

namespace minirt::cpu {

// Geometry of a (1-D or) 2-D convolution; 1-D is 2-D with height 1.
struct Geometry {
  int64_t n, c, h, w;  // input
  int64_t m, oh, ow;   // output
  int64_t kh, kw, sh, sw, dh, dw, ph, pw;
  int64_t groups;
};

}  // namespace minirt::cpu
