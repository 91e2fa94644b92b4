// The Session: a facade over the parts that do the work. It turns its
// SessionOptions into requests (runtime/session_options.h), opens the host
// backend and chooses a device, keeps a plan cache per planned part of the
// model (runtime/plan_cache.h, runtime/staged_runner.h), and runs each plan
// through the executor (runtime/executor.h) on a RunContext of the run's own.
#include <minirt/session.h>

#include "runtime/api/model_impl.h"
#include "runtime/api/session_internal.h"
#include "runtime/background_tuner.h"
#include "runtime/backend_registry.h"
#include "runtime/executor.h"
#include "runtime/host_resources.h"
#include "runtime/memory_pool.h"
#include "runtime/plan_cache.h"
#include "runtime/planner.h"
#include "runtime/session_options.h"
#include "runtime/staged_runner.h"
#include "runtime/thread_pool.h"
#include "runtime/tuner.h"

#include <map>
#include <mutex>
#include <new>

namespace minirt {

struct Session::Impl {
  std::shared_ptr<const Model> model;
  SessionOptions options;
  SessionRequests requests;  // what the options ask for, checked
  Device device = Device::kCpu;
  std::string reason;
  std::unique_ptr<ThreadPool> pool;
  std::shared_ptr<KernelProvider> cpu;  // the host backend, every node's fallback
  std::unique_ptr<Tuner> tuner;         // used under mu, while planning
  ConstantCache constants;              // the plans' constants, one copy of each
  // The model graph as one plan cache, or a cut model's parts: a plan cache
  // per stage and a kernel per cut node (runtime/staged_runner.h).
  ModelParts parts;
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
  ExecEnv env;  // what the executor binds and runs plans with

  std::mutex mu;  // guards everything below
  // Measures what plans left pending (SessionOptions::tune_in_background),
  // made with the session when it may tune so; ~Impl stops it first, before
  // anything its jobs use goes.
  std::unique_ptr<BackgroundTuner> background;
  RunClock::time_point first_plan{};
  std::vector<std::unique_ptr<RunContext>> idle;
  std::vector<StepTiming> last_profile;
  std::vector<BackendTimes> last_device_times;
  int plans_made = 0;

  // Called with mu held: the cache's plan for these inputs, made now when new.
  std::shared_ptr<const PlanEntry> plan_for(PlanCache& cache, const std::vector<const Tensor*>& inputs,
                                            const RunDeadline& deadline);
  // Plans (when new) and runs one plan cache's graph for the context's inputs.
  void run_plan(PlanCache& cache, RunContext& ctx, std::vector<Tensor>& outputs, const RunDeadline& deadline);
  std::vector<std::shared_ptr<const PlanEntry>> last_plans() const;  // called with mu held
  size_t release_idle_arenas();                                      // called with mu held
  PlanOptions plan_options();
  // Called with mu held, after a plan that left choices pending: queues
  // the job that measures them and swaps the tuned plan in.
  void tune_later(PlanCache& cache, const std::vector<const Tensor*>& inputs);
  void make_background_tuner();
  ~Impl() { background.reset(); }  // its job uses the members above
};

Session::Session(std::shared_ptr<const Model> model, SessionOptions options) : impl_(std::make_unique<Impl>()) {
  if (!model) throw Error(ErrorCode::kInvalidArgument, "Session: the model is null");
  Impl& im = *impl_;
  im.model = std::move(model);
  im.options = options;
  // Settings first, before the GPU is probed or a thread started.
  im.requests = session_requests(options, count_cores());
  DeviceChoice chosen = choose_device(backend_registry(), im.requests.device, im.requests.device_backend);
  im.device = chosen.device;
  im.reason = std::move(chosen.reason);
  if (chosen.backend) {
    im.device_memory.push_back(std::make_unique<MemoryPool>(chosen.backend->device().allocator(), im.requests.pool));
    im.devices.push_back(std::move(chosen.backend));
  }
  im.host_memory = std::make_unique<MemoryPool>(std::make_shared<HostAllocator>(), im.requests.pool);
  im.pool = std::make_unique<ThreadPool>(im.requests.threads);
  im.cpu = backend_registry().open_host(im.requests.host);
  im.tuner = std::make_unique<Tuner>(im.requests.tuner);
  im.make_background_tuner();
  im.parts = model_parts(im.model->impl().graph, *im.cpu);
  im.env = {.name = im.model->info().path,
            .host_memory = im.host_memory.get(),
            .device_memory = &im.device_memory,
            .threads = im.pool.get(),
            .profile = options.profile,
            .reclaim = [&im] {
              std::lock_guard<std::mutex> lock(im.mu);
              return im.release_idle_arenas();
            }};
}

Session::~Session() = default;

Device Session::device() const { return impl_->device; }
const std::string& Session::device_reason() const { return impl_->reason; }
std::string Session::math_reason() const { return impl_->cpu->math_note(); }
int Session::threads() const { return impl_->pool->size(); }

// The plans of the last run: one, or one per stage of a cut model.
std::vector<std::shared_ptr<const PlanEntry>> Session::Impl::last_plans() const {
  std::vector<std::shared_ptr<const PlanEntry>> out;
  for (const PlanCache& c : parts.caches)
    if (c.last) out.push_back(c.last);
  return out;
}

std::string Session::int8_summary() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  const ModelParts& m = impl_->parts;
  return !m.staged() && m.caches[0].last ? m.caches[0].last->plan->int8_summary() : std::string();
}

