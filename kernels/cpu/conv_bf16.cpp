#include "kernels/cpu/conv_bf16.h"

#include <minirt/error.h>
#include <minirt/half.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu/conv_tile.h"
#include "runtime/ops/activation.h"

namespace minirt::cpu {

namespace {

// float -> bfloat16, round to nearest even (NaN kept a NaN): minirt/half.h's
// float_to_bfloat16 inlined for the per-run packing of a folded input.
inline uint16_t to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// The row's first pixel as bf16s (conv_tile.h), null for the slack (zeroed).
struct Bf16Row {
  int64_t a, phase, grp;
  uint16_t* d;
};
Bf16Row packed_row(const TileConvGeom& g, uint16_t* xin, int64_t row) {
  const PackedRow r = tile_packed_row(g, xin, row, 0);
  return {r.a, r.phase, r.grp, reinterpret_cast<uint16_t*>(r.d)};
}

// Rows [row0, row1) of a folded input (conv_bf16_isa.h), from the plain
// image x [C][H][W] (one group; the phases split rows only).
void pack_rows_folded(const TileConvGeom& g, const float* x, uint16_t* xin, int64_t row0, int64_t row1) {
  for (int64_t row = row0; row < row1; ++row) {
    const Bf16Row pr = packed_row(g, xin, row);
    if (!pr.d) continue;
    uint16_t* d = pr.d;
    std::fill(d, d + g.wq * 32, uint16_t{0});
    // Window row i of channel ci (i < fold_kh) at channels (ci fold_kh + i) kw.
    for (int64_t ci = 0; ci < g.c; ++ci)
      for (int64_t i = 0; i < g.fold_kh; ++i) {
        const int64_t ih = pr.a * g.sh + pr.phase - g.ph + i * g.dh;
        if (ih < 0 || ih >= g.h) continue;
        const float* xr = x + (ci * g.h + ih) * g.w;
        for (int64_t b = 0; b < g.wq; ++b) {
          uint16_t* p = d + b * 32 + (ci * g.fold_kh + i) * g.kw;
          const int64_t iw0 = b * g.sw - g.pw;
          for (int64_t j = 0; j < g.kw; ++j) {
            const int64_t iw = iw0 + j * g.dw;
            if (iw >= 0 && iw < g.w) p[j] = to_bf16(xr[iw]);
          }
        }
      }
  }
}

// The portable forms of the ISA files' entry points, over the same layouts:
// round to nearest even, products summed in float32 in the order group,
// tap, channel.
void pack_rows_reference(const TileConvGeom& g, const float* x, uint16_t* xin, int64_t row0, int64_t row1) {
  const int64_t plane = g.h * g.w * 16;
  for (int64_t row = row0; row < row1; ++row) {
    const Bf16Row pr = packed_row(g, xin, row);
    if (!pr.d) continue;
    uint16_t* d = pr.d;
    const int64_t ih = pr.a * g.sh + pr.phase / g.sw - g.ph;
    for (int64_t b = 0; b < g.wq; ++b) {
      const int64_t iw = b * g.sw + pr.phase % g.sw - g.pw;
      for (int64_t k = 0; k < 32; ++k) {
        const int64_t ch = pr.grp * 32 + k;
        bool in = ih >= 0 && ih < g.h && iw >= 0 && iw < g.w && ch < g.c;
        d[b * 32 + k] = in ? float_to_bfloat16(x[(ch / 16) * plane + (ih * g.w + iw) * 16 + ch % 16]) : 0;
      }
    }
  }
}

// The same rows from a bf16 value ([groups][h][w][32]): copies, zero outside.
void pack_rows_from_bf16(const TileConvGeom& g, const uint16_t* x, uint16_t* xin, int64_t row0, int64_t row1) {
  for (int64_t row = row0; row < row1; ++row) {
    const Bf16Row pr = packed_row(g, xin, row);
    if (!pr.d) continue;
    uint16_t* d = pr.d;
    const int64_t ih = pr.a * g.sh + pr.phase / g.sw - g.ph;
    if (ih < 0 || ih >= g.h) {
      std::fill(d, d + g.wq * 32, uint16_t{0});
      continue;
    }
    const uint16_t* src = x + (pr.grp * g.h + ih) * g.w * 32;
    for (int64_t b = 0; b < g.wq; ++b) {
      const int64_t iw = b * g.sw + pr.phase % g.sw - g.pw;
      if (iw < 0 || iw >= g.w)
        std::fill(d + b * 32, d + b * 32 + 32, uint16_t{0});
      else
        std::memcpy(d + b * 32, src + iw * 32, 64);
    }
  }
}

void strip_reference(const TileConvStrip& s) {
  const TileConvGeom& g = *s.g;
  const int64_t plane = g.oh * g.ow * 16;
  const int64_t group_px = g.phases * g.phase_pixels;
  for (int64_t f = s.f0; f < s.f1; ++f) {
    const int64_t oh = f / g.wq, ow = f % g.wq;
    if (oh >= g.oh || ow >= g.ow) continue;
    for (int64_t b = s.b0; b < s.b1; ++b) {
      for (int n = 0; n < 16; ++n) {
        float sum = 0;
        for (int64_t grp = 0; grp < g.groups; ++grp)
          for (int64_t t = 0; t < g.taps; ++t) {
            const uint16_t* xp = s.xin + (grp * group_px + g.tap_off[t] + f) * 32;
            const uint16_t* wp = s.w + ((b * g.groups + grp) * g.taps + t) * 512;
            for (int k = 0; k < 32; ++k)
              sum += bfloat16_to_float(xp[k]) * bfloat16_to_float(wp[(k / 2) * 32 + n * 2 + k % 2]);
          }
        const int64_t at = b * plane + (oh * g.ow + ow) * 16 + n;
        float v = sum + s.bias[b * 16 + n];
        if (s.r && g.r_bf16) {
          const int64_t ch = b * 16 + n;
          v += bfloat16_to_float(
              static_cast<const uint16_t*>(s.r)[((ch / 32) * g.oh * g.ow + oh * g.ow + ow) * 32 + ch % 32]);
        } else if (s.r) {
          v += static_cast<const float*>(s.r)[at];
        }
        v = s.act->apply(v);
        if (g.y_bf16) {
          // Channel b * 16 + n of the 32-channel groups; a lone last block's partner lanes are zero.
          const int64_t ch = b * 16 + n;
          uint16_t* y = static_cast<uint16_t*>(s.y) + ((ch / 32) * g.oh * g.ow + oh * g.ow + ow) * 32;
          y[ch % 32] = float_to_bfloat16(v);
          if (b + 1 == g.blocks && b % 2 == 0) y[16 + n] = 0;
        } else {
          static_cast<float*>(s.y)[at] = v;
        }
      }
    }
  }
}

}  // namespace

std::string bf16_conv_declined(const NchwcConvSpec& s, Bf16Isa isa) {
  if (isa == Bf16Isa::kNone) return bf16_isa_reason();
  if (s.q.groups != 1) return "needs groups == 1";
  if (s.block != 16) return "needs the 16-channel blocked layout (AVX-512)";
  // A convolution reading plain channels (the image) folds its window's
  // columns into the 32 channels of a pixel (conv_bf16_isa.h).
  if (!s.input_blocked && s.q.c * s.q.kw > 32)
    return "reads plain channels whose window columns do not fold into 32 (C x kw > 32)";
  if (s.y_channels != 0 && s.y_channels != s.q.m) return "writes only an output of its own (y_channels == m)";
  if (s.q.kh * s.q.kw > 4096) return "needs at most 4096 taps";
  return {};
}

Bf16Conv::Bf16Conv(const NchwcConvSpec& s, Bf16Isa isa, const float* w, const float* bias) : s_(s), isa_(isa) {
  const Geometry& q = s.q;
  TileConvGeom& g = g_;
  folded_ = !s.input_blocked;
  // A bf16 input of a 1x1, stride-1, unpadded convolution is read in place
  // (conv_bf16_isa.h); every other input is packed per run.
  direct_ = s.x_bf16 && q.kh == 1 && q.kw == 1 && q.sh == 1 && q.sw == 1 && q.ph == 0 && q.pw == 0 && q.oh == q.h &&
            q.ow == q.w;
  tile_conv_geometry(q, 32, folded_, direct_, &g, &tap_off_, &phases_read_);
  g.y_bf16 = s.y_bf16;
  g.r_bf16 = s.r_bf16;
  image_elems_ = static_cast<size_t>(g.groups * g.phases * g.phase_pixels * 32);
  ws_bytes_ = direct_ ? 0 : (static_cast<size_t>(q.n) * image_elems_ * sizeof(uint16_t) + 63) / 64 * 64;

  // Units: blocks whose packed weights fit about 512 KiB of L2 (an even
  // number, for the 2-block steps), times strips of 32-pixel steps.
  const int64_t block_bytes = g.groups * g.taps * 512 * 2;
  blocks_per_unit_ = std::clamp<int64_t>((512 * 1024) / std::max<int64_t>(block_bytes, 1) / 2 * 2, 2, 64);
  blocks_per_unit_ = std::min(blocks_per_unit_, (g.blocks + 1) / 2 * 2);  // even: a unit starts a 32-channel group
  pixels_per_unit_ = 128;

  if (!w) return;
  w_.assign(static_cast<size_t>(g.blocks * g.groups * g.taps * 512), 0);
  for (int64_t b = 0; b < g.blocks; ++b)
    for (int64_t grp = 0; grp < g.groups; ++grp)
      for (int64_t t = 0; t < g.taps; ++t) {
        uint16_t* d = w_.data() + ((b * g.groups + grp) * g.taps + t) * 512;
        for (int k = 0; k < 32; ++k)
          for (int n = 0; n < 16; ++n) {
            int64_t co = b * 16 + n;
            // Folded: channel k is (ci, j) = divmod(k, kw) of window row t;
            // with the rows folded too, (ci, i, j) of the one tap.
            const int64_t fk = k / q.kw, i = g.fold_kh > 1 ? fk % g.fold_kh : t;
            int64_t ci = folded_ ? fk / g.fold_kh : grp * 32 + k;
            if (co >= q.m || ci >= q.c) continue;
            int64_t src = folded_ ? ((co * q.c + ci) * q.kh + i) * q.kw + k % q.kw : (co * q.c + ci) * g.taps + t;
            d[(k / 2) * 32 + n * 2 + k % 2] = float_to_bfloat16(w[src]);
          }
      }
  bias_.assign(static_cast<size_t>(g.blocks * 16), 0.0f);
  if (bias) std::copy(bias, bias + q.m, bias_.begin());
}

void Bf16Conv::run(const void* x, const void* r, void* y, void* workspace, ThreadPool& pool) const {
  const TileConvGeom& g = g_;
  const int64_t n = s_.q.n;
  // Elements (floats or bf16s) per image of x and y.
  const int64_t x_image = folded_     ? g.c * g.h * g.w
                          : s_.x_bf16 ? g.groups * g.h * g.w * 32
                                      : ceil_div(g.c, 16) * g.h * g.w * 16;
  const int64_t y_image = g.y_bf16 ? ceil_div(g.m, 32) * g.oh * g.ow * 32 : g.blocks * g.oh * g.ow * 16;
  const int64_t r_image = g.r_bf16 ? ceil_div(g.m, 32) * g.oh * g.ow * 32 : g.blocks * g.oh * g.ow * 16;
  const uint16_t* xin = static_cast<const uint16_t*>(direct_ ? x : workspace);
  const int64_t xin_image = direct_ ? x_image : static_cast<int64_t>(image_elems_);
  const int64_t punits = ceil_div(g.flat, pixels_per_unit_);
  const int64_t bpu = tile_blocks_per_unit(blocks_per_unit_, g.blocks, n * punits, pool);
  const int64_t bunits = ceil_div(g.blocks, bpu);
  const bool affine = tile_affine(punits, pool);
  if (!direct_) {
    uint16_t* dst = static_cast<uint16_t*>(workspace);
    // The packer of this input's form; x_bf16 reads bf16 elements, the rest floats.
    using FloatPack = void (*)(const TileConvGeom&, const float*, uint16_t*, int64_t, int64_t);
    const FloatPack fpack =
        folded_
            ? (isa_ != Bf16Isa::kNone && g.dw == 1 && g.kw <= 16 ? bf16_pack_rows_folded_avx512bf16 : pack_rows_folded)
        : isa_ == Bf16Isa::kNone ? pack_rows_reference
                                 : bf16_pack_rows_avx512bf16;
    tile_pack_images(g, phases_read_, n, affine, pool, [&](int64_t img, int64_t r0, int64_t r1) {
      uint16_t* d = dst + img * xin_image;
      if (s_.x_bf16)
        pack_rows_from_bf16(g, static_cast<const uint16_t*>(x) + img * x_image, d, r0, r1);
      else
        fpack(g, static_cast<const float*>(x) + img * x_image, d, r0, r1);
    });
  }
  auto strip = isa_ == Bf16Isa::kAmx          ? bf16_conv_strip_amx
               : isa_ == Bf16Isa::kAvx512Bf16 ? bf16_conv_strip_avx512bf16
                                              : strip_reference;
  tile_run_units(n, bunits, punits, affine, pool, [&](int64_t img, int64_t bu, int64_t pu) {
    TileConvStrip st{&g,
                     xin + img * xin_image,
                     w_.data(),
                     bias_.data(),
                     !r         ? nullptr
                     : g.r_bf16 ? static_cast<const void*>(static_cast<const uint16_t*>(r) + img * r_image)
                                : static_cast<const void*>(static_cast<const float*>(r) + img * r_image),
                     &s_.act,
                     g.y_bf16 ? static_cast<void*>(static_cast<uint16_t*>(y) + img * y_image)
                              : static_cast<void*>(static_cast<float*>(y) + img * y_image),
                     0,
                     0,
                     0,
                     0};
    st.f0 = pu * pixels_per_unit_;
    st.f1 = std::min(g.flat, st.f0 + pixels_per_unit_);
    st.b0 = bu * bpu;
    st.b1 = std::min(g.blocks, st.b0 + bpu);
    strip(st);
  });
}

std::string Bf16Conv::describe() const {
  return std::string("nchwc_bf16 isa=") + bf16_isa_name(isa_) + " groups32=" + std::to_string(g_.groups) +
         " phases=" + std::to_string(g_.phases) + " flat=" + std::to_string(g_.flat) + "/" +
         std::to_string(g_.oh * g_.ow) +
         (direct_     ? " in=bf16 in place"
          : s_.x_bf16 ? " in=bf16 repacked"
                      : "") +
         (s_.y_bf16 ? " out=bf16" : "") + (s_.r_bf16 ? " residual=bf16" : "") +
         (folded_ ? g_.fold_kh > 1 ? " in=plain, window folded" : " in=plain, window columns folded" : "");
}

}  // namespace minirt::cpu
