#include "kernels/cpu/conv_tile.h"

#include <algorithm>
#include <cstring>

#include "kernels/cpu/conv_common.h"

namespace minirt::cpu {

void tile_conv_geometry(const Geometry& q, int64_t group_channels, bool folded, bool direct, TileConvGeom* gp,
                        std::vector<int64_t>* tap_off, std::vector<int64_t>* phases_read) {
  TileConvGeom& g = *gp;
  g.c = q.c;
  g.h = q.h;
  g.w = q.w;
  g.m = q.m;
  g.oh = q.oh;
  g.ow = q.ow;
  g.kh = q.kh;
  g.kw = q.kw;
  g.sh = q.sh;
  g.sw = q.sw;
  g.dh = q.dh;
  g.dw = q.dw;
  g.ph = q.ph;
  g.pw = q.pw;
  g.groups = folded ? 1 : ceil_div(q.c, group_channels);
  g.blocks = ceil_div(q.m, 16);
  // A folded window that fits a pixel's lanes whole (C kh kw: a 3x3 stem on
  // three channels, 27) folds its rows too: one tap, one phase.
  g.fold_kh = folded && q.c * q.kh * q.kw <= group_channels ? q.kh : 1;
  const int64_t rows = g.fold_kh > 1 ? 1 : q.kh;  // window rows left as taps
  g.hq = q.oh + ((rows - 1) * q.dh) / q.sh;
  g.wq = folded ? q.ow : q.ow + ((q.kw - 1) * q.dw) / q.sw;
  g.phases = g.fold_kh > 1 ? 1 : folded ? q.sh : q.sh * q.sw;
  // Slack: the last 32-pixel step of the flat grid reads up to 31 pixels
  // past it, plus the farthest tap's offset beyond the grid.
  g.phase_pixels = direct ? q.h * q.w : g.hq * g.wq + g.wq + 32;
  g.taps = folded ? rows : q.kh * q.kw;
  // The rest of the last group's words are zero in the weights (and the
  // input): the AVX-512 strips skip them (a 1x1 from 16 channels: 8 of 16).
  const int64_t used = folded ? q.c * g.fold_kh * q.kw : q.c - (g.groups - 1) * group_channels;
  g.last_words = std::clamp<int64_t>(ceil_div(used, group_channels / 16), 1, 16);
  g.flat = q.oh * g.wq;
  tap_off->assign(static_cast<size_t>(g.taps), 0);
  for (int64_t i = 0; i < rows; ++i) {
    int64_t di = i * q.dh;
    if (folded) {
      (*tap_off)[static_cast<size_t>(i)] = (di % q.sh) * g.phase_pixels + (di / q.sh) * g.wq;
      continue;
    }
    for (int64_t j = 0; j < q.kw; ++j) {
      int64_t dj = j * q.dw;
      int64_t phase = (di % q.sh) * q.sw + dj % q.sw;
      (*tap_off)[static_cast<size_t>(i * q.kw + j)] = phase * g.phase_pixels + (di / q.sh) * g.wq + dj / q.sw;
    }
  }
  g.tap_off = tap_off->data();
  phases_read->clear();
  for (int64_t ph = 0; ph < g.phases; ++ph)
    for (int64_t t = 0; t < g.taps; ++t)
      if ((*tap_off)[static_cast<size_t>(t)] / g.phase_pixels == ph) {
        phases_read->push_back(ph);
        break;
      }
}

PackedRow tile_packed_row(const TileConvGeom& g, void* xin, int64_t row, uint8_t slack_byte) {
  PackedRow r;
  r.a = row % (g.hq + 1);
  r.phase = (row / (g.hq + 1)) % g.phases;
  r.grp = row / ((g.hq + 1) * g.phases);
  uint8_t* base = static_cast<uint8_t*>(xin) + (r.grp * g.phases + r.phase) * g.phase_pixels * 64;
  if (r.a == g.hq) {
    std::memset(base + g.hq * g.wq * 64, slack_byte, static_cast<size_t>((g.phase_pixels - g.hq * g.wq) * 64));
    r.d = nullptr;
  } else {
    r.d = base + r.a * g.wq * 64;
  }
  return r;
}

}  // namespace minirt::cpu
