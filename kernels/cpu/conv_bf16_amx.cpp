// The bf16 convolution's AMX code: the products of a strip on tiles
// (tdpbf16ps: bf16 pairs, fp32 accumulation), 32 pixels x 32 output
// channels per step in four C tiles (tmm0-3), two A tiles of 16 pixels x 32
// input channels (tmm4-5) and two B tiles of 32 input x 16 output channels
// (tmm6-7). Layouts in conv_bf16_isa.h. Compiled with -mamx-tile
// -mamx-bf16 and the AVX-512 flags (CMakeLists.txt); called only where
// cpu_isa() is amx, which implies the process has Linux's tile permission
// (cpu_caps.cpp). The entry point is its only global symbol
// (tests/cli/isa_objects_test.sh).
#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/amx_tiles.h"
#include "kernels/cpu/conv_bf16_isa.h"

namespace minirt::cpu {
namespace {

// MT x NT tiles of C (MT, NT in {1, 2}) for flat pixels from f and blocks
// from b, summed over every group and tap; left in the tiles (store()).
template <int MT, int NT>
void step(const TileConvStrip& s, int64_t f, int64_t b) {
  const TileConvGeom& g = *s.g;
  const int64_t group_px = g.phases * g.phase_pixels;
  const int64_t wstride = g.groups * g.taps * 512;  // uint16s per block
  _tile_zero(0);
  if (NT > 1) _tile_zero(1);
  if (MT > 1) _tile_zero(2);
  if (MT > 1 && NT > 1) _tile_zero(3);
  for (int64_t grp = 0; grp < g.groups; ++grp) {
    const uint16_t* xg = s.xin + (grp * group_px + f) * 32;
    const uint16_t* wg = s.w + (b * g.groups + grp) * g.taps * 512;
    for (int64_t t = 0; t < g.taps; ++t) {
      const uint16_t* xp = xg + g.tap_off[t] * 32;
      const uint16_t* wp = wg + t * 512;
      // The next step's weights (the next tap, or the next group's first:
      // contiguous) into L1 while these tiles multiply: the B tiles' loads
      // from L2 were where the loop waited (perf annotate; 3x3 layers 15%
      // faster in minirt_bf16_bench).
      for (int line = 0; line < 16; ++line) {
        _mm_prefetch(reinterpret_cast<const char*>(wp + 512 + line * 32), _MM_HINT_T0);
        if (NT > 1) _mm_prefetch(reinterpret_cast<const char*>(wp + wstride + 512 + line * 32), _MM_HINT_T0);
      }
      _tile_loadd(6, wp, 64);
      if (NT > 1) _tile_loadd(7, wp + wstride, 64);
      _tile_loadd(4, xp, 64);
      _tile_dpbf16ps(0, 4, 6);
      if (NT > 1) _tile_dpbf16ps(1, 4, 7);
      if (MT > 1) {
        _tile_loadd(5, xp + 16 * 32, 64);
        _tile_dpbf16ps(2, 5, 6);
        if (NT > 1) _tile_dpbf16ps(3, 5, 7);
      }
    }
  }
}

// The C tiles into cbuf[t][n] (tile 2 t + n).
template <int MT, int NT>
void store(float* cbuf) {
  _tile_stored(0, cbuf, 64);
  if (NT > 1) _tile_stored(1, cbuf + 256, 64);
  if (MT > 1) _tile_stored(2, cbuf + 512, 64);
  if (MT > 1 && NT > 1) _tile_stored(3, cbuf + 768, 64);
}

// A step's epilogue, deferred until the next step's products are issued.
struct Pending {
  const TileConvStrip* s;
  const float* cbuf;
  int64_t f, b;
  int mt, nt;
};
void finish(const Pending& d) { tile_conv_epilogue_avx512(*d.s, d.cbuf, d.f, d.mt, d.b, d.nt); }

// One step: its products issued, then the previous step's epilogue (AVX-512
// work the core runs while the tile unit multiplies), then its C stored.
template <int MT, int NT>
void step_and_store(const TileConvStrip& s, int64_t f, int64_t b, float* cbuf, const Pending& previous) {
  step<MT, NT>(s, f, b);
  if (previous.cbuf) finish(previous);
  store<MT, NT>(cbuf);
}

}  // namespace

void bf16_conv_strip_amx(const TileConvStrip& s) {
  // Two C buffers: step i stores into one while the epilogue of step i - 1
  // reads the other, so the epilogue overlaps the tile unit's work (1x1
  // layers, whose steps are short, spent a third of their time in it).
  alignas(64) float cbuf[2][4 * 256];
  amx_configure_16x64();
  Pending pending{&s, nullptr, 0, 0, 0, 0};
  int cur = 0;
  for (int64_t f = s.f0; f < s.f1; f += 32) {
    const int mt = s.f1 - f > 16 ? 2 : 1;
    for (int64_t b = s.b0; b < s.b1; b += 2) {
      const int nt = s.b1 - b > 1 ? 2 : 1;
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
