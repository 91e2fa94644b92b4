#include <minirt/session.h>

#include "runtime/api/model_impl.h"
#include "runtime/api/session_internal.h"
#include "runtime/backend_registry.h"
#include "runtime/host_resources.h"
#include "runtime/memory_pool.h"
#include "runtime/plan_cache.h"
#include "runtime/planner.h"
#include "runtime/run_context.h"
#include "runtime/stages.h"
#include "runtime/tuner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <mutex>
#include <new>

namespace minirt {

namespace {

using Clock = std::chrono::steady_clock;

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g s", s);
  return buf;
}

// When a run that began at `started` must end, for a limit in seconds (> 0);
// limits beyond a few decades are as good as none and stay representable.
Clock::time_point deadline_of(Clock::time_point started, double seconds) {
  return started + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::min(seconds, 1e9)));
}

}  // namespace

struct Session::Impl {
  std::shared_ptr<const Model> model;
  SessionOptions options;
  Device device = Device::kCpu;
  std::string reason;
  std::unique_ptr<ThreadPool> pool;
  std::shared_ptr<KernelProvider> cpu;  // the host backend, every node's fallback
  std::unique_ptr<Tuner> tuner;         // used under mu, while planning
  ConstantCache constants;              // the plans' constants, one copy of each
  // A model with value-sized nodes runs in parts (runtime/stages.h): plan
  // stages and cut nodes; empty otherwise. One plan cache per stage (or one
  // for the whole model) and one kernel per cut node.
  std::vector<Stage> parts;
  std::vector<PlanCache> caches;                        // per part that is a stage, else the model's one
  std::vector<int> cache_of;                            // per part: its cache, -1 for a cut
  std::vector<std::unique_ptr<ValueSizedKernel>> cuts;  // per part: the cut node's kernel, or null
  // The run contexts' arenas come from here; declared before `idle`, so the
  // contexts give their blocks back before the pool goes.
  std::unique_ptr<MemoryPool> host_memory;
  // Device backends nodes may be placed on, and their memory pools.
  std::vector<std::shared_ptr<KernelProvider>> devices;
  std::vector<std::unique_ptr<MemoryPool>> device_memory;
  // The stream of copy_from_device/copy_to_device, made at the first copy;
  // declared after `devices`, so it goes before the backend that made it.
  struct CopyStream {
    std::mutex mu;
    const KernelProvider* owner = nullptr;
    void* stream = nullptr;
    ~CopyStream() {
      if (stream) owner->device().destroy_stream(stream);
    }
  };
  CopyStream copy_stream;
  // The device backend for a copy, and its stream (made now when needed);
  // called with copy_stream.mu held.
  const KernelProvider& copy_backend(const char* what);
  PoolOptions pool_options;  // of every pool: SessionOptions' limit and policy

  std::mutex mu;  // guards everything below
  std::vector<std::unique_ptr<RunContext>> idle;
  std::vector<StepTiming> last_profile;
  std::vector<BackendTimes> last_device_times;
  int plans_made = 0;

  void choose_device(const SessionOptions& options);

  std::shared_ptr<const PlanEntry> plan_for(PlanCache& cache, const std::vector<const Tensor*>& inputs,
                                            const Clock::time_point* deadline);
  bool matches(const PlanCache& cache, const PlanEntry& e, const std::vector<const Tensor*>& inputs) const;
  // Plans (when new) and runs one plan cache's graph for the context's inputs.
  void run_plan(PlanCache& cache, RunContext& ctx, std::vector<Tensor>& outputs, Clock::time_point started);
  void run_parts(RunContext& ctx, std::vector<Tensor>& outputs, Clock::time_point started);
  std::vector<std::shared_ptr<const PlanEntry>> last_plans() const;  // called with mu held
  void bind(RunContext& ctx, std::shared_ptr<const PlanEntry> entry);
  void grow(RunContext& ctx, const Plan& plan);
  size_t release_idle_arenas();  // called with mu held
  void execute(RunContext& ctx, std::vector<Tensor>& outputs, Clock::time_point started);
  [[noreturn]] void deadline_exceeded(const Plan& plan, size_t steps_done, Clock::time_point started) const;
};

