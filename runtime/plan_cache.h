// The plans a session keeps: one per input signature of each planned part
// of the model, shared by the runs that use it, most recently used last.
// Internal to runtime/.
//
//   PlanCache cache{.graph = &g, .value_inputs = value_inputs(g)};
//   std::shared_ptr<const PlanEntry> e = cache.find(inputs);
//   if (!e) e = cache.add(make_plan(g, inputs, cpu, pool, options), inputs);
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

constexpr size_t kMaxPlans = 8;  // input signatures remembered per session

// One planned part of the model: the model graph, or a stage of a model cut
// at its value-sized nodes (runtime/stages.h); and the plans made for it.
struct PlanCache {
  const Graph* graph = nullptr;
  std::vector<size_t> value_inputs;                     // graph input indices that are shape operands
  std::vector<std::shared_ptr<const PlanEntry>> plans;  // most recently used last
  std::shared_ptr<const PlanEntry> last;                // of the last run

  // Whether `e` was made for these inputs (one per graph input): their
  // shapes, and the values of the shape-operand inputs.
  bool matches(const PlanEntry& e, const std::vector<const Tensor*>& inputs) const;
  // The plan made for these inputs, now the most recently used; null when none.
  std::shared_ptr<const PlanEntry> find(const std::vector<const Tensor*>& inputs);
  // Keeps `plan`, made for these inputs, as the most recently used; the
  // least recently used goes when kMaxPlans are kept.
  std::shared_ptr<const PlanEntry> add(std::unique_ptr<Plan> plan, const std::vector<const Tensor*>& inputs);
  // Puts `plan`, made for these inputs, in the place of the plan kept for
  // them (a tuned plan taking over): runs already under way keep the one
  // they hold, the next run takes this one. False, and `plan` dropped,
  // when no plan is kept for them any more.
  bool replace(std::unique_ptr<Plan> plan, const std::vector<const Tensor*>& inputs);
};

}  // namespace minirt
