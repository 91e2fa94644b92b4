// Schemas of Resize, Upsample, GridSample and RoiAlign.
#include "runtime/op_registry.h"
#include "runtime/ops/families.h"
#include "runtime/ops/resize.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace minirt {

namespace {

std::shared_ptr<const OpAttrs> parse_resize(const ParseContext& ctx) {
  auto a = std::make_shared<ResizeAttrs>();
  std::string mode = ctx.get_string("mode", "nearest");
  if (mode == "nearest")
    a->mode = ResizeMode::kNearest;
  else if (mode == "linear" || mode == "bilinear")
    a->mode = ResizeMode::kLinear;
  else if (mode == "cubic" && ctx.node().op == "Resize" && ctx.opset() >= 11)
    a->mode = ResizeMode::kCubic;
  else if (mode == "cubic")
    ctx.unsupported("mode 'cubic' exists for Resize from opset 11");
  else
    ctx.invalid("mode '" + mode + "' is not one of nearest, linear, cubic");
  bool upsample = ctx.node().op == "Upsample";
  if (upsample || ctx.opset() < 11) {
    // Upsample and Resize-10 map coordinates asymmetrically and floor for nearest.
    a->coord = CoordMode::kAsymmetric;
    a->nearest = NearestMode::kFloor;
    if (upsample && ctx.opset() < 7) {
      // Upsample-1: a 4-D input (N, C, H, W) scaled by height_scale and width_scale.
      if (!ctx.has("height_scale") || !ctx.has("width_scale"))
        ctx.invalid("Upsample version 1 (before opset 7) needs the height_scale and width_scale attributes");
      a->attr_scales = {1.0f, 1.0f, ctx.get_float("height_scale", 1.0f), ctx.get_float("width_scale", 1.0f)};
    } else if (upsample && ctx.opset() < 9) {
      a->attr_scales = ctx.get_floats("scales");
    }
    return a;
  }
  std::string coord = ctx.get_string("coordinate_transformation_mode", "half_pixel");
  if (coord == "half_pixel")
    a->coord = CoordMode::kHalfPixel;
  else if (coord == "pytorch_half_pixel")
    a->coord = CoordMode::kPytorchHalfPixel;
  else if (coord == "align_corners")
    a->coord = CoordMode::kAlignCorners;
  else if (coord == "asymmetric")
    a->coord = CoordMode::kAsymmetric;
  // The ONNX spelling is tf_half_pixel_for_nn.
  else if (coord == "tf_half_pixel_for_nn")
    a->coord = CoordMode::kTfHalfPixelForNearest;
  else if (coord == "half_pixel_symmetric" && ctx.opset() >= 19)
    a->coord = CoordMode::kHalfPixelSymmetric;
  else if (coord == "tf_crop_and_resize")
    a->coord = CoordMode::kTfCropAndResize;
  else
    ctx.unsupported("coordinate_transformation_mode '" + coord + "' is not supported");
  std::string nearest = ctx.get_string("nearest_mode", "round_prefer_floor");
  if (nearest == "round_prefer_floor")
    a->nearest = NearestMode::kRoundPreferFloor;
  else if (nearest == "round_prefer_ceil")
    a->nearest = NearestMode::kRoundPreferCeil;
  else if (nearest == "floor")
    a->nearest = NearestMode::kFloor;
  else if (nearest == "ceil")
    a->nearest = NearestMode::kCeil;
  else
    ctx.invalid("nearest_mode '" + nearest + "' is not one of round_prefer_floor, round_prefer_ceil, floor, ceil");
  a->cubic_a = ctx.get_float("cubic_coeff_a", -0.75f);
  a->exclude_outside = ctx.get_int("exclude_outside", 0) != 0;
  a->extrapolation = ctx.get_float("extrapolation_value", 0.0f);
  if (ctx.get_int("antialias", 0) != 0) {
    if (ctx.opset() < 18)
      ctx.invalid("antialias came with Resize version 18; this model imports opset " + std::to_string(ctx.opset()));
    // Nearest has no filter to stretch: antialias leaves it as it is.
    a->antialias = a->mode != ResizeMode::kNearest;
  }
  a->axes = ctx.get_ints("axes");
  std::string policy = ctx.get_string("keep_aspect_ratio_policy", "stretch");
  if (policy == "stretch")
    a->keep_aspect = 0;
  else if (policy == "not_larger")
    a->keep_aspect = 1;
  else if (policy == "not_smaller")
    a->keep_aspect = 2;
  else
    ctx.invalid("keep_aspect_ratio_policy '" + policy + "' is not one of stretch, not_larger, not_smaller");
  return a;
}

void infer_resize(InferContext& ctx) {
  ctx.expect_dtype(0, {DType::kFloat32});
  const Shape& x = ctx.shape(0);
  size_t r = x.size();
  auto a = std::make_shared<ResizeAttrs>(ctx.attrs<ResizeAttrs>());
  bool upsample = ctx.node().op == "Upsample";
  std::vector<float> scales;
  std::vector<int64_t> sizes;
  if (upsample) {
    scales = ctx.opset() < 9 ? a->attr_scales : ctx.const_floats(1, "scales");
  } else if (ctx.opset() < 11) {
    scales = ctx.const_floats(1, "scales");
  } else {
    if (ctx.has_input(2)) {
      const Tensor* t = ctx.constant(2);
      if (!t) ctx.unsupported("its scales input is computed from run-time data");
      if (t->numel() > 0) scales = ctx.const_floats(2, "scales");
    }
    if (ctx.has_input(3)) sizes = ctx.const_ints(3, "sizes");
    if (!scales.empty() && !sizes.empty()) ctx.fail("only one of scales and sizes may be given");
    if (scales.empty() && sizes.empty()) ctx.fail("one of scales and sizes is required");
  }
  // axes (opset 18): scales or sizes name only these axes, the others keep theirs.
  if (!a->axes.empty()) {
    std::vector<int64_t> axes;
    for (int64_t ax : a->axes) {
      int64_t d = normalize_axis(ax, static_cast<int64_t>(r), ctx);
      if (std::find(axes.begin(), axes.end(), d) != axes.end())
        ctx.fail("axes names axis " + std::to_string(d) + " twice");
      axes.push_back(d);
    }
    size_t given = sizes.empty() ? scales.size() : sizes.size();
    if (given != axes.size())
      ctx.fail(std::string(sizes.empty() ? "scales" : "sizes") + " has " + std::to_string(given) + " entries for " +
               std::to_string(axes.size()) + " axes");
    std::vector<float> full_scales(r, 1.0f);
    std::vector<int64_t> full_sizes(x.begin(), x.end());
    for (size_t i = 0; i < axes.size(); ++i) {
      if (sizes.empty())
        full_scales[static_cast<size_t>(axes[i])] = scales[i];
      else
        full_sizes[static_cast<size_t>(axes[i])] = sizes[i];
    }
    if (sizes.empty())
      scales = full_scales;
    else
      sizes = full_sizes;
    a->axes = axes;
  }
  // tf_crop_and_resize: the roi input's box per axis (starts, then ends;
  // with axes, for those axes only, the others keep [0, 1]).
  a->roi.clear();
  if (a->coord == CoordMode::kTfCropAndResize) {
    if (!ctx.has_input(1)) ctx.fail("tf_crop_and_resize needs the roi input (input 1)");
    if (!ctx.constant(1)) ctx.unsupported("its roi input is computed from run-time data");
    std::vector<float> roi = ctx.const_floats(1, "roi");
    size_t named = a->axes.empty() ? r : a->axes.size();
    if (roi.size() != 2 * named)
      ctx.fail("roi has " + std::to_string(roi.size()) + " entries; tf_crop_and_resize over " + std::to_string(named) +
               " axes needs " + std::to_string(2 * named) + " (starts, then ends)");
    a->roi.assign(2 * r, 0.0f);
    for (size_t i = 0; i < r; ++i) a->roi[r + i] = 1.0f;
    for (size_t i = 0; i < named; ++i) {
      size_t d = a->axes.empty() ? i : static_cast<size_t>(a->axes[i]);
      if (!std::isfinite(roi[i]) || !std::isfinite(roi[named + i])) ctx.fail("roi holds a value that is not finite");
      a->roi[d] = roi[i];
      a->roi[r + d] = roi[named + i];
    }
  }
  Shape y(r);
  a->scales.assign(r, 1.0f);
  if (!sizes.empty() && a->keep_aspect != 0) {
    // One scale for the named axes (all of them without axes): the largest
    // that fits in sizes (not_larger) or the smallest that covers it
    // (not_smaller); their sizes follow from it, rounded.
    if (sizes.size() != r)
      ctx.fail("sizes has " + std::to_string(sizes.size()) + " entries for rank " + std::to_string(r));
    std::vector<size_t> named;
    for (size_t i = 0; i < r; ++i)
      if (a->axes.empty() || std::find(a->axes.begin(), a->axes.end(), static_cast<int64_t>(i)) != a->axes.end())
        named.push_back(i);
    float s = a->keep_aspect == 1 ? std::numeric_limits<float>::infinity() : 0.0f;
    for (size_t i : named) {
      if (x[i] == 0 || sizes[i] <= 0) ctx.fail("keep_aspect_ratio_policy needs positive sizes of non-empty axes");
      float si = static_cast<float>(sizes[i]) / static_cast<float>(x[i]);
      s = a->keep_aspect == 1 ? std::min(s, si) : std::max(s, si);
    }
    for (size_t i : named) {
      sizes[i] = static_cast<int64_t>(std::round(s * static_cast<float>(x[i])));
      a->scales[i] = s;
    }
    for (size_t i = 0; i < r; ++i) y[i] = sizes[i];
    ctx.set_attrs(a);
    ctx.set_output(0, DType::kFloat32, y);
    return;
  }
  if (!sizes.empty()) {
    if (sizes.size() != r)
      ctx.fail("sizes has " + std::to_string(sizes.size()) + " entries for rank " + std::to_string(r));
    for (size_t i = 0; i < r; ++i) {
      if (sizes[i] < 0) ctx.fail("sizes must not be negative");
      if (x[i] == 0 && sizes[i] != 0) ctx.fail("sizes asks for " + std::to_string(sizes[i]) + " from an empty axis");
      y[i] = sizes[i];
      a->scales[i] = x[i] == 0 ? 1.0f : static_cast<float>(sizes[i]) / static_cast<float>(x[i]);
    }
  } else {
    if (scales.size() != r)
      ctx.fail("scales has " + std::to_string(scales.size()) + " entries for rank " + std::to_string(r));
    for (size_t i = 0; i < r; ++i) {
      if (!(scales[i] > 0) || !std::isfinite(scales[i]))
        ctx.fail("scales must be positive and finite, scales[" + std::to_string(i) + "] is " +
                 std::to_string(scales[i]));
      a->scales[i] = scales[i];
      // In float, as onnxruntime and ONNX's shape inference compute it
      // (in double, 10 x 0.7f would give 6 rather than 7). Under
      // tf_crop_and_resize too the axis, not the roi's box, is scaled: the
      // operator's text says the box, but onnxruntime and ONNX's reference
      // implementation (and so the models that run today) scale the axis.
      float extent = std::floor(static_cast<float>(x[i]) * scales[i]);
      if (!(extent < 0x1p48f))
        ctx.fail("scales[" + std::to_string(i) + "] = " + std::to_string(scales[i]) + " makes axis " +
                 std::to_string(i) + " too large");
      y[i] = static_cast<int64_t>(extent);
    }
  }
  ctx.set_attrs(a);
  ctx.set_output(0, DType::kFloat32, y);
}

std::shared_ptr<const OpAttrs> parse_grid_sample(const ParseContext& ctx) {
  auto a = std::make_shared<GridSampleAttrs>();
  // Opset 20 renamed bilinear/bicubic to linear/cubic (and made linear the
  // default); both spellings are taken at every opset.
  std::string mode = ctx.get_string("mode", ctx.opset() >= 20 ? "linear" : "bilinear");
  if (mode == "nearest")
    a->mode = GridMode::kNearest;
  else if (mode == "linear" || mode == "bilinear")
    a->mode = GridMode::kLinear;
  else if (mode == "cubic" || mode == "bicubic")
    a->mode = GridMode::kCubic;
  else
    ctx.invalid("mode '" + mode + "' is not one of nearest, linear (bilinear), cubic (bicubic)");
  std::string pad = ctx.get_string("padding_mode", "zeros");
  if (pad == "zeros")
    a->padding = GridPadding::kZeros;
  else if (pad == "border")
    a->padding = GridPadding::kBorder;
  else if (pad == "reflection")
    a->padding = GridPadding::kReflection;
  else
    ctx.invalid("padding_mode '" + pad + "' is not one of zeros, border, reflection");
  a->align_corners = ctx.get_int("align_corners", 0) != 0;
  return a;
}

void infer_grid_sample(InferContext& ctx) {
  ctx.expect_dtype(0, {DType::kFloat32});
  ctx.expect_dtype(1, {DType::kFloat32});
  const Shape& x = ctx.shape(0);
  const Shape& grid = ctx.shape(1);
  if (x.size() != 4)
    ctx.unsupported("input " + shape_str(x) + ": only 2-D sampling (a 4-D input N, C, H, W) is supported");
  if (grid.size() != 4 || grid[0] != x[0] || grid[3] != 2)
    ctx.fail("grid " + shape_str(grid) + " must be [N, H_out, W_out, 2] with N = " + std::to_string(x[0]) +
             ", the input's batch");
  if (x[2] == 0 || x[3] == 0) ctx.fail("input " + shape_str(x) + " has an empty image (H or W is 0) to sample");
  ctx.set_output(0, DType::kFloat32, {x[0], x[1], grid[1], grid[2]});
}

std::shared_ptr<const OpAttrs> parse_roi_align(const ParseContext& ctx) {
  auto a = std::make_shared<RoiAlignAttrs>();
  const std::string ctm =
      ctx.get_string("coordinate_transformation_mode", ctx.opset() < 16 ? "output_half_pixel" : "half_pixel");
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    ctx.invalid("coordinate_transformation_mode '" + ctm + "' is not half_pixel or output_half_pixel");
  a->half_pixel = ctm == "half_pixel";
  const std::string mode = ctx.get_string("mode", "avg");
  if (mode != "avg" && mode != "max") ctx.invalid("mode '" + mode + "' is not avg or max");
  a->max = mode == "max";
  a->output_height = ctx.get_int("output_height", 1);
  a->output_width = ctx.get_int("output_width", 1);
  if (a->output_height < 1 || a->output_width < 1) ctx.invalid("output_height and output_width must be 1 or more");
  a->sampling_ratio = ctx.get_int("sampling_ratio", 0);
  if (a->sampling_ratio < 0) ctx.invalid("sampling_ratio must be 0 or more");
  a->spatial_scale = ctx.get_float("spatial_scale", 1.0f);
  return a;
}

void infer_roi_align(InferContext& ctx) {
  ctx.expect_dtype(0, {DType::kFloat32});
  ctx.expect_dtype(1, {DType::kFloat32});
  ctx.expect_dtype(2, {DType::kInt64});
  const Shape& x = ctx.shape(0);
  const Shape& rois = ctx.shape(1);
  const Shape& bi = ctx.shape(2);
  if (x.size() != 4) ctx.fail("X must be N, C, H, W, got " + shape_str(x));
  if (rois.size() != 2 || rois[1] != 4) ctx.fail("rois must be [num_rois, 4], got " + shape_str(rois));
  if (bi.size() != 1 || bi[0] != rois[0])
    ctx.fail("batch_indices must be [num_rois] = [" + std::to_string(rois[0]) + "], got " + shape_str(bi));
  const auto& a = ctx.attrs<RoiAlignAttrs>();
  ctx.set_output(0, DType::kFloat32, {rois[0], x[1], a.output_height, a.output_width});
}

}  // namespace

