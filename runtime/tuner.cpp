#include "runtime/tuner.h"

#include "runtime/format_bytes.h"
#include "runtime/host_memory.h"
#include "runtime/host_resources.h"
#include "runtime/memory_pool.h"
#include "runtime/op_registry.h"
#include "runtime/weight_store.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <random>
#include <sstream>

namespace minirt {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

std::string fmt(const char* f, double x) {
  char b[64];
  std::snprintf(b, sizeof b, f, x);
  return b;
}

DType node_dtype(const Graph& g, const Node& n) {
  for (int v : n.inputs)
    if (v >= 0) return g.values[v].dtype;
  return DType::kUndefined;
}

// The version fields that differ between two contexts, "theirs" and "ours";
// where both name the same library, ours is just its version:
// "cudnn 9.1.0" and "9.19.0".
std::pair<std::string, std::string> version_difference(const std::string& theirs, const std::string& ours) {
  auto a = AlgoCache::context_fields(theirs), b = AlgoCache::context_fields(ours);
  std::string t, o;
  size_t n = std::max(a.size(), b.size());
  for (size_t i = 2; i < n; ++i) {
    std::string x = i < a.size() ? a[i] : "", y = i < b.size() ? b[i] : "";
    if (x == y) continue;
    size_t sx = x.find(' '), sy = y.find(' ');
    if (sx != std::string::npos && sx == sy && x.compare(0, sx, y, 0, sy) == 0) y = y.substr(sy + 1);
    t += (t.empty() ? "" : ", ") + (x.empty() ? "nothing" : x);
    o += (o.empty() ? "" : ", ") + (y.empty() ? "nothing" : y);
  }
  return {t, o};
}

// The report's counter of choices from `source`.
int& count_of(TuningReport& r, ChoiceSource source) {
  switch (source) {
    case ChoiceSource::kMeasured:
      return r.measured;
    case ChoiceSource::kCache:
      return r.from_cache;
    case ChoiceSource::kHeuristic:
      return r.heuristic;
    case ChoiceSource::kFixed:
      return r.fixed;
  }
  return r.heuristic;
}

// f() between the gate's begin() and end(), again while the gate says a
// run overlapped it; f() alone without a gate.
template <typename F>
auto gated(SampleGate* gate, F&& f) -> decltype(f()) {
  if (!gate) return f();
  for (;;) {
    gate->begin();
    try {
      auto v = f();
      if (gate->end()) return v;
    } catch (...) {
      gate->end();
      throw;
    }
  }
}

}  // namespace

size_t choose_by_rounds(const std::vector<std::vector<double>>& rounds, size_t heuristic, double within,
                        std::vector<std::array<double, 3>>* ratios) {
  ratios->assign(rounds.size(), {0, 0, 0});
  const std::vector<double>& h = rounds[heuristic];
  std::vector<double> beats(rounds.size(), -1);  // the median ratio of those that beat the heuristic's pick
  for (size_t c = 0; c < rounds.size(); ++c) {
    if (c == heuristic) continue;
    std::vector<double> r;
    for (size_t k = 0; k < std::min(rounds[c].size(), h.size()); ++k)
      if (std::isfinite(rounds[c][k]) && std::isfinite(h[k]) && h[k] > 0) r.push_back(rounds[c][k] / h[k]);
    if (r.empty()) continue;
    std::sort(r.begin(), r.end());
    const size_t n = r.size();
    const double median = n % 2 ? r[n / 2] : 0.5 * (r[n / 2 - 1] + r[n / 2]);
    // The median's ~95% interval: the order statistics n/2 -+ 1.96 sqrt(n)/2.
    const double half = 0.98 * std::sqrt(static_cast<double>(n));
    const auto lo = static_cast<size_t>(std::max(0.0, std::floor(static_cast<double>(n) / 2 - half)));
    const auto hi =
        static_cast<size_t>(std::min(static_cast<double>(n - 1), std::ceil(static_cast<double>(n) / 2 + half) - 1));
    (*ratios)[c] = {median, r[lo], r[hi]};
    if (r[hi] < 1.0 && median < 1.0 - within) beats[c] = median;
  }
  size_t best = heuristic;
  for (size_t c = 0; c < rounds.size(); ++c)
    if (beats[c] >= 0 && (best == heuristic || beats[c] < beats[best])) best = c;
  if (best == heuristic) return heuristic;
  for (size_t c = 0; c < best; ++c)
    if (beats[c] >= 0 && beats[c] <= beats[best] * (1 + within)) return c;
  return best;
}