Session::Session(std::shared_ptr<const Model> model, SessionOptions options) : impl_(std::make_unique<Impl>()) {
  if (!model) throw Error(ErrorCode::kInvalidArgument, "Session: the model is null");
  impl_->model = std::move(model);
  impl_->options = options;
  // Settings first, before the GPU is probed or a thread started.
  const int threads = resolve_threads(options.threads);
  if (!(options.run_timeout_seconds >= 0) || !std::isfinite(options.run_timeout_seconds))
    throw Error(ErrorCode::kInvalidArgument,
                "SessionOptions: run_timeout_seconds must be 0 (no limit) or a positive "
                "number of seconds, got " +
                    std::to_string(options.run_timeout_seconds));
  if (options.device_id < 0)
    throw Error(ErrorCode::kInvalidArgument,
                "SessionOptions: device_id must be a CUDA device ordinal (0 or more), got " +
                    std::to_string(options.device_id));
  // One pool design for every memory: the limit and policy apply to the
  // host's pool and to each device's (a limit per pool).
  PoolOptions& po = impl_->pool_options;
  po.limit = options.memory_limit;
  if (options.memory_policy == MemoryPolicy::kPreallocate) {
    po.policy = PoolPolicy::kPreallocate;
    po.preallocate_fraction = options.preallocate_fraction;
    double f = options.preallocate_fraction;
    if (!(f > 0.0 && f <= 1.0))
      throw Error(
          ErrorCode::kInvalidArgument,
          "SessionOptions: MemoryPolicy::kPreallocate needs preallocate_fraction in (0, 1], got " + std::to_string(f));
  }
  impl_->choose_device(options);
  impl_->host_memory = std::make_unique<MemoryPool>(std::make_shared<HostAllocator>(), po);
  impl_->pool = std::make_unique<ThreadPool>(threads);
  impl_->cpu = backend_registry().open_host({.threads = threads, .math = options.math});
  if (options.tuning == TuningMode::kFixed && options.tuning_algorithm.empty())
    throw Error(ErrorCode::kInvalidArgument, "SessionOptions: TuningMode::kFixed needs tuning_algorithm (its name)");
  TunerOptions to;
  to.mode = options.tuning;
  to.algorithm = options.tuning_algorithm;
  to.cache_path = options.algo_cache_path;
  to.workspace_limit = options.workspace_limit;
  to.write_cache = options.algo_cache_write;
  if (options.tuning_repeats < 0)
    throw Error(ErrorCode::kInvalidArgument, "SessionOptions: tuning_repeats must be 0 (adaptive) or more, got " +
                                                 std::to_string(options.tuning_repeats));
  if (options.tuning_repeats > 0) {
    to.min_repeats = to.max_repeats = options.tuning_repeats;
    to.target_ms = 0;
  }
  impl_->tuner = std::make_unique<Tuner>(std::move(to));
  const Graph& graph = impl_->model->impl().graph;
  impl_->parts = split_stages(graph);
  if (impl_->parts.empty()) impl_->caches.push_back({.graph = &graph, .value_inputs = value_inputs(graph)});
  for (const Stage& part : impl_->parts) {
    if (part.cut < 0) {
      impl_->cache_of.push_back(static_cast<int>(impl_->caches.size()));
      impl_->caches.push_back({.graph = &part.graph, .value_inputs = value_inputs(part.graph)});
      impl_->cuts.emplace_back();
      continue;
    }
    // Cut nodes run on the host, between the stages.
    const Node& n = graph.nodes[static_cast<size_t>(part.cut)];
    std::string why;
    if (!impl_->cpu->supports(graph, n, &why)) node_fail(ErrorCode::kUnsupported, graph, n, why);
    std::unique_ptr<Kernel> k = impl_->cpu->make_kernel(graph, n);
    auto* sized = dynamic_cast<ValueSizedKernel*>(k.get());
    if (!sized)
      node_fail(ErrorCode::kInternal, graph, n,
                "the CPU backend's kernel for this value-sized op is not a ValueSizedKernel");
    k.release();
    impl_->cuts.emplace_back(sized);
    impl_->cache_of.push_back(-1);
  }
}

