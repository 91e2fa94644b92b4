#include <minirt/session.h>

#include "kernels/cpu/cpu_backend.h"
#include "runtime/api/model_impl.h"
#include "runtime/planner.h"

#include <chrono>
#include <cstdlib>
#include <cstring>

namespace minirt {

struct Session::Impl {
  std::shared_ptr<const Model> model;
  SessionOptions options;
  Device device = Device::kCpu;
  std::string reason;
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<Backend> cpu;

  std::unique_ptr<Plan> plan;
  std::vector<size_t> value_inputs;  // model input indices that are shape operands
  std::vector<Shape> plan_shapes;    // input shapes the plan was made for
  std::vector<Tensor> plan_values;   // values of the shape-operand inputs it was made for
  int plans = 0;

  std::unique_ptr<char, decltype(&std::free)> arena{nullptr, &std::free};
  size_t arena_capacity = 0;
  std::vector<void*> ptrs;                        // per value
  std::vector<std::vector<const void*>> step_in;  // per step
  std::vector<std::vector<void*>> step_out;
  std::vector<int> first_output_of_value;         // per model output: index of the first output with that value
  std::vector<const Tensor*> ordered;             // inputs in model order, for this run
  std::vector<StepTiming> profile;

  void plan_for(const std::vector<const Tensor*>& inputs);
  bool plan_matches(const std::vector<const Tensor*>& inputs) const;
  void execute(const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs);
};

Session::Session(std::shared_ptr<const Model> model, SessionOptions options) : impl_(std::make_unique<Impl>()) {
  if (!model) throw Error(ErrorCode::kInvalidArgument, "Session: the model is null");
  impl_->model = std::move(model);
  impl_->options = options;
  switch (options.device) {
    case Device::kCpu:
      impl_->reason = "running on the CPU as requested";
      break;
    case Device::kAuto:
      impl_->reason = "running on the CPU: this build of minirt has no GPU backend (the CUDA module is not built in yet)";
      break;
    case Device::kCuda:
      throw Error(ErrorCode::kDeviceUnavailable,
                  "--device cuda: this build of minirt has no GPU backend (the CUDA module is not built in yet); "
                  "use --device cpu or --device auto");
  }
  int threads = options.threads > 0 ? options.threads : ThreadPool::hardware_threads();
  impl_->pool = std::make_unique<ThreadPool>(threads);
  impl_->cpu = make_cpu_backend(threads);
  impl_->value_inputs = value_inputs(impl_->model->impl().graph);
}

Session::~Session() = default;

Device Session::device() const { return impl_->device; }
const std::string& Session::device_reason() const { return impl_->reason; }
int Session::threads() const { return impl_->pool->size(); }
std::string Session::plan_report() const { return impl_->plan ? impl_->plan->report() : std::string(); }
size_t Session::arena_bytes() const { return impl_->plan ? impl_->plan->arena_bytes : 0; }
int Session::plans_made() const { return impl_->plans; }
const std::vector<StepTiming>& Session::last_profile() const { return impl_->profile; }

bool Session::Impl::plan_matches(const std::vector<const Tensor*>& inputs) const {
  if (!plan) return false;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i]->shape() != plan_shapes[i] || inputs[i]->dtype() != model->impl().graph.values[model->impl().graph.inputs[i]].dtype)
      return false;
  for (size_t k = 0; k < value_inputs.size(); ++k) {
    const Tensor& now = *inputs[value_inputs[k]];
    const Tensor& then = plan_values[k];
    if (now.nbytes() != then.nbytes() || std::memcmp(now.raw(), then.raw(), now.nbytes()) != 0) return false;
  }
  return true;
}

