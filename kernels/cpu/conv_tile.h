// The planning both tiled convolutions (Bf16Conv, conv_bf16.h; Int8Conv,
// conv_int8.h) share: the geometry of the packed input (conv_tile_isa.h)
// from a convolution's, and where a packed row lies.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/cpu/conv_geometry.h"
#include "kernels/cpu/conv_tile_isa.h"
#include "runtime/thread_pool.h"

namespace minirt::cpu {

// g's fields from q for a packed input of `group_channels` channels per 64
// bytes (32 bf16, 64 int8): `folded` (the plain image, window columns folded
// into the channels), `direct` (a bf16 input read in place: no slack of its
// own). Fills tap_off (g->tap_off points into it: keep both together) and
// the phases some tap reads, ascending.
void tile_conv_geometry(const Geometry& q, int64_t group_channels, bool folded, bool direct, TileConvGeom* g,
                        std::vector<int64_t>* tap_off, std::vector<int64_t>* phases_read);

// Where packed row `row` = (group * phases + phase) * (hq + 1) + a goes:
// its wq pixels of 64 bytes, or (a == hq) the phase's slack, which this
// fills with `slack_byte` (then d is null).
struct PackedRow {
  int64_t a, phase, grp;
  uint8_t* d;
};
PackedRow tile_packed_row(const TileConvGeom& g, void* xin, int64_t row, uint8_t slack_byte);

// Every image's packed input over the pool: the rows (hq + 1 per group and
// phase) of the phases some tap reads, in runs of consecutive rows of one
// phase, pack(img, row0, row1) for each (unit u = ((img * groups + grp) *
// read + k) * (hq + 1) + a, four units at least per task).
template <typename Pack>
void tile_pack_images(const TileConvGeom& g, const std::vector<int64_t>& phases_read, int64_t n, ThreadPool& pool,
                      Pack&& pack) {
  const int64_t read = static_cast<int64_t>(phases_read.size()), prow = g.hq + 1;
  pool.parallel_for(
      n * g.groups * read * prow,
      [&](int64_t u0, int64_t u1) {
        for (int64_t u = u0; u < u1;) {
          const int64_t run = u / prow, a = u % prow, a1 = std::min(prow, a + (u1 - u));
          const int64_t img = run / (g.groups * read), grp = run / read % g.groups, k = run % read;
          const int64_t r0 = (grp * g.phases + phases_read[static_cast<size_t>(k)]) * prow + a;
          pack(img, r0, r0 + (a1 - a));
          u += a1 - a;
        }
      },
      4);
}

}  // namespace minirt::cpu