std::string Session::plan_report() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  const ModelParts& m = impl_->parts;
  if (m.staged()) return staged_report(impl_->model->impl().graph, m);
  return m.caches[0].last ? m.caches[0].last->plan->report() : std::string();
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

bool Session::wait_for_tuning(double timeout_seconds) const {
  return !impl_->background || impl_->background->wait(timeout_seconds);
}

void Session::pause_tuning(bool paused) {
  if (impl_->background) impl_->background->pause(paused);
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
  for (auto& ctx : idle) n += unbind(*ctx);
  return n;
}

std::shared_ptr<const PlanEntry> Session::Impl::plan_for(PlanCache& cache, const std::vector<const Tensor*>& inputs,
                                                         const RunDeadline& deadline) {
  if (auto hit = cache.find(inputs)) return hit;
  PlanOptions po = plan_options();
  po.tuner = tuner.get();
  // A GPU's measuring uses its device beside the runs: it stays in the first run.
  tuner->set_defer_measuring(background && devices.empty());
  const RunClock::time_point at = deadline.at();
  tuner->set_deadline(deadline.limited() ? &at : nullptr);
  struct Clear {
    Tuner* t;
    ~Clear() { t->set_deadline(nullptr); }
  } clear{tuner.get()};
  auto e = cache.add(make_plan(*cache.graph, inputs, *cpu, *pool, po), inputs);
  if (!plans_made++) first_plan = RunClock::now();
  if (tuner->deferred()) tune_later(cache, inputs);
  return e;
}

PlanOptions Session::Impl::plan_options() {
  PlanOptions po{.optimize = requests.optimize, .blocked_layout = requests.blocked_layout, .constants = &constants};
  for (const auto& d : devices) po.devices.push_back(d.get());
  return po;
}

void Session::Impl::make_background_tuner() {
  background.reset();
  if (options.tune_in_background && tuner->options().mode == TuningMode::kCached)
    background = std::make_unique<BackgroundTuner>(tuner->options(), pool->size());
}