// The device: the CPU when asked; otherwise the first device backend of the
// registry (runtime/backend_registry.h) that opens for the kind asked (the
// GPU module's opens when the compatibility gate passes and the module
// loads and starts), else (kAuto) the CPU with that backend's sentence as the
// reason, or (kCuda) an error carrying it.
void Session::Impl::choose_device(const SessionOptions& opts) {
  if (opts.device == Device::kCpu) {
    reason = "running on the CPU as requested";
    return;
  }
  std::vector<BackendFactory> candidates = backend_registry().candidates(opts.device);
  std::string why;
  BackendRequest request{.threads = 1, .device_id = opts.device_id, .math = opts.math};
  for (const BackendFactory& f : candidates) {
    OpenedBackend b = backend_registry().open_shared(f, request);
    if (b.kernels) {
      device_memory.push_back(std::make_unique<MemoryPool>(b.kernels->device().allocator(), pool_options));
      devices.push_back(std::move(b.kernels));
      device = f.kind;
      reason = "running on " + f.name + ": " + b.description;
      return;
    }
    // One candidate (the usual case): its sentence alone; several: each named.
    std::string said = b.error.empty() ? "it did not start and gave no reason" : b.error;
    if (candidates.size() > 1) said = f.name + ": " + said;
    why += (why.empty() ? "" : "; ") + said;
  }
  if (candidates.empty())
    why = std::string("no ") + (opts.device == Device::kAuto ? "device" : device_name(opts.device)) +
          " backend is registered in this build";
  if (opts.device != Device::kAuto)
    throw Error(ErrorCode::kDeviceUnavailable,
                std::string("no usable GPU backend for Device::kCuda: ") + why +
                    "; use the CPU instead (Device::kCpu, or Device::kAuto to take the GPU where it works)");
  reason = "running on the CPU: " + why;
}

Session::~Session() = default;

Device Session::device() const { return impl_->device; }
const std::string& Session::device_reason() const { return impl_->reason; }
std::string Session::math_reason() const { return impl_->cpu->math_note(); }
int Session::threads() const { return impl_->pool->size(); }

// The plans of the last run: one, or one per stage of a cut model.
std::vector<std::shared_ptr<const PlanEntry>> Session::Impl::last_plans() const {
  std::vector<std::shared_ptr<const PlanEntry>> out;
  for (const PlanCache& c : caches)
    if (c.last) out.push_back(c.last);
  return out;
}

std::string Session::int8_summary() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  const Impl& im = *impl_;
  return im.parts.empty() && im.caches[0].last ? im.caches[0].last->plan->int8_summary() : std::string();
}

std::string Session::plan_report() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  const Impl& im = *impl_;
  if (im.parts.empty()) return im.caches[0].last ? im.caches[0].last->plan->report() : std::string();
  // A cut model: each stage's plan, and the cut nodes between them.
  const Graph& g = im.model->impl().graph;
  int stages = 0;
  for (const Stage& p : im.parts) stages += p.cut < 0;
  std::string out = "the model runs in " + std::to_string(stages) + " plan stage" + (stages == 1 ? "" : "s") +
                    ", cut where an output's shape follows from values:\n";
  int stage = 0;
  for (size_t i = 0; i < im.parts.size(); ++i) {
    if (im.parts[i].cut >= 0) {
      const Node& n = g.nodes[static_cast<size_t>(im.parts[i].cut)];
      out += "then " + n.op + " '" + n.name + "' on the host (cpu): output shapes follow from its input values\n";
      continue;
    }
    const PlanCache& c = im.caches[static_cast<size_t>(im.cache_of[i])];
    out += "stage " + std::to_string(++stage) + " of " + std::to_string(stages) + ": ";
    out += c.last ? c.last->plan->report() : std::string("not planned yet\n");
  }
  return out;
}
size_t Session::arena_bytes() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  size_t n = 0;
  for (const auto& e : impl_->last_plans()) n += e->plan->arena_bytes;
  return n;
}
int Session::plans_made() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->plans_made;
}
std::vector<StepTiming> Session::last_profile() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->last_profile;
}

TuningReport Session::tuning_report() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->tuner->report();
}

