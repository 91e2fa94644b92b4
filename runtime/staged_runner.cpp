#include "runtime/staged_runner.h"

#include "runtime/thread_pool.h"

#include <algorithm>

namespace minirt {

ModelParts model_parts(const Graph& graph, const KernelProvider& cpu) {
  ModelParts m;
  m.parts = split_stages(graph);
  if (m.parts.empty()) m.caches.push_back({.graph = &graph, .value_inputs = value_inputs(graph)});
  for (const Stage& part : m.parts) {
    if (part.cut < 0) {
      m.cache_of.push_back(static_cast<int>(m.caches.size()));
      m.caches.push_back({.graph = &part.graph, .value_inputs = value_inputs(part.graph)});
      m.cuts.emplace_back();
      continue;
    }
    // Cut nodes run on the host, between the stages.
    const Node& n = graph.nodes[static_cast<size_t>(part.cut)];
    std::string why;
    if (!cpu.supports(graph, n, &why)) node_fail(ErrorCode::kUnsupported, graph, n, why);
    std::unique_ptr<Kernel> k = cpu.make_kernel(graph, n);
    auto* sized = dynamic_cast<ValueSizedKernel*>(k.get());
    if (!sized)
      node_fail(ErrorCode::kInternal, graph, n,
                "the CPU backend's kernel for this value-sized op is not a ValueSizedKernel");
    k.release();
    m.cuts.emplace_back(sized);
    if (!m.cut_constants.store()) m.cut_constants = WeightHold(graph.weights);
    for (int v : n.inputs)
      if (v >= 0 && graph.values[static_cast<size_t>(v)].constant) m.cut_constants.add(*graph.values[v].constant);
    m.cache_of.push_back(-1);
  }
  return m;
}

void run_staged(const Graph& g, ModelParts& m, RunContext& ctx, std::vector<Tensor>& outputs, const ExecEnv& env,
                const RunDeadline& deadline, const RunStage& run_stage) {
  ctx.where.assign(g.values.size(), nullptr);
  ctx.made.resize(g.values.size());
  for (size_t i = 0; i < g.inputs.size(); ++i) ctx.where[static_cast<size_t>(g.inputs[i])] = ctx.ordered[i];
  auto value = [&](int v) -> const Tensor* {
    const Tensor* t = ctx.where[static_cast<size_t>(v)];
    if (!t) t = g.values[static_cast<size_t>(v)].constant.get();
    if (!t) fail(ErrorCode::kInternal, env.name + ": value '" + g.values[v].name + "' was not made before it was read");
    return t;
  };
  ctx.stage_ctx.resize(m.parts.size());
  ctx.stage_out.resize(m.parts.size());
  std::vector<StepTiming> profile;
  std::vector<BackendTimes> device_times;
  const bool limited = deadline.limited();
  const RunClock::time_point stop = deadline.at();
  const auto t0 = RunClock::now();
  for (size_t p = 0; p < m.parts.size(); ++p) {
    const Stage& part = m.parts[p];
    if (part.cut >= 0) {
      const Node& n = g.nodes[static_cast<size_t>(part.cut)];
      if (limited && RunClock::now() > stop)
        deadline_exceeded(env.name, "", "before " + n.op + " '" + n.name + "'", deadline);
      std::vector<const Tensor*> ins;
      for (int v : n.inputs) ins.push_back(v >= 0 ? value(v) : nullptr);
      auto a = RunClock::now();
      std::vector<Tensor> outs;
      try {
        outs = m.cuts[p]->evaluate(ins, *env.threads);
      } catch (const Error& e) {
        throw Error(e.code(), node_context(g, n) + e.what());
      }
      auto b = RunClock::now();
      std::string shapes;
      for (size_t i = 0; i < n.outputs.size() && i < outs.size(); ++i) {
        if (n.outputs[i] < 0) continue;
        shapes += (shapes.empty() ? "" : ", ") + shape_str(outs[i].shape());
        ctx.made[static_cast<size_t>(n.outputs[i])] = std::move(outs[i]);
        ctx.where[static_cast<size_t>(n.outputs[i])] = &ctx.made[static_cast<size_t>(n.outputs[i])];
      }
      if (env.profile) {
        StepTiming t;
        t.name = n.name;
        t.op = n.op;
        t.shapes = "-> " + shapes;
        t.device = "cpu";  // value-sized nodes run on the host, between the stages
        t.start_us = std::chrono::duration<double, std::micro>(a - t0).count();
        t.duration_us = std::chrono::duration<double, std::micro>(b - a).count();
        profile.push_back(std::move(t));
      }
      continue;
    }
    auto& sub = ctx.stage_ctx[p];
    if (!sub) sub = std::make_unique<RunContext>();
    sub->ordered.clear();
    for (int v : part.graph.inputs) sub->ordered.push_back(value(v));
    run_stage(m.caches[static_cast<size_t>(m.cache_of[p])], *sub, ctx.stage_out[p]);
    for (size_t k = 0; k < part.graph.outputs.size(); ++k)
      ctx.where[static_cast<size_t>(part.graph.outputs[k])] = &ctx.stage_out[p][k];
    if (env.profile) {
      double offset = std::chrono::duration<double, std::micro>(RunClock::now() - t0).count();
      double first = 0;  // the stage's end on its own line (a device-timed step may end last)
      for (const StepTiming& t : sub->profile) first = std::max(first, t.start_us + t.duration_us);
      for (StepTiming t : sub->profile) {
        t.start_us += offset - first;
        profile.push_back(std::move(t));
      }
    }
    device_times.insert(device_times.end(), sub->device_times.begin(), sub->device_times.end());
  }
  // The caller's outputs, as the executor writes a plan's.
  size_t nout = g.outputs.size();
  if (outputs.size() != nout) outputs.resize(nout);
  for (size_t i = 0; i < nout; ++i) {
    const Tensor& t = *value(g.outputs[i]);
    fit_output(outputs[i], t.dtype(), t.shape());
    copy_output(outputs[i], t.raw());
  }
  ctx.profile = std::move(profile);
  ctx.device_times = std::move(device_times);
}

std::string staged_report(const Graph& g, const ModelParts& m) {
  int stages = 0;
  for (const Stage& p : m.parts) stages += p.cut < 0;
  std::string out = "the model runs in " + std::to_string(stages) + " plan stage" + (stages == 1 ? "" : "s") +
                    ", cut where an output's shape follows from values:\n";
  int stage = 0;
  for (size_t i = 0; i < m.parts.size(); ++i) {
    if (m.parts[i].cut >= 0) {
      const Node& n = g.nodes[static_cast<size_t>(m.parts[i].cut)];
      out += "then " + n.op + " '" + n.name + "' on the host (cpu): output shapes follow from its input values\n";
      continue;
    }
    const PlanCache& c = m.caches[static_cast<size_t>(m.cache_of[i])];
    out += "stage " + std::to_string(++stage) + " of " + std::to_string(stages) + ": ";
    out += c.last ? c.last->plan->report() : std::string("not planned yet\n");
  }
  return out;
}

}  // namespace minirt
