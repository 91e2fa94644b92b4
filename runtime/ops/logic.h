// Typed attributes of the comparison and boolean ops and Where.
#pragma once

#include "runtime/graph.h"
#include "runtime/ops/legacy_broadcast.h"

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
  kIsNaN,
  kIsInf,
};

struct LogicAttrs : OpAttrs {
  LogicKind kind = LogicKind::kEqual;
  LegacyBroadcast legacy;                               // And, Or, Xor, Equal, Greater, Less before opset 7
  bool detect_positive = true, detect_negative = true;  // IsInf
};

}  // namespace minirt