void Session::Impl::plan_for(const std::vector<const Tensor*>& inputs) {
  PlanOptions po;
  po.optimize = options.optimize;
  plan.reset();
  plan = make_plan(model->impl().graph, inputs, *cpu, *pool, po);
  ++plans;
  plan_shapes.clear();
  for (const Tensor* t : inputs) plan_shapes.push_back(t->shape());
  plan_values.clear();
  for (size_t k : value_inputs) plan_values.push_back(inputs[k]->clone());

  if (plan->arena_bytes > arena_capacity) {
    size_t cap = (plan->arena_bytes + 63) / 64 * 64;
    char* p = static_cast<char*>(std::aligned_alloc(64, cap));
    if (!p)
      throw Error(ErrorCode::kOutOfMemory, model->info().path + ": could not allocate the " + std::to_string(cap) +
                                               "-byte activation arena; try a smaller batch");
    arena.reset(p);
    arena_capacity = cap;
  }
  const Graph& g = plan->graph;
  ptrs.assign(g.values.size(), nullptr);
  for (size_t v = 0; v < g.values.size(); ++v) {
    if (plan->storage[v] == Storage::kConstant) ptrs[v] = g.values[v].constant->raw();
    if (plan->storage[v] == Storage::kArena) ptrs[v] = arena.get() + plan->offset[v];
  }
  step_in.assign(plan->steps.size(), {});
  step_out.assign(plan->steps.size(), {});
  profile.assign(plan->steps.size(), {});
  for (size_t i = 0; i < plan->steps.size(); ++i) {
    step_in[i].resize(plan->steps[i].inputs.size());
    step_out[i].resize(plan->steps[i].outputs.size());
    profile[i].name = plan->steps[i].label;
    profile[i].op = plan->steps[i].op;
    profile[i].shapes = plan->steps[i].shapes;
  }
  first_output_of_value.assign(plan->output_values.size(), -1);
  for (size_t i = 0; i < plan->output_values.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (plan->output_values[j] == plan->output_values[i] && first_output_of_value[i] < 0)
        first_output_of_value[i] = static_cast<int>(j);
}

void Session::Impl::execute(const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  if (!plan_matches(inputs)) plan_for(inputs);
  const Graph& g = plan->graph;
  for (size_t i = 0; i < inputs.size(); ++i) {
    int v = plan->input_values[i];
    if (plan->storage[v] == Storage::kInput) ptrs[v] = inputs[i]->raw();
  }
  // Outputs: reuse what the caller passed when dtype and shape fit.
  size_t nout = plan->output_values.size();
  if (outputs.size() != nout) outputs.resize(nout);
  for (size_t i = 0; i < nout; ++i) {
    const Value& val = g.values[plan->output_values[i]];
    if (outputs[i].dtype() != val.dtype || outputs[i].shape() != val.shape || (!outputs[i].raw() && outputs[i].nbytes()))
      outputs[i] = Tensor::zeros(val.dtype, val.shape);
    int v = plan->output_values[i];
    if (plan->storage[v] == Storage::kOutput && first_output_of_value[i] < 0) ptrs[v] = outputs[i].raw();
  }

  char* base = arena.get();
  bool timing = options.profile;
  auto t0 = std::chrono::steady_clock::now();
  for (size_t s = 0; s < plan->steps.size(); ++s) {
    Step& st = plan->steps[s];
    for (size_t k = 0; k < st.inputs.size(); ++k) step_in[s][k] = st.inputs[k] >= 0 ? ptrs[st.inputs[k]] : nullptr;
    for (size_t k = 0; k < st.outputs.size(); ++k) step_out[s][k] = st.outputs[k] >= 0 ? ptrs[st.outputs[k]] : nullptr;
    KernelArgs args{step_in[s].data(), step_out[s].data(), base + st.workspace_offset, pool.get()};
    if (!timing) {
      st.kernel->run(args);
      continue;
    }
    auto a = std::chrono::steady_clock::now();
    st.kernel->run(args);
    auto b = std::chrono::steady_clock::now();
    profile[s].start_us = std::chrono::duration<double, std::micro>(a - t0).count();
    profile[s].duration_us = std::chrono::duration<double, std::micro>(b - a).count();
  }
  // Outputs that are not written in place: constants, inputs, repeats.
  for (size_t i = 0; i < nout; ++i) {
    int v = plan->output_values[i];
    if (plan->storage[v] == Storage::kOutput && first_output_of_value[i] < 0) continue;
    const void* src = first_output_of_value[i] >= 0 ? outputs[first_output_of_value[i]].raw() : ptrs[v];
    if (!src) {
      for (size_t k = 0; k < inputs.size(); ++k)
        if (plan->input_values[k] == v) src = inputs[k]->raw();
    }
    if (src && outputs[i].nbytes()) std::memcpy(outputs[i].raw(), src, outputs[i].nbytes());
  }
}

void Session::run(const NamedTensors& inputs, std::vector<Tensor>& outputs) {
  const auto& mi = impl_->model->impl();
  const Graph& g = mi.graph;
  auto& ordered = impl_->ordered;
  ordered.assign(g.inputs.size(), nullptr);
  const std::string& file = mi.info.path;
  for (const auto& [name, tensor] : inputs) {
    size_t idx = g.inputs.size();
    for (size_t i = 0; i < g.inputs.size(); ++i)
      if (g.values[g.inputs[i]].name == name) idx = i;
    if (idx == g.inputs.size()) {
      std::string names;
      for (int v : g.inputs) names += (names.empty() ? "'" : ", '") + g.values[v].name + "'";
      throw Error(ErrorCode::kInvalidArgument, file + ": the model has no input named '" + name + "' (its inputs: " + names + ")");
    }
    if (ordered[idx]) throw Error(ErrorCode::kInvalidArgument, file + ": input '" + name + "' was given twice");
    if (tensor.empty()) throw Error(ErrorCode::kInvalidArgument, file + ": input '" + name + "' is an empty Tensor");
    if (!tensor.raw() && tensor.numel() > 0)
      throw Error(ErrorCode::kInvalidArgument, file + ": input '" + name + "' has no data (null buffer)");
    ordered[idx] = &tensor;
  }
  for (size_t i = 0; i < ordered.size(); ++i)
    if (!ordered[i])
      throw Error(ErrorCode::kInvalidArgument, file + ": input '" + g.values[g.inputs[i]].name + "' was not given");
  impl_->execute(ordered, outputs);
}

std::vector<Tensor> Session::run(const NamedTensors& inputs) {
  std::vector<Tensor> out;
  run(inputs, out);
  return out;
}

}  // namespace minirt
