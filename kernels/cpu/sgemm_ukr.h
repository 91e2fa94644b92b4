// The SGEMM microkernels' one body, for the ISA files only (sgemm_avx512.cpp,
// sgemm_avx2.cpp), which differ in the vector traits they give it: V (a
// register of kLanes floats), Mask, and the handful of operations below.
// Everything here is in an anonymous namespace, so each ISA object has its
// own copy, compiled with its own flags, and none of it reaches the linker
// as a symbol another object could bind to.
//
//   struct Zmm { using V = __m512; ... };       // in sgemm_avx512.cpp
//   Tile<Zmm>::wide<R, V, IND>, Tile<Zmm>::narrow<NC, IND>
//
// Wide traits W: kMr, kNr (the panel shape), kLanes, kMaskEveryInPlace (an in-place
// B reads every vector masked, not only the last), V, Mask, zero(),
// load(p), load(p, mask) (masked lanes zero), store(p, mask, v),
// broadcast(p) (*p in every lane), set1, fmadd, add, mul, mask(n) (the first
// n lanes), act(v, activation); and Row, the traits of the narrow kernels'
// vector of kMr floats (one per row of the A panel): kLanes, V, zero(),
// load(p), store_aligned(p, v), set1, fmadd, add.
#pragma once

#include <cstdint>

#include "kernels/cpu/sgemm_isa.h"
#include "runtime/ops/activation.h"  // the Activation struct's fields (no function of it is called here)

namespace minirt::cpu {
namespace {

// std::clamp as libstdc++ 12 writes it (min(max(v, lo), hi), by const
// reference), without a std template (see the header comment).
inline const int& min_int(const int& a, const int& b) { return b < a ? b : a; }
inline const int& max_int(const int& a, const int& b) { return a < b ? b : a; }
inline int clamp_int(const int& v, const int& lo, const int& hi) { return min_int(max_int(v, lo), hi); }

// Partial sums per column in the narrow kernels: enough independent FMA
// chains to cover the latency when there are few columns.
constexpr int narrow_sums(int nc) { return nc >= 8 ? 1 : 8 / nc < 4 ? 8 / nc : 4; }
static_assert(narrow_sums(1) == 4 && narrow_sums(2) == 4 && narrow_sums(3) == 2 && narrow_sums(8) == 1 &&
              narrow_sums(12) == 1);

template <class W>
struct Tile {
  static constexpr int MR = W::kMr, NR = W::kNr, L = W::kLanes;
  using V = typename W::V;

  // R rows by V vectors of columns (the last one masked to o.cols).
  template <int R, int NV, bool IND>
  static void wide(int64_t kc, const float* a, const float* b, const int64_t* koff, const SgemmTileOut& o) {
    typename W::Mask mask[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) mask[v] = W::mask(clamp_int(o.cols - L * v, 0, L));
    V acc[R][NV];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[r][v] = W::zero();
    for (int64_t k = 0; k < kc; ++k, a += MR) {
      const float* bk = IND ? b + koff[k] : b + k * NR;
      V bv[NV];
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v)
        bv[v] = IND && (W::kMaskEveryInPlace || v == NV - 1) ? W::load(bk + L * v, mask[v]) : W::load(bk + L * v);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        V av = W::broadcast(a + r);
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) acc[r][v] = W::fmadd(av, bv[v], acc[r][v]);
      }
    }
    const bool scale = o.alpha != 1.0f;
    const V alpha = W::set1(o.alpha);
    // The fused activation, every kind in vector form (vmath.h), on the tile in registers.
    const bool vact = o.last && o.act->kind != ActKind::kNone;
    V cb[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) cb[v] = o.last && o.col_bias ? W::load(o.col_bias + L * v, mask[v]) : W::zero();
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      float* p = o.c + r * o.ldc;
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) {
        V x = acc[r][v];
        if (scale) x = W::mul(x, alpha);
        if (o.load_c) x = W::add(x, W::load(p + L * v, mask[v]));
        if (o.last) {
          if (o.row_bias) x = W::add(x, W::set1(o.row_bias[r]));
          if (o.col_bias) x = W::add(x, cb[v]);
          if (vact) x = W::act(x, *o.act);
        }
        W::store(p + L * v, mask[v], x);
      }
    }
  }

  // Narrow column tails (NC <= narrow_max columns): vectorized along the MR
  // rows of the A panel instead, one accumulator per column (and per partial
  // sum); the epilogue is sgemm_finish_narrow's, as the portable kernel's.
  template <int NC, bool IND>
  static void narrow(int64_t kc, const float* a, const float* b, const int64_t* koff, const SgemmTileOut& o) {
    using Row = typename W::Row;
    using RV = typename Row::V;
    static_assert(Row::kLanes == MR);
    constexpr int U = narrow_sums(NC);
    RV acc[U][NC];
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u)
#pragma GCC unroll 16
      for (int j = 0; j < NC; ++j) acc[u][j] = Row::zero();
    int64_t k = 0;
    for (; k + U <= kc; k += U, a += U * MR)
#pragma GCC unroll 4
      for (int u = 0; u < U; ++u) {
        const float* bk = IND ? b + koff[k + u] : b + (k + u) * NR;
        RV av = Row::load(a + u * MR);
#pragma GCC unroll 16
        for (int j = 0; j < NC; ++j) acc[u][j] = Row::fmadd(av, Row::set1(bk[j]), acc[u][j]);
      }
    for (; k < kc; ++k, a += MR) {
      const float* bk = IND ? b + koff[k] : b + k * NR;
      RV av = Row::load(a);
#pragma GCC unroll 16
      for (int j = 0; j < NC; ++j) acc[0][j] = Row::fmadd(av, Row::set1(bk[j]), acc[0][j]);
    }
    alignas(sizeof(RV)) float t[NC][MR];
#pragma GCC unroll 16
    for (int j = 0; j < NC; ++j) {
      RV sum = acc[0][j];
#pragma GCC unroll 4
      for (int u = 1; u < U; ++u) sum = Row::add(sum, acc[u][j]);
      Row::store_aligned(t[j], sum);
    }
    sgemm_finish_narrow(&t[0][0], MR, NC, o);
  }

  // The tables of SgemmKernels for this ISA's shapes, made at compile time.
  template <bool IND, int R, int NV>
  static constexpr void fill_wide(SgemmKernels& k) {
    if constexpr (NV > 0) {
      k.wide[IND][R - 1][NV - 1] = wide<R, NV, IND>;
      fill_wide<IND, R, NV - 1>(k);
    }
  }
  template <bool IND, int R>
  static constexpr void fill_rows(SgemmKernels& k) {
    if constexpr (R > 0) {
      fill_wide<IND, R, W::kNr / W::kLanes>(k);
      fill_rows<IND, R - 1>(k);
    }
  }
  template <bool IND, int NC>
  static constexpr void fill_narrow(SgemmKernels& k) {
    if constexpr (NC > 0) {
      k.narrow[IND][NC - 1] = narrow<NC, IND>;
      fill_narrow<IND, NC - 1>(k);
    }
  }
  template <int NARROW>
  static constexpr SgemmKernels make() {
    static_assert(MR <= kSgemmMaxRows && NR / L <= kSgemmMaxVectors && NARROW <= kSgemmMaxNarrow);
    SgemmKernels k{};
    fill_rows<false, MR>(k);
    fill_rows<true, MR>(k);
    fill_narrow<false, NARROW>(k);
    fill_narrow<true, NARROW>(k);
    return k;
  }
};

}  // namespace
}  // namespace minirt::cpu
