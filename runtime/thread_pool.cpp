#include "runtime/thread_pool.h"

#include <algorithm>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MINIRT_PAUSE() _mm_pause()
#else
#define MINIRT_PAUSE() std::this_thread::yield()
#endif

namespace minirt {

namespace {
thread_local bool t_in_pool = false;
// Polls before a worker goes to sleep: a few hundred microseconds, longer
// than the gap between two kernels of one run.
constexpr int kSpinPolls = 4000;
}  // namespace

int ThreadPool::hardware_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

ThreadPool::ThreadPool(int threads) {
  int extra = std::max(threads, 1) - 1;
  workers_.reserve(extra);
  for (int i = 0; i < extra; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::work_on_current() {
  for (;;) {
    int64_t b = next_.fetch_add(chunk_, std::memory_order_relaxed);
    if (b >= n_) break;
    (*fn_)(b, std::min(n_, b + chunk_));
  }
}

void ThreadPool::worker_loop() {
  t_in_pool = true;
  uint64_t seen = 0;
  for (;;) {
    int polls = 0;
    while (generation_.load() == seen && !stop_.load()) {
      if (++polls < kSpinPolls) {
        MINIRT_PAUSE();
        continue;
      }
      // Sleep. sleepers_ and generation_ are both sequentially consistent,
      // so either run() sees this sleeper and notifies, or the wait's
      // predicate sees the new generation.
      std::unique_lock<std::mutex> lock(mu_);
      sleepers_.fetch_add(1);
      wake_.wait(lock, [&] { return generation_.load() != seen || stop_.load(); });
      sleepers_.fetch_sub(1);
      break;
    }
    if (stop_.load()) return;
    seen = generation_.load();
    work_on_current();
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::run(int64_t n, int64_t grain, RangeFn fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  int64_t max_chunks = (n + grain - 1) / grain;
  if (workers_.empty() || max_chunks <= 1 || t_in_pool) {
    fn(0, n);
    return;
  }
  // A few chunks per thread balances uneven work without much overhead.
  int64_t want = std::min<int64_t>(max_chunks, static_cast<int64_t>(size()) * 4);
  int64_t chunk = (n + want - 1) / want;
  // Another thread's job holds the workers (concurrent runs of one session):
  // this one runs on its caller, chunk by chunk as the pool would have cut
  // it, so results do not depend on which thread got the pool.
  std::unique_lock<std::mutex> serial(run_mu_, std::try_to_lock);
  if (!serial.owns_lock()) {
    for (int64_t b = 0; b < n; b += chunk) fn(b, std::min(n, b + chunk));
    return;
  }
  fn_ = &fn;
  n_ = n;
  chunk_ = chunk;
  next_.store(0, std::memory_order_relaxed);
  pending_.store(static_cast<int>(workers_.size()));
  generation_.fetch_add(1);
  if (sleepers_.load() > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    wake_.notify_all();
  }
  t_in_pool = true;
  work_on_current();
  t_in_pool = false;
  // The workers finish their last chunk soon after ours.
  for (int polls = 0; pending_.load(std::memory_order_acquire) != 0; ++polls) {
    if (polls < kSpinPolls) MINIRT_PAUSE();
    else std::this_thread::yield();
  }
  fn_ = nullptr;
}

}  // namespace minirt