std::string tuning_problem(const Graph& g, const Node& n) {
  const OpSchema* schema = find_schema(n.op);
  if (schema && schema->tuning_problem)
    if (std::string text = schema->tuning_problem(g, n); !text.empty()) return text;
  // An op without its own text: its op and shapes say it all.
  std::ostringstream os;
  os << n.op;
  for (int v : n.inputs) os << (v < 0 ? " -" : " " + shape_str(g.values[v].shape));
  os << " =>";
  for (int v : n.outputs) os << " " << (v < 0 ? std::string("-") : shape_str(g.values[v].shape));
  return os.str();
}

std::string tuning_summary(const Graph& g, const Node& n) {
  const OpSchema* schema = find_schema(n.op);
  if (schema && schema->tuning_summary)
    if (std::string text = schema->tuning_summary(g, n); !text.empty()) return text;
  return n.op;
}

std::string choice_line(const TuningChoice& c) {
  std::string s = c.node + " (" + c.summary + "): " + (c.algorithm.empty() ? "the backend's default" : c.algorithm);
  if (c.time_ms >= 0) s += ", " + fmt(c.time_ms < 0.1 ? "%.3f ms" : "%.2f ms", c.time_ms);
  s += ", workspace " + format_bytes(c.workspace_bytes, 1);
  switch (c.source) {
    case ChoiceSource::kMeasured:
      s += ", measured";
      break;
    case ChoiceSource::kCache:
      s += ", from cache";
      break;
    case ChoiceSource::kHeuristic:
      s += ", heuristic";
      break;
    case ChoiceSource::kFixed:
      s += ", fixed";
      break;
  }
  return s;
}

// ---- KernelBench ----

KernelBench::KernelBench(const KernelProvider& b, const Graph& g, const Node& n, ThreadPool& pool, uint64_t seed)
    : b_(b), g_(g), n_(n), pool_(pool) {
  if (b_.device().is_device()) stream_ = b_.device().create_stream();
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int v : n.inputs) {
    if (v < 0) {
      inputs_.push_back(nullptr);
      continue;
    }
    const Value& val = g.values[v];
    if (val.constant) {
      if (!b_.device().is_device()) {
        inputs_.push_back(val.constant->raw());
      } else {
        owned_.push_back(b_.device().upload(*val.constant));
        inputs_.push_back(owned_.back().get());
      }
      continue;
    }
    size_t bytes = value_bytes(val);
    std::vector<unsigned char> host(bytes, 0);
    if (val.dtype == DType::kFloat32) {
      auto* f = reinterpret_cast<float*>(host.data());
      for (size_t i = 0; i < bytes / sizeof(float); ++i) f[i] = u(rng);
    }
    owned_.push_back(alloc(bytes));
    void* p = owned_.back().get();
    if (bytes == 0) {
      // An empty tensor: nothing to fill (and no host buffer to copy from).
    } else if (b_.device().is_device()) {
      b_.device().copy_to_device(p, host.data(), bytes, stream_);
    } else {
      std::memcpy(p, host.data(), bytes);
    }
    inputs_.push_back(p);
  }
  for (int v : n.outputs) {
    if (v < 0) {
      outputs_.push_back(nullptr);
      continue;
    }
    owned_.push_back(alloc(value_bytes(g.values[v])));
    outputs_.push_back(owned_.back().get());
  }
  if (b_.device().is_device()) b_.device().synchronize(stream_);
}

KernelBench::~KernelBench() {
  workspace_.reset();
  owned_.clear();
  if (stream_) b_.device().destroy_stream(stream_);
}

std::shared_ptr<void> KernelBench::alloc(size_t bytes) {
  size_t n = std::max<size_t>((bytes + 63) / 64 * 64, 64);
  std::shared_ptr<void> p;
  if (b_.device().is_device()) {
    std::shared_ptr<RawAllocator> a = b_.device().allocator();
    void* q = a ? a->allocate(n) : nullptr;
    if (q) p = std::shared_ptr<void>(q, [a, n](void* r) { a->deallocate(r, n); });
  } else {
    if (n >= kHostRoomCheckBytes) check_host_room(n, node_context(g_, n_) + "measuring algorithms");
    void* q = host_alloc(n);
    if (q) p = std::shared_ptr<void>(q, [n](void* r) { host_free(r, n); });
  }
  if (!p)
    fail(ErrorCode::kOutOfMemory,
         node_context(g_, n_) + "cannot allocate " + format_bytes(n, 1) + " to measure algorithms");
  return p;
}

