#include "runtime/executor.h"

#include "runtime/planner.h"
#include "runtime/thread_pool.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace minirt {

namespace {

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g s", s);
  return buf;
}

// The host arena for `plan`, grown from the host pool.
void grow(RunContext& ctx, const Plan& plan, const ExecEnv& env) {
  const std::string what = "the activation arena of " + env.name + " (inputs " + input_shapes(plan) + ")";
  // The old arena goes back first, so that its memory can serve the new one.
  ctx.arena.reset();
  try {
    ctx.arena.allocate(*env.host_memory, plan.arena_bytes, what);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kOutOfMemory) throw;
    // Idle runs' arenas are a cache too: give them back and try once more
    // (the pool's error, if it comes again, says what is held and what to change).
    if (!env.reclaim || env.reclaim() == 0) throw;
    ctx.arena.allocate(*env.host_memory, plan.arena_bytes, what);
  }
}

// A device's own times for the steps it ran replace the host's times of
// those steps (the enqueue): durations as measured, starts on the host's
// line from the host's start of the device's first timed step.
void apply_device_clock(std::vector<StepTiming>& profile, const std::vector<DeviceStepTime>& times) {
  if (times.empty()) return;
  size_t first = times.front().step;
  for (const DeviceStepTime& t : times) first = std::min(first, t.step);
  if (first >= profile.size()) return;
  const double origin = profile[first].start_us;
  for (const DeviceStepTime& t : times) {
    if (t.step >= profile.size()) continue;
    StepTiming& p = profile[t.step];
    p.start_us = origin + t.start_us;
    p.duration_us = t.duration_us;
    p.device_clock = true;
  }
}

}  // namespace

RunClock::time_point RunDeadline::at() const {
  return started +
         std::chrono::duration_cast<RunClock::duration>(std::chrono::duration<double>(std::min(seconds, 1e9)));
}

void bind_inputs(const Graph& g, const std::string& file, const NamedTensors& inputs,
                 std::vector<const Tensor*>& ordered) {
  ordered.assign(g.inputs.size(), nullptr);
  for (const auto& [name, tensor] : inputs) {
    size_t idx = g.inputs.size();
    for (size_t i = 0; i < g.inputs.size(); ++i)
      if (g.values[g.inputs[i]].name == name) idx = i;
    if (idx == g.inputs.size()) {
      std::string names;
      for (int v : g.inputs) names += (names.empty() ? "'" : ", '") + g.values[v].name + "'";
      throw Error(ErrorCode::kInvalidArgument,
                  file + ": the model has no input named '" + name + "' (its inputs: " + names + ")");
    }
    if (ordered[idx]) throw Error(ErrorCode::kInvalidArgument, file + ": input '" + name + "' was given twice");
    if (tensor.empty()) throw Error(ErrorCode::kInvalidArgument, file + ": input '" + name + "' is an empty Tensor");
    if (!tensor.raw() && tensor.numel() > 0)
      throw Error(ErrorCode::kInvalidArgument, file + ": input '" + name + "' has no data (null buffer)");
    const Value& decl = g.values[g.inputs[idx]];
    if (tensor.dtype() != decl.dtype)
      throw Error(ErrorCode::kInvalidArgument, file + ": input '" + name + "' must be " + dtype_name(decl.dtype) +
                                                   ", got " + dtype_name(tensor.dtype()));
    ordered[idx] = &tensor;
  }
  for (size_t i = 0; i < ordered.size(); ++i)
    if (!ordered[i])
      throw Error(ErrorCode::kInvalidArgument, file + ": input '" + g.values[g.inputs[i]].name + "' was not given");
}

std::string input_shapes(const Plan& plan) {
  std::string out;
  for (size_t i = 0; i < plan.input_values.size(); ++i) {
    const Value& v = plan.graph.values[plan.input_values[i]];
    out += (i ? ", " : "") + v.name + " " + shape_str(v.shape);
  }
  return out;
}

