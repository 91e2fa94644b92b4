// The CPU Resize and Upsample kernel against a plain per-element reference
// written here from the ONNX Resize rules, as onnxruntime applies them:
//   - an axis whose scale is 1 maps each index to itself;
//   - nearest: the coordinate mode maps the output index to a source
//     coordinate, the rounding mode picks an index, which is clamped to
//     [0, in-1]; Upsample and Resize-10 truncate, and round up on axes that
//     shrink;
//   - linear: the source coordinate is clamped to [0, in-1] and the value is
//     blended N-linearly over every axis whose scale is not 1.
// Coordinates are computed in float (as the runtimes do, since rounding
// decisions depend on it), blends in double.
//
// Each case is a one-node graph with constant inputs; the schema parses the
// attributes at the given opset and infers the output shape. Grids cover
// ranks 1 to 5, odd sizes, up- and down-sampling by scales and by sizes,
// every coordinate mode and nearest mode, opsets 10/11/13 and Upsample 7/9,
// with 1 and several threads. Outputs start as a NaN pattern and carry guard
// values after their end.
//
// Tolerance: 1e-5 relative, with an absolute floor of 1e-5 for results of
// magnitude below 1.
#include "op_runner.h"
#include "kernels/cpu/cpu_backend.h"
#include "runtime/op_registry.h"
#include "runtime/ops/resize.h"
#include "runtime/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <sstream>

namespace minirt {
namespace {

using namespace ::minirt::testing;

std::vector<int64_t> unravel(int64_t i, const Shape& s) {
  std::vector<int64_t> idx(s.size());
  for (size_t d = s.size(); d-- > 0;) {
    idx[d] = i % s[d];
    i /= s[d];
  }
  return idx;
}

int64_t ravel(const std::vector<int64_t>& idx, const Shape& s) {
  int64_t i = 0;
  for (size_t d = 0; d < s.size(); ++d) i = i * s[d] + idx[d];
  return i;
}

// ---- the reference ----

struct ResizeSpec {
  std::string op = "Resize";
  int64_t opset = 13;
  std::string mode = "nearest";
  std::string coord = "half_pixel";
  std::string nearest = "round_prefer_floor";
  Shape in;
  std::vector<float> scales;   // one of scales
  std::vector<int64_t> sizes;  // and sizes

  bool legacy() const { return op == "Upsample" || opset < 11; }

  std::string str() const {
    std::ostringstream s;
    s << op << "-" << opset << " " << mode << " in " << shape_str(in);
    if (!legacy()) s << " " << coord << (mode == "nearest" ? " " + nearest : "");
    if (!sizes.empty())
      s << " sizes " << shape_str(sizes);
    else {
      s << " scales";
      for (float f : scales) s << " " << f;
    }
    return s.str();
  }

