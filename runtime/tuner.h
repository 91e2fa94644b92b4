// The tuner: at plan time, picks an algorithm for every node whose backend
// offers a choice (KernelProvider::algorithms(), convolutions), by the session's
// mode: the backend's heuristic, measuring every candidate, the algorithm
// cache (measuring only what it lacks), or a fixed name.
//
//   Tuner tuner({.mode = TuningMode::kCached});
//   PlanOptions po{.tuner = &tuner};                    // make_plan asks it
//   std::map<int, std::string> algo = tuner.tune(g, {{node, &backend}, ...}, pool);
//   TuningReport r = tuner.report();                    // counters, one record per node
//
// Measuring: every candidate's kernel on the node's real shapes, inputs of
// seeded random data (constants from the graph), outputs and workspace
// allocated once per node, one warm-up run each, then rounds that run each
// candidate once, in turns, until every candidate has min_repeats runs and
// target_ms per candidate has passed (at most max_repeats rounds); each
// candidate's median counts. Taking turns keeps a change in the machine's
// load from favouring whichever ran first. A measured winner replaces the
// heuristic's pick only when it is faster by more than
// keep_heuristic_within (which a backend may widen for a node,
// KernelProvider::keep_heuristic_within): on sub-millisecond layers the
// noise is larger than most differences. Each candidate's kernel is the one
// KernelProvider::make_tuning_kernel makes. A backend that times on its own device
// (KernelProvider::measure_algorithms) does so instead. Tests replace all of this
// with TunerOptions::time.
//
// Deferring (TunerOptions::defer_measuring): in kCached, what would need
// measuring takes the heuristic's pick for now, marked pending, and the
// session hands it to its background tuner (runtime/background_tuner.h),
// a second Tuner that measures with a SampleGate between its runs; when its
// plan takes over, absorb() moves its results into this one.
//
// Not thread-safe: the session calls it under its planning lock (the
// background tuner's own Tuner, on its thread).
#pragma once

#include <minirt/tuning.h>

#include "runtime/algo_cache.h"
#include "runtime/backend.h"

#include <array>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace minirt {

// Times one candidate of a node: its median milliseconds. Throws when the
// candidate fails (it is then reported as failed).
using TuningTimer = std::function<double(const KernelProvider&, const Graph&, const Node&, const AlgorithmOption&)>;

// Measuring beside a session's runs: the tuner calls begin() before each
// timed run of a candidate (and before a backend's own timing of them all)
// and end() after it; end() false means one of the session's runs overlapped
// it, and that sample is taken again. begin() may block until a quiet moment,
// and throws TuningStopped once the session stops tuning.
class SampleGate {
 public:
  virtual ~SampleGate() = default;
  virtual void begin() = 0;
  virtual bool end() = 0;
  // Whether the session stops tuning (begin() would throw TuningStopped),
  // and whether it is paused: for MeasureClaims' waits.
  virtual bool stopping() const { return false; }
  virtual bool paused() const { return false; }
};

// One measuring of a problem at a time in the process, among tuners with a
// gate (the background ones): a server's instances of one model start
// together and would each measure the same convolutions, taking turns per
// sample. The first to reach a problem claims it; the others wait for its
// result (handed to those waiting, not kept: the cache file, saved at the
// end of the claimant's plan, is where results stay) and take that, as a
// cache hit. A claim is held while measuring only, so no tuner holds one
// while it waits for another.
class MeasureClaims {
 public:
  struct Result {
    std::string algorithm;
    size_t workspace = 0;
    double time_ms = 0;
  };
  enum class Answer {
    kClaimed,  // the caller measures `key` now, then calls done()
    kResult,   // *out is what another measured
    kAlone,    // another still measures it after `patience` seconds, or its session is paused: the
               // caller measures too, unclaimed
  };
  // `gate`: the caller's (its session stopping ends the wait with
  // TuningStopped; its session paused, when it holds the claim, sends those
  // waiting for it on alone). Keys name the cache file too: tuners of other
  // files do not share.
  Answer claim(const std::string& key, Result* out, const SampleGate* gate, double patience = 60);
  // The claim on `key` ends; with its result (null: none, the next claims it).
  void done(const std::string& key, const Result* result);
  int waiters(const std::string& key);  // waiting for `key` now (tests)
  static MeasureClaims& process();

