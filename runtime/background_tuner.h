// The background tuner: measures, on a thread of its own, the algorithm
// choices a session's plans left pending (TunerOptions::defer_measuring),
// and runs the jobs that make the tuned plans; the session swaps each one in
// between two runs (runtime/api/session.cpp). Internal to runtime/.
//
//   BackgroundTuner bg(tuner_options, threads);   // no thread until the first job
//   bg.add([&](Tuner& t, ThreadPool& pool) {      // on its thread
//     auto plan = make_plan(g, inputs, cpu, pool, {.tuner = &t});   // measures
//     std::lock_guard lock(session_mu); /* swap the plan in, absorb t's report */
//   });
//   { BackgroundTuner::RunScope r(&bg); /* one run of the session */ }
//   bg.wait(-1);                                   // every job done
//
// Keeping out of the runs' way:
// - The thread runs at the lowest priority (nice 19), and so do the workers
//   of its pool, which is made for the queue's jobs (as many threads as the
//   session's) and goes when the queue is empty: an idle session has no
//   tuning thread awake.
// - Its Tuner asks this gate before each timed run of a candidate
//   (SampleGate): the run waits for a moment when no run of the session is
//   in progress and the session's pool has stopped spinning; a sample that
//   a run overlapped is taken again.
// - When the runs leave no such gap (a server under load, a benchmark loop),
//   the tuner may hold the next run back for one timed kernel run, while the
//   time it has held runs stays under kHoldShare of the time it has been
//   tuning. A run in progress is never held.
// - One sample at a time in the process: the tuners of several sessions
//   (a server's instances and models) take turns, so that none times its
//   candidates over another's.
// - pause(true) stops all measuring until pause(false); the destructor stops
//   the job in progress at its next sample (TuningStopped) and drops the rest.
#pragma once

#include "runtime/thread_pool.h"
#include "runtime/tuner.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace minirt {

class BackgroundTuner final : public SampleGate {
 public:
  using Job = std::function<void(Tuner&, ThreadPool&)>;
  // The share of its tuning time the tuner may hold runs back (see above):
  // under 5%, issue 26's bar for runs while it tunes (bench/fast_start.py,
  // 130 runs back to back: at 10% ResNet-50's default session ran 1.10x an
  // exhaustively tuned one's time); tuning under such a load takes about 25
  // times its samples' time.
  static constexpr double kHoldShare = 0.04;
  // How long after a run ends the session's pool may still spin (thread_pool.h).
  static constexpr std::chrono::microseconds kSettle{500};

  // `options` are the session tuner's; the gate and measuring at once are
  // this one's. `threads`: the session's pool size.
  BackgroundTuner(TunerOptions options, int threads);
  ~BackgroundTuner() override;
  BackgroundTuner(const BackgroundTuner&) = delete;
  BackgroundTuner& operator=(const BackgroundTuner&) = delete;

  // Queues a job (the thread starts with the first). A job's exceptions are
  // its own to report; those that escape it are dropped.
  void add(Job job);
  // Until no job is queued or in progress: true; false when `seconds`
  // (< 0: no limit) passed first, or at once while paused with work left.
  bool wait(double seconds);
  void pause(bool paused);
  int jobs_left() const;  // queued or in progress
  // The session's runs begun so far (run_begins), for PlanSwap::runs_before.
  long runs_begun() const { return static_cast<long>(runs_started_.load()); }

  // Around each run of the session.
  void run_begins();
  void run_ends();
  class RunScope {
   public:
    explicit RunScope(BackgroundTuner* bg) : bg_(bg) {
      if (bg_) bg_->run_begins();
    }
    ~RunScope() {
      if (bg_) bg_->run_ends();
    }
    RunScope(const RunScope&) = delete;
    RunScope& operator=(const RunScope&) = delete;

   private:
    BackgroundTuner* bg_;
  };

  // SampleGate, for its Tuner.
  void begin() override;
  bool end() override;
  bool stopping() const override;
  bool paused() const override;

  // Samples taken, and of them those a run overlapped and those that held
  // runs back (tests, reports).
  struct Counts {
    long samples = 0, overlapped = 0, held = 0;
  };
  Counts counts() const;

 private:
  using Clock = std::chrono::steady_clock;
  void loop();

  const int threads_;
  std::unique_ptr<Tuner> tuner_;  // used on the thread only

  mutable std::mutex mu_;
  std::condition_variable cv_;  // jobs, pause, stop, a released hold, a finished job
  std::deque<Job> jobs_;
  bool busy_ = false;  // a job in progress
  bool stop_ = false;
  bool paused_ = false;
  Counts counts_;

  // The runs, as run_begins/run_ends see them (no lock on their path).
  std::atomic<int> active_runs_{0};
  std::atomic<uint64_t> runs_started_{0};
  std::atomic<int64_t> last_run_end_{0};  // steady clock, ns
  std::atomic<bool> holding_{false};      // the tuner holds new runs back

  // The sample in progress and the share held (the thread's, under mu_).
  uint64_t sample_epoch_ = 0;
  bool sample_held_ = false;
  Clock::time_point sample_start_{};
  Clock::time_point tuning_since_{};
  double held_seconds_ = 0;
  // The process's sampling lock (one timed sample at a time across every
  // session's tuner), held from begin() to end() by this tuner's thread.
  std::unique_lock<std::mutex> sampling_;

  std::thread thread_;
};

}  // namespace minirt