void add_resize_schemas(std::vector<OpSchema>& out) {
  out.push_back(
      {.op = "Resize",
       .max_inputs = 4,
       .parse = parse_resize,
       .infer = infer_resize,
       .shape_inputs = {1, 2, 3},
       .semantics =
           "opset 10 (asymmetric, floor) and 11-19 (coordinate modes, cubic with "
           "cubic_coeff_a and exclude_outside; axes and keep_aspect_ratio_policy from 18, "
           "half_pixel_symmetric from 19; antialias from 18 for linear and cubic; tf_crop_and_resize with a constant "
           "roi and extrapolation_value)"});
  out.push_back({.op = "Upsample",
                 .max_inputs = 2,
                 .parse = parse_resize,
                 .infer = infer_resize,
                 .shape_inputs = {1},
                 .semantics = "opset 7 (scales attribute) and 9 (scales input); height_scale and width_scale "
                              "attributes before 7"});
  out.push_back({.op = "GridSample",
                 .min_inputs = 2,
                 .max_inputs = 2,
                 .parse = parse_grid_sample,
                 .infer = infer_grid_sample,
                 .semantics = "2-D (4-D input) at every opset; the N-D sampling of opset 20 is refused"});
  out.push_back({.op = "RoiAlign",
                 .min_inputs = 3,
                 .max_inputs = 3,
                 .parse = parse_roi_align,
                 .infer = infer_roi_align,
                 .semantics = "coordinate_transformation_mode from opset 16 (output_half_pixel before); max mode "
                              "as onnxruntime (the largest weighted corner of each sample)"});
}

}  // namespace minirt
