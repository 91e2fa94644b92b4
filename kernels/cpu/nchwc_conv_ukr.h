// The blocked float32 convolution's microkernels' one body (layouts and
// arguments in nchwc_conv_isa.h), for the ISA files only
// (nchwc_conv_avx512.cpp and nchwc_conv_plain_avx512.cpp through
// nchwc_conv_zmm_avx512.h, nchwc_conv_avx2.cpp), which differ in the vector
// traits they give it. Everything here is in an anonymous namespace, so each
// ISA object has its own copy, compiled with its own flags, and none of it
// reaches the linker as a symbol another object could bind to; no std
// template is used (an instantiation would be a weak symbol).
//
// Traits W: kLanes (B, the channels of a block), V, zero(), load(p)
// (aligned), loadu(p), storeu(p, v), set1(f), fmadd(a, b, c), add, max(a,
// b) (b where a is NaN), min, act(v, activation), act_kind<K>(v,
// activation) (act_tile_ukr.h), and gated(y, ps, bs, n, nb, args): the quantized SiLU of a
// depthwise tile in place (DwArgs::gate), out of line.
#pragma once

#include <xmmintrin.h>  // _mm_prefetch

#include <cstdint>

#include "kernels/cpu/act_tile_ukr.h"
#include "kernels/cpu/nchwc_conv_isa.h"

namespace minirt::cpu {
namespace {

using nchwc_tiles::DirectArgs;
using nchwc_tiles::DirectFn;
using nchwc_tiles::DwArgs;
using nchwc_tiles::DwFn;
using nchwc_tiles::Finish;
using nchwc_tiles::FinMode;

inline int64_t tile_ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Up to n lines from *p on (not past end) towards L2; *p moves past them.
inline void prefetch_some(const char** p, const char* end, int64_t n) {
  for (; n > 0 && *p < end; --n, *p += 64) _mm_prefetch(*p, _MM_HINT_T1);
}

template <class W>
struct ConvTiles {
  using V = typename W::V;
  static constexpr int B = W::kLanes;

  // acc[p][o] += the L input channels of one block at one tap (the first nl
  // unless FULL): x at the tile's first pixel (pixels XS floats apart, or xps
  // when XS is 0), w as [L][NB][B]. With the pixel stride known the UR inputs
  // are displacements from one register.
  template <int UR, int NB, int L, int XS, bool FULL>
  __attribute__((always_inline)) static inline void fma_block(const float* x, int64_t xps_rt, const float* w, int nl,
                                                              V (&acc)[UR][NB]) {
    const int64_t xps = XS ? XS : xps_rt;
#pragma GCC unroll 4
    for (int l = 0; l < (FULL ? L : nl); ++l) {
      V wv[NB];
#pragma GCC unroll 4
      for (int o = 0; o < NB; ++o) wv[o] = W::load(w + (l * NB + o) * B);
#pragma GCC unroll 12
      for (int p = 0; p < UR; ++p) {
        const V xv = W::set1(x[p * xps + l]);
#pragma GCC unroll 4
        for (int o = 0; o < NB; ++o) acc[p][o] = W::fmadd(xv, wv[o], acc[p][o]);
      }
    }
  }

  // UR x NB results to y (pixels ps apart, blocks bs apart) through the
  // epilogue's register part.
  template <int UR, int NB>
  __attribute__((always_inline)) static inline void store_tile(V (&acc)[UR][NB], float* y, int64_t ps, int64_t bs,
                                                               const Finish& fin) {
    const V lo = W::set1(fin.mode == FinMode::kRelu ? 0.0f : fin.lo), hi = W::set1(fin.hi);
    if (fin.mode == FinMode::kRelu) {
      // max(v, 0): the second operand when v is NaN.
#pragma GCC unroll 12
      for (int p = 0; p < UR; ++p)
#pragma GCC unroll 4
        for (int o = 0; o < NB; ++o) W::storeu(y + p * ps + o * bs, W::max(acc[p][o], lo));
    } else if (fin.mode == FinMode::kClip) {
#pragma GCC unroll 12
      for (int p = 0; p < UR; ++p)
#pragma GCC unroll 4
        for (int o = 0; o < NB; ++o) W::storeu(y + p * ps + o * bs, W::min(hi, W::max(lo, acc[p][o])));
    } else {
#pragma GCC unroll 12
      for (int p = 0; p < UR; ++p)
#pragma GCC unroll 4
        for (int o = 0; o < NB; ++o) W::storeu(y + p * ps + o * bs, acc[p][o]);
    }
  }