 private:
  struct Entry {
    bool busy = false;                  // claimed
    const SampleGate* owner = nullptr;  // the claimant's gate
    int waiters = 0;
    bool has_result = false;  // for the waiters
    Result result;
  };
  void forget_if_idle(const std::string& key);  // with mu_ held
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Entry> entries_;
};
// Thrown by SampleGate::begin() through the tuner and the planner when the
// session stops tuning (it is closing). Not a std::exception, so that the
// handlers that report a candidate's failure let it pass.
struct TuningStopped {};

struct TunerOptions {
  TuningMode mode = TuningMode::kCached;
  std::string algorithm;       // kFixed: the algorithm's name
  std::string cache_path;      // empty: AlgoCache::default_path()
  size_t workspace_limit = 0;  // bytes; 0: none
  bool write_cache = true;     // kCached and kExhaustive save what they measured
  // Timed runs after the warm-up... 9: the fewest rounds whose interval in
  // choose_by_rounds leaves out the slowest and the fastest round, so that
  // one preempted run does not veto a clear winner.
  int min_repeats = 9;
  int max_repeats = 200;  // ...until target_ms has passed, at most this many
  double target_ms = 20;  // per candidate
  // The most seconds of timed runs one plan's measuring may take; past it,
  // the choices left take the heuristic's pick, unmeasured and not cached.
  double budget_seconds = 30;
  // The heuristic's pick stays unless the fastest is faster by more than
  // this fraction of its time.
  double keep_heuristic_within = 0.03;
  bool progress = true;  // "tuning conv 12/53" on stderr, when it is a terminal and tuning is slow
  TuningTimer time;      // replaces the measuring (tests); empty: the real one
  // kCached: choices that would need measuring take the heuristic's pick,
  // pending, not remembered (see the top of this file).
  bool defer_measuring = false;
  SampleGate* gate = nullptr;  // asked around every timed run; null: measure at once
};

class Tuner {
 public:
  explicit Tuner(TunerOptions options);
  ~Tuner();

  // Chooses for each (node index, backend) that offers algorithms; returns
  // node index -> algorithm name. Saves the cache once, when it measured.
  std::map<int, std::string> tune(const Graph& g, const std::vector<std::pair<int, const KernelProvider*>>& nodes,
                                  ThreadPool& pool);
  // Every record, the counters and the log so far.
  const TuningReport& report() const { return report_; }
  const TunerOptions& options() const { return options_; }
  // Choices the last tune() left pending (TunerOptions::defer_measuring).
  int deferred() const { return deferred_; }
  void note(const std::string& line) { log(line); }  // a sentence for the report's log
  void set_defer_measuring(bool defer) { options_.defer_measuring = defer; }
  // A background tuner's plan is made: its choices from `first_choice` on
  // replace this tuner's pending records of the same node and problem (the
  // counters follow), and its remembered choices become this tuner's, so
  // later plans take them at once. When the plan took over, the swap is
  // recorded in report().swaps: `when` (its time and run count) with what
  // changed; `took_over` false (its plan was no longer kept) records none.
  void absorb(const Tuner& background, size_t first_choice, PlanSwap when, bool took_over);
  // While set (by the session, for one plan), choices that would need
  // measuring after this time take the heuristic's pick instead.
  void set_deadline(const std::chrono::steady_clock::time_point* deadline) {
    deadline_ = deadline ? std::optional(*deadline) : std::nullopt;
  }

 private:
  struct Measured {
    std::string algorithm;
    double time_ms = -1;
    size_t workspace = 0;
    std::vector<TuningCandidate> candidates;
    bool ok = false;
  };
  TuningChoice choose(const Graph& g, const Node& n, const KernelProvider& b,
                      const std::vector<AlgorithmOption>& options, ThreadPool& pool, bool* measured_any);
  Measured measure(const Graph& g, const Node& n, const KernelProvider& b, const std::vector<AlgorithmOption>& options,
                   ThreadPool& pool);
  Measured measure_on(const Graph& g, const Node& n, const KernelProvider& b,
                      const std::vector<AlgorithmOption>& options, ThreadPool& pool);
  AlgoCache& cache();
  void log(const std::string& line);
  void progress(int done, int total, const std::string& node);

