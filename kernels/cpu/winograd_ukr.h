// The float32 Winograd kernels' one body (nchwc_winograd.h: the algorithm;
// winograd_isa.h: the arguments and the table), for the ISA files only
// (nchwc_winograd_avx512.cpp, nchwc_winograd_avx2.cpp), which give it their
// vector traits W: B (lanes), V, load(p) and loadu(p) (unaligned),
// load_aligned(p), store(p, v) and storeu(p, v), set1(f), zero(), add, sub,
// fma(k, a, c) (k a + c), fmav(a, b, c), max(a, b) (b where a is NaN), min,
// act(v, activation) and act_kind<K>(v, activation) (act_tile_ukr.h). In an
// anonymous namespace, no std template: each ISA object has its own copy.
#pragma once

#include <cstdint>

#include "kernels/cpu/act_tile_ukr.h"
#include "kernels/cpu/winograd_isa.h"

namespace minirt::cpu {
namespace {

using winograd_tiles::GemmArgs;
using winograd_tiles::GemmFn;
using winograd_tiles::InArgs;
using winograd_tiles::OutArgs;

inline int64_t min64(int64_t a, int64_t b) { return b < a ? b : a; }
inline int64_t max64(int64_t a, int64_t b) { return a < b ? b : a; }

template <class W>
struct WinogradTiles {
  using V = typename W::V;
  static constexpr int B = W::B;

  // B^T along one axis: o[i] = sum_r B^T[i][r] d[r].
  template <int M>
  __attribute__((always_inline)) static inline void bt(const V (&d)[M + 2], V (&o)[M + 2]) {
    if constexpr (M == 2) {
      o[0] = W::sub(d[0], d[2]);
      o[1] = W::add(d[1], d[2]);
      o[2] = W::sub(d[2], d[1]);
      o[3] = W::sub(d[1], d[3]);
    } else {
      const V s = W::sub(d[3], d[1]), t = W::sub(d[4], d[2]);
      o[0] = W::fma(1.5f, s, W::fma(-2.0f, d[2], W::add(d[0], d[4])));
      o[1] = W::fma(2.5f, d[3], W::fma(0.5f, d[2], W::sub(d[4], d[1])));
      o[2] = W::fma(0.5f, d[3], W::fma(-2.5f, d[2], W::add(d[4], d[1])));
      o[3] = W::fma(2.0f, s, t);
      o[4] = W::fma(-0.5f, s, t);
      o[5] = W::fma(1.5f, t, W::fma(-2.0f, d[3], W::add(d[5], d[1])));
    }
  }

  // A^T along one axis: o[i] = sum_r A^T[i][r] d[r].
  template <int M>
  __attribute__((always_inline)) static inline void at(const V (&d)[M + 2], V (&o)[M]) {
    if constexpr (M == 2) {
      o[0] = W::add(W::add(d[0], d[1]), d[2]);
      o[1] = W::sub(W::sub(d[1], d[2]), d[3]);
    } else {
      const V a = W::add(d[1], d[2]), b = W::sub(d[1], d[2]);
      o[0] = W::add(W::add(d[0], a), W::add(d[3], d[4]));
      o[1] = W::fma(-2.0f, d[4], W::fma(0.5f, d[3], b));
      o[2] = W::fma(4.0f, d[4], W::fma(0.25f, d[3], a));
      o[3] = W::add(W::fma(-8.0f, d[4], W::fma(0.125f, d[3], b)), d[5]);
    }
  }

  template <int M>
  static void input(const InArgs& args) {
    constexpr int A = M + 2;
    const InArgs a = args;  // a copy the stores cannot alias: fields stay in registers
    alignas(64) float patch[A * A * B];
    const int64_t vxi = a.cbs * a.nt * B, plane = a.h * a.w * B;
    for (int64_t p = 0; p < a.nt; ++p) {
      const int64_t t = a.t0 + p, iy = t / a.tw * M - a.ph, ix = t % a.tw * M - a.pw;
      const bool inside = iy >= 0 && ix >= 0 && iy + A <= a.h && ix + A <= a.w;
      // A patch over the edge: the part inside the plane [r0, r1) x [s0, s1)
      // is copied into a patch whose rest is zero (the same for every block).
      const int64_t r0 = max64(0, -iy), r1 = min64(A, a.h - iy);
      const int64_t s0 = max64(0, -ix), s1 = min64(A, a.w - ix);
      if (!inside)
        for (int e = 0; e < A * A; ++e) W::store(patch + e * B, W::zero());
      for (int64_t cb = 0; cb < a.cbs; ++cb) {
        const float* xc = a.x + cb * plane;
        const float* src = patch;
        int64_t rs = A * B;
        if (inside) {
          src = xc + (iy * a.w + ix) * B;
          rs = a.w * B;
        } else {
          for (int64_t r = r0; r < r1; ++r)
            for (int64_t c = s0; c < s1; ++c)
              W::store(patch + (r * A + c) * B, W::load(xc + ((iy + r) * a.w + ix + c) * B));
        }
        // Opaque to the loop optimizer: else it keeps one pointer per load and
        // per store across the tiles (72), which spill.
        asm("" : "+r"(src), "+r"(rs));
        V tr[A][A];
#pragma GCC unroll 6
        for (int c = 0; c < A; ++c) {
          V d[A], o[A];
#pragma GCC unroll 6
          for (int r = 0; r < A; ++r) d[r] = W::load(src + r * rs + c * B);
          bt<M>(d, o);
#pragma GCC unroll 6
          for (int r = 0; r < A; ++r) tr[r][c] = o[r];
        }
        float* q = a.v + cb * a.nt * B + p * B;  // point (i, k) at q + (i * A + k) * vxi
        asm("" : "+r"(q));
#pragma GCC unroll 6
        for (int i = 0; i < A; ++i) {
          V o[A];
          bt<M>(tr[i], o);
#pragma GCC unroll 6
          for (int k = 0; k < A; ++k, q += vxi) W::store(q, o[k]);
        }
      }
    }
  }

