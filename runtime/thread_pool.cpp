#include "runtime/thread_pool.h"

#include <minirt/error.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <system_error>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MINIRT_PAUSE() _mm_pause()
#else
#define MINIRT_PAUSE() std::this_thread::yield()
#endif

namespace minirt {

namespace {
thread_local bool t_in_pool = false;
// How long an idle worker polls for the next job before it sleeps: longer
// than the gap between two kernels of one run, short enough that an idle
// session gives its cores back at once.
constexpr auto kSpin = std::chrono::microseconds(200);
// Polls between two looks at the clock.
constexpr int kPollsPerClock = 64;
// After this many polls a waiting thread also yields its CPU now and then:
// when the scheduler has put a worker and the thread it waits for on the
// same CPU (it migrates threads only now and then), pure spinning would
// keep the other from running for a whole time slice.
constexpr int kPollsBeforeYield = 256;
constexpr int kPollsPerYield = 16;

inline void backoff(int polls) {
  if (polls >= kPollsBeforeYield && polls % kPollsPerYield == 0) std::this_thread::yield();
  else MINIRT_PAUSE();
}
}  // namespace

ThreadPool::ThreadPool(int threads, int start_limit) {
  const int extra = std::max(threads, 1) - 1;
  workers_.reserve(extra);
  std::string why;
  try {
    for (int i = 0; i < extra; ++i) {
      if (start_limit >= 0 && i >= start_limit)
        throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again),
                                "the test's start limit");
      workers_.emplace_back([this] { worker_loop(); });
    }
  } catch (const std::exception& e) {
    why = e.what();
  }
  if (why.empty()) return;
  // The workers already started are stopped and joined, so that nothing is
  // left running (a std::thread destroyed while joinable would terminate).
  const int started = static_cast<int>(workers_.size()) + 1;
  stop_workers();
  throw Error(ErrorCode::kResourceExhausted,
              "could not start the thread pool: asked for " + std::to_string(threads) + " threads (the caller and " +
                  std::to_string(extra) + " workers), the system let " + std::to_string(started) + " run (" + why +
                  "); the process or user may be at its limit of processes and threads (ulimit -u, a cgroup's "
                  "pids.max) or of memory for thread stacks; use fewer threads (--threads, SessionOptions::threads)");
}

ThreadPool::~ThreadPool() { stop_workers(); }

void ThreadPool::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

int64_t ThreadPool::take_chunks() {
  int64_t ran = 0;
  for (;;) {
    int64_t c = next_.fetch_add(1, std::memory_order_relaxed);
    if (c >= chunks_) break;
    int64_t b = c * chunk_;
    (*fn_)(b, std::min(n_, b + chunk_));
    ++ran;
  }
  return ran;
}

void ThreadPool::worker_loop() {
  t_in_pool = true;
  uint64_t seen = 0;  // the last state this worker acted on
  for (;;) {
    // Wait for a job to open (an odd state other than the one seen).
    uint64_t s = state_.load();
    auto spin_until = std::chrono::steady_clock::now() + kSpin;
    int polls = 0;
    while ((s == seen || !(s & 1)) && !stop_.load(std::memory_order_relaxed)) {
      if (++polls % kPollsPerClock != 0 || std::chrono::steady_clock::now() < spin_until) {
        backoff(polls);
        s = state_.load();
        continue;
      }
      // Sleep. sleepers_ and state_ are both sequentially consistent, so
      // either run() sees this sleeper and notifies, or the wait's
      // predicate sees the new state.
      std::unique_lock<std::mutex> lock(mu_);
      sleepers_.fetch_add(1);
      wake_.wait(lock, [&] {
        s = state_.load();
        return ((s & 1) && s != seen) || stop_.load();
      });
      sleepers_.fetch_sub(1);
      spin_until = std::chrono::steady_clock::now() + kSpin;
    }
    if (stop_.load()) return;
    seen = s;
    // Join the job, then check it is still open: if the caller closed it in
    // between, it may already be writing the next one, so touch nothing.
    active_.fetch_add(1);
    if (state_.load() == s) {
      int64_t ran = take_chunks();
      if (ran) done_.fetch_add(ran, std::memory_order_acq_rel);
    }
    active_.fetch_sub(1, std::memory_order_release);
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
  int64_t chunks = (n + chunk - 1) / chunk;
  // Another thread's job holds the workers (concurrent runs of one session):
  // this one runs on its caller, chunk by chunk as the pool would have cut
  // it, so results do not depend on which thread got the pool.
  std::unique_lock<std::mutex> serial(run_mu_, std::try_to_lock);
  if (!serial.owns_lock()) {
    for (int64_t b = 0; b < n; b += chunk) fn(b, std::min(n, b + chunk));
    return;
  }
  // No worker is active here: the previous job waited for them to leave.
  fn_ = &fn;
  n_ = n;
  chunk_ = chunk;
  chunks_ = chunks;
  next_.store(0, std::memory_order_relaxed);
  done_.store(0, std::memory_order_relaxed);
  state_.fetch_add(1);  // open (odd)
  if (sleepers_.load() > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    wake_.notify_all();
  }
  t_in_pool = true;
  int64_t mine = take_chunks();
  t_in_pool = false;
  // Wait for the chunks the workers took; a worker still asleep took none.
  for (int polls = 0; done_.load(std::memory_order_acquire) + mine < chunks; ++polls) backoff(polls);
  state_.fetch_add(1);  // closed (even)
  // A worker that joined before the close may still be on its way out of
  // take_chunks(); the job's fields stay valid until it has left.
  for (int polls = 0; active_.load(std::memory_order_acquire) != 0; ++polls) backoff(polls);
  fn_ = nullptr;
}

}  // namespace minirt
