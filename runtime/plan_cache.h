// The plans a session keeps (session.cpp): one per input signature of each
// planned part of the model, shared by the runs that use it. Internal to
// runtime/.
#pragma once

#include <memory>
#include <vector>

#include "runtime/graph.h"
#include "runtime/planner.h"

namespace minirt {

// A plan for one input signature (shapes, and the values of inputs that are
// shape operands), immutable once made, shared by the runs that use it.
struct PlanEntry {
  std::unique_ptr<Plan> plan;
  std::vector<Shape> shapes;
  std::vector<Tensor> values;
  std::vector<int> first_output_of_value;  // per output: earlier output with the same value, or -1
};

// One planned part of the model: the model graph, or a stage of a model cut
// at its value-sized nodes (runtime/stages.h); and the plans made for it.
struct PlanCache {
  const Graph* graph = nullptr;
  std::vector<size_t> value_inputs;                     // graph input indices that are shape operands
  std::vector<std::shared_ptr<const PlanEntry>> plans;  // most recently used last
  std::shared_ptr<const PlanEntry> last;                // of the last run
};

constexpr size_t kMaxPlans = 8;  // input signatures remembered per session

}  // namespace minirt
