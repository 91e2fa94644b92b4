// The int8 convolution's AMX code: the products of a strip on tiles
// (tdpbusd: uint8 times int8 quads, int32 accumulation), 32 pixels x 32
// output channels per step in four C tiles (tmm0-3), two A tiles of 16
// pixels x 64 input channels (tmm4-5) and two B tiles of 64 input x 16
// output channels (tmm6-7). Layouts in conv_int8_isa.h. Compiled with the
// AVX512_BF16 flags plus -mamx-tile -mamx-int8 (CMakeLists.txt); called only
// where conv_int8.cpp finds AMX-INT8 and cpu_isa() is amx (Linux's tile
// permission granted, cpu_caps.cpp). The entry points are its only global
// symbols (tests/cli/isa_objects_test.sh).
#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/amx_tiles.h"
#include "kernels/cpu/conv_int8_isa.h"

namespace minirt::cpu {
namespace {

// MT x NT tiles of C (MT, NT in {1, 2}) for flat pixels from f and blocks
// from b, summed over every group and tap; left in the tiles (store()).
template <int MT, int NT>
void step(const Int8ConvStrip& s, int64_t f, int64_t b) {
  const TileConvGeom& g = *s.s.g;
  const int64_t group_px = g.phases * g.phase_pixels;
  const int64_t wstride = g.groups * g.taps * 1024;  // bytes per block
  _tile_zero(0);
  if (NT > 1) _tile_zero(1);
  if (MT > 1) _tile_zero(2);
  if (MT > 1 && NT > 1) _tile_zero(3);
  for (int64_t grp = 0; grp < g.groups; ++grp) {
    const uint8_t* xg = s.xin + (grp * group_px + f) * 64;
    const int8_t* wg = s.w + (b * g.groups + grp) * g.taps * 1024;
    for (int64_t t = 0; t < g.taps; ++t) {
      const uint8_t* xp = xg + g.tap_off[t] * 64;
      const int8_t* wp = wg + t * 1024;
      // The next tap's weights into L1 while these tiles multiply (as the bf16 strip does).
      for (int line = 0; line < 16; ++line) {
        _mm_prefetch(reinterpret_cast<const char*>(wp + 1024 + line * 64), _MM_HINT_T0);
        if (NT > 1) _mm_prefetch(reinterpret_cast<const char*>(wp + wstride + 1024 + line * 64), _MM_HINT_T0);
      }
      _tile_loadd(6, wp, 64);
      if (NT > 1) _tile_loadd(7, wp + wstride, 64);
      _tile_loadd(4, xp, 64);
      _tile_dpbusd(0, 4, 6);
      if (NT > 1) _tile_dpbusd(1, 4, 7);
      if (MT > 1) {
        _tile_loadd(5, xp + 16 * 64, 64);
        _tile_dpbusd(2, 5, 6);
        if (NT > 1) _tile_dpbusd(3, 5, 7);
      }
    }
  }
}

// The C tiles into cbuf[t][n] (tile 2 t + n), as int32.
template <int MT, int NT>
void store(int32_t* cbuf) {
  _tile_stored(0, cbuf, 64);
  if (NT > 1) _tile_stored(1, cbuf + 256, 64);
  if (MT > 1) _tile_stored(2, cbuf + 512, 64);
  if (MT > 1 && NT > 1) _tile_stored(3, cbuf + 768, 64);
}

// A step's epilogue, deferred until the next step's products are issued.
struct Pending {
  const Int8ConvStrip* s;
  const int32_t* cbuf;
  int64_t f, b;
  int mt, nt;
};
void finish(const Pending& d) { int8_conv_epilogue_avx512(*d.s, d.cbuf, d.f, d.mt, d.b, d.nt); }

template <int MT, int NT>
void step_and_store(const Int8ConvStrip& s, int64_t f, int64_t b, int32_t* cbuf, const Pending& previous) {
  step<MT, NT>(s, f, b);
  if (previous.cbuf) finish(previous);
  store<MT, NT>(cbuf);
}

}  // namespace

void int8_conv_strip_amx(const Int8ConvStrip& s) {
  // Two C buffers: step i stores into one while the epilogue of step i - 1
  // reads the other (as the bf16 strip).
  alignas(64) int32_t cbuf[2][4 * 256];
  amx_configure_16x64();
  Pending pending{&s, nullptr, 0, 0, 0, 0};
  int cur = 0;
  for (int64_t f = s.s.f0; f < s.s.f1; f += 32) {
    const int mt = s.s.f1 - f > 16 ? 2 : 1;
    for (int64_t b = s.s.b0; b < s.s.b1; b += 2) {
      const int nt = s.s.b1 - b > 1 ? 2 : 1;
      if (mt == 2 && nt == 2)
        step_and_store<2, 2>(s, f, b, cbuf[cur], pending);
      else if (mt == 2)
        step_and_store<2, 1>(s, f, b, cbuf[cur], pending);
      else if (nt == 2)
        step_and_store<1, 2>(s, f, b, cbuf[cur], pending);
      else
        step_and_store<1, 1>(s, f, b, cbuf[cur], pending);
      pending = Pending{&s, cbuf[cur], f, b, mt, nt};
      cur ^= 1;
    }
  }
  if (pending.cbuf) finish(pending);
  _tile_release();
}

}  // namespace minirt::cpu
