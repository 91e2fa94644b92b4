// Guard values for kernel tests: buffers (and the floats past their end)
// are filled with a NaN no kernel computes before a run, so a write past the
// end or a read of a slot the kernel never wrote shows up afterwards.
#pragma once

#include <cstdint>
#include <cstring>

namespace minirt::testing {

inline constexpr uint32_t kPoison = 0x7fc0dead;  // a NaN nothing computes

inline bool is_poison(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u == kPoison;
}

template <typename N>
inline void poison(float* p, N n) {
  for (N i = 0; i < n; ++i) std::memcpy(p + i, &kPoison, 4);
}

}  // namespace minirt::testing