namespace {
MemoryStats memory_stats_of(const MemoryPool& pool) {
  PoolStats p = pool.stats();
  MemoryStats s;
  s.reserved_bytes = p.reserved_bytes;
  s.in_use_bytes = p.in_use_bytes;
  s.peak_in_use_bytes = p.peak_in_use_bytes;
  s.largest_free_block_bytes = p.largest_free_block;
  s.segments = p.segments;
  s.fragmentation = p.fragmentation;
  s.allocations = p.allocations;
  s.frees = p.frees;
  s.limit_bytes = p.limit_bytes;
  return s;
}
}  // namespace

MemoryStats Session::memory_stats() const { return memory_stats_of(*impl_->host_memory); }

std::vector<DeviceMemoryStats> Session::device_memory_stats() const {
  std::vector<DeviceMemoryStats> out;
  for (size_t i = 0; i < impl_->devices.size() && i < impl_->device_memory.size(); ++i)
    out.push_back({impl_->devices[i]->name(), memory_stats_of(*impl_->device_memory[i])});
  return out;
}

size_t Session::trim() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->release_idle_arenas();
  return impl_->host_memory->trim();
}

// Idle contexts give their arenas back (they bind again on their next run).
size_t Session::Impl::release_idle_arenas() {
  size_t n = 0;
  std::function<void(RunContext&)> release = [&](RunContext& ctx) {
    n += ctx.arena.size();
    ctx.arena.reset();
    ctx.bound.reset();
    for (auto& sub : ctx.stage_ctx)
      if (sub) release(*sub);
  };
  for (auto& ctx : idle) release(*ctx);
  return n;
}

bool Session::Impl::matches(const PlanCache& cache, const PlanEntry& e,
                            const std::vector<const Tensor*>& inputs) const {
  const std::vector<size_t>& value_inputs = cache.value_inputs;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i]->shape() != e.shapes[i]) return false;
  for (size_t k = 0; k < value_inputs.size(); ++k) {
    const Tensor& now = *inputs[value_inputs[k]];
    const Tensor& then = e.values[k];
    if (now.dtype() != then.dtype() || now.nbytes() != then.nbytes() ||
        std::memcmp(now.raw(), then.raw(), now.nbytes()) != 0)
      return false;
  }
  return true;
}

// Called with mu held.
std::shared_ptr<const PlanEntry> Session::Impl::plan_for(PlanCache& cache, const std::vector<const Tensor*>& inputs,
                                                         const Clock::time_point* deadline) {
  auto& plans = cache.plans;
  if (!plans.empty() && matches(cache, *plans.back(), inputs)) return plans.back();
  for (size_t i = 0; i < plans.size(); ++i) {
    if (!matches(cache, *plans[i], inputs)) continue;
    auto hit = plans[i];
    plans.erase(plans.begin() + static_cast<long>(i));
    plans.push_back(hit);
    return hit;
  }
  auto e = std::make_shared<PlanEntry>();
  PlanOptions po{.optimize = options.optimize,
                 .tuner = tuner.get(),
                 .blocked_layout = options.layout == CpuLayout::kAuto,
                 .constants = &constants};
  for (const auto& d : devices) po.devices.push_back(d.get());
  tuner->set_deadline(deadline);
  struct Clear {
    Tuner* t;
    ~Clear() { t->set_deadline(nullptr); }
  } clear{tuner.get()};
  e->plan = make_plan(*cache.graph, inputs, *cpu, *pool, po);
  for (const Tensor* t : inputs) e->shapes.push_back(t->shape());
  for (size_t k : cache.value_inputs) e->values.push_back(inputs[k]->clone());
  const auto& outs = e->plan->output_values;
  e->first_output_of_value.assign(outs.size(), -1);
  for (size_t i = 0; i < outs.size(); ++i)
    for (size_t j = 0; j < i && e->first_output_of_value[i] < 0; ++j)
      if (outs[j] == outs[i]) e->first_output_of_value[i] = static_cast<int>(j);
  ++plans_made;
  if (plans.size() >= kMaxPlans) plans.erase(plans.begin());
  plans.push_back(e);
  return e;
}