double KernelBench::time(const std::string& algorithm, int min_repeats, int max_repeats, double target_ms) {
  std::unique_ptr<Kernel> k = b_.make_tuning_kernel(g_, n_, algorithm);
  size_t ws = k->workspace_bytes();
  if (ws > workspace_bytes_ || !workspace_) {
    workspace_.reset();
    workspace_ = alloc(ws);
    workspace_bytes_ = ws;
  }
  KernelArgs args{inputs_.data(), outputs_.data(), workspace_.get(), &pool_, stream_};
  auto run_once = [&]() {
    k->run(args);
    if (stream_) b_.device().synchronize(stream_);
  };
  run_once();  // warm-up: caches, lazily packed weights, page faults
  std::vector<double> t;
  auto start = Clock::now();
  while (static_cast<int>(t.size()) < std::max(min_repeats, 1) ||
         (static_cast<int>(t.size()) < max_repeats && ms_since(start) < target_ms)) {
    auto a = Clock::now();
    run_once();
    t.push_back(ms_since(a));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

std::vector<double> KernelBench::time_all(const std::vector<std::string>& algorithms, int min_repeats, int max_repeats,
                                          double target_ms, std::vector<std::string>* errors, SampleGate* gate,
                                          std::vector<std::vector<double>>* rounds) {
  const size_t n = algorithms.size();
  std::vector<double> out(n, std::nan(""));
  errors->assign(n, "");
  std::vector<std::unique_ptr<Kernel>> kernels(n);
  // Candidates are made, and timed in turns, in groups whose packed weights
  // stay near kTimeAllPackedBytes: each holds its own form of the weights
  // (a large layer's Winograd F(4x4) candidates 4 times their bytes each),
  // and all of a large layer's at once would be a plan's peak.
  for (size_t next = 0; next < n;) {
    std::vector<size_t> group;
    size_t ws = 0, packed = 0;
    for (; next < n && packed < kTimeAllPackedBytes; ++next) {
      try {
        kernels[next] = b_.make_tuning_kernel(g_, n_, algorithms[next]);
        ws = std::max(ws, kernels[next]->workspace_bytes());
        packed += kernels[next]->packed_bytes();
        group.push_back(next);
      } catch (const std::exception& e) {
        (*errors)[next] = e.what();
      }
    }
    time_group(kernels, group, ws, min_repeats, max_repeats, target_ms, out, errors, gate, rounds);
    for (size_t i : group) kernels[i].reset();
  }
  return out;
}

void KernelBench::time_group(std::vector<std::unique_ptr<Kernel>>& kernels, const std::vector<size_t>& group, size_t ws,
                             int min_repeats, int max_repeats, double target_ms, std::vector<double>& out,
                             std::vector<std::string>* errors, SampleGate* gate,
                             std::vector<std::vector<double>>* rounds) {
  if (group.empty()) return;
  if (ws > workspace_bytes_ || !workspace_) {
    workspace_.reset();
    workspace_ = alloc(ws);
    workspace_bytes_ = ws;
  }
  KernelArgs args{inputs_.data(), outputs_.data(), workspace_.get(), &pool_, stream_};
  auto run_once = [&](size_t i) {
    return gated(gate, [&] {
      auto a = Clock::now();
      kernels[i]->run(args);
      if (stream_) b_.device().synchronize(stream_);
      return ms_since(a);
    });
  };
  std::vector<std::vector<double>> t(kernels.size());
  std::vector<size_t> live;
  double spent = 0;  // ms of all live candidates' timed runs
  for (size_t i : group) {
    try {
      run_once(i);  // warm-up: caches, lazily packed weights, page faults
      live.push_back(i);
    } catch (const std::exception& e) {
      (*errors)[i] = e.what();
      kernels[i].reset();
    }
  }
  const int least = std::max(min_repeats, 1);
  for (int round = 0; !live.empty(); ++round) {
    bool enough = round >= least && (round >= max_repeats || spent >= target_ms * static_cast<double>(live.size()));
    if (enough) break;
    if (rounds) rounds->resize(kernels.size());
    // Each round starts with another candidate, so none always runs first.
    for (size_t k = 0; k < live.size(); ++k) {
      size_t i = live[(k + static_cast<size_t>(round)) % live.size()];
      if (!kernels[i]) continue;
      try {
        double ms = run_once(i);
        t[i].push_back(ms);
        if (rounds) {
          (*rounds)[i].resize(static_cast<size_t>(round), std::nan(""));
          (*rounds)[i].push_back(ms);
        }
        spent += ms;
      } catch (const std::exception& e) {
        (*errors)[i] = e.what();
        kernels[i].reset();
        t[i].clear();
        if (rounds) (*rounds)[i].clear();
      }
    }
  }
  for (size_t i : group) {
    if (t[i].empty()) continue;
    std::sort(t[i].begin(), t[i].end());
    out[i] = t[i][t[i].size() / 2];
  }
}

// ---- Tuner ----

Tuner::Tuner(TunerOptions options) : options_(std::move(options)) {
  report_.mode = options_.mode;
  if (options_.cache_path.empty()) options_.cache_path = AlgoCache::default_path();
  if (options_.mode == TuningMode::kCached || options_.mode == TuningMode::kExhaustive)
    report_.cache_path = options_.cache_path;
}

Tuner::~Tuner() = default;

void Tuner::log(const std::string& line) { report_.log.push_back(line); }

AlgoCache& Tuner::cache() {
  if (!cache_) cache_ = std::make_unique<AlgoCache>(options_.cache_path);
  for (; cache_warnings_seen_ < cache_->warnings().size(); ++cache_warnings_seen_)
    log(cache_->warnings()[cache_warnings_seen_]);
  return *cache_;
}

void Tuner::progress(int done, int total, const std::string& what) {
  static const bool tty = ::isatty(2) == 1;
  if (!options_.progress || !tty) return;
  if (done >= total) {
    if (progress_shown_) std::fprintf(stderr, "\r%-79s\r", "");
    progress_shown_ = false;
    return;
  }
  if (!progress_shown_ && ms_since(started_) < 500) return;
  std::fprintf(stderr, "\rtuning %s %d/%d ...%-40.40s", what.c_str(), done + 1, total, "");
  std::fflush(stderr);
  progress_shown_ = true;
}

std::map<int, std::string> Tuner::tune(const Graph& g, const std::vector<std::pair<int, const KernelProvider*>>& nodes,
                                       ThreadPool& pool) {
  started_ = Clock::now();
  progress_shown_ = false;
  deadline_noted_ = false;
  deferred_ = 0;
  timed_ms_ = 0;
  budget_noted_ = false;
  struct Todo {
    int node;
    const KernelProvider* backend;
    std::vector<AlgorithmOption> options;
  };
  std::vector<Todo> todo;
  for (const auto& [idx, b] : nodes)
    if (auto opts = b->algorithms(g, g.nodes[idx]); !opts.empty()) todo.push_back({idx, b, std::move(opts)});
  std::map<int, std::string> out;
  bool measured_any = false;
  // Stopped part-way (the session closing while it tunes in the
  // background): what was measured is kept for the next process.
  struct SaveOnStop {
    Tuner& t;
    bool& measured_any;
    ~SaveOnStop() {
      if (!std::uncaught_exceptions() || !measured_any || !t.options_.write_cache) return;
      try {
        t.cache().save();
      } catch (...) {
        // The exception under way matters more.
      }
    }
  } save_on_stop{*this, measured_any};
  for (size_t i = 0; i < todo.size(); ++i) {
    const Node& n = g.nodes[todo[i].node];
    std::string what = n.op;
    for (char& c : what) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    progress(static_cast<int>(i), static_cast<int>(todo.size()), what);
    TuningChoice c = choose(g, n, *todo[i].backend, todo[i].options, pool, &measured_any);
    out[todo[i].node] = c.algorithm;
    ++report_.nodes;
    ++count_of(report_, c.source);
    if (c.pending) {
      ++deferred_;
      ++report_.pending;
    }
    report_.choices.push_back(std::move(c));
  }
  progress(static_cast<int>(todo.size()), static_cast<int>(todo.size()), "");
  if (measured_any && options_.write_cache) {
    cache().save();
    cache();  // its warnings into the log
  }
  report_.seconds += ms_since(started_) / 1000.0;
  return out;
}

void Tuner::absorb(const Tuner& background, size_t first_choice, PlanSwap swap, bool took_over) {
  const std::vector<TuningChoice>& later = background.report().choices;
  for (size_t k = first_choice; k < later.size(); ++k) {
    const TuningChoice& now = later[k];
    for (TuningChoice& c : report_.choices) {
      if (!c.pending || c.node != now.node || c.problem != now.problem) continue;
      ++swap.measured;
      if (now.algorithm != c.algorithm) {
        ++swap.changed;
        // The running pick's time, when it was among the candidates measured.
        for (const TuningCandidate& t : now.candidates)
          if (t.algorithm == c.algorithm && t.status == CandidateStatus::kOk && now.time_ms >= 0) {
            swap.before_ms += t.time_ms;
            swap.after_ms += now.time_ms;
          }
      }
      --count_of(report_, c.source);
      --report_.pending;
      ++count_of(report_, now.source);
      c = now;
      break;
    }
  }
  for (const auto& [key, choice] : background.memo_) memo_.emplace(key, choice);
  report_.seconds += background.report().seconds - background_seconds_;
  background_seconds_ = background.report().seconds;
  for (const std::string& line : background.report().log)
    if (std::find(report_.log.begin(), report_.log.end(), line) == report_.log.end()) report_.log.push_back(line);
  if (took_over) report_.swaps.push_back(swap);
}

TuningChoice Tuner::choose(const Graph& g, const Node& n, const KernelProvider& b,
                           const std::vector<AlgorithmOption>& opts, ThreadPool& pool, bool* measured_any) {
  TuningChoice c;
  c.node = n.name;
  c.summary = tuning_summary(g, n);
  c.backend = b.name();
  c.problem = tuning_problem(g, n);
  if (options_.workspace_limit) c.problem += " workspace<=" + std::to_string(options_.workspace_limit);
  c.heuristic = b.heuristic_algorithm(g, n);
  const std::string context = b.tuning_context() + " | " + dtype_name(node_dtype(g, n));
  const std::string where = n.name + " (" + c.summary + ")";

  auto find = [&](const std::string& name) -> const AlgorithmOption* {
    for (const auto& o : opts)
      if (o.name == name) return &o;
    return nullptr;
  };
  auto fits = [&](const AlgorithmOption& o) {
    return !options_.workspace_limit || o.workspace <= options_.workspace_limit;
  };
  auto allowed = [&](const AlgorithmOption* o) { return o && o->declined.empty() && fits(*o); };
  // Why `o` (named `name`) cannot be used here, for the log.
  auto why_not = [&](const std::string& name, const AlgorithmOption* o) -> std::string {
    if (!o) return "'" + name + "' is not one of " + b.name() + "'s algorithms for it";
    if (!o->declined.empty()) return "'" + name + "' declines it (" + o->declined + ")";
    return "'" + name + "' needs " + format_bytes(o->workspace, 1) + " of workspace, over the limit of " +
           format_bytes(options_.workspace_limit, 1);
  };
  // When the wanted one cannot run: the heuristic's, else the allowed one
  // with the least workspace, else none (the backend's default kernel).
  auto fallback = [&]() -> const AlgorithmOption* {
    if (const AlgorithmOption* h = find(c.heuristic); allowed(h)) return h;
    const AlgorithmOption* best = nullptr;
    for (const auto& o : opts)
      if (allowed(&o) && (!best || o.workspace < best->workspace)) best = &o;
    return best;
  };
  auto take = [&](const AlgorithmOption* o, ChoiceSource source) {
    c.source = source;
    if (!o) {
      log(where + ": no algorithm can run within the limits; the backend's default kernel");
      return;
    }
    c.algorithm = o->name;
    c.workspace_bytes = o->workspace;
  };

  switch (options_.mode) {
    case TuningMode::kHeuristic: {
      const AlgorithmOption* h = find(c.heuristic);
      if (!allowed(h)) {
        const AlgorithmOption* f = fallback();
        log(where + ": the heuristic's " + why_not(c.heuristic, h) + "; using " +
            (f ? f->name : std::string("the default")));
        h = f;
      }
      take(h, ChoiceSource::kHeuristic);
      return c;
    }
    case TuningMode::kFixed: {
      const AlgorithmOption* f = find(options_.algorithm);
      if (allowed(f)) {
        take(f, ChoiceSource::kFixed);
        return c;
      }
      const AlgorithmOption* h = fallback();
      log(where + ": " + why_not(options_.algorithm, f) + "; using the heuristic's " +
          (h ? h->name : std::string("default")));
      take(h, ChoiceSource::kHeuristic);
      return c;
    }
    case TuningMode::kCached:
    case TuningMode::kExhaustive:
      break;
  }

  // The same problem earlier in this session: the same answer.
  const std::string key = context + "\n" + c.problem;
  if (auto m = memo_.find(key); m != memo_.end()) {
    TuningChoice again = m->second;
    again.node = c.node;
    again.summary = c.summary;
    return again;
  }
  bool use_file = options_.mode == TuningMode::kCached || options_.write_cache;
  if (options_.mode == TuningMode::kCached) {
    AlgoCache& cc = cache();
    // What other sessions and processes saved since (a server's instances
    // of one model tune the same problems): one stat() when nothing did.
    cc.refresh();
    if (auto hit = cc.find(context, c.problem)) {
      const AlgorithmOption* o = find(hit->algorithm);
      if (allowed(o)) {
        c.algorithm = o->name;
        c.workspace_bytes = o->workspace;
        c.time_ms = hit->time_ms;
        c.source = ChoiceSource::kCache;
        memo_[key] = c;
        return c;
      }
      log(where + ": the cached " + why_not(hit->algorithm, o) + "; measuring again");
    } else if (std::string other = cc.other_versions(context, c.problem); !other.empty() && !retune_noted_[other]) {
      retune_noted_[other] = true;
      auto [theirs, ours] = version_difference(other, context);
      log("algorithm cache " + options_.cache_path + ": cache made with " + theirs + ", this is " + ours +
          ": retuning");
    }
  } else if (use_file) {
    cache();  // read now, so that its warnings come before the choices
  }

  // Measured later, in the background: the heuristic's pick for now, not
  // remembered, so that the tuned plan's choice is the one that stays.
  if (options_.defer_measuring && options_.mode == TuningMode::kCached) {
    const AlgorithmOption* h = find(c.heuristic);
    take(allowed(h) ? h : fallback(), ChoiceSource::kHeuristic);
    c.pending = true;
    return c;
  }
  // Past the run's deadline: no measuring; the heuristic's pick, not
  // remembered, so a later plan without the hurry measures it.
  if (deadline_ && Clock::now() > *deadline_) {
    if (!deadline_noted_) {
      deadline_noted_ = true;
      log("the run's time limit (SessionOptions::run_timeout_seconds) passed while choosing algorithms; the rest of "
          "this plan takes the heuristic's picks, unmeasured and not cached");
    }
    const AlgorithmOption* h = find(c.heuristic);
    take(allowed(h) ? h : fallback(), ChoiceSource::kHeuristic);
    return c;
  }
  if (options_.budget_seconds > 0 && timed_ms_ > options_.budget_seconds * 1000) {
    if (!budget_noted_) {
      budget_noted_ = true;
      log("the tuning budget of " + fmt("%g", options_.budget_seconds) +
          " s of timed runs per plan is spent; the rest of this plan takes the heuristic's picks, unmeasured and "
          "not cached");
    }
    const AlgorithmOption* h = find(c.heuristic);
    take(allowed(h) ? h : fallback(), ChoiceSource::kHeuristic);
    return c;
  }
  // A background tuner measures a problem no other tuner of the process is
  // measuring: another's result, when it had one, is taken as from the cache.
  MeasureClaims::Result published;
  struct Claim {
    std::string key;  // empty: none held
    const MeasureClaims::Result* result = nullptr;
    ~Claim() {
      if (!key.empty()) MeasureClaims::process().done(key, result);
    }
  } claim;
  if (options_.gate && options_.mode == TuningMode::kCached) {
    const std::string claim_key = cache().path() + "\n" + key;
    const MeasureClaims::Answer a = MeasureClaims::process().claim(claim_key, &published, options_.gate);
    if (a == MeasureClaims::Answer::kClaimed) {
      claim.key = claim_key;
    } else if (const AlgorithmOption* o = find(published.algorithm);
               a == MeasureClaims::Answer::kResult && allowed(o)) {
      c.algorithm = o->name;
      c.workspace_bytes = o->workspace;
      c.time_ms = published.time_ms;
      c.source = ChoiceSource::kCache;
      memo_[key] = c;
      return c;
    }
  }
  Measured m = measure(g, n, b, opts, pool);
  c.candidates = m.candidates;
  if (!m.ok) {
    const AlgorithmOption* f = fallback();
    bool any_runnable = std::any_of(opts.begin(), opts.end(), [&](const AlgorithmOption& o) { return allowed(&o); });
    if (any_runnable) log(where + ": every candidate failed; using " + (f ? f->name : std::string("the default")));
    take(f, ChoiceSource::kHeuristic);
    memo_[key] = c;
    return c;
  }
  c.algorithm = m.algorithm;
  c.time_ms = m.time_ms;
  c.workspace_bytes = m.workspace;
  c.source = ChoiceSource::kMeasured;
  if (options_.write_cache) {
    cache().put(context, c.problem, {m.algorithm, m.workspace, m.time_ms, utc_now()});
    *measured_any = true;
  }
  published = {m.algorithm, m.workspace, m.time_ms};
  claim.result = &published;
  memo_[key] = c;
  return c;
}

Tuner::Measured Tuner::measure(const Graph& g, const Node& n, const KernelProvider& b,
                               const std::vector<AlgorithmOption>& opts, ThreadPool& pool) {
  // The node's lazily folded filters (LazyConstant) made for the measuring,
  // on a copy of the graph: the plan makes its own when it makes the kernel.
  const size_t idx = static_cast<size_t>(&n - g.nodes.data());
  if (has_lazy_input(g, n) && idx < g.nodes.size()) {
    Graph local = g;
    materialize_inputs(local, local.nodes[idx]);
    return measure_on(local, local.nodes[idx], b, opts, pool);
  }
  return measure_on(g, n, b, opts, pool);
}

Tuner::Measured Tuner::measure_on(const Graph& g, const Node& n, const KernelProvider& b,
                                  const std::vector<AlgorithmOption>& opts, ThreadPool& pool) {
  // The model's weights it reads in memory while it is measured (make_plan
  // holds no Conv's filters; a plan made beside another none at all).
  WeightHold hold(g.weights);
  for (int v : n.inputs)
    if (v >= 0 && g.values[static_cast<size_t>(v)].constant) hold.add(*g.values[static_cast<size_t>(v)].constant);
  Measured m;
  std::vector<size_t> runnable;  // indices into opts
  for (size_t i = 0; i < opts.size(); ++i) {
    const AlgorithmOption& o = opts[i];
    TuningCandidate t;
    t.algorithm = o.name;
    t.workspace_bytes = o.workspace;
    if (!o.declined.empty()) {
      t.status = CandidateStatus::kDeclined;
      t.reason = o.declined;
    } else if (options_.workspace_limit && o.workspace > options_.workspace_limit) {
      t.status = CandidateStatus::kOverWorkspaceLimit;
      t.reason =
          "needs " + format_bytes(o.workspace, 1) + ", the limit is " + format_bytes(options_.workspace_limit, 1);
    } else {
      runnable.push_back(i);
    }
    m.candidates.push_back(std::move(t));
  }
  auto failed = [&](size_t i, const std::string& why) {
    m.candidates[i].status = CandidateStatus::kFailed;
    m.candidates[i].reason = why;
  };
  auto timed = [&](size_t i, double ms) {
    if (std::isfinite(ms) && ms >= 0)
      m.candidates[i].time_ms = ms;
    else
      failed(i, "no time measured");
  };
  if (runnable.empty()) return m;

  std::vector<std::vector<double>> rounds;  // per runnable candidate, its time in each round (the CPU's timing)
  struct Spent {                            // the budget counts the timed runs
    Tuner& t;
    const std::vector<std::vector<double>>& rounds;
    ~Spent() {
      for (const auto& r : rounds)
        for (double ms : r)
          if (std::isfinite(ms)) t.timed_ms_ += ms;
    }
  } spent{*this, rounds};
  if (options_.time) {
    for (size_t i : runnable) {
      try {
        timed(i, gated(options_.gate, [&] { return options_.time(b, g, n, opts[i]); }));
      } catch (const std::exception& e) {
        failed(i, e.what());
      }
    }
  } else {
    std::vector<AlgorithmOption> list;
    for (size_t i : runnable) list.push_back(opts[i]);
    std::vector<double> own;
    bool done = false;
    try {
      own = gated(options_.gate, [&] { return b.measure_algorithms(g, n, list, options_.workspace_limit); });
      if (own.size() == list.size()) {
        for (size_t k = 0; k < runnable.size(); ++k)
          if (own[k] >= 0)
            timed(runnable[k], own[k]);
          else
            failed(runnable[k], "not timed by " + std::string(b.name()));
        done = true;
      }
    } catch (const std::exception& e) {
      for (size_t i : runnable) failed(i, e.what());
      done = true;
    }
    if (!done) {
      std::unique_ptr<KernelBench> bench;
      try {
        bench = std::make_unique<KernelBench>(b, g, n, pool);
      } catch (const std::exception& e) {
        for (size_t i : runnable) failed(i, e.what());
      }
      if (bench) {
        std::vector<std::string> names, errors;
        for (size_t i : runnable) names.push_back(opts[i].name);
        std::vector<double> ms = bench->time_all(names, options_.min_repeats, options_.max_repeats, options_.target_ms,
                                                 &errors, options_.gate, &rounds);
        for (size_t k = 0; k < runnable.size(); ++k) {
          if (!errors[k].empty())
            failed(runnable[k], errors[k]);
          else
            timed(runnable[k], ms[k]);
        }
      }
    }
  }
  // With rounds, the heuristic's pick stays unless beaten beyond the noise.
  const std::string h = b.heuristic_algorithm(g, n);
  const double within = b.keep_heuristic_within(g, n, options_.keep_heuristic_within);
  size_t hk = runnable.size();
  for (size_t k = 0; k < runnable.size(); ++k)
    if (opts[runnable[k]].name == h && m.candidates[runnable[k]].status == CandidateStatus::kOk) hk = k;
  if (hk < runnable.size() && rounds.size() == runnable.size() && !rounds[hk].empty()) {
    for (size_t k = 0; k < runnable.size(); ++k)
      if (m.candidates[runnable[k]].status != CandidateStatus::kOk) rounds[k].clear();
    std::vector<std::array<double, 3>> ratios;
    const size_t w = choose_by_rounds(rounds, hk, within, &ratios);
    for (size_t k = 0; k < runnable.size(); ++k) {
      TuningCandidate& t = m.candidates[runnable[k]];
      t.vs_heuristic = ratios[k][0];
      t.vs_heuristic_low = ratios[k][1];
      t.vs_heuristic_high = ratios[k][2];
    }
    const TuningCandidate& t = m.candidates[runnable[w]];
    m.ok = true;
    m.algorithm = t.algorithm;
    m.time_ms = t.time_ms;
    m.workspace = t.workspace_bytes;
    return m;
  }
  // The fastest that ran; the first listed among equals.
  for (size_t i : runnable) {
    const TuningCandidate& t = m.candidates[i];
    if (t.status != CandidateStatus::kOk) continue;
    if (!m.ok || t.time_ms < m.time_ms) {
      m.ok = true;
      m.algorithm = t.algorithm;
      m.time_ms = t.time_ms;
      m.workspace = t.workspace_bytes;
    }
  }
  // The heuristic's pick, unless the winner is clearly faster.
  for (size_t i : runnable) {
    const TuningCandidate& t = m.candidates[i];
    if (t.algorithm != h || t.status != CandidateStatus::kOk || !m.ok || t.algorithm == m.algorithm) continue;
    if (t.time_ms <= m.time_ms * (1.0 + within)) {
      m.algorithm = t.algorithm;
      m.time_ms = t.time_ms;
      m.workspace = t.workspace_bytes;
    }
  }
  return m;
}

// The public names of the tuning enums (minirt/tuning.h).
const char* tuning_mode_name(TuningMode m) {
  switch (m) {
    case TuningMode::kCached:
      return "cached";
    case TuningMode::kHeuristic:
      return "heuristic";
    case TuningMode::kExhaustive:
      return "exhaustive";
    case TuningMode::kFixed:
      return "fixed";
  }
  return "?";
}

const char* candidate_status_name(CandidateStatus s) {
  switch (s) {
    case CandidateStatus::kOk:
      return "ok";
    case CandidateStatus::kDeclined:
      return "declined";
    case CandidateStatus::kOverWorkspaceLimit:
      return "over workspace limit";
    case CandidateStatus::kFailed:
      return "failed";
  }
  return "?";
}

const char* choice_source_name(ChoiceSource s) {
  switch (s) {
    case ChoiceSource::kMeasured:
      return "measured";
    case ChoiceSource::kCache:
      return "cache";
    case ChoiceSource::kHeuristic:
      return "heuristic";
    case ChoiceSource::kFixed:
      return "fixed";
  }
  return "?";
}

std::string to_string(const TuningChoice& c) { return choice_line(c); }

std::string to_string(const PlanSwap& s) {
  std::string out = "the tuned plan took over " + fmt("%.2f s", s.seconds) + " after the first plan, at run " +
                    std::to_string(s.runs_before + 1) + " (" + fmt("%.2f s", s.tuning_seconds) +
                    " tuning): " + std::to_string(s.changed) + " of " + std::to_string(s.measured) +
                    " choices measured changed";
  if (s.changed && s.before_ms > 0)
    out += ", " + fmt(s.before_ms < 1 ? "%.3f" : "%.2f", s.before_ms) + " -> " +
           fmt(s.after_ms < 1 ? "%.3f ms" : "%.2f ms", s.after_ms) + " on them";
  return out;
}

}  // namespace minirt
