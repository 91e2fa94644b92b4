// Typed attributes of the ops that pick elements by value or by index:
// ArgMax, ArgMin, TopK, GatherElements, ScatterElements (and the older
// Scatter), ScatterND, OneHot, Trilu, Hardmax.
#pragma once

#include "runtime/graph.h"

namespace minirt {

struct ArgAttrs : OpAttrs {  // ArgMax, ArgMin
  bool max = true;
  int64_t axis = 0;  // resolved to [0, rank) by infer
  bool keepdims = true;
  bool select_last_index = false;  // opset 12: ties go to the last index, not the first
};

struct TopKAttrs : OpAttrs {
  int64_t axis = -1;  // resolved to [0, rank) by infer
  int64_t k = -1;     // attribute before opset 10, resolved from the K input from 10
  bool largest = true;
  bool sorted = true;  // the output is always sorted; sorted=0 leaves the order open, so that is allowed
};

struct GatherElementsAttrs : OpAttrs {
  int64_t axis = 0;  // resolved to [0, rank) by infer
};

// How a scatter combines an update with the value already there (opset 16
// adds add and mul, 18 max and min).
enum class ScatterReduction : uint8_t { kNone, kAdd, kMul, kMax, kMin };
const char* scatter_reduction_name(ScatterReduction r);

struct ScatterAttrs : OpAttrs {  // ScatterElements, Scatter, ScatterND
  int64_t axis = 0;              // resolved to [0, rank) by infer; ScatterND has none
  ScatterReduction reduction = ScatterReduction::kNone;
};

struct OneHotAttrs : OpAttrs {
  int64_t axis = -1;     // where the new axis goes, resolved to [0, rank] by infer
  int64_t depth = 0;     // from the depth input (a plan-time value), by infer
  bool negative = true;  // opset 11: -depth..-1 count from the end; before, they give all off
};

struct TriluAttrs : OpAttrs {
  bool upper = true;
  int64_t k = 0;  // the diagonal offset, from the optional k input (a plan-time value)
};

struct HardmaxAttrs : OpAttrs {
  int64_t axis = -1;       // resolved to [0, rank) by infer
  bool coerce_2d = false;  // before opset 13: the input is seen as [outer, inner] split at axis
};

struct GatherNDAttrs : OpAttrs {
  int64_t batch_dims = 0;  // opset 12: leading axes of data and indices that are one batch
};

struct CompressAttrs : OpAttrs {
  bool has_axis = false;  // without an axis the input is flattened
  int64_t axis = 0;       // resolved against the input's rank when it runs (negative from opset 11)
};

struct UniqueAttrs : OpAttrs {
  bool has_axis = false;  // without an axis the input is flattened
  int64_t axis = 0;       // resolved against the input's rank when it runs
  bool sorted = true;     // ascending (slices compared in order); else in order of first occurrence
};

struct NmsAttrs : OpAttrs {       // NonMaxSuppression
  bool center_point_box = false;  // boxes as [x_center, y_center, width, height], not two corners
};

}  // namespace minirt
