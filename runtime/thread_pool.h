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
// wake-up call. A job too small for its grain runs inline.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace minirt {

// A non-owning reference to a callable taking (begin, end).
class RangeFn {
 public:
  template <typename F>
  RangeFn(F& f)  // NOLINT: implicit by design
      : obj_(&f), call_([](void* o, int64_t b, int64_t e) { (*static_cast<F*>(o))(b, e); }) {}
  void operator()(int64_t b, int64_t e) const { call_(obj_, b, e); }

 private:
  void* obj_;
  void (*call_)(void*, int64_t, int64_t);
};

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

 private:
  void run(int64_t n, int64_t grain, RangeFn fn);
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
  std::atomic<int> active_{0};  // workers inside take_chunks() of the open job
  std::atomic<bool> stop_{false};
  // The open job; written only while no worker is active and no job is open.
  const RangeFn* fn_ = nullptr;
  int64_t n_ = 0;
  int64_t chunk_ = 1;
  int64_t chunks_ = 0;
  std::atomic<int64_t> next_{0};  // next chunk to take
  std::atomic<int64_t> done_{0};  // chunks finished
  std::mutex run_mu_;             // held by the thread whose job the workers run
};

}  // namespace minirt
