// minirt/tuning.h: how a session chooses convolution algorithms, and what
// it reports about the choices.
//
//   minirt::Session s(model, {.tuning = minirt::TuningMode::kCached});  // the default
//   s.run(inputs);                                  // the first run of a shape chooses (measures nothing)
//   s.wait_for_tuning();                            // optional: the background tuner's plan took over
//   minirt::TuningReport r = s.tuning_report();
//   std::cout << r.measured << " measured, " << r.from_cache << " from cache\n";
//   for (const auto& c : r.choices) std::cerr << minirt::to_string(c) << "\n";
//   // conv2_1 (Conv 64->64 3x3): winograd_f4x4, 0.41 ms, workspace 1.20 MiB, from cache
//
// Choosing happens when a plan is made (the first run of each input
// signature). What the default mode (kCached) must measure is measured by
// default in the background (SessionOptions::tune_in_background): the
// first run takes the heuristic's picks at once, marked pending, and the
// tuned plan takes over between two later runs (TuningReport::swaps).
#pragma once

#include <minirt/export.h>

#include <cstddef>
#include <string>
#include <vector>

namespace minirt {

enum class TuningMode {
  kCached,      // the algorithm cache's choice; what it lacks is measured and added (the default)
  kHeuristic,   // the backend's fixed rules, nothing measured, the cache untouched
  kExhaustive,  // measure every candidate, ignoring the cache's choices, and write the results to it
  kFixed,       // SessionOptions::tuning_algorithm wherever it can run, else the heuristic's
};
MINIRT_API const char* tuning_mode_name(TuningMode m);

enum class CandidateStatus {
  kOk,                  // ran; time_ms is its median
  kDeclined,            // the backend cannot run this node with it (reason says why); never run
  kOverWorkspaceLimit,  // needs more scratch than SessionOptions::workspace_limit; not run
  kFailed,              // threw when made or run (reason has the message)
};
MINIRT_API const char* candidate_status_name(CandidateStatus s);  // "ok", "declined", ...

struct TuningCandidate {
  std::string algorithm;
  size_t workspace_bytes = 0;
  CandidateStatus status = CandidateStatus::kOk;
  std::string reason;   // for kDeclined and kFailed
  double time_ms = -1;  // median of the timed runs; < 0 when not run
  // Against the heuristic's pick, timed in the same rounds (the CPU's own
  // timing): the median of its time over the heuristic's, round by round,
  // and a ~95% interval of that median. 0 when not compared.
  double vs_heuristic = 0, vs_heuristic_low = 0, vs_heuristic_high = 0;
};

enum class ChoiceSource {
  kMeasured,   // measured in this session
  kCache,      // read from the algorithm cache
  kHeuristic,  // the backend's fixed rules
  kFixed,      // the algorithm asked for by name
};
MINIRT_API const char* choice_source_name(ChoiceSource s);

// One node's choice.
struct TuningChoice {
  std::string node;     // node name
  std::string summary;  // "Conv 64->64 3x3", "Conv 32->32 3x3 s2 g32"
  std::string backend;  // the backend's name, e.g. "cpu"
  std::string problem;  // the cache key's problem: every parameter the choice depends on
  std::string algorithm;
  double time_ms = -1;  // measured (now or when cached) median; < 0 when not measured
  size_t workspace_bytes = 0;
  ChoiceSource source = ChoiceSource::kHeuristic;
  std::string heuristic;                    // what the heuristic would have picked
  std::vector<TuningCandidate> candidates;  // every candidate and what became of it, when measured
  // The heuristic's pick for now, measured in the background; the record
  // is replaced by the measured one when its tuned plan takes over.
  bool pending = false;
};

// A tuned plan that replaced a running one between two runs (background
// tuning): what it changed and what its measurements say it gains.
struct PlanSwap {
  double seconds = 0;         // after the session's first plan, when it took over
  double tuning_seconds = 0;  // spent making it: measuring (between runs) and planning
  long runs_before = 0;       // runs the session had started by then
  int measured = 0;           // pending choices it settled
  int changed = 0;            // of them, those whose pick differs from the running plan's
  // The changed choices' measured times, summed: the running plan's picks,
  // and the tuned plan's (0 when they were not measured in this process).
  double before_ms = 0, after_ms = 0;
};

// "conv2_1 (Conv 64->64 3x3): winograd_f4x4, 0.41 ms, workspace 1.20 MiB, from cache"
MINIRT_API std::string to_string(const TuningChoice& c);
// "the tuned plan took over 2.31 s after the first plan, at run 58 (2.20 s
// tuning): 14 of 20 choices measured changed, 8.12 -> 6.40 ms on them"
MINIRT_API std::string to_string(const PlanSwap& s);

// What a session's tuning did, over all its plans so far.
struct TuningReport {
  TuningMode mode = TuningMode::kCached;
  std::string cache_path;                                      // the algorithm cache file (kCached, kExhaustive)
  int nodes = 0;                                               // nodes with a choice of algorithm (convolutions)
  int measured = 0, from_cache = 0, heuristic = 0, fixed = 0;  // nodes by ChoiceSource
  int pending = 0;                    // of the heuristic's, those still waiting for the background tuner
  std::vector<PlanSwap> swaps;        // tuned plans that took over, in order
  double seconds = 0;                 // spent choosing, measuring included
  std::vector<TuningChoice> choices;  // in plan order
  // Warnings and notes, one sentence each: a damaged or foreign cache file,
  // "cache made with <their versions>, this is <ours>: retuning", a fixed
  // algorithm that could not run somewhere.
  std::vector<std::string> log;
};

}  // namespace minirt
