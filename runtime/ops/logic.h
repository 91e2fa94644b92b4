// Typed attributes of the comparison and boolean ops and Where.
#pragma once

#include "runtime/graph.h"

namespace minirt {

enum class LogicKind {
  kEqual,
  kGreater,
  kLess,
  kGreaterOrEqual,
  kLessOrEqual,
  kAnd,
  kOr,
  kXor,
  kNot,
  kWhere,
};

struct LogicAttrs : OpAttrs {
  LogicKind kind = LogicKind::kEqual;
};

}  // namespace minirt
