// How the binary ops broadcast before opset 7 (parsed attributes; the
// schemas' prepare step in op_registry.h turns it into NumPy broadcasting).
#pragma once

#include <cstdint>

namespace minirt {

// The binary ops before opset 7 (Add, Sub, Mul, Div, Pow, And, Or, Xor,
// Equal, Greater, Less): no NumPy broadcasting, but `broadcast` (0: A and B
// of one shape) and `axis` (with broadcast=1, B's dimensions are A's, or 1,
// from `axis` on, or A's trailing ones without it; or B holds one element).
// The output has A's shape.
struct LegacyBroadcast {
  bool active = false;  // the node is at a version before 7
  bool broadcast = false;
  bool has_axis = false;
  int64_t axis = 0;
};

}  // namespace minirt
