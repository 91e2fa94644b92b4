// Byte counts in words: the one formatter of the runtime's messages, the
// plan report, the tuner and the tools (header only, so the tools that use
// the public API alone need no core symbol).
//
//   format_bytes(512)              "512 B"
//   format_bytes(1536)             "1.5 KiB"
//   format_bytes(3 << 19)          "1.50 MiB"
//   format_bytes(size_t{5} << 30)  "5.00 GiB"
//   format_bytes(3 << 19, 1)       "1.5 MiB"  (the tuner's and convprof's form)
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>

namespace minirt {

// `decimals` applies to MiB and GiB; KiB always have one.
inline std::string format_bytes(size_t b, int decimals = 2) {
  char buf[64];
  double x = static_cast<double>(b);
  if (b >= (size_t{1} << 30))
    std::snprintf(buf, sizeof buf, "%.*f GiB", decimals, x / 1073741824.0);
  else if (b >= (size_t{1} << 20))
    std::snprintf(buf, sizeof buf, "%.*f MiB", decimals, x / 1048576.0);
  else if (b >= 1024)
    std::snprintf(buf, sizeof buf, "%.1f KiB", x / 1024.0);
  else
    std::snprintf(buf, sizeof buf, "%zu B", b);
  return buf;
}

}  // namespace minirt