void deadline_exceeded(std::string_view file, std::string_view inputs, std::string_view where,
                       const RunDeadline& deadline) {
  const double took = std::chrono::duration<double>(RunClock::now() - deadline.started).count();
  std::string run = "the run";
  if (!inputs.empty()) run += " (inputs " + std::string(inputs) + ")";
  throw Error(ErrorCode::kDeadlineExceeded, std::string(file) + ": " + run + " stopped " + std::string(where) + ", " +
                                                seconds_text(took) + " after it began, past its limit of " +
                                                seconds_text(deadline.seconds) +
                                                " (SessionOptions::run_timeout_seconds); the session stays usable: "
                                                "give smaller inputs or a longer limit");
}

void fit_output(Tensor& out, DType dtype, const Shape& shape) {
  if (out.dtype() != dtype || out.shape() != shape || (!out.raw() && out.nbytes())) out = Tensor::zeros(dtype, shape);
}

void copy_output(Tensor& out, const void* src) {
  if (src && out.nbytes()) std::memcpy(out.raw(), src, out.nbytes());
}

void bind_plan(RunContext& ctx, std::shared_ptr<const PlanEntry> entry, const ExecEnv& env) {
  const Plan& plan = *entry->plan;
  ctx.bound.reset();
  if (plan.arena_bytes > ctx.arena.size()) grow(ctx, plan, env);
  // Device spaces: an arena from the device's pool and a stream, per context.
  size_t ns = plan.spaces.size();
  ctx.device_arenas.resize(ns > 0 ? ns - 1 : 0);
  ctx.streams.resize(ns, nullptr);
  ctx.stream_owners.resize(ns, nullptr);
  for (size_t sp = 1; sp < ns; ++sp) {
    auto& block = ctx.device_arenas[sp - 1];
    if (!block) block = std::make_unique<PoolBlock>();
    size_t need = plan.spaces[sp].arena_bytes;
    if (need > block->size()) {
      if (!env.device_memory || env.device_memory->size() < sp)
        throw Error(ErrorCode::kInternal, env.name + ": the plan has a device space without a memory pool");
      block->allocate(*(*env.device_memory)[sp - 1], need,
                      "the " + std::string(plan.spaces[sp].backend->name()) + " activation arena of " + env.name);
    }
    if (!ctx.streams[sp]) {
      ctx.streams[sp] = plan.spaces[sp].backend->device().create_stream();
      ctx.stream_owners[sp] = plan.spaces[sp].backend;
    }
  }
  const Graph& g = plan.graph;
  ctx.ptrs.assign(g.values.size(), nullptr);
  for (size_t v = 0; v < g.values.size(); ++v) {
    if (plan.storage[v] == Storage::kConstant) ctx.ptrs[v] = g.values[v].constant->raw();
    if (plan.storage[v] != Storage::kArena) continue;
    char* base = plan.space[v] == 0 ? ctx.arena.get() : ctx.device_arenas[plan.space[v] - 1]->get();
    ctx.ptrs[v] = base + plan.offset[v];
  }
  for (const Upload& u : plan.uploads) ctx.ptrs[u.value] = u.data.get();
  ctx.step_in.assign(plan.steps.size(), {});
  ctx.step_out.assign(plan.steps.size(), {});
  ctx.profile.assign(plan.steps.size(), {});
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    ctx.step_in[i].resize(plan.steps[i].inputs.size());
    ctx.step_out[i].resize(plan.steps[i].outputs.size());
    ctx.profile[i].name = plan.steps[i].label;
    ctx.profile[i].op = plan.steps[i].op;
    ctx.profile[i].shapes = plan.steps[i].shapes;
    ctx.profile[i].device = plan.spaces[plan.steps[i].space].backend->name();
  }
  ctx.bound = std::move(entry);
}