  // Packed weights, per (input block, tap): for each of the block's L input
  // channels, NB vectors of B output channels (one per output block):
  // acc[p][o] += x[pixel p][channel l] * w[l][o], one broadcast per (l, p), one
  // load per (l, o). Tiles along a row (XS known) write pixels B floats apart.
  template <int UR, int NB, int L, int XS>
  static void direct(const DirectArgs& args) {
    const DirectArgs a = args;  // a copy the stores cannot alias: fields stay in registers
    const int64_t xps = XS ? XS : a.xps, yps = XS ? B : a.yps;
    const int64_t wdj = static_cast<int64_t>(L) * NB * B, wdi = a.kw * wdj, wcb = a.kh * wdi;
    // The pass's last block only up to its real lanes (C = 24 in blocks of 16:
    // a third of the FMAs would multiply zero weights).
    const int64_t nfull = a.tail ? a.ncb - 1 : a.ncb;
    const int nl = static_cast<int>(a.tail);
    // The prefetches spread over the full input blocks.
    const char* pf = a.pf;
    const char* const pf_end = a.pf + a.pf_lines * 64;
    const int64_t calls = a.count * nfull > 1 ? a.count * nfull : 1;
    const int64_t pf_per = a.pf_lines ? tile_ceil_div(a.pf_lines, calls) : 0;
    for (int64_t t = 0; t < a.count; ++t) {
      const float* x = a.x + t * UR * xps;
      float* y = a.y + t * UR * yps;
      V acc[UR][NB];
      if (a.first) {
        const float* r = a.r ? a.r + t * UR * yps : nullptr;
#pragma GCC unroll 4
        for (int o = 0; o < NB; ++o) {
          const V bv = W::loadu(a.bias + o * B);
#pragma GCC unroll 12
          for (int p = 0; p < UR; ++p) acc[p][o] = r ? W::add(bv, W::loadu(r + p * yps + o * a.yob)) : bv;
        }
      } else {
#pragma GCC unroll 12
        for (int p = 0; p < UR; ++p)
#pragma GCC unroll 4
          for (int o = 0; o < NB; ++o) acc[p][o] = W::loadu(y + p * yps + o * a.yob);
      }
      const float* xc = x;
      const float* wc = a.w;
      if (a.ni == 1 && a.nj == 1) {  // a 1x1 window, or an edge tile that sees one tap
        for (int64_t cb = 0; cb < nfull; ++cb, xc += a.xcb, wc += wcb) {
          fma_block<UR, NB, L, XS, true>(xc, xps, wc, L, acc);
          prefetch_some(&pf, pf_end, pf_per);
        }
        if (nl) fma_block<UR, NB, L, XS, false>(xc, xps, wc, nl, acc);
      } else {
        for (int64_t cb = 0; cb < nfull; ++cb, xc += a.xcb, wc += wcb) {
          for (int64_t i = 0; i < a.ni; ++i)
            for (int64_t j = 0; j < a.nj; ++j)
              fma_block<UR, NB, L, XS, true>(xc + i * a.xdi + j * a.xdj, xps, wc + i * wdi + j * wdj, L, acc);
          prefetch_some(&pf, pf_end, pf_per);
        }
        if (nl)
          for (int64_t i = 0; i < a.ni; ++i)
            for (int64_t j = 0; j < a.nj; ++j)
              fma_block<UR, NB, L, XS, false>(xc + i * a.xdi + j * a.xdj, xps, wc + i * wdi + j * wdj, nl, acc);
      }
      store_tile<UR, NB>(acc, y, yps, a.yob, a.fin);
      if (a.fin.after) ActTile<W>::run(y, yps, a.yob, UR, NB, *a.act);
    }
  }

