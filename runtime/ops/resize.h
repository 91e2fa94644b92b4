// Typed attributes of Resize (opset 10, 11, 13, 18, 19) and Upsample (7, 9).
#pragma once

#include "runtime/graph.h"

#include <vector>

namespace minirt {

enum class ResizeMode { kNearest, kLinear };
enum class CoordMode { kHalfPixel, kPytorchHalfPixel, kAlignCorners, kAsymmetric, kTfHalfPixelForNearest };
enum class NearestMode { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };

struct ResizeAttrs : OpAttrs {
  ResizeMode mode = ResizeMode::kNearest;
  CoordMode coord = CoordMode::kHalfPixel;
  NearestMode nearest = NearestMode::kRoundPreferFloor;
  std::vector<float> scales;  // resolved: one per input axis, used in the coordinate transform
  std::vector<float> attr_scales;  // Upsample-7's attribute
};

// Maps an output coordinate to the input coordinate along one axis.
inline float resize_source_coord(CoordMode m, float x, float scale, int64_t in_len, int64_t out_len) {
  switch (m) {
    case CoordMode::kHalfPixel: return (x + 0.5f) / scale - 0.5f;
    case CoordMode::kPytorchHalfPixel: return out_len > 1 ? (x + 0.5f) / scale - 0.5f : 0.0f;
    case CoordMode::kAlignCorners:
      return out_len == 1 ? 0.0f : x * static_cast<float>(in_len - 1) / static_cast<float>(out_len - 1);
    case CoordMode::kAsymmetric: return x / scale;
    case CoordMode::kTfHalfPixelForNearest: return (x + 0.5f) / scale;
  }
  return x;
}

}  // namespace minirt
