// Typed attributes of Resize (opset 10, 11, 13, 18, 19), Upsample (7, 9)
// and GridSample (16, 20, 22).
#pragma once

#include "runtime/graph.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace minirt {

enum class ResizeMode { kNearest, kLinear, kCubic };
enum class CoordMode {
  kHalfPixel,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNearest,
  kHalfPixelSymmetric,  // opset 19
  kTfCropAndResize,     // the roi input's box of each axis, sampled corner to corner
};
enum class NearestMode { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };

struct ResizeAttrs : OpAttrs {
  ResizeMode mode = ResizeMode::kNearest;
  CoordMode coord = CoordMode::kHalfPixel;
  NearestMode nearest = NearestMode::kRoundPreferFloor;
  std::vector<float> scales;       // resolved: one per input axis, used in the coordinate transform
  std::vector<float> attr_scales;  // Upsample-7's attribute
  float cubic_a = -0.75f;          // cubic_coeff_a
  bool exclude_outside = false;    // cubic: taps outside the input get weight 0, the rest renormalized
  bool antialias = false;          // opset 18, linear and cubic: the filter stretched by 1/scale when downscaling
  std::vector<int64_t> axes;       // opset 18: the axes scales/sizes name (resolved to [0, rank) by infer)
  int keep_aspect = 0;             // opset 18 with sizes: 0 stretch, 1 not_larger, 2 not_smaller
  // tf_crop_and_resize: per axis the box [roi[d], roi[rank + d]] (fractions of
  // the axis; resolved to every axis by infer), and the value of output
  // elements whose source coordinate falls outside the input.
  std::vector<float> roi;
  float extrapolation = 0.0f;
};

enum class GridMode { kNearest, kLinear, kCubic };
enum class GridPadding { kZeros, kBorder, kReflection };

struct RoiAlignAttrs : OpAttrs {
  bool half_pixel = true;  // coordinate_transformation_mode; opset 10 behaves as output_half_pixel
  bool max = false;        // mode: avg (the default) or max
  int64_t output_height = 1, output_width = 1;
  int64_t sampling_ratio = 0;  // samples per bin along each axis; 0: ceil(bin size)
  float spatial_scale = 1.0f;
};

struct GridSampleAttrs : OpAttrs {
  GridMode mode = GridMode::kLinear;
  GridPadding padding = GridPadding::kZeros;
  bool align_corners = false;
};

// Maps an output coordinate to the input coordinate along one axis (roi:
// that axis's box, for tf_crop_and_resize only).
inline float resize_source_coord(CoordMode m, float x, float scale, int64_t in_len, int64_t out_len,
                                 float roi_start = 0.0f, float roi_end = 1.0f) {
  switch (m) {
    case CoordMode::kTfCropAndResize: {
      float last = static_cast<float>(in_len - 1);
      return out_len > 1 ? roi_start * last + x * (roi_end - roi_start) * last / static_cast<float>(out_len - 1)
                         : 0.5f * (roi_start + roi_end) * last;
    }
    case CoordMode::kHalfPixel:
      return (x + 0.5f) / scale - 0.5f;
    case CoordMode::kPytorchHalfPixel:
      return out_len > 1 ? (x + 0.5f) / scale - 0.5f : 0.0f;
    case CoordMode::kAlignCorners:
      return out_len == 1 ? 0.0f : x * static_cast<float>(in_len - 1) / static_cast<float>(out_len - 1);
    case CoordMode::kAsymmetric:
      return x / scale;
    case CoordMode::kTfHalfPixelForNearest:
      return (x + 0.5f) / scale;
    case CoordMode::kHalfPixelSymmetric: {
      // Centred: the output's whole pixels against the scaled extent.
      float extent = scale * static_cast<float>(in_len);
      float adjustment = extent > 0.0f ? static_cast<float>(out_len) / extent : 1.0f;
      float offset = static_cast<float>(in_len) / 2.0f * (1.0f - adjustment);
      return offset + (x + 0.5f) / scale - 0.5f;
    }
  }
  return x;
}

// A coordinate this close to a half is a tie for the round_prefer modes:
// float rounding must not decide an exact tie (a 7 -> 2 resize has the
// source coordinate 7/2, computed as 3.4999998). onnxruntime uses the same
// window.
inline constexpr float kResizeTieWindow = 1e-6f;

// The nearest input index for source coordinate `c`, for the CPU and the
// GPU alike (the caller clamps it to the axis). Upsample and Resize before
// opset 11 had no nearest_mode: they truncate, and round up when the axis
// shrinks (scale < 1), as onnxruntime and the opset-10 reference do.
inline int64_t resize_nearest_index(float c, NearestMode mode, bool legacy, bool shrinks) {
  // A NaN or huge coordinate (from extreme scales) first into a range whose
  // conversion to an integer is defined.
  c = c == c ? std::clamp(c, -2.0f, 0x1p40f) : 0.0f;
  if (legacy) return shrinks ? static_cast<int64_t>(std::ceil(c)) : static_cast<int64_t>(c);
  float f = std::floor(c);
  switch (mode) {
    case NearestMode::kRoundPreferFloor:
    case NearestMode::kRoundPreferCeil: {
      float frac = c - f;
      bool up = std::fabs(frac - 0.5f) <= kResizeTieWindow ? mode == NearestMode::kRoundPreferCeil : frac > 0.5f;
      return static_cast<int64_t>(f) + (up ? 1 : 0);
    }
    case NearestMode::kFloor:
      return static_cast<int64_t>(f);
    case NearestMode::kCeil:
      return static_cast<int64_t>(std::ceil(c));
  }
  return static_cast<int64_t>(f);
}

}  // namespace minirt
