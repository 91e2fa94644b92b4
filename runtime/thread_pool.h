// A small fixed-size thread pool for intra-op parallelism.
//
//   ThreadPool pool(4);
//   pool.parallel_for(rows, [&](int64_t begin, int64_t end) { ... });
//
// The calling thread takes part in the work. parallel_for does not allocate,
// so kernels may call it from the steady-state run loop. Between jobs the
// workers spin briefly before sleeping, so the back-to-back jobs of one model
// run do not pay a wake-up each. Nested calls from a worker run inline, and
// so does a call made while another thread's job holds the pool.
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
  explicit ThreadPool(int threads);
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

  static int hardware_threads();

 private:
  void run(int64_t n, int64_t grain, RangeFn fn);
  void worker_loop();
  void work_on_current();

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  // The job being run; written before generation_ is bumped.
  const RangeFn* fn_ = nullptr;
  int64_t n_ = 0;
  int64_t chunk_ = 1;
  std::atomic<int64_t> next_{0};
  std::atomic<int> pending_{0};  // workers not yet done with this job
  std::mutex run_mu_;            // held by the thread whose job the workers run
};

}  // namespace minirt
