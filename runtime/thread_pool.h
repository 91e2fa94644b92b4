// A small fixed-size thread pool for intra-op parallelism.
//
//   ThreadPool pool(4);
//   pool.parallel_for(rows, [&](int64_t begin, int64_t end) { ... });
//
// The calling thread takes part in the work. parallel_for does not allocate,
// so kernels may call it from the steady-state run loop. Nested calls from a
// worker run inline, and so does a call made while another thread's job
// holds the pool.
//
// Per-step overhead. A job is a counter of chunks that any thread may take;
// the caller returns as soon as every chunk is done, so it never waits for a
// worker to wake up: a worker that comes late finds nothing left and goes
// back to waiting. Between jobs the workers spin for a bounded time (about
// 0.2 ms, longer than the gap between two kernels of one run) before they
// sleep, so the back-to-back steps of a run reach a worker that is awake;
// the first step after a pause pays at most the caller's own work and one
// wake-up call. A job too small for its grain runs inline. A caller waiting
// for the chunks workers took spins about 0.2 ms, then blocks until the last
// is done. No wait ever yields the CPU (see thread_pool.cpp).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace minirt {

// A non-owning reference to a callable of signature R(Args...).
template <typename R, typename... Args>
class FnRef {
 public:
  template <typename F>
  FnRef(F& f)  // NOLINT: implicit by design
      : obj_(&f), call_([](void* o, Args... a) -> R { return (*static_cast<F*>(o))(a...); }) {}
  R operator()(Args... a) const { return call_(obj_, a...); }

 private:
  void* obj_;
  R (*call_)(void*, Args...);
};
// fn(begin, end)
using RangeFn = FnRef<void, int64_t, int64_t>;
// fn(task, begin, end)
using TaskRangeFn = FnRef<void, int64_t, int64_t, int64_t>;
// bound(task): where task's units start
using BoundFn = FnRef<int64_t, int64_t>;

class ThreadPool {
 public:
  // Starts threads - 1 workers. When the system refuses a thread (the
  // process limit, memory for stacks), the workers already started are
  // joined and Error(kResourceExhausted) says how many were asked for, how
  // many ran and why. `start_limit` >= 0 makes the pool refuse to start more
  // than that many workers, as the system would (tests).
  explicit ThreadPool(int threads, int start_limit = -1);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Splits [0, n) into chunks of at least `grain` items and runs fn on them
  // across the pool. Returns when all chunks are done.
  template <typename F>
  void parallel_for(int64_t n, F&& fn, int64_t grain = 1) {
    RangeFn r(fn);
    run(n, grain, r);
  }

  // For work that is cut into `tasks` contiguous ranges so that each keeps
  // its data in one core's cache (a convolution's rows that share weights):
  // task t owns units [bound(t), bound(t + 1)), and fn(t, u0, u1) runs
  // pieces of them. The thread that takes a task works through its range
  // front to back in about `pieces` steps; a thread done with its own range
  // takes steps from the back of the range with the most left. So a thread
  // that runs slow -- its core shared with another process, or its worker
  // late to wake -- does not hold up the whole step, as it would with one
  // fixed range per thread, while every thread still walks mostly its own
  // range. In fn, t is the task of the thread running the piece (the owner
  // or a thief), for per-task scratch: no two threads run pieces with one t
  // at the same time. bound(0) is the first unit, bound(tasks) the end; each
  // is read once, before any piece runs. Without workers (or inline, as
  // parallel_for) each task runs as one piece, in order.
  template <typename B, typename F>
  void parallel_ranges(int64_t tasks, B&& bound, int64_t pieces, F&& fn) {
    BoundFn b(bound);
    TaskRangeFn f(fn);
    run_ranges(tasks, b, pieces, f);
  }

 private:
  void run(int64_t n, int64_t grain, RangeFn fn);
  // Opens a job of `chunks` chunks of `chunk` items over [0, n) on the pool,
  // takes part, and returns when every chunk is done; run_mu_ is held.
  void run_locked(int64_t n, int64_t chunk, int64_t chunks, RangeFn fn);
  void run_ranges(int64_t tasks, BoundFn bound, int64_t pieces, TaskRangeFn fn);
  // parallel_ranges' part of a thread that took task t: its own range, then
  // steps of the others'.
  void work_ranges(int64_t t);
  void worker_loop();
  void stop_workers();
  // Takes chunks of the current job until none is left; returns how many it ran.
  int64_t take_chunks();

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_;
  // Even: no job open; odd: a job is open. Bumped once to open a job and
  // once to close it, so a worker that saw an open job can tell, after it
  // registered in active_, whether that job is still the one running.
  std::atomic<uint64_t> state_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<int> active_{0};               // workers inside take_chunks() of the open job
  std::atomic<bool> caller_waiting_{false};  // the caller blocks on done_cv_ for the last chunks
  std::condition_variable done_cv_;
  std::atomic<bool> stop_{false};
  // The open job; written only while no worker is active and no job is open.
  const RangeFn* fn_ = nullptr;
  int64_t n_ = 0;
  int64_t chunk_ = 1;
  int64_t chunks_ = 0;
  std::atomic<int64_t> next_{0};  // next chunk to take
  std::atomic<int64_t> done_{0};  // chunks finished
  std::mutex run_mu_;             // held by the thread whose job the workers run
  // parallel_ranges' open job: per task, what is left of its range (the
  // front in the low 32 bits, the end in the high ones, taken by
  // compare-and-swap from either side) and the owner's step.
  struct alignas(64) RangeSlot {
    std::atomic<uint64_t> left{0};
    int64_t step = 1;
  };
  std::vector<RangeSlot> slots_;
  int64_t range_tasks_ = 0;
  const TaskRangeFn* range_fn_ = nullptr;
};

}  // namespace minirt
