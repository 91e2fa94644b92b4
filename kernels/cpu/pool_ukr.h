// The direct MaxPool's one body (pool_isa.h: MaxRows, DirectMaxPool), for
// the ISA files only (pool_avx512.cpp, pool_avx2.cpp), which give it their
// vector traits W: kLanes (L), V, set1(f), loadu(p), storeu(p, v), max(a, b)
// (b where a is NaN). In an anonymous namespace, no std template: each ISA
// object has its own copy.
#pragma once

#include <cstdint>

#include "kernels/cpu/pool_isa.h"
#include "kernels/cpu/pool_scalar.h"

namespace minirt::cpu {
namespace {

template <class W>
struct DirectMax {
  using V = typename W::V;
  static constexpr int64_t L = W::kLanes;

  // Output pixel (., ox) whose window is partly outside the input (window
  // rows from ys, [t0, t1) of them inside): the taps inside, looped.
  static void edge(const MaxRows& a, int64_t ys, int64_t t0, int64_t t1, int64_t ox, float* yr) {
    const PoolWindow& q = *a.q;
    int64_t j0, j1;
    taps_inside(ox * q.sw - q.pw, q.kw, q.dw, q.w, j0, j1);
    V acc = W::set1(kLowest);
    for (int64_t i = t0; i < t1; ++i)
      for (int64_t j = j0; j < j1; ++j)
        acc = W::max(W::loadu(a.x + ((ys + i * q.dh) * q.w + ox * q.sw - q.pw + j * q.dw) * L), acc);
    W::storeu(yr + ox * L, acc);
  }

  // Output rows whose window rows all lie inside the input run their interior
  // columns with the window unrolled; the rest of the pixels loop over the
  // taps inside.
  template <int KH, int KW>
  static void rows(const MaxRows& a) {
    const PoolWindow& q = *a.q;
    const int64_t ldx = q.w * L, ti = q.dh * ldx, tj = q.dw * L;
    for (int64_t oy = a.r0; oy < a.r1; ++oy) {
      const int64_t ys = oy * q.sh - q.ph;
      int64_t t0, t1;
      taps_inside(ys, q.kh, q.dh, q.h, t0, t1);
      float* yr = a.y + oy * q.ow * L;
      const bool rows_in = t0 == 0 && t1 == KH;
      const int64_t c0 = rows_in ? a.col_lo : q.ow, c1 = rows_in ? a.col_hi : q.ow;
      for (int64_t ox = 0; ox < c0; ++ox) edge(a, ys, t0, t1, ox, yr);
      for (int64_t ox = c0; ox < c1; ++ox) {
        const float* xc = a.x + ys * ldx + (ox * q.sw - q.pw) * L;
        V acc = W::set1(kLowest);
#pragma GCC unroll 3
        for (int i = 0; i < KH; ++i)
#pragma GCC unroll 3
          for (int j = 0; j < KW; ++j) acc = W::max(W::loadu(xc + i * ti + j * tj), acc);
        W::storeu(yr + ox * L, acc);
      }
      for (int64_t ox = max64(c1, c0); ox < q.ow; ++ox) edge(a, ys, t0, t1, ox, yr);
    }
  }

  static constexpr DirectMaxPool kernels() { return DirectMaxPool{&rows<2, 2>, &rows<3, 3>}; }
};

}  // namespace
}  // namespace minirt::cpu
