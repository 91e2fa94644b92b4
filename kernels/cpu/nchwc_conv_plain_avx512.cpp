// The blocked float32 convolution's AVX-512 microkernels for plain
// (one-lane) inputs, the stems: tiles of up to 12 pixels x 4 output blocks
// of 16 channels (nchwc_conv_isa.h), the body nchwc_conv_ukr.h, the vector
// traits nchwc_conv_zmm_avx512.h. An object of its own beside
// nchwc_conv_avx512.cpp so that the two compile side by side. Compiled with
// -mavx512f -mavx2 -mfma (CMakeLists.txt) and reached only through specs
// whose ISA the CPU has (nchwc_direct_declined). The one global symbol is
// nchwc_conv_plain_kernels_avx512 (tests/cli/isa_objects_test.sh).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"  // nchwc_conv_zmm_avx512.h says why

#include "kernels/cpu/nchwc_conv_zmm_avx512.h"

namespace minirt::cpu {
namespace {

using nchwc_tiles::kUr512;
constexpr nchwc_tiles::PlainKernels kPlainKernels =
    ConvTiles<Zmm>::plain_kernels<kUr512[0], kUr512[1], kUr512[2], kUr512[3]>();

}  // namespace

const nchwc_tiles::PlainKernels& nchwc_conv_plain_kernels_avx512() { return kPlainKernels; }

}  // namespace minirt::cpu

#pragma GCC diagnostic pop
