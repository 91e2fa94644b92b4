// Typed attributes of the data-movement ops (Reshape, Concat, Slice, ...).
// Operands that became inputs in later opsets (Reshape's shape, Slice's
// starts, Pad's pads, Unsqueeze's axes, ...) are resolved into these structs
// by infer() once their values are known at plan time.
#pragma once

#include "runtime/graph.h"

#include <vector>

namespace minirt {

struct AxisAttrs : OpAttrs {  // Flatten, Concat, Gather, Split (with split sizes)
  int64_t axis = 0;
  std::vector<int64_t> split;  // Split: resolved sizes per output
  int64_t num_outputs = 0;     // Split (opset 18)
};

struct ReshapeAttrs : OpAttrs {
  bool allowzero = false;
  std::vector<int64_t> shape_attr;  // Reshape-1 (before opset 5): the shape attribute
  Shape target;                     // resolved output shape
};

struct AxesAttrs : OpAttrs {  // Squeeze, Unsqueeze
  std::vector<int64_t> axes;  // attribute (before opset 13) or resolved input
};

struct SliceAttrs : OpAttrs {
  std::vector<int64_t> starts, ends, axes, steps;  // attributes before opset 10
  // Resolved per input axis: first index, step and count.
  std::vector<int64_t> start, step, count;
};

struct ShapeAttrs : OpAttrs {
  int64_t start = 0;
  int64_t end = INT64_MAX;
  bool has_end = false;
};

struct CastAttrs : OpAttrs {
  DType to = DType::kUndefined;
  // Set by the half lowering (runtime/passes/half.cpp) on a Cast to float16
  // or bfloat16 inside the graph: `to` is then float32 and each value is
  // rounded to this type's precision, so the cast's effect on the numbers stays.
  DType round = DType::kUndefined;
};

struct ConstantAttrs : OpAttrs {  // Constant, ConstantOfShape
  Tensor value;
};

struct TransposeAttrs : OpAttrs {
  std::vector<int64_t> perm;  // resolved (reversed axes when absent)
};

enum class PadMode { kConstant, kReflect, kEdge, kWrap };  // kWrap: Pad-19 and later

struct PadAttrs : OpAttrs {
  PadMode mode = PadMode::kConstant;
  std::vector<int64_t> pads;  // resolved: begins then ends, one pair per input axis
  float value = 0.0f;
};

// CenterCropPad runs as a constant Pad with zeros: infer() turns the target
// lengths into pads (negative where an axis is cropped).
struct CenterCropPadAttrs : PadAttrs {
  bool has_axes = false;
  std::vector<int64_t> axes;  // as the file gives them (all axes when absent)
};

struct ExpandAttrs : OpAttrs {
  Shape target;  // resolved output shape
};

struct TileAttrs : OpAttrs {
  std::vector<int64_t> repeats;  // resolved from the repeats input
};

struct BlockAttrs : OpAttrs {  // DepthToSpace, SpaceToDepth
  int64_t blocksize = 1;
  bool crd = false;  // DepthToSpace mode CRD (opset 11); DCR otherwise
};

}  // namespace minirt
