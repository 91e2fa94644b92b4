#include "runtime/host_memory.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>

namespace minirt {

namespace {
size_t round64(size_t bytes) { return bytes == 0 ? 64 : (bytes + 63) / 64 * 64; }
}  // namespace

void* host_alloc(size_t bytes, bool* zeroed, bool populate) {
  if (zeroed) *zeroed = false;
  if (bytes > SIZE_MAX - 64) return nullptr;
  const size_t n = round64(bytes);
  if (n < kHostMapBytes) return std::aligned_alloc(64, n);
  void* p =
      ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | (populate ? MAP_POPULATE : 0), -1, 0);
  if (p == MAP_FAILED) return nullptr;
  if (zeroed) *zeroed = true;
  return p;
}

void host_free(void* p, size_t bytes) {
  if (!p) return;
  const size_t n = round64(bytes);
  if (n < kHostMapBytes)
    std::free(p);
  else
    ::munmap(p, n);
}

}  // namespace minirt
