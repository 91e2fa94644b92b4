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

// Whether a tiled convolution of `punits` units of pixels per image splits
// its work by pixels, each thread one contiguous share (at least two units
// a thread), so that the same thread takes the same pixels of consecutive
// layers and their values stay in its core's L2: ResNet-50 bf16's 56x56 and
// 28x28 layers 5-15% faster at 2 threads, the model 4.5% (YOLOv5s-like
// 5.5%, ResNet-50 int8 4%). With fewer (14x14, 7x7: the weights are the
// data that matters) every thread takes any unit.
inline bool tile_affine(int64_t punits, const ThreadPool& pool) {
  return pool.size() > 1 && punits >= 2 * static_cast<int64_t>(pool.size());
}

// The blocks of a unit at run time: `planned` (what fits L2, even), unless
// that leaves fewer than four units a thread (a small plane: MobileNetV2's
// 7x7 layers were one unit, one thread busy); then as few as it takes to
// make four a thread, even (a unit starts a 32-channel pair), two at least.
inline int64_t tile_blocks_per_unit(int64_t planned, int64_t blocks, int64_t pixel_units, const ThreadPool& pool) {
  const int64_t want = 4 * static_cast<int64_t>(pool.size());
  if (pool.size() <= 1 || pixel_units * ((blocks + planned - 1) / planned) >= want) return planned;
  const int64_t bunits = (want + pixel_units - 1) / pixel_units;
  const int64_t per = ((blocks + bunits - 1) / bunits + 1) / 2 * 2;
  return std::clamp<int64_t>(per, 2, planned);
}

// Every image's packed input over the pool: the rows (hq + 1 per group and
// phase) of the phases some tap reads, pack(img, row0, row1). Affine
// (tile_affine): row by row, each thread one contiguous share of the rows of
// every group and phase, those its share of the pixels reads; else in runs of
// consecutive rows of one phase (unit u = ((img * groups + grp) * read + k) *
// (hq + 1) + a, four units at least per task).
template <typename Pack>
void tile_pack_images(const TileConvGeom& g, const std::vector<int64_t>& phases_read, int64_t n, bool affine,
                      ThreadPool& pool, Pack&& pack) {
  const int64_t read = static_cast<int64_t>(phases_read.size()), prow = g.hq + 1;
  if (affine) {
    const int64_t per_row = g.groups * read, units = n * prow * per_row;
    const int64_t tasks = std::min<int64_t>(pool.size(), units);
    pool.parallel_ranges(
        tasks, [&](int64_t t) { return units * t / tasks; }, 8,
        [&](int64_t, int64_t u0, int64_t u1) {
          for (int64_t u = u0; u < u1; ++u) {
            const int64_t img = u / (prow * per_row), a = u / per_row % prow, grp = u % per_row / read, k = u % read;
            const int64_t r0 = (grp * g.phases + phases_read[static_cast<size_t>(k)]) * prow + a;
            pack(img, r0, r0 + 1);
          }
        });
    return;
  }
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

// The strips of n images, `bunits` units of output blocks times `punits`
// units of pixels each: body(img, bu, pu) for every unit. Affine: pixel
// units outermost, each thread one contiguous share
// (ThreadPool::parallel_ranges, a thread done early taking from the back of
// another's); else any thread any unit.
template <typename Body>
void tile_run_units(int64_t n, int64_t bunits, int64_t punits, bool affine, ThreadPool& pool, Body&& body) {
  const int64_t units = n * bunits * punits;
  if (!affine) {
    pool.parallel_for(units, [&](int64_t u0, int64_t u1) {
      for (int64_t u = u0; u < u1; ++u) body(u / (bunits * punits), u / punits % bunits, u % punits);
    });
    return;
  }
  const int64_t tasks = std::min<int64_t>(pool.size(), units);
  pool.parallel_ranges(
      tasks, [&](int64_t t) { return units * t / tasks; }, 8,
      [&](int64_t, int64_t u0, int64_t u1) {
        for (int64_t u = u0; u < u1; ++u) body(u / (bunits * punits), u % bunits, u / bunits % punits);
      });
}

}  // namespace minirt::cpu