void Session::Impl::grow(RunContext& ctx, const Plan& plan) {
  std::string what = "the activation arena of " + model->info().path + " (inputs ";
  for (size_t i = 0; i < plan.input_values.size(); ++i) {
    const Value& v = plan.graph.values[plan.input_values[i]];
    what += (i ? ", " : "") + v.name + " " + shape_str(v.shape);
  }
  what += ")";
  // The old arena goes back first, so that its memory can serve the new one.
  ctx.arena.reset();
  try {
    ctx.arena.allocate(*host_memory, plan.arena_bytes, what);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kOutOfMemory) throw;
    // Idle runs' arenas are a cache too: give them back and try once more
    // (the pool's error, if it comes again, says what is held and what to change).
    {
      std::lock_guard<std::mutex> lock(mu);
      if (release_idle_arenas() == 0) throw;
    }
    ctx.arena.allocate(*host_memory, plan.arena_bytes, what);
  }
}

void Session::Impl::bind(RunContext& ctx, std::shared_ptr<const PlanEntry> entry) {
  const Plan& plan = *entry->plan;
  ctx.bound.reset();
  if (plan.arena_bytes > ctx.arena.size()) grow(ctx, plan);
  // Device spaces: an arena from the device's pool and a stream, per context.
  size_t ns = plan.spaces.size();
  ctx.device_arenas.resize(ns > 0 ? ns - 1 : 0);
  ctx.streams.resize(ns, nullptr);
  ctx.stream_owners.resize(ns, nullptr);
  for (size_t sp = 1; sp < ns; ++sp) {
    auto& block = ctx.device_arenas[sp - 1];
    if (!block) block = std::make_unique<PoolBlock>();
    size_t need = plan.spaces[sp].arena_bytes;
    if (need > block->size())
      block->allocate(
          *device_memory.at(sp - 1), need,
          "the " + std::string(plan.spaces[sp].backend->name()) + " activation arena of " + model->info().path);
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

// The sentence of a run stopped by its deadline: how long it had, how far it got.
void Session::Impl::deadline_exceeded(const Plan& plan, size_t steps_done, Clock::time_point started) const {
  double took = std::chrono::duration<double>(Clock::now() - started).count();
  std::string shapes;
  for (size_t i = 0; i < plan.input_values.size(); ++i) {
    const Value& v = plan.graph.values[plan.input_values[i]];
    shapes += (i ? ", " : "") + v.name + " " + shape_str(v.shape);
  }
  std::string where =
      steps_done == 0 ? std::string("before its first step (planning took the time)")
                      : "after " + std::to_string(steps_done) + " of " + std::to_string(plan.steps.size()) + " steps";
  throw Error(ErrorCode::kDeadlineExceeded, model->info().path + ": the run (inputs " + shapes + ") stopped " + where +
                                                ", " + seconds_text(took) + " after it began, past its limit of " +
                                                seconds_text(options.run_timeout_seconds) +
                                                " (SessionOptions::run_timeout_seconds); the session stays usable: "
                                                "give smaller inputs or a longer limit");
}

namespace {

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

void Session::Impl::execute(RunContext& ctx, std::vector<Tensor>& outputs, Clock::time_point started) {
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
    const Value& val = g.values[plan.output_values[i]];
    if (outputs[i].dtype() != val.dtype || outputs[i].shape() != val.shape ||
        (!outputs[i].raw() && outputs[i].nbytes()))
      outputs[i] = Tensor::zeros(val.dtype, val.shape);
    int v = plan.output_values[i];
    if (plan.storage[v] == Storage::kOutput && e.first_output_of_value[i] < 0) ctx.ptrs[v] = outputs[i].raw();
  }

  char* base = ctx.arena.get();
  bool timing = options.profile;
  // Device streams: each run is bracketed, so the backend can time its phases.
  size_t ns = plan.spaces.size();
  ctx.device_times.resize(ns > 0 ? ns - 1 : 0);
  for (size_t sp = 1; sp < ns; ++sp) plan.spaces[sp].backend->device().begin_run(ctx.streams[sp]);
  const bool limited = options.run_timeout_seconds > 0;
  const Clock::time_point deadline = deadline_of(started, options.run_timeout_seconds);
  auto t0 = std::chrono::steady_clock::now();
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const Step& st = plan.steps[s];
    if (limited && Clock::now() > deadline) {
      // Device work already issued finishes before the arena is reused.
      for (size_t sp = 1; sp < ns; ++sp) plan.spaces[sp].backend->device().end_run(ctx.streams[sp]);
      deadline_exceeded(plan, s, started);
    }
    for (size_t k = 0; k < st.inputs.size(); ++k)
      ctx.step_in[s][k] = st.inputs[k] >= 0 ? ctx.ptrs[st.inputs[k]] : nullptr;
    for (size_t k = 0; k < st.outputs.size(); ++k)
      ctx.step_out[s][k] = st.outputs[k] >= 0 ? ctx.ptrs[st.outputs[k]] : nullptr;
    char* ws = st.space == 0 ? base : ctx.device_arenas[st.space - 1]->get();
    KernelArgs args{ctx.step_in[s].data(), ctx.step_out[s].data(), ws + st.workspace_offset, pool.get(),
                    ctx.streams[st.space]};
    if (!timing) {
      st.kernel->run(args);
      continue;
    }
    const ComputeDevice* dev = st.space > 0 ? &plan.spaces[st.space].backend->device() : nullptr;
    auto a = std::chrono::steady_clock::now();
    if (dev) dev->step_begun(args.stream, s);
    st.kernel->run(args);
    if (dev) dev->step_ended(args.stream, s);
    auto b = std::chrono::steady_clock::now();
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
    const void* src = first >= 0 ? outputs[first].raw() : ctx.ptrs[v];
    if (src && outputs[i].nbytes()) std::memcpy(outputs[i].raw(), src, outputs[i].nbytes());
  }
}

void Session::run(const NamedTensors& inputs, std::vector<Tensor>& outputs) {
  try {
    run_checked(inputs, outputs);
  } catch (const std::bad_alloc&) {
    // Allocations outside the pool (plan-time weight transforms, outputs)
    // that the system refused.
    throw Error(ErrorCode::kOutOfMemory,
                impl_->model->info().path +
                    ": the system refused memory while planning or running it (out of "
                    "memory: " +
                    memory_room().describe() +
                    " left); use a smaller batch or input shape, or give the process more memory");
  }
}

void Session::run_checked(const NamedTensors& inputs, std::vector<Tensor>& outputs) {
  const Clock::time_point started = Clock::now();
  const auto& mi = impl_->model->impl();
  const Graph& g = mi.graph;
  const std::string& file = mi.info.path;

  // A context of this run's own: reused from an earlier run when one is idle.
  std::unique_ptr<RunContext> ctx;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (!impl_->idle.empty()) {
      ctx = std::move(impl_->idle.back());
      impl_->idle.pop_back();
    }
  }
  if (!ctx) ctx = std::make_unique<RunContext>();
  struct Return {
    Impl* impl;
    std::unique_ptr<RunContext>& ctx;
    ~Return() {
      std::lock_guard<std::mutex> lock(impl->mu);
      if (impl->options.profile && !ctx->profile.empty()) impl->last_profile = ctx->profile;
      if (!ctx->device_times.empty()) impl->last_device_times = ctx->device_times;
      impl->idle.push_back(std::move(ctx));
    }
  } give_back{impl_.get(), ctx};

  auto& ordered = ctx->ordered;
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

  if (impl_->parts.empty())
    impl_->run_plan(impl_->caches[0], *ctx, outputs, started);
  else
    impl_->run_parts(*ctx, outputs, started);
}

