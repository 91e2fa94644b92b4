// Reading and writing NumPy .npy files (format versions 1-3, little-endian,
// C order) for the tools.
//
//   minirt::Tensor t = minirt::tools::read_npy("input.npy");
//   minirt::tools::write_npy("out.npy", t);
#pragma once

#include <minirt/tensor.h>

#include <string>

namespace minirt::tools {

Tensor read_npy(const std::string& path);
void write_npy(const std::string& path, const Tensor& t);

// "1x3x224x224" -> {1, 3, 224, 224}; throws minirt::Error on bad text.
Shape parse_shape(const std::string& text);

}  // namespace minirt::tools