void Session::Impl::tune_later(PlanCache& cache, const std::vector<const Tensor*>& inputs) {
  // The plan's signature: shapes and dtypes, and the shape operands' values.
  struct Signature {
    std::vector<Shape> shapes;
    std::vector<DType> dtypes;
    std::map<size_t, Tensor> values;
  };
  auto sig = std::make_shared<Signature>();
  for (const Tensor* t : inputs) {
    sig->shapes.push_back(t->shape());
    sig->dtypes.push_back(t->dtype());
  }
  for (size_t k : cache.value_inputs) sig->values.emplace(k, inputs[k]->clone());
  const RunClock::time_point queued = RunClock::now();
  // The job runs on bg's thread, so bg outlives it; `background` does not:
  // it is null while ~Impl's reset joins that thread.
  BackgroundTuner* bg = background.get();
  bg->add([this, bg, &cache, sig, queued](Tuner& t, ThreadPool& threads) {
    std::vector<Tensor> made;
    made.reserve(sig->shapes.size());
    std::vector<const Tensor*> in;
    for (size_t i = 0; i < sig->shapes.size(); ++i) {
      auto v = sig->values.find(i);
      if (v != sig->values.end()) {
        in.push_back(&v->second);
      } else {
        made.push_back(Tensor::zeros(sig->dtypes[i], sig->shapes[i]));
        in.push_back(&made.back());
      }
    }
    const size_t first = t.report().choices.size();
    // The running plan for these inputs: the tuned one takes its kernels
    // where they are made from the same recipe, so that it costs the
    // memory of what changed (PlanOptions::reuse).
    std::shared_ptr<const PlanEntry> running;
    {
      std::lock_guard<std::mutex> lock(mu);
      for (const auto& e : cache.plans)
        if (cache.matches(*e, in)) running = e;
    }
    std::unique_ptr<Plan> plan;
    try {
      PlanOptions po = plan_options();
      po.tuner = &t;
      po.reuse = running ? running->plan.get() : nullptr;
      plan = make_plan(*cache.graph, in, *cpu, threads, po);
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(mu);
      tuner->note(std::string("background tuning failed, the running plan stays: ") + e.what());
      return;
    }
    std::lock_guard<std::mutex> lock(mu);
    const RunClock::time_point now = RunClock::now();
    PlanSwap when;
    when.seconds = std::chrono::duration<double>(now - first_plan).count();
    when.tuning_seconds = std::chrono::duration<double>(now - queued).count();
    when.runs_before = bg->runs_begun();
    const bool took_over = cache.replace(std::move(plan), in);
    tuner->absorb(t, first, when, took_over);
  });
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
  Impl& im = *impl_;
  const RunDeadline deadline{RunClock::now(), im.options.run_timeout_seconds};
  // A context of this run's own: reused from an earlier run when one is idle.
  std::unique_ptr<RunContext> ctx;
  {
    std::lock_guard<std::mutex> lock(im.mu);
    if (!im.idle.empty()) {
      ctx = std::move(im.idle.back());
      im.idle.pop_back();
    }
  }
  if (!ctx) ctx = std::make_unique<RunContext>();
  // Measuring in the background keeps out of this run's way.
  BackgroundTuner::RunScope scope(im.background.get());
  struct Return {
    Impl& im;
    std::unique_ptr<RunContext>& ctx;
    ~Return() {
      std::lock_guard<std::mutex> lock(im.mu);
      if (im.options.profile && !ctx->profile.empty()) im.last_profile = ctx->profile;
      if (!ctx->device_times.empty()) im.last_device_times = ctx->device_times;
      im.idle.push_back(std::move(ctx));
    }
  } give_back{im, ctx};

  const Graph& g = im.model->impl().graph;
  bind_inputs(g, im.env.name, inputs, ctx->ordered);
  if (!im.parts.staged()) return im.run_plan(im.parts.caches[0], *ctx, outputs, deadline);
  run_staged(
      g, im.parts, *ctx, outputs, im.env, deadline,
      [&](PlanCache& cache, RunContext& sub, std::vector<Tensor>& out) { im.run_plan(cache, sub, out, deadline); });
}

void Session::Impl::run_plan(PlanCache& cache, RunContext& ctx, std::vector<Tensor>& outputs,
                             const RunDeadline& deadline) {
  std::shared_ptr<const PlanEntry> entry;
  {
    std::lock_guard<std::mutex> lock(mu);
    entry = plan_for(cache, ctx.ordered, deadline);
    cache.last = entry;
  }
  if (ctx.bound != entry) bind_plan(ctx, std::move(entry), env);
  execute(ctx, outputs, env, deadline);
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
  impl.device_memory.push_back(std::make_unique<MemoryPool>(std::move(alloc), impl.requests.pool));
  impl.devices.push_back(std::move(device));
}

void SessionInternals::configure_tuning(Session& session, TunerOptions options) {
  Session::Impl& impl = *session.impl_;
  std::lock_guard<std::mutex> lock(impl.mu);
  if (impl.plans_made) throw Error(ErrorCode::kInternal, "configure_tuning: the session has already planned");
  impl.tuner = std::make_unique<Tuner>(std::move(options));
  impl.make_background_tuner();
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

WeightStats Session::weight_stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::vector<const Plan*> plans;
  for (const PlanCache& c : impl_->parts.caches)
    for (const auto& e : c.plans) plans.push_back(e->plan.get());
  return minirt::weight_stats(impl_->model->impl().graph, plans);
}

int usable_cores() { return count_cores().usable; }
int max_threads() { return minirt::max_threads(count_cores()); }

}  // namespace minirt
