// Shared by the fake CUDA libraries: exported C functions and behaviour read
// from environment variables at call time, so one build of each fake plays
// every case the probe tests need.
#pragma once

#include <cstdlib>
#include <cstring>

#define FAKE_API extern "C" __attribute__((visibility("default")))

namespace fake {

inline long env_int(const char* name, long fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  return std::strtol(v, nullptr, 10);
}

inline const char* env_str(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

}  // namespace fake
