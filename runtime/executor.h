// The executor: runs a plan (runtime/planner.h) for one set of inputs. It
// knows plans, memory pools and threads, and nothing of the Session that
// owns them, so a test can make a plan and run it here alone:
//
//   ExecEnv env{.name = "tiny.onnx", .host_memory = &host_pool, .threads = &pool};
//   RunContext ctx;
//   ctx.ordered = {&x};                                  // one tensor per graph input
//   bind_plan(ctx, cache.add(make_plan(g, ctx.ordered, *cpu, pool, {}), ctx.ordered), env);
//   execute(ctx, outputs, env, RunDeadline{RunClock::now(), 0});
//
// bind_plan() gives a context its arena (from the host pool), a device arena and
// a stream per device space, and the pointer tables of every step; a context
// stays bound to its plan across runs. execute() points the tables at this
// run's inputs and outputs, runs the steps in order (timing them when
// profiling, on the device's own clock where it has one) and stops between
// two steps once the run's deadline has passed. Internal to runtime/.
#pragma once

#include <minirt/session.h>  // NamedTensors, StepTiming

#include "runtime/backend.h"
#include "runtime/memory_pool.h"
#include "runtime/plan_cache.h"

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace minirt {

using RunClock = std::chrono::steady_clock;

// One device backend's share of a run: the backend and its timed phases.
struct BackendTimes {
  const KernelProvider* backend = nullptr;
  DeviceRunTimes times;
};

// A block of a memory pool, given back when dropped.
class PoolBlock {
 public:
  PoolBlock() = default;
  PoolBlock(const PoolBlock&) = delete;
  PoolBlock& operator=(const PoolBlock&) = delete;
  ~PoolBlock() { reset(); }
  void reset() {
    if (pool_) pool_->deallocate(ptr_);
    pool_ = nullptr;
    ptr_ = nullptr;
    size_ = 0;
  }
  void allocate(MemoryPool& pool, size_t bytes, std::string_view what) {
    reset();
    ptr_ = static_cast<char*>(pool.allocate(bytes, what));
    pool_ = &pool;
    size_ = bytes;
  }
  char* get() const { return ptr_; }
  size_t size() const { return size_; }

 private:
  MemoryPool* pool_ = nullptr;
  char* ptr_ = nullptr;
  size_t size_ = 0;
};

// What one run needs of its own: the arena, the device streams and the
// pointer tables a plan is bound to. Reused across runs; several exist only
// when runs overlap in time.
struct RunContext {
  std::shared_ptr<const PlanEntry> bound;
  PoolBlock arena;                                        // from the host pool; kept while the plan fits
  std::vector<std::unique_ptr<PoolBlock>> device_arenas;  // per device space (index space - 1)
  std::vector<void*> streams;                             // per space; [0] (the host) is null
  std::vector<const KernelProvider*> stream_owners;
  ~RunContext() {
    for (size_t i = 0; i < streams.size(); ++i)
      if (streams[i]) stream_owners[i]->device().destroy_stream(streams[i]);
  }
  std::vector<void*> ptrs;
  std::vector<std::vector<const void*>> step_in;
  std::vector<std::vector<void*>> step_out;
  std::vector<const Tensor*> ordered;  // the run's inputs, one per graph input
  std::vector<StepTiming> profile;
  std::vector<BackendTimes> device_times;  // per device space of the last run
  // A cut model's run (runtime/staged_runner.h): a context per stage, and
  // the values the parts pass on, by model value id.
  std::vector<std::unique_ptr<RunContext>> stage_ctx;
  std::vector<std::vector<Tensor>> stage_out;
  std::vector<Tensor> made;  // cut nodes' outputs
  std::vector<const Tensor*> where;
};

// What plans are bound and run with, none of it owned.
struct ExecEnv {
  std::string name;                   // the model's file, first in every message
  MemoryPool* host_memory = nullptr;  // the host arenas'
  // Per device space (index space - 1): its pool, in the order of the
  // devices the plans were made for; null when plans have no device space.
  const std::vector<std::unique_ptr<MemoryPool>>* device_memory = nullptr;
  ThreadPool* threads = nullptr;
  bool profile = false;  // time every step of every run
  // When the host pool cannot give an arena: gives other (idle) contexts'
  // arenas back and returns the bytes released; 0 lets the error stand.
  std::function<size_t()> reclaim;
};

// A run's time limit: `seconds` from `started`; 0 means none.
struct RunDeadline {
  RunClock::time_point started;
  double seconds = 0;
  bool limited() const { return seconds > 0; }
  RunClock::time_point at() const;  // limits beyond a few decades are as good as none
};

// The caller's named inputs in the graph's input order, each checked
// (known name, given once, not empty, the declared dtype).
void bind_inputs(const Graph& g, const std::string& file, const NamedTensors& inputs,
                 std::vector<const Tensor*>& ordered);

// Binds `ctx` to `entry`'s plan: the arenas it needs (grown when too small),
// a stream per device space, the pointer tables. Throws kOutOfMemory when a
// pool cannot give an arena (after env.reclaim).
void bind_plan(RunContext& ctx, std::shared_ptr<const PlanEntry> entry, const ExecEnv& env);

// Runs the plan `ctx` is bound to on ctx.ordered, writing `outputs` (resized
// to the plan's outputs; tensors of the right dtype and shape are reused).
// Throws kDeadlineExceeded between two steps once `deadline` has passed.
void execute(RunContext& ctx, std::vector<Tensor>& outputs, const ExecEnv& env, const RunDeadline& deadline);

// Gives the arenas of `ctx` (and of its stages' contexts) back to their
// pools; it binds again on its next run. Returns the bytes released.
size_t unbind(RunContext& ctx);

// "x 1x3x224x224, mask 1x1": a plan's inputs and their shapes, for messages.
std::string input_shapes(const Plan& plan);

// The sentence of a run stopped by its deadline, thrown as kDeadlineExceeded:
// "<file>: the run (inputs <inputs>) stopped <where>, <s> after it began,
// past its limit of <s> ...". `inputs` may be empty.
[[noreturn]] void deadline_exceeded(std::string_view file, std::string_view inputs, std::string_view where,
                                    const RunDeadline& deadline);

// Makes `out` a tensor of `dtype` and `shape`, keeping its memory when it
// already is one (a steady-state caller's outputs allocate nothing).
void fit_output(Tensor& out, DType dtype, const Shape& shape);
// Copies an output's bytes from `src` (out's size) into `out`; null copies nothing.
void copy_output(Tensor& out, const void* src);

}  // namespace minirt