  // Depthwise: per tap one weight vector (B channels) and, per pixel, one
  // input vector and one FMA. Pixels XS floats apart in x (0: xps) and, along
  // a row (XS known), B apart in y.
  template <int UR, int XS>
  static void dw(const DwArgs& args) {
    const DwArgs a = args;  // a copy the stores cannot alias: fields stay in registers
    const int64_t xps = XS ? XS : a.xps, yps = XS ? B : a.yps;
    // A short tile's chains would wait on the FMA latency: the odd taps of
    // each row go to a second set of sums.
    constexpr int S = UR < 8 ? 2 : 1;
    const V bv = W::loadu(a.bias);
    for (int64_t t = 0; t < a.count; ++t) {
      const float* x = a.x + t * UR * xps;
      float* y = a.y + t * UR * yps;
      const float* r = a.r ? a.r + t * UR * yps : nullptr;
      V acc[UR][1];
#pragma GCC unroll 12
      for (int p = 0; p < UR; ++p) acc[p][0] = r ? W::add(bv, W::loadu(r + p * yps)) : bv;
      V odd[S == 2 ? UR : 1];
#pragma GCC unroll 12
      for (int p = 0; p < (S == 2 ? UR : 1); ++p) odd[p] = W::zero();
      for (int64_t i = 0; i < a.ni; ++i) {
        const float* xi = x + i * a.xdi;
        const float* wi = a.w + i * a.kw * B;
        int64_t j = 0;
        if (S == 2) {
          for (; j + 1 < a.nj; j += 2) {
            const float* xj = xi + j * a.xdj;
            const V w0 = W::load(wi + j * B), w1 = W::load(wi + (j + 1) * B);
#pragma GCC unroll 12
            for (int p = 0; p < UR; ++p) {
              acc[p][0] = W::fmadd(W::loadu(xj + p * xps), w0, acc[p][0]);
              odd[p] = W::fmadd(W::loadu(xj + a.xdj + p * xps), w1, odd[p]);
            }
          }
        }
        for (; j < a.nj; ++j) {
          const float* xj = xi + j * a.xdj;
          const V wv = W::load(wi + j * B);
#pragma GCC unroll 12
          for (int p = 0; p < UR; ++p) acc[p][0] = W::fmadd(W::loadu(xj + p * xps), wv, acc[p][0]);
        }
      }
      if (S == 2)
#pragma GCC unroll 12
        for (int p = 0; p < UR; ++p) acc[p][0] = W::add(acc[p][0], odd[p % (S == 2 ? UR : 1)]);
      store_tile<UR, 1>(acc, y, yps, 0, a.fin);
      if (a.gate)
        W::gated(y, yps, 0, UR, 1, a);
      else if (a.fin.after)
        ActTile<W>::run(y, yps, 0, UR, 1, *a.act);
    }
  }

  // row[u - 1] = direct<u, NB, L, XS> for u in [1, U].
  template <int NB, int L, int XS, int U>
  static constexpr void fill_direct(DirectFn* row) {
    row[U - 1] = &direct<U, NB, L, XS>;
    if constexpr (U > 1) fill_direct<NB, L, XS, U - 1>(row);
  }
  template <int XS, int U>
  static constexpr void fill_dw(DwFn* row) {
    row[U - 1] = &dw<U, XS>;
    if constexpr (U > 1) fill_dw<XS, U - 1>(row);
  }
  // table[nb - 1][ur - 1] for nb up to the ISA's NBS, ur up to URS[nb - 1].
  template <int L, int XS, int N, int... URS>
  static constexpr void fill_table(DirectFn (*table)[nchwc_tiles::kMaxUr]) {
    constexpr int urs[] = {URS...};
    fill_direct<N, L, XS, urs[N - 1]>(table[N - 1]);
    if constexpr (N > 1) fill_table<L, XS, N - 1, URS...>(table);
  }
  // The blocked-input and depthwise tables, and the plain-input one.
  template <int... URS>
  static constexpr nchwc_tiles::Kernels kernels() {
    nchwc_tiles::Kernels k{};
    constexpr int nbs = sizeof...(URS);
    fill_table<B, 0, nbs, URS...>(k.blocked[0]);
    fill_table<B, B, nbs, URS...>(k.blocked[1]);
    fill_dw<0, nchwc_tiles::kDwUr>(k.dw[0]);
    fill_dw<B, nchwc_tiles::kDwUr>(k.dw[1]);
    fill_dw<2 * B, nchwc_tiles::kDwUr>(k.dw[2]);
    return k;
  }
  template <int... URS>
  static constexpr nchwc_tiles::PlainKernels plain_kernels() {
    nchwc_tiles::PlainKernels k{};
    constexpr int nbs = sizeof...(URS);
    fill_table<1, 0, nbs, URS...>(k.plain[0]);
    fill_table<1, 1, nbs, URS...>(k.plain[1]);
    fill_table<1, 2, nbs, URS...>(k.plain[2]);
    return k;
  }
};

}  // namespace
}  // namespace minirt::cpu
