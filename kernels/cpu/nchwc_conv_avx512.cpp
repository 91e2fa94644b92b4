// The blocked float32 convolution's AVX-512 microkernels for blocked
// inputs and depthwise layers: tiles of up to 12 pixels x 4 output blocks of
// 16 channels (nchwc_conv_isa.h), the body nchwc_conv_ukr.h, the vector
// traits nchwc_conv_zmm_avx512.h; the plain-input tiles are
// nchwc_conv_plain_avx512.cpp's. Compiled with -mavx512f -mavx2 -mfma
// (CMakeLists.txt) and reached only through specs whose ISA the CPU has
// (nchwc_direct_declined, nchwc_depthwise_declined). The one global symbol
// is nchwc_conv_kernels_avx512 (tests/cli/isa_objects_test.sh).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"  // nchwc_conv_zmm_avx512.h says why

#include "kernels/cpu/nchwc_conv_zmm_avx512.h"

namespace minirt::cpu {
namespace {

using nchwc_tiles::kUr512;
constexpr nchwc_tiles::Kernels kKernels = ConvTiles<Zmm>::kernels<kUr512[0], kUr512[1], kUr512[2], kUr512[3]>();

}  // namespace

const nchwc_tiles::Kernels& nchwc_conv_kernels_avx512() { return kKernels; }

}  // namespace minirt::cpu

#pragma GCC diagnostic pop