  template <int UR, int NB>
  __attribute__((always_inline)) static inline void fma_block(const float* v, const float* u, V (&acc)[UR][NB]) {
#pragma GCC unroll 4
    for (int l = 0; l < B; ++l) {
      V w[NB];
#pragma GCC unroll 4
      for (int o = 0; o < NB; ++o) {
        w[o] = W::load_aligned(u + (l * NB + o) * B);
        asm("" : "+v"(w[o]));  // in a register: the compiler would fold the load into each of UR FMAs
      }
#pragma GCC unroll 12
      for (int p = 0; p < UR; ++p) {
        const V xv = W::set1(v[p * B + l]);
#pragma GCC unroll 4
        for (int o = 0; o < NB; ++o) acc[p][o] = W::fmav(xv, w[o], acc[p][o]);
      }
    }
  }

  template <int UR, int NB>
  static void gemm(const GemmArgs& args) {
    const GemmArgs a = args;
    V acc[UR][NB];
#pragma GCC unroll 12
    for (int p = 0; p < UR; ++p)
#pragma GCC unroll 4
      for (int o = 0; o < NB; ++o) acc[p][o] = W::zero();
    const float* v = a.v;
    const float* u = a.u;
    for (int64_t cb = 0; cb < a.cbs; ++cb, v += a.vcb, u += B * NB * B) fma_block<UR, NB>(v, u, acc);
#pragma GCC unroll 12
    for (int p = 0; p < UR; ++p)
#pragma GCC unroll 4
      for (int o = 0; o < NB; ++o) W::store(a.m + o * a.mob + p * B, acc[p][o]);
  }

  template <int M>
  static void output(const OutArgs& args) {
    constexpr int A = M + 2;
    const OutArgs a = args;
    const V bias = W::load(a.bias), lo = W::set1(a.fin.lo), hi = W::set1(a.fin.hi);
    for (int64_t p = 0; p < a.nt; ++p) {
      const int64_t t = a.t0 + p, oy = t / a.tw * M, ox = t % a.tw * M;
      const int nu = static_cast<int>(min64(M, a.oh - oy)), nv = static_cast<int>(min64(M, a.ow - ox));
      const float* mp = a.m + p * B;
      int64_t mxi = a.mxi;
      asm("" : "+r"(mp), "+r"(mxi));  // opaque to the loop optimizer, as in the input transform
      V tr[M][A];
#pragma GCC unroll 6
      for (int k = 0; k < A; ++k) {
        V d[A], o[M];
#pragma GCC unroll 6
        for (int i = 0; i < A; ++i) d[i] = W::load(mp + (i * A + k) * mxi);
        at<M>(d, o);
#pragma GCC unroll 4
        for (int u = 0; u < M; ++u) tr[u][k] = o[u];
      }
      float* yt = a.y + (oy * a.ow + ox) * B;
      const float* rt = a.r ? a.r + (oy * a.ow + ox) * B : nullptr;
#pragma GCC unroll 4
      for (int u = 0; u < M; ++u) {
        if (u >= nu) break;
        V o[M];
        at<M>(tr[u], o);
#pragma GCC unroll 4
        for (int v = 0; v < M; ++v) {
          if (v >= nv) break;
          V s = W::add(o[v], bias);
          if (rt) s = W::add(s, W::load(rt + (u * a.ow + v) * B));
          s = a.fin.nan_to_lo ? W::max(s, lo) : W::max(lo, s);
          W::store(yt + (u * a.ow + v) * B, W::min(hi, s));
        }
        if (a.fin.after) ActTile<W>::run(yt + u * a.ow * B, B, 0, nv, 1, *a.act);
      }
    }
  }

  // row[u - 1] = gemm<u, NB> for u in [1, U].
  template <int NB, int U>
  static constexpr void fill_gemm(GemmFn* row) {
    row[U - 1] = &gemm<U, NB>;
    if constexpr (U > 1) fill_gemm<NB, U - 1>(row);
  }
  template <int N, int... URS>
  static constexpr void fill_table(GemmFn (*table)[winograd_tiles::kMaxUr]) {
    constexpr int urs[] = {URS...};
    fill_gemm<N, urs[N - 1]>(table[N - 1]);
    if constexpr (N > 1) fill_table<N - 1, URS...>(table);
  }
  // The table for register tiles of up to URS[nb - 1] tiles for nb output blocks.
  template <int... URS>
  static constexpr winograd_tiles::Kernels kernels() {
    winograd_tiles::Kernels k{};
    k.in[0] = &input<2>;
    k.in[1] = &input<4>;
    k.out[0] = &output<2>;
    k.out[1] = &output<4>;
    fill_table<sizeof...(URS), URS...>(k.gemm);
    return k;
  }
};

}  // namespace
}  // namespace minirt::cpu
