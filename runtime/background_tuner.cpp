#include "runtime/background_tuner.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace minirt {

namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double seconds_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// This thread, and the threads it starts from now on, at the lowest
// priority. Linux keeps a nice value per thread; where that fails the
// tuner runs at the normal priority, still only between runs.
void lowest_priority() {
  const auto tid = static_cast<id_t>(::syscall(SYS_gettid));
  (void)::setpriority(PRIO_PROCESS, tid, 19);
}

// One timed sample at a time in the process: the tuners of several
// sessions (a Triton server's instances and models) would otherwise time
// their candidates over each other's.
std::mutex& process_sampling() {
  static std::mutex m;
  return m;
}

}  // namespace

BackgroundTuner::BackgroundTuner(TunerOptions options, int threads)
    : threads_(std::max(threads, 1)), sampling_(process_sampling(), std::defer_lock) {
  options.gate = this;
  options.defer_measuring = false;
  options.progress = false;
  tuner_ = std::make_unique<Tuner>(std::move(options));
}

BackgroundTuner::~BackgroundTuner() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    jobs_.clear();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void BackgroundTuner::add(Job job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    jobs_.push_back(std::move(job));
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  }
  cv_.notify_all();
}

int BackgroundTuner::jobs_left() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(jobs_.size()) + (busy_ ? 1 : 0);
}

bool BackgroundTuner::wait(double seconds) {
  std::unique_lock<std::mutex> lock(mu_);
  auto done = [&] { return (jobs_.empty() && !busy_) || paused_ || stop_; };
  if (seconds < 0)
    cv_.wait(lock, done);
  else
    cv_.wait_for(lock, std::chrono::duration<double>(seconds), done);
  return jobs_.empty() && !busy_;
}

void BackgroundTuner::pause(bool paused) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    paused_ = paused;
  }
  cv_.notify_all();
}

BackgroundTuner::Counts BackgroundTuner::counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_;
}

void BackgroundTuner::loop() {
  lowest_priority();
  std::unique_ptr<ThreadPool> pool;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
    if (stop_) break;
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    busy_ = true;
    tuning_since_ = Clock::now();
    held_seconds_ = 0;
    lock.unlock();
    try {
      if (!pool) {
        try {
          pool = std::make_unique<ThreadPool>(threads_);  // its workers inherit the priority
        } catch (const std::exception&) {
          pool = std::make_unique<ThreadPool>(1);  // measuring on this thread alone
        }
      }
      job(*tuner_, *pool);
    } catch (const TuningStopped&) {
      // The session is closing.
    } catch (...) {
      // The job reports its own failures; nothing else can be done here.
    }
    lock.lock();
    if (jobs_.empty() && !stop_) {
      // Idle: no worker left awake (the pool is made again for the next job).
      lock.unlock();
      pool.reset();
      lock.lock();
    }
    busy_ = false;
    cv_.notify_all();
  }
}

void BackgroundTuner::run_begins() {
  for (;;) {
    active_runs_.fetch_add(1);
    runs_started_.fetch_add(1);
    if (!holding_.load()) return;
    // The tuner holds this moment for one timed kernel run: step back
    // until it is done (uncounted: a held sample is valid whatever the count).
    active_runs_.fetch_sub(1);
    runs_started_.fetch_sub(1);
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !holding_.load() || stop_; });
    if (stop_) {  // closing: the hold ends with the sample in progress
      active_runs_.fetch_add(1);
      runs_started_.fetch_add(1);
      return;
    }
  }
}

void BackgroundTuner::run_ends() {
  last_run_end_.store(now_ns());
  active_runs_.fetch_sub(1);
}

bool BackgroundTuner::stopping() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stop_;
}

bool BackgroundTuner::paused() const {
  std::lock_guard<std::mutex> lock(mu_);
  return paused_;
}

void BackgroundTuner::begin() {
  std::unique_lock<std::mutex> lock(mu_);
  const Clock::time_point asked = Clock::now();
  for (;;) {
    if (stop_) throw TuningStopped{};
    if (paused_) {
      cv_.wait(lock);
      continue;
    }
    const Clock::time_point now = Clock::now();
    const int64_t settle = std::chrono::duration_cast<std::chrono::nanoseconds>(kSettle).count();
    if (active_runs_.load() == 0 && now_ns() - last_run_end_.load() >= settle && sampling_.try_lock()) {
      // A gap between runs, and no other tuner measuring: measure; a run
      // that starts meanwhile voids it.
      sample_epoch_ = runs_started_.load();
      sample_held_ = false;
      return;
    }
    // No gap for a while: hold the next run back, within the share.
    if (now - asked > std::chrono::milliseconds(2) &&
        held_seconds_ < kHoldShare * seconds_between(tuning_since_, now) && sampling_.try_lock()) {
      holding_.store(true);
      while (active_runs_.load() != 0) {  // the runs in progress finish first
        if (stop_) {
          holding_.store(false);
          sampling_.unlock();
          cv_.notify_all();
          throw TuningStopped{};
        }
        cv_.wait_for(lock, std::chrono::microseconds(200));
      }
      sample_epoch_ = runs_started_.load();
      sample_held_ = true;
      sample_start_ = Clock::now();
      return;
    }
    cv_.wait_for(lock, std::chrono::milliseconds(1));
  }
}

bool BackgroundTuner::end() {
  if (sampling_.owns_lock()) sampling_.unlock();
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_.samples;
  if (sample_held_) {
    ++counts_.held;
    held_seconds_ += seconds_between(sample_start_, Clock::now());
    sample_held_ = false;
    holding_.store(false);
    cv_.notify_all();
    return true;
  }
  if (runs_started_.load() == sample_epoch_) return true;
  ++counts_.overlapped;
  return false;
}

}  // namespace minirt
