// A model's planned parts, and the run of a model cut into plan stages
// (runtime/stages.h): each stage's plan through the executor
// (runtime/executor.h), each cut node on the host in between, the values
// they pass on held by model value id. Internal to runtime/.
//
//   ModelParts m = model_parts(graph, cpu);       // m.staged(): cut at value-sized nodes
//   run_staged(graph, m, ctx, outputs, env, deadline, run_stage);
#pragma once

#include "runtime/executor.h"
#include "runtime/stages.h"
#include "runtime/weight_store.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace minirt {

// What a session plans: the model graph as one plan cache, or, for a model
// with value-sized nodes, its parts in run order with a plan cache per
// stage and a host kernel per cut node.
struct ModelParts {
  std::vector<Stage> parts;                             // empty: the model is one plan, caches[0]
  std::vector<PlanCache> caches;                        // per part that is a stage, else the model's one
  std::vector<int> cache_of;                            // per part: its cache, -1 for a cut
  std::vector<std::unique_ptr<ValueSizedKernel>> cuts;  // per part: the cut node's kernel, or null
  WeightHold cut_constants;                             // the model's weights the cut nodes read at run time
  bool staged() const { return !parts.empty(); }
};

// Splits `model` (split_stages) and makes the cut nodes' kernels on `cpu`;
// throws naming the node when the CPU cannot run one.
ModelParts model_parts(const Graph& model, const KernelProvider& cpu);

// Plans (when new) and runs one stage's plan cache for the context's inputs
// (RunContext::ordered), writing its outputs.
using RunStage = std::function<void(PlanCache& cache, RunContext& ctx, std::vector<Tensor>& outputs)>;

// Runs a staged model on ctx.ordered (one tensor per model input), writing
// the model's outputs into `outputs` (tensors of the right dtype and shape
// are reused). Checks `deadline` before each cut node; with env.profile,
// ctx.profile holds every stage's steps and the cut nodes on one time line.
void run_staged(const Graph& model, ModelParts& m, RunContext& ctx, std::vector<Tensor>& outputs, const ExecEnv& env,
                const RunDeadline& deadline, const RunStage& run_stage);

// Session::plan_report() of a staged model: each stage's last plan, and the
// cut nodes between them.
std::string staged_report(const Graph& model, const ModelParts& m);

}  // namespace minirt
