// MeasureClaims (runtime/tuner.h): one measuring of a problem at a time in
// the process, among the background tuners.
#include "runtime/tuner.h"

#include <chrono>

namespace minirt {

MeasureClaims& MeasureClaims::process() {
  static MeasureClaims claims;
  return claims;
}

MeasureClaims::Answer MeasureClaims::claim(const std::string& key, Result* out, const SampleGate* gate,
                                           double patience) {
  std::unique_lock<std::mutex> lock(mu_);
  Entry& e = entries_[key];  // std::map: the reference outlives other keys' changes
  if (e.has_result) {        // handed to others waiting just now: as fresh for this one
    *out = e.result;
    return Answer::kResult;
  }
  if (!e.busy) {
    e.busy = true;
    e.owner = gate;
    return Answer::kClaimed;
  }
  // Another tuner measures it: wait for its result, or its claim back (it stopped).
  ++e.waiters;
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(patience);
  for (;;) {
    cv_.wait_for(lock, std::chrono::milliseconds(20));
    if (e.has_result) {
      *out = e.result;
      --e.waiters;
      forget_if_idle(key);
      return Answer::kResult;
    }
    if (!e.busy) {
      --e.waiters;
      e.busy = true;
      e.owner = gate;
      return Answer::kClaimed;
    }
    const bool stop = gate && gate->stopping();
    if (stop || std::chrono::steady_clock::now() >= until || (e.owner && e.owner->paused())) {
      --e.waiters;
      if (stop) throw TuningStopped{};
      return Answer::kAlone;  // measured twice rather than not at all
    }
  }
}

void MeasureClaims::done(const std::string& key, const Result* result) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    Entry& e = entries_[key];
    e.busy = false;
    e.owner = nullptr;
    if (result && e.waiters > 0) {
      e.has_result = true;
      e.result = *result;
    }
    forget_if_idle(key);
  }
  cv_.notify_all();
}

int MeasureClaims::waiters(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  return it == entries_.end() ? 0 : it->second.waiters;
}

void MeasureClaims::forget_if_idle(const std::string& key) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return;
  Entry& e = it->second;
  if (e.waiters == 0 && !e.busy) entries_.erase(it);  // a result no one waits for goes too
}

}  // namespace minirt
