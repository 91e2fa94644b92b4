// The planner: specializes the model graph to concrete input shapes and makes
// a plan in stages, each a function of its own:
//
//   bind shapes    the inputs' shapes (and shape-operand values) into the graph
//   passes         inference and folding, fusion, the CPU's blocked layout (runtime/passes/)
//   placement      each node on a device backend or the CPU (runtime/placement.h)
//   algorithms     the tuner's choice per convolution (runtime/tuner.h)
//   steps          a kernel per node, copy steps at the seams between memory spaces
//   memory plan    storage and arena offsets by liveness, views, joins made in place
//                  (runtime/memory_plan.h)
//
//   std::unique_ptr<Plan> plan = make_plan(model_graph, inputs, cpu, pool, options);
//   std::cout << plan->report();
#pragma once

#include <minirt/weights.h>

#include "runtime/backend.h"
#include "runtime/constant_cache.h"
#include "runtime/graph.h"
#include "runtime/tuner.h"
#include "runtime/weight_store.h"

#include <memory>
#include <string>
#include <vector>

namespace minirt {

enum class Storage : uint8_t {
  kNone,      // not used by any step
  kInput,     // a graph input: the caller's memory
  kConstant,  // an initializer or folded value
  kArena,     // an intermediate: arena + offset
  kOutput,    // a graph output: the caller's output tensor
};

struct Step {
  int node = -1;  // -1 for a copy step between memory spaces
  int space = 0;  // memory space it runs in (0: the host)
  const KernelProvider* backend = nullptr;
  // Shared with another plan's step where both were made from the same
  // recipe (PlanOptions::reuse); kernels are safe to run from several runs
  // at once, so two plans of a session may run one.
  std::shared_ptr<Kernel> kernel;
  std::vector<int> inputs;  // value ids, -1 for skipped optionals
  std::vector<int> outputs;
  size_t workspace_offset = 0;
  size_t workspace_bytes = 0;
  std::string label;      // node name, with fused nodes after '+'
  std::string op;         // op type, with fused ops after '+'
  std::string shapes;     // "1x3x224x224 -> 1x64x112x112"
  std::string algorithm;  // the tuner's choice, when the node had one
  // What the kernel was made from (host steps of a node): the node, its
  // fused nodes and ops, the algorithm, its values' names, types, layouts
  // and shapes, and the attributes passes change (OpAttrs::recipe). Two
  // steps of the same recipe make the same kernel. Empty: not to be shared.
  std::string recipe;
  bool shared = false;  // the kernel came from PlanOptions::reuse
};

struct Plan;

struct PlanOptions {
  bool optimize = true;  // passes beyond shape inference
  // Device backends to place nodes on, in order of preference; a node none
  // of them supports runs on the CPU, with copies at the seams.
  std::vector<const KernelProvider*> devices;
  // Chooses the algorithm of each node whose backend offers several
  // (convolutions); null: every backend's make_kernel() decides alone.
  Tuner* tuner = nullptr;
  // Keep activations in the CPU backend's channel-blocked layout where its
  // kernels can (runtime/passes/layout.cpp); with `optimize` and no device
  // backends only.
  bool blocked_layout = true;
  // Shares the plan's constants with the other plans of the session that
  // hold equal ones (runtime/constant_cache.h); null: each plan its own.
  ConstantCache* constants = nullptr;
  // A plan of the same graph and inputs (the one a tuned plan replaces):
  // each host step whose recipe one of its steps has takes that step's
  // kernel instead of making and packing its own, and the model's weights
  // are held only while a kernel is made from them (the tuner's candidates
  // included), not from the passes to the last step: so that a tuned plan
  // made beside the running one costs the memory of what changed. It must
  // outlive the call; null: every kernel made here.
  const Plan* reuse = nullptr;
};

// A memory space: the host (index 0) or a device backend's memory.
struct MemorySpace {
  const KernelProvider* backend = nullptr;
  size_t arena_bytes = 0;
  size_t naive_bytes = 0;  // sum of all its intermediates, for comparison
};

// A constant's copy in a device's memory, made at plan time.
struct Upload {
  int value = -1;
  std::shared_ptr<void> data;
};

struct PlanStats {
  int folded = 0, identities = 0, batchnorms = 0, bias_adds = 0, activations = 0, residuals = 0, dead = 0;
  int block = 0;           // the channel block of blocked values (0: all plain)
  int blocked = 0;         // values in the blocked layout
  int reorders = 0;        // layout changes inserted
  int concats_elided = 0;  // Concat steps whose inputs were made in their slices
  int narrowed = 0;        // values the backend keeps narrower (KernelProvider::narrow_values)
  int quantize_pairs = 0;  // QuantizeLinear -> DequantizeLinear pairs made one step (fold_quantize_pairs)
  int chosen_fusions = 0;  // steps folded into the one before once algorithms are chosen (KernelProvider::fuse_chosen)
  int shared_kernels = 0;  // steps whose kernel came from PlanOptions::reuse
};

struct Plan {
  Graph graph;
  std::vector<Step> steps;
  std::vector<Storage> storage;  // per value
  std::vector<size_t> offset;    // per value, for kArena: offset in its space's arena
  std::vector<int> space;        // per value: memory space
  std::vector<MemorySpace> spaces;
  std::vector<Upload> uploads;     // device copies of constants
  std::string placement;           // "placed 61 nodes on cuda, 2 on cpu (...)"; empty without devices
  std::vector<int> input_values;   // per model input: value id
  std::vector<int> output_values;  // per model output: value id
  size_t arena_bytes = 0;          // the host arena (spaces[0])
  size_t naive_bytes = 0;
  PlanStats stats;
  // The model's weights (runtime/weight_store.h) this plan's kernels read at
  // run time as they are; the rest were packed and the plan let them go.
  WeightHold weights;
  int released = 0;  // constants let go because every step that reads them packed its own form

  std::string report() const;
  // For a plan with int8 steps (a quantized model's): "int8 (N convolutions,
  // M products), K steps in float between quantize pairs"; else empty.
  std::string int8_summary() const;
};

// `inputs` holds one tensor per model graph input, in order. Inputs whose
// values decide shapes (Reshape's shape, Slice's starts, ...) are folded in
// as constants, so the plan is valid only for those values; see
// value_inputs().
std::unique_ptr<Plan> make_plan(const Graph& model, const std::vector<const Tensor*>& inputs, const KernelProvider& cpu,
                                ThreadPool& pool, const PlanOptions& options);

// Indices (into model.inputs) of graph inputs whose values reach a shape
// operand, directly or through computation (Range(0, Add(n, 1)), a half
// input's Cast): the plan is made for their values, as constants folded
// through that computation at plan time. Reading only an input's shape
// (Shape, Size) does not count.
std::vector<size_t> value_inputs(const Graph& model);

// Session::weight_stats() of a model graph and the plans made of it (each
// tensor counted once).
WeightStats weight_stats(const Graph& model, const std::vector<const Plan*>& plans);

}  // namespace minirt