void Session::Impl::run_plan(PlanCache& cache, RunContext& ctx, std::vector<Tensor>& outputs,
                             Clock::time_point started) {
  std::shared_ptr<const PlanEntry> entry;
  {
    std::lock_guard<std::mutex> lock(mu);
    Clock::time_point deadline = deadline_of(started, options.run_timeout_seconds);
    entry = plan_for(cache, ctx.ordered, options.run_timeout_seconds > 0 ? &deadline : nullptr);
    cache.last = entry;
  }
  if (ctx.bound != entry) bind(ctx, std::move(entry));
  execute(ctx, outputs, started);
}

// A cut model's run: each stage's plan and each cut node in turn, the values
// they pass on held by model value id.
void Session::Impl::run_parts(RunContext& ctx, std::vector<Tensor>& outputs, Clock::time_point started) {
  const Graph& g = model->impl().graph;
  ctx.where.assign(g.values.size(), nullptr);
  ctx.made.resize(g.values.size());
  for (size_t i = 0; i < g.inputs.size(); ++i) ctx.where[static_cast<size_t>(g.inputs[i])] = ctx.ordered[i];
  auto value = [&](int v) -> const Tensor* {
    const Tensor* t = ctx.where[static_cast<size_t>(v)];
    if (!t) t = g.values[static_cast<size_t>(v)].constant.get();
    if (!t)
      fail(ErrorCode::kInternal,
           model->info().path + ": value '" + g.values[v].name + "' was not made before it was read");
    return t;
  };
  ctx.stage_ctx.resize(parts.size());
  ctx.stage_out.resize(parts.size());
  std::vector<StepTiming> profile;
  std::vector<BackendTimes> device_times;
  const bool limited = options.run_timeout_seconds > 0;
  const Clock::time_point deadline = deadline_of(started, options.run_timeout_seconds);
  const auto t0 = Clock::now();
  for (size_t p = 0; p < parts.size(); ++p) {
    const Stage& part = parts[p];
    if (part.cut >= 0) {
      const Node& n = g.nodes[static_cast<size_t>(part.cut)];
      if (limited && Clock::now() > deadline)
        throw Error(ErrorCode::kDeadlineExceeded,
                    model->info().path + ": the run stopped before " + n.op + " '" + n.name + "', " +
                        seconds_text(std::chrono::duration<double>(Clock::now() - started).count()) +
                        " after it began, past its limit of " + seconds_text(options.run_timeout_seconds) +
                        " (SessionOptions::run_timeout_seconds); the session stays usable");
      std::vector<const Tensor*> ins;
      for (int v : n.inputs) ins.push_back(v >= 0 ? value(v) : nullptr);
      auto a = Clock::now();
      std::vector<Tensor> outs;
      try {
        outs = cuts[p]->evaluate(ins, *pool);
      } catch (const Error& e) {
        throw Error(e.code(), node_context(g, n) + e.what());
      }
      auto b = Clock::now();
      std::string shapes;
      for (size_t i = 0; i < n.outputs.size() && i < outs.size(); ++i) {
        if (n.outputs[i] < 0) continue;
        shapes += (shapes.empty() ? "" : ", ") + shape_str(outs[i].shape());
        ctx.made[static_cast<size_t>(n.outputs[i])] = std::move(outs[i]);
        ctx.where[static_cast<size_t>(n.outputs[i])] = &ctx.made[static_cast<size_t>(n.outputs[i])];
      }
      if (options.profile) {
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
    run_plan(caches[static_cast<size_t>(cache_of[p])], *sub, ctx.stage_out[p], started);
    for (size_t k = 0; k < part.graph.outputs.size(); ++k)
      ctx.where[static_cast<size_t>(part.graph.outputs[k])] = &ctx.stage_out[p][k];
    if (options.profile) {
      double offset = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
      double first = 0;  // the stage's end on its own line (a device-timed step may end last)
      for (const StepTiming& t : sub->profile) first = std::max(first, t.start_us + t.duration_us);
      for (StepTiming t : sub->profile) {
        t.start_us += offset - first;
        profile.push_back(std::move(t));
      }
    }
    device_times.insert(device_times.end(), sub->device_times.begin(), sub->device_times.end());
  }
  // The caller's outputs: copied into its tensors where dtype and shape fit.
  size_t nout = g.outputs.size();
  if (outputs.size() != nout) outputs.resize(nout);
  for (size_t i = 0; i < nout; ++i) {
    const Tensor& t = *value(g.outputs[i]);
    if (outputs[i].dtype() == t.dtype() && outputs[i].shape() == t.shape() && (outputs[i].raw() || !t.nbytes())) {
      if (t.nbytes()) std::memcpy(outputs[i].raw(), t.raw(), t.nbytes());
    } else {
      outputs[i] = t.clone();
    }
  }
  ctx.profile = std::move(profile);
  ctx.device_times = std::move(device_times);
}

std::vector<Tensor> Session::run(const NamedTensors& inputs) {
  std::vector<Tensor> out;
  run(inputs, out);
  return out;
}

const KernelProvider& Session::Impl::copy_backend(const char* what) {
  const KernelProvider* first = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu);  // devices may still be added (tests)
    if (!devices.empty()) first = devices.front().get();
  }
  if (!first)
    throw Error(ErrorCode::kInvalidArgument, std::string("Session::") + what + ": " + model->info().path +
                                                 " runs on the CPU alone (" + reason +
                                                 "); it has no device memory to copy with");
  const KernelProvider& b = *first;
  if (!copy_stream.stream) {
    copy_stream.stream = b.device().create_stream();
    copy_stream.owner = &b;
  }
  return b;
}

