// Typed attributes of the ops that pick elements by value or by index:
// ArgMax, ArgMin, TopK, GatherElements.
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

}  // namespace minirt