void execute(RunContext& ctx, std::vector<Tensor>& outputs, const ExecEnv& env, const RunDeadline& deadline) {
  const PlanEntry& e = *ctx.bound;
  const Plan& plan = *e.plan;
  const Graph& g = plan.graph;
  const auto& inputs = ctx.ordered;
  for (size_t i = 0; i < inputs.size(); ++i) {
    int v = plan.input_values[i];
    if (plan.storage[v] == Storage::kInput) ctx.ptrs[v] = inputs[i]->raw();
  }
  // Outputs: reuse what the caller passed when dtype and shape fit.
  size_t nout = plan.output_values.size();
  if (outputs.size() != nout) outputs.resize(nout);
  for (size_t i = 0; i < nout; ++i) {
    int v = plan.output_values[i];
    fit_output(outputs[i], g.values[v].dtype, g.values[v].shape);
    if (plan.storage[v] == Storage::kOutput && e.first_output_of_value[i] < 0) ctx.ptrs[v] = outputs[i].raw();
  }

  char* base = ctx.arena.get();
  const bool timing = env.profile;
  // Device streams: each run is bracketed, so the backend can time its phases.
  size_t ns = plan.spaces.size();
  ctx.device_times.resize(ns > 0 ? ns - 1 : 0);
  for (size_t sp = 1; sp < ns; ++sp) plan.spaces[sp].backend->device().begin_run(ctx.streams[sp]);
  const bool limited = deadline.limited();
  const RunClock::time_point stop = deadline.at();
  auto t0 = RunClock::now();
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const Step& st = plan.steps[s];
    if (limited && RunClock::now() > stop) {
      // Device work already issued finishes before the arena is reused.
      for (size_t sp = 1; sp < ns; ++sp) plan.spaces[sp].backend->device().end_run(ctx.streams[sp]);
      deadline_exceeded(env.name, input_shapes(plan),
                        s == 0 ? std::string("before its first step (planning took the time)")
                               : "after " + std::to_string(s) + " of " + std::to_string(plan.steps.size()) + " steps",
                        deadline);
    }
    for (size_t k = 0; k < st.inputs.size(); ++k)
      ctx.step_in[s][k] = st.inputs[k] >= 0 ? ctx.ptrs[st.inputs[k]] : nullptr;
    for (size_t k = 0; k < st.outputs.size(); ++k)
      ctx.step_out[s][k] = st.outputs[k] >= 0 ? ctx.ptrs[st.outputs[k]] : nullptr;
    char* ws = st.space == 0 ? base : ctx.device_arenas[st.space - 1]->get();
    KernelArgs args{ctx.step_in[s].data(), ctx.step_out[s].data(), ws + st.workspace_offset, env.threads,
                    ctx.streams[st.space]};
    if (!timing) {
      st.kernel->run(args);
      continue;
    }
    const ComputeDevice* dev = st.space > 0 ? &plan.spaces[st.space].backend->device() : nullptr;
    auto a = RunClock::now();
    if (dev) dev->step_begun(args.stream, s);
    st.kernel->run(args);
    if (dev) dev->step_ended(args.stream, s);
    auto b = RunClock::now();
    ctx.profile[s].start_us = std::chrono::duration<double, std::micro>(a - t0).count();
    ctx.profile[s].duration_us = std::chrono::duration<double, std::micro>(b - a).count();
    ctx.profile[s].device_clock = false;
  }
  for (size_t sp = 1; sp < ns; ++sp) {
    const KernelProvider* b = plan.spaces[sp].backend;
    b->device().end_run(ctx.streams[sp]);
    ctx.device_times[sp - 1] = {b, b->device().run_times(ctx.streams[sp])};
    if (timing) apply_device_clock(ctx.profile, b->device().step_times(ctx.streams[sp]));
  }
  // Outputs that are not written in place: constants, inputs, repeats.
  for (size_t i = 0; i < nout; ++i) {
    int v = plan.output_values[i];
    int first = e.first_output_of_value[i];
    if (plan.storage[v] == Storage::kOutput && first < 0) continue;
    copy_output(outputs[i], first >= 0 ? outputs[first].raw() : ctx.ptrs[v]);
  }
}

size_t unbind(RunContext& ctx) {
  size_t n = ctx.arena.size();
  ctx.arena.reset();
  ctx.bound.reset();
  for (auto& sub : ctx.stage_ctx)
    if (sub) n += unbind(*sub);
  return n;
}

}  // namespace minirt
