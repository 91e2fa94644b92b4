#include "runtime/thread_pool.h"

#include <minirt/error.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <system_error>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MINIRT_PAUSE() _mm_pause()
#elif defined(__aarch64__)
#define MINIRT_PAUSE() __asm__ __volatile__("yield")  // the CPU hint, not sched_yield
#else
#define MINIRT_PAUSE() std::atomic_signal_fence(std::memory_order_seq_cst)
#endif

namespace minirt {

namespace {
thread_local bool t_in_pool = false;
// How long an idle worker polls for the next job before it sleeps: longer
// than the gap between two kernels of one run, short enough that an idle
// session gives its cores back at once.
constexpr auto kSpin = std::chrono::microseconds(200);
// How long the caller polls for the chunks the workers took before it
// blocks until the last one is done: longer than a step's usual imbalance,
// and what a step loses at most when the worker it waits for shares its CPU.
constexpr auto kCallerSpin = std::chrono::microseconds(200);
// Polls between two looks at the clock.
constexpr int kPollsPerClock = 64;

// A waiting thread never yields its CPU (sched_yield): with another process
// runnable on the same core, a yield hands it the core for a whole time
// slice (milliseconds under Linux's EEVDF), after which every following step
// waits for this thread. That made ResNet-50 at 2 threads 15-30% slower
// beside a compiler even at nice -19 (onnxruntime, whose pool blocks
// instead, was not). Waits are bounded spins (0.2 ms) that then block on a condition
// variable: the wake-up of a blocked thread preempts a lower-priority
// process, and if the thread waited for shares this CPU (more threads than
// cores) it runs as soon as the waiter blocks.
inline void pause_once() { MINIRT_PAUSE(); }
}  // namespace

ThreadPool::ThreadPool(int threads, int start_limit) : slots_(static_cast<size_t>(std::max(threads, 1))) {
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
                  "pids.max) or of memory for thread stacks; use fewer threads (SessionOptions::threads)");
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
        pause_once();
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
      if (ran) {
        // caller_waiting_ and done_ are both sequentially consistent: either
        // the caller's check sees this count or this sees it waiting.
        done_.fetch_add(ran);
        if (caller_waiting_.load()) {
          std::lock_guard<std::mutex> lock(mu_);
          done_cv_.notify_one();
        }
      }
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
  run_locked(n, chunk, chunks, fn);
}

void ThreadPool::run_locked(int64_t n, int64_t chunk, int64_t chunks, RangeFn fn) {
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
  auto finished = [&] { return done_.load() + mine >= chunks; };
  const auto spin_until = std::chrono::steady_clock::now() + kCallerSpin;
  for (int polls = 1; !finished(); ++polls) {
    if (polls % kPollsPerClock == 0 && std::chrono::steady_clock::now() >= spin_until) {
      std::unique_lock<std::mutex> lock(mu_);
      caller_waiting_.store(true);
      done_cv_.wait(lock, finished);
      caller_waiting_.store(false);
      break;
    }
    pause_once();
  }
  state_.fetch_add(1);  // closed (even)
  // A worker that joined before the close may still be on its way out of
  // take_chunks() (a few instructions, unless it was preempted just there);
  // the job's fields stay valid until it has left.
  for (int polls = 1; active_.load(std::memory_order_acquire) != 0; ++polls) {
    if (polls % (kPollsPerClock * 64) == 0)
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    else
      pause_once();
  }
  fn_ = nullptr;
}

namespace {
constexpr uint64_t pack_range(uint64_t front, uint64_t end) { return front | (end << 32); }
constexpr int64_t range_front(uint64_t v) { return static_cast<int64_t>(v & 0xffffffffu); }
constexpr int64_t range_end(uint64_t v) { return static_cast<int64_t>(v >> 32); }
}  // namespace

void ThreadPool::run_ranges(int64_t tasks, BoundFn bound, int64_t pieces, TaskRangeFn fn) {
  if (tasks <= 0) return;
  auto each_whole = [&] {
    for (int64_t t = 0, b0 = bound(0); t < tasks; ++t) {
      const int64_t b1 = bound(t + 1);
      if (b1 > b0) fn(t, b0, b1);
      b0 = b1;
    }
  };
  if (workers_.empty() || tasks == 1 || t_in_pool || tasks > static_cast<int64_t>(slots_.size())) {
    each_whole();
    return;
  }
  std::unique_lock<std::mutex> serial(run_mu_, std::try_to_lock);
  if (!serial.owns_lock()) {
    each_whole();  // another thread's job holds the workers, as in run()
    return;
  }
  int64_t b0 = bound(0);
  if (b0 < 0) b0 = 0;
  for (int64_t t = 0; t < tasks; ++t) {
    int64_t b1 = std::max(bound(t + 1), b0);
    if (b1 >= (int64_t{1} << 32)) {  // beyond what a slot holds: each task's range as one piece
      serial.unlock();
      each_whole();
      return;
    }
    slots_[t].left.store(pack_range(static_cast<uint64_t>(b0), static_cast<uint64_t>(b1)), std::memory_order_relaxed);
    slots_[t].step = std::max<int64_t>(1, (b1 - b0 + std::max<int64_t>(pieces, 1) - 1) / std::max<int64_t>(pieces, 1));
    b0 = b1;
  }
  range_tasks_ = tasks;
  range_fn_ = &fn;
  auto body = [this](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) work_ranges(t);
  };
  RangeFn r(body);
  // One chunk per task: run_locked publishes the slots with the job.
  run_locked(tasks, 1, tasks, r);
  range_fn_ = nullptr;
}

void ThreadPool::work_ranges(int64_t t) {
  const TaskRangeFn& fn = *range_fn_;
  RangeSlot& own = slots_[t];
  // The own range, front to back.
  for (uint64_t cur = own.left.load(std::memory_order_acquire);;) {
    const int64_t f = range_front(cur), e = range_end(cur);
    if (f >= e) break;
    const int64_t nf = std::min(e, f + own.step);
    if (own.left.compare_exchange_weak(cur, pack_range(static_cast<uint64_t>(nf), static_cast<uint64_t>(e)),
                                       std::memory_order_acq_rel, std::memory_order_acquire))
      fn(t, f, nf), cur = own.left.load(std::memory_order_acquire);
  }
  // Then steps from the back of whichever range has the most left.
  for (;;) {
    int64_t victim = -1, most = 0;
    for (int64_t v = 0; v < range_tasks_; ++v) {
      const uint64_t cur = slots_[v].left.load(std::memory_order_acquire);
      if (range_end(cur) - range_front(cur) > most) victim = v, most = range_end(cur) - range_front(cur);
    }
    if (victim < 0) return;
    RangeSlot& s = slots_[victim];
    uint64_t cur = s.left.load(std::memory_order_acquire);
    const int64_t f = range_front(cur), e = range_end(cur);
    if (f >= e) continue;
    // Half of what is left at most, so the owner keeps its next step.
    const int64_t ne = e - std::max<int64_t>(1, std::min(s.step, (e - f) / 2));
    if (s.left.compare_exchange_strong(cur, pack_range(static_cast<uint64_t>(f), static_cast<uint64_t>(ne)),
                                       std::memory_order_acq_rel, std::memory_order_acquire))
      fn(t, ne, e);
  }
}

}  // namespace minirt
