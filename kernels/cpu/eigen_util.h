// Eigen shorthands shared by the CPU kernels.
#pragma once

#include <Eigen/Core>

namespace minirt::cpu {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMatMap = Eigen::Map<const RowMat, 0, Eigen::OuterStride<>>;
using MatMap = Eigen::Map<RowMat, 0, Eigen::OuterStride<>>;

inline ConstMatMap cmat(const float* p, int64_t rows, int64_t cols, int64_t ld) {
  return ConstMatMap(p, rows, cols, Eigen::OuterStride<>(ld));
}
inline MatMap mat(float* p, int64_t rows, int64_t cols, int64_t ld) {
  return MatMap(p, rows, cols, Eigen::OuterStride<>(ld));
}

}  // namespace minirt::cpu
