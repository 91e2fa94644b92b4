// What one run of a session needs of its own (session.cpp): the arena, the
// device streams and the pointer tables a plan is bound to, reused across
// runs; several exist only when runs overlap in time. Internal to runtime/.
#pragma once

#include <minirt/session.h>  // StepTiming

#include <memory>
#include <string_view>
#include <vector>

#include "runtime/backend.h"
#include "runtime/memory_pool.h"
#include "runtime/plan_cache.h"

namespace minirt {

// One device backend's share of a run: the backend and its timed phases.
struct BackendTimes {
  const KernelProvider* backend = nullptr;
  DeviceRunTimes times;
};

// A block of the session's host pool, given back when dropped.
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

// What one run needs of its own: the arena and the pointer tables. Reused
// across runs; several exist only when runs overlap in time.
struct RunContext {
  std::shared_ptr<const PlanEntry> bound;
  PoolBlock arena;                                        // from the session's host pool; kept while the plan fits
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
  std::vector<const Tensor*> ordered;
  std::vector<StepTiming> profile;
  std::vector<BackendTimes> device_times;  // per device space of the last run
  // A cut model's run (runtime/stages.h): a context per stage, and the
  // values the parts pass on, by model value id.
  std::vector<std::unique_ptr<RunContext>> stage_ctx;
  std::vector<std::vector<Tensor>> stage_out;
  std::vector<Tensor> made;  // cut nodes' outputs
  std::vector<const Tensor*> where;
};

}  // namespace minirt