void Session::copy_from_device(void* host_dst, const void* device_src, size_t bytes) const {
  std::lock_guard<std::mutex> lock(impl_->copy_stream.mu);
  const KernelProvider& b = impl_->copy_backend("copy_from_device");
  if (bytes) b.device().copy_to_host(host_dst, device_src, bytes, impl_->copy_stream.stream);
}

void Session::copy_to_device(void* device_dst, const void* host_src, size_t bytes) const {
  std::lock_guard<std::mutex> lock(impl_->copy_stream.mu);
  const KernelProvider& b = impl_->copy_backend("copy_to_device");
  if (!bytes) return;
  b.device().copy_to_device(device_dst, host_src, bytes, impl_->copy_stream.stream);
  b.device().synchronize(impl_->copy_stream.stream);  // arrived, not only left the host
}

void SessionInternals::add_device(Session& session, std::shared_ptr<KernelProvider> device) {
  Session::Impl& impl = *session.impl_;
  std::lock_guard<std::mutex> lock(impl.mu);
  if (impl.plans_made) throw Error(ErrorCode::kInternal, "add_device: the session has already planned");
  auto alloc = device->device().allocator();
  if (!alloc)
    throw Error(ErrorCode::kInternal, std::string("add_device: backend ") + device->name() + " has no allocator");
  impl.device_memory.push_back(std::make_unique<MemoryPool>(std::move(alloc), impl.pool_options));
  impl.devices.push_back(std::move(device));
}