  TunerOptions options_;
  TuningReport report_;
  std::unique_ptr<AlgoCache> cache_;
  size_t cache_warnings_seen_ = 0;
  std::map<std::string, TuningChoice> memo_;  // context + problem -> the choice made this session
  std::map<std::string, bool> retune_noted_;  // other contexts already mentioned
  std::chrono::steady_clock::time_point started_;
  bool progress_shown_ = false;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  bool deadline_noted_ = false;
  int deferred_ = 0;
  double timed_ms_ = 0;  // this tune()'s timed runs (the CPU's timing), for the budget
  bool budget_noted_ = false;
  double background_seconds_ = 0;  // of the background tuner's report().seconds, absorbed
};

// The measured winner against the heuristic's pick, from paired rounds:
// `rounds[c][k]` is candidate c's time in round k (NaN where it did not
// run). Each candidate's ratio to the heuristic's time in the same round
// gives a median and a distribution-free ~95% interval of it (order
// statistics of the binomial). A candidate beats the heuristic's pick only
// beyond the noise: the interval's top under 1 and the median under
// 1 - within. Of those, the smallest median, except that an earlier-listed
// candidate within `within` of it is preferred, so that near ties come out
// the same on every run. Returns the winner's index (`heuristic` when none
// beats it) and fills `ratios` (median, low, high; zeros where not compared).
size_t choose_by_rounds(const std::vector<std::vector<double>>& rounds, size_t heuristic, double within,
                        std::vector<std::array<double, 3>>* ratios);

// The cache key's problem for a node: every parameter the choice depends on,
// readable, e.g. "Conv N=1 C=64 H=56 W=56 K=64 kernel=3x3 pads=1,1,1,1
// strides=1,1 dilations=1,1 groups=1 act=Relu".
std::string tuning_problem(const Graph& g, const Node& n);
// A short description for the log: "Conv 64->64 3x3", "Conv 32->32 3x3 s2 g32".
std::string tuning_summary(const Graph& g, const Node& n);
// "conv2_1 (Conv 64->64 3x3): winograd_f4x4, 0.41 ms, workspace 1.20 MiB, from cache"
std::string choice_line(const TuningChoice& c);

// Times a node's candidate kernels on the real shapes (the default timer).
// Holds the node's inputs, outputs and workspace, made once for all candidates;
// the caller holds the node's weights in memory (Tuner::measure_on does).
class KernelBench {
 public:
  KernelBench(const KernelProvider& b, const Graph& g, const Node& n, ThreadPool& pool, uint64_t seed = 1);
  ~KernelBench();
  KernelBench(const KernelBench&) = delete;
  KernelBench& operator=(const KernelBench&) = delete;
  // The median milliseconds of `algorithm`'s kernel; throws when it fails.
  double time(const std::string& algorithm, int min_repeats, int max_repeats, double target_ms);
  // The median milliseconds of each, measured in turns (see the top of this
  // file); a candidate that throws gets NaN and its message in `errors`.
  // With a gate, every run (warm-ups too) waits for its quiet moment. With
  // `rounds`, each candidate's time in each round (choose_by_rounds).
  std::vector<double> time_all(const std::vector<std::string>& algorithms, int min_repeats, int max_repeats,
                               double target_ms, std::vector<std::string>* errors, SampleGate* gate = nullptr,
                               std::vector<std::vector<double>>* rounds = nullptr);
  // Packed weights (Kernel::packed_bytes) past which time_all times the
  // candidates made so far before it makes more (their rounds are then
  // another group's: not paired with the first group's).
  static constexpr size_t kTimeAllPackedBytes = size_t{16} << 20;

 private:
  void time_group(std::vector<std::unique_ptr<Kernel>>& kernels, const std::vector<size_t>& group, size_t ws,
                  int min_repeats, int max_repeats, double target_ms, std::vector<double>& out,
                  std::vector<std::string>* errors, SampleGate* gate, std::vector<std::vector<double>>* rounds);
  std::shared_ptr<void> alloc(size_t bytes);
  const KernelProvider& b_;
  const Graph& g_;
  const Node& n_;
  ThreadPool& pool_;
  void* stream_ = nullptr;
  std::vector<std::shared_ptr<void>> owned_;
  std::vector<const void*> inputs_;
  std::vector<void*> outputs_;
  std::shared_ptr<void> workspace_;
  size_t workspace_bytes_ = 0;
};

}  // namespace minirt