  OpCase to_case(const Tensor& x) const {
    OpCase c{op, opset, {{"mode", string_attr(mode)}}, {x}};
    Tensor sc = Tensor::zeros(DType::kFloat32, {static_cast<int64_t>(scales.size())});
    std::copy(scales.begin(), scales.end(), sc.data<float>());
    if (op == "Upsample" && opset < 9) {
      c.attrs["scales"] = floats_attr(scales);
      return c;
    }
    if (legacy()) {
      c.inputs.push_back(sc);
      return c;
    }
    c.attrs["coordinate_transformation_mode"] = string_attr(coord);
    if (mode == "nearest") c.attrs["nearest_mode"] = string_attr(nearest);
    // Opset 11 requires roi and scales (empty when sizes is given); 13 lets
    // them be left out.
    Tensor none;
    Tensor empty = Tensor::zeros(DType::kFloat32, {0});
    c.inputs.push_back(opset < 13 ? empty : none);
    if (sizes.empty()) {
      c.inputs.push_back(sc);
    } else {
      c.inputs.push_back(opset < 13 ? empty : none);
      Tensor sz = Tensor::zeros(DType::kInt64, {static_cast<int64_t>(sizes.size())});
      std::copy(sizes.begin(), sizes.end(), sz.data<int64_t>());
      c.inputs.push_back(sz);
    }
    return c;
  }
};

// Source coordinate of output index o along an axis (ONNX's formulas).
float source_coord(const std::string& coord, int64_t o, float scale, int64_t in, int64_t out) {
  float x = static_cast<float>(o);
  if (coord == "half_pixel") return (x + 0.5f) / scale - 0.5f;
  if (coord == "pytorch_half_pixel") return out > 1 ? (x + 0.5f) / scale - 0.5f : 0.0f;
  if (coord == "align_corners") return out == 1 ? 0.0f : x * static_cast<float>(in - 1) / static_cast<float>(out - 1);
  if (coord == "asymmetric") return x / scale;
  if (coord == "tf_half_pixel_for_nn") return (x + 0.5f) / scale;
  ADD_FAILURE() << "unknown coordinate mode " << coord;
  return 0;
}

// A coordinate within 1e-6 of a half counts as a tie for the round_prefer
// modes, so that float rounding does not decide exact ties (onnxruntime
// does the same since its issue #28291).
int64_t round_nearest(const ResizeSpec& s, float c, float scale) {
  if (s.legacy()) return scale < 1 ? static_cast<int64_t>(std::ceil(c)) : static_cast<int64_t>(c);
  if (s.nearest == "floor") return static_cast<int64_t>(std::floor(c));
  if (s.nearest == "ceil") return static_cast<int64_t>(std::ceil(c));
  double below = std::floor(c);
  double frac = c - below;
  if (std::fabs(frac - 0.5) <= 1e-6) return static_cast<int64_t>(s.nearest == "round_prefer_ceil" ? below + 1 : below);
  return static_cast<int64_t>(frac < 0.5 ? below : below + 1);
}

std::vector<double> reference_resize(const ResizeSpec& s, const Tensor& x, Shape* out_shape) {
  size_t r = s.in.size();
  Shape out(r);
  std::vector<float> scale(r);
  for (size_t d = 0; d < r; ++d) {
    if (!s.sizes.empty()) {
      out[d] = s.sizes[d];
      scale[d] = static_cast<float>(out[d]) / static_cast<float>(s.in[d]);
    } else {
      scale[d] = s.scales[d];
      out[d] = static_cast<int64_t>(std::floor(static_cast<float>(s.in[d]) * scale[d]));
    }
  }
  *out_shape = out;
  std::string coord = s.legacy() ? "asymmetric" : s.coord;
  const float* xp = x.data<float>();
  std::vector<double> y(static_cast<size_t>(shape_numel(out)));
  for (int64_t i = 0; i < shape_numel(out); ++i) {
    std::vector<int64_t> o = unravel(i, out);
    if (s.mode == "nearest") {
      std::vector<int64_t> src(r);
      for (size_t d = 0; d < r; ++d) {
        if (scale[d] == 1.0f) {
          src[d] = o[d];
          continue;
        }
        float c = source_coord(coord, o[d], scale[d], s.in[d], out[d]);
        src[d] = std::clamp<int64_t>(round_nearest(s, c, scale[d]), 0, s.in[d] - 1);
      }
      y[i] = xp[ravel(src, s.in)];
      continue;
    }
    // Linear: each axis gives two neighbours and their weights.
    std::vector<int64_t> lo(r), hi(r);
    std::vector<double> frac(r, 0.0);
    for (size_t d = 0; d < r; ++d) {
      if (scale[d] == 1.0f) {
        lo[d] = hi[d] = o[d];
        continue;
      }
      float c = source_coord(coord, o[d], scale[d], s.in[d], out[d]);
      c = std::clamp(c, 0.0f, static_cast<float>(s.in[d] - 1));
      lo[d] = static_cast<int64_t>(std::floor(c));
      hi[d] = std::min(lo[d] + 1, s.in[d] - 1);
      frac[d] = c - static_cast<float>(lo[d]);
    }
    double acc = 0;
    for (int64_t corner = 0; corner < (int64_t{1} << r); ++corner) {
      std::vector<int64_t> src(r);
      double w = 1;
      for (size_t d = 0; d < r; ++d) {
        bool upper = (corner >> d) & 1;
        src[d] = upper ? hi[d] : lo[d];
        w *= upper ? frac[d] : 1.0 - frac[d];
      }
      acc += w * xp[ravel(src, s.in)];
    }
    y[i] = acc;
  }
  return y;
}

Tensor random_tensor(const Shape& shape, std::mt19937& rng) {
  Tensor t = Tensor::zeros(DType::kFloat32, shape);
  std::uniform_real_distribution<float> u(-4, 4);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

void check(const ResizeSpec& s, int threads, std::mt19937& rng) {
  Tensor x = random_tensor(s.in, rng);
  Shape want_shape;
  std::vector<double> want = reference_resize(s, x, &want_shape);
  Shape ys;
  std::string what = s.str() + ", threads " + std::to_string(threads);
  std::vector<float> got = run_op(s.to_case(x), threads, &ys, what);
  ASSERT_EQ(ys, want_shape) << what;
  expect_close(got, want, what);
}

// ---- the grids ----

const std::vector<Shape> kShapes = {{5}, {3, 4}, {2, 3, 5}, {1, 2, 4, 6}, {2, 1, 3, 3, 4}};

// Scales for the last two axes (the others keep 1).
const std::vector<std::pair<float, float>> kTrailingScales = {{2, 3},    {0.5f, 0.6f}, {1.7f, 0.75f},
                                                              {1, 2.5f}, {3, 1},       {0.34f, 1.5f}};
// Factors turned into sizes for the last two axes: out = max(1, in * f) rounded.
const std::vector<std::pair<float, float>> kTrailingSizes = {{1.4f, 0.7f}, {0.2f, 1.9f}, {1.0f, 0.4f}, {2.2f, 1.0f}};

std::vector<ResizeSpec> resize_specs(const Shape& in) {
  std::vector<ResizeSpec> out;
  size_t r = in.size();
  size_t first = r >= 2 ? r - 2 : 0;
  auto trailing = [&](std::pair<float, float> f, size_t d) { return d == r - 1 ? f.second : f.first; };
  for (auto f : kTrailingScales) {
    ResizeSpec s;
    s.in = in;
    s.scales.assign(r, 1.0f);
    for (size_t d = first; d < r; ++d) s.scales[d] = trailing(f, d);
    out.push_back(s);
  }
  for (auto f : kTrailingSizes) {
    ResizeSpec s;
    s.in = in;
    s.sizes = in;
    for (size_t d = first; d < r; ++d)
      s.sizes[d] = std::max<int64_t>(1, std::lround(static_cast<float>(in[d]) * trailing(f, d)));
    out.push_back(s);
  }
  // Every axis resized at once (N-linear over all of them).
  const float all[] = {1.5f, 0.7f, 2.0f, 1.34f, 0.8f};
  ResizeSpec s;
  s.in = in;
  for (size_t d = 0; d < r; ++d) s.scales.push_back(in[d] == 1 ? 3.0f : all[d % 5]);
  out.push_back(s);
  ResizeSpec z = s;
  z.scales.clear();
  z.sizes = in;
  for (size_t d = 0; d < r; ++d) z.sizes[d] = in[d] + (d % 2 ? 2 : -1) + (in[d] == 1 ? 1 : 0);
  out.push_back(z);
  return out;
}

const char* const kCoords[] = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                               "tf_half_pixel_for_nn"};
const char* const kNearestModes[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};

TEST(ResizeNearest, EveryCoordinateAndRoundingMode) {
  std::mt19937 rng(11);
  int run = 0;
  for (const Shape& in : kShapes)
    for (ResizeSpec s : resize_specs(in))
      for (int64_t opset : {11, 13})
        for (const char* coord : kCoords)
          for (const char* nearest : kNearestModes) {
            s.opset = opset;
            s.coord = coord;
            s.nearest = nearest;
            check(s, ++run % 2 ? 1 : 3, rng);
          }
}

TEST(ResizeLinear, EveryCoordinateMode) {
  std::mt19937 rng(12);
  int run = 0;
  for (const Shape& in : kShapes)
    for (ResizeSpec s : resize_specs(in))
      for (int64_t opset : {11, 13})
        for (const char* coord : kCoords) {
          s.mode = "linear";
          s.opset = opset;
          s.coord = coord;
          check(s, ++run % 2 ? 1 : 3, rng);
        }
}

TEST(ResizeLinear, LargeImageInParallel) {
  std::mt19937 rng(13);
  for (const char* mode : {"nearest", "linear"})
    for (auto sc : std::vector<std::vector<float>>{{1, 1, 2, 2}, {1, 1, 0.5f, 0.7f}, {1.5f, 1, 1.3f, 2}}) {
      ResizeSpec s;
      s.mode = mode;
      s.in = {2, 8, 40, 50};
      s.scales = sc;
      check(s, 4, rng);
    }
}

// Resize-10 and Upsample: asymmetric coordinates, truncating nearest that
// rounds up on shrinking axes.
TEST(ResizeLegacy, Resize10AndUpsample) {
  std::mt19937 rng(14);
  const std::vector<std::vector<float>> up = {{1, 1, 2, 2}, {1, 1, 2, 3}, {1, 1, 1.5f, 2.5f}, {1, 2, 1, 3}};
  const std::vector<std::vector<float>> down = {{1, 1, 0.6f, 0.6f}, {1, 1, 2, 0.5f}, {1, 1, 0.34f, 1.7f}};
  int run = 0;
  for (const char* mode : {"nearest", "linear"}) {
    for (int64_t opset : {7, 9})
      for (const auto& sc : up) {
        ResizeSpec s;
        s.op = "Upsample";
        s.opset = opset;
        s.mode = mode;
        s.in = {1, 2, 3, 5};
        s.scales = sc;
        check(s, ++run % 2 ? 1 : 3, rng);
      }
    std::vector<std::vector<float>> any = up;
    any.insert(any.end(), down.begin(), down.end());
    for (const auto& sc : any) {
      ResizeSpec s;
      s.opset = 10;
      s.mode = mode;
      s.in = {1, 2, 4, 5};
      s.scales = sc;
      check(s, ++run % 2 ? 1 : 3, rng);
    }
  }
}

// Known answers, from ONNX's operator documentation and onnxruntime.
TEST(ResizeNearest, Resize10DownsampleRoundsUp) {
  Tensor x = Tensor::zeros(DType::kFloat32, {1, 1, 2, 4});
  for (int i = 0; i < 8; ++i) x.data<float>()[i] = static_cast<float>(i + 1);
  ResizeSpec s;
  s.opset = 10;
  s.in = x.shape();
  s.scales = {1, 1, 0.6f, 0.6f};
  Shape ys;
  std::vector<float> got = run_op(s.to_case(x), 1, &ys, s.str());
  EXPECT_EQ(ys, (Shape{1, 1, 1, 2}));
  EXPECT_EQ(got, (std::vector<float>{1, 3}));
}

TEST(ResizeNearest, OutputLengthIsComputedInFloat) {
  // 10 * 0.7f is 7 in float (6.99... in double); onnxruntime makes 7.
  Tensor x = Tensor::zeros(DType::kFloat32, {1, 10});
  for (int i = 0; i < 10; ++i) x.data<float>()[i] = static_cast<float>(i);
  ResizeSpec s;
  s.in = x.shape();
  s.scales = {1, 0.7f};
  Shape ys;
  std::vector<float> got = run_op(s.to_case(x), 1, &ys, s.str());
  EXPECT_EQ(ys, (Shape{1, 7}));
  EXPECT_EQ(got, (std::vector<float>{0, 2, 3, 4, 6, 7, 9}));
}

TEST(ResizeNearest, NearTiesRoundAsTies) {
  // 20 -> 6, half_pixel: outputs 1 and 4 map to 1.5 * 20/6 - 0.5 = 4.5 and
  // 4.5 * 20/6 - 0.5 = 14.5, computed as 4.4999998 and 14.499999 in float;
  // round_prefer_ceil must still take 5 and 15 (onnxruntime issue #28291,
  // whose answers these are). And 7 -> 2, asymmetric: 1 * 7/2 = 3.5.
  struct Known {
    int64_t in, out;
    const char* coord;
    const char* mode;
    std::vector<float> want;
  };
  const Known cases[] = {{20, 6, "half_pixel", "round_prefer_ceil", {1, 5, 8, 11, 15, 18}},
                         {20, 6, "half_pixel", "round_prefer_floor", {1, 4, 8, 11, 14, 18}},
                         {7, 2, "asymmetric", "round_prefer_ceil", {0, 4}},
                         {7, 2, "asymmetric", "round_prefer_floor", {0, 3}}};
  for (const Known& k : cases) {
    Tensor x = Tensor::zeros(DType::kFloat32, {1, k.in});
    for (int64_t i = 0; i < k.in; ++i) x.data<float>()[i] = static_cast<float>(i);
    ResizeSpec s;
    s.in = x.shape();
    s.sizes = {1, k.out};
    s.coord = k.coord;
    s.nearest = k.mode;
    Shape ys;
    EXPECT_EQ(run_op(s.to_case(x), 1, &ys, s.str()), k.want) << s.str();
  }
}

// The index function the CPU and the CUDA kernels share: each rounding
// mode, exact ties and near ties, the legacy truncation, and coordinates
// no scale should produce (NaN, infinities, beyond int64) kept defined.
TEST(ResizeNearest, IndexFunctionSharedWithTheGpu) {
  using M = NearestMode;
  EXPECT_EQ(resize_nearest_index(2.5f, M::kRoundPreferFloor, false, false), 2);
  EXPECT_EQ(resize_nearest_index(2.5f, M::kRoundPreferCeil, false, false), 3);
  EXPECT_EQ(resize_nearest_index(3.4999998f, M::kRoundPreferCeil, false, false), 4);  // a tie in float
  EXPECT_EQ(resize_nearest_index(2.6f, M::kRoundPreferFloor, false, false), 3);
  EXPECT_EQ(resize_nearest_index(2.7f, M::kFloor, false, false), 2);
  EXPECT_EQ(resize_nearest_index(2.1f, M::kCeil, false, false), 3);
  EXPECT_EQ(resize_nearest_index(-0.6f, M::kFloor, false, false), -1);
  EXPECT_EQ(resize_nearest_index(2.7f, M::kRoundPreferFloor, true, false), 2);  // legacy: truncates
  EXPECT_EQ(resize_nearest_index(2.2f, M::kRoundPreferFloor, true, true), 3);   // legacy shrinking: rounds up
  for (M m : {M::kRoundPreferFloor, M::kRoundPreferCeil, M::kFloor, M::kCeil})
    for (bool legacy : {false, true}) {
      EXPECT_EQ(resize_nearest_index(std::nanf(""), m, legacy, false), 0);
      EXPECT_GE(resize_nearest_index(-INFINITY, m, legacy, false), -2);
      EXPECT_LE(resize_nearest_index(INFINITY, m, legacy, true), int64_t{1} << 41);
      EXPECT_GE(resize_nearest_index(1e30f, m, legacy, false), int64_t{1} << 39);
    }
}

TEST(ResizeLinear, UpsampleDocExample) {
  // Resize-13 linear, half_pixel, scales 2: ONNX's test_resize_upsample_scales_linear.
  Tensor x = Tensor::zeros(DType::kFloat32, {1, 1, 2, 2});
  for (int i = 0; i < 4; ++i) x.data<float>()[i] = static_cast<float>(i + 1);
  ResizeSpec s;
  s.mode = "linear";
  s.in = x.shape();
  s.scales = {1, 1, 2, 2};
  Shape ys;
  std::vector<float> got = run_op(s.to_case(x), 1, &ys, s.str());
  std::vector<float> want = {1,    1.25f, 1.75f, 2,    1.5f, 1.75f, 2.25f, 2.5f,
                             2.5f, 2.75f, 3.25f, 3.5f, 3,    3.25f, 3.75f, 4};
  EXPECT_EQ(ys, (Shape{1, 1, 4, 4}));
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace minirt
