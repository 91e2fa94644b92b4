// minirt/tuning.h: how a session chooses convolution algorithms, and what
// it reports about the choices.
//
//   minirt::Session s(model, {.tuning = minirt::TuningMode::kCached});  // the default
//   s.run(inputs);                                  // the first run of a shape tunes
//   minirt::TuningReport r = s.tuning_report();
//   std::cout << r.measured << " measured, " << r.from_cache << " from cache\n";
//   for (const auto& c : r.choices) std::cerr << minirt::to_string(c) << "\n";
//   // conv2_1 (Conv 64->64 3x3): winograd_f4x4, 0.41 ms, workspace 1.20 MiB, from cache
//
// Tuning happens when a plan is made (the first run of each input
// signature), never inside a later run.
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
};

// "conv2_1 (Conv 64->64 3x3): winograd_f4x4, 0.41 ms, workspace 1.20 MiB, from cache"
MINIRT_API std::string to_string(const TuningChoice& c);

// What a session's tuning did, over all its plans so far.
struct TuningReport {
  TuningMode mode = TuningMode::kCached;
  std::string cache_path;                                      // the algorithm cache file (kCached, kExhaustive)
  int nodes = 0;                                               // nodes with a choice of algorithm (convolutions)
  int measured = 0, from_cache = 0, heuristic = 0, fixed = 0;  // nodes by ChoiceSource
  double seconds = 0;                                          // spent choosing, measuring included
  std::vector<TuningChoice> choices;                           // in plan order
  // Warnings and notes, one sentence each: a damaged or foreign cache file,
  // "cache made with <their versions>, this is <ours>: retuning", a fixed
  // algorithm that could not run somewhere.
  std::vector<std::string> log;
};

}  // namespace minirt
