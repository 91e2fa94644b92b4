// The iteration space of an elementwise op whose N operands broadcast
// (NumPy rules) to one output: outer positions, each an inner run of
// `inner` output elements along which operand k either advances
// (inner_step[k] == 1) or stays put (0). Adjacent axes with the same
// broadcast pattern are collapsed, so the inner run is as long as it can be.
//
//   Broadcast<2> bc({a_shape, b_shape}, y_shape);
//   int64_t off[2];
//   for (int64_t o = 0; o < bc.outer_count; ++o) {
//     bc.offsets(o, off);   // element offsets of a and b at y[o * bc.inner]
//     ... bc.inner elements, a advancing by bc.inner_step[0], b by bc.inner_step[1]
//   }
#pragma once

#include <minirt/tensor.h>

#include <array>
#include <cstdint>
#include <vector>

namespace minirt::cpu {

template <int N>
struct Broadcast {
  int64_t inner = 1;
  int64_t inner_step[N];
  Shape outer_shape;                     // collapsed outer axes
  std::vector<int64_t> outer_stride[N];  // per operand, in its elements; 0 where it broadcasts
  int64_t outer_count = 1;

  Broadcast(const std::array<Shape, N>& in, const Shape& y) {
    size_t r = y.size();
    std::array<Shape, N> padded;
    for (int k = 0; k < N; ++k) {
      padded[k] = Shape(r - in[k].size(), 1);
      padded[k].insert(padded[k].end(), in[k].begin(), in[k].end());
    }
    struct Axis {
      int64_t len;
      std::array<bool, N> bcast;  // operand k broadcasts along this axis
    };
    std::vector<Axis> axes;
    for (size_t i = 0; i < r; ++i) {
      if (y[i] == 1) continue;
      Axis ax{y[i], {}};
      for (int k = 0; k < N; ++k) ax.bcast[k] = padded[k][i] == 1;
      if (!axes.empty() && axes.back().bcast == ax.bcast)
        axes.back().len *= ax.len;
      else
        axes.push_back(ax);
    }
    if (axes.empty()) axes.push_back({1, {}});
    Axis last = axes.back();
    axes.pop_back();
    inner = last.len;
    // Outer strides in elements of each operand (0 where it broadcasts).
    int64_t step[N];
    for (int k = 0; k < N; ++k) {
      inner_step[k] = last.bcast[k] ? 0 : 1;
      step[k] = last.bcast[k] ? 1 : last.len;
      outer_stride[k].assign(axes.size(), 0);
    }
    for (size_t j = axes.size(); j-- > 0;) {
      for (int k = 0; k < N; ++k) {
        outer_stride[k][j] = axes[j].bcast[k] ? 0 : step[k];
        if (!axes[j].bcast[k]) step[k] *= axes[j].len;
      }
    }
    for (const Axis& a : axes) outer_shape.push_back(a.len);
    for (int64_t d : outer_shape) outer_count *= d;
  }

  // Element offsets of every operand at the start of outer position o.
  void offsets(int64_t o, int64_t* off) const {
    if (outer_shape.size() == 1) {  // the common case once axes are collapsed: no division
      for (int k = 0; k < N; ++k) off[k] = o * outer_stride[k][0];
      return;
    }
    for (int k = 0; k < N; ++k) off[k] = 0;
    for (int64_t d = static_cast<int64_t>(outer_shape.size()) - 1; d >= 0; --d) {
      int64_t i = o % outer_shape[d];
      o /= outer_shape[d];
      for (int k = 0; k < N; ++k) off[k] += i * outer_stride[k][d];
    }
  }
};

}  // namespace minirt::cpu
