// What a loaded Model holds, shared by the API's implementation files.
#pragma once

#include <minirt/session.h>

#include "runtime/graph.h"

namespace minirt {

struct Model::Impl {
  Graph graph;
  std::vector<ValueDesc> inputs, outputs;
  ModelInfo info;
};

}  // namespace minirt