void SessionInternals::configure_tuning(Session& session, TunerOptions options) {
  Session::Impl& impl = *session.impl_;
  std::lock_guard<std::mutex> lock(impl.mu);
  if (impl.plans_made) throw Error(ErrorCode::kInternal, "configure_tuning: the session has already planned");
  impl.tuner = std::make_unique<Tuner>(std::move(options));
}

std::vector<DeviceTimes> Session::device_times() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::vector<DeviceTimes> out;
  for (const BackendTimes& b : impl_->last_device_times) {
    DeviceTimes d;
    d.device = b.backend ? b.backend->name() : "";
    d.valid = b.times.valid;
    d.h2d_ms = b.times.h2d_ms;
    d.compute_ms = b.times.compute_ms;
    d.d2h_ms = b.times.d2h_ms;
    d.h2d_copies = b.times.h2d_copies;
    d.kernels = b.times.kernels;
    d.d2h_copies = b.times.d2h_copies;
    out.push_back(std::move(d));
  }
  return out;
}

SeamCopies Session::seam_copies() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  SeamCopies c;
  for (const auto& entry : impl_->last_plans()) {
    const Plan& plan = *entry->plan;
    for (const Step& st : plan.steps) {
      if (st.node >= 0 || st.outputs.empty()) continue;
      int v = st.outputs[0];
      size_t bytes = value_bytes(plan.graph.values[v]);
      if (plan.space[v] != 0) {
        ++c.to_device;
        c.bytes_to_device += bytes;
      } else {
        ++c.to_host;
        c.bytes_to_host += bytes;
      }
    }
  }
  return c;
}

std::string Session::placement() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::string out;
  for (const auto& entry : impl_->last_plans())
    if (!entry->plan->placement.empty()) out += (out.empty() ? "" : "; then ") + entry->plan->placement;
  return out;
}

int usable_cores() { return count_cores().usable; }
int max_threads() { return minirt::max_threads(count_cores()); }

}  // namespace minirt
