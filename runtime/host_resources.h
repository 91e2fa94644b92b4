// What this process may use of the machine: cores and memory, as the kernel
// will enforce them (CPU affinity, the cgroup's CPU quota and memory limit,
// ulimit -v), not as the hardware has them. A container with a 2-CPU quota
// on a 64-core host has 2 cores here.
//
//   CoreCount c = count_cores();          // c.usable, c.describe()
//   int n = resolve_threads(0);           // all usable cores
//   resolve_threads(100000);              // throws kInvalidArgument, naming the ceiling
//   MemoryRoom m = memory_room();         // m.available(), m.describe()
//   check_host_room(bytes, "Winograd weights of conv3");  // throws kOutOfMemory when it cannot fit
//
// Files are read below `root` ("/" normally; a folder of fake /proc and
// /sys/fs/cgroup files in tests). Both cgroup versions are read: v2's
// cpu.max, memory.max and memory.current; v1's cpu.cfs_quota_us,
// cpu.cfs_period_us, memory.limit_in_bytes and memory.usage_in_bytes, at the
// process's own cgroup and every level above it up to the mount (the
// tightest counts).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace minirt {

struct CoreCount {
  int online = 1;           // processors the system has online
  int affinity = 0;         // processors in this thread's affinity mask (0: unknown)
  double cgroup_cpus = 0;   // the cgroup CPU quota in CPUs, e.g. 1.5 (0: no quota)
  std::string cgroup_file;  // where that quota was read
  int usable = 1;           // min(online, affinity, ceil(quota)), at least 1
  // "2 cores (affinity 2 of 2 online, no cgroup CPU quota)"
  std::string describe() const;
};

// sched_getaffinity of the calling thread, the cgroup quota and the online count.
CoreCount count_cores(const std::string& root = "/");

// Intra-op threads accepted per session: 4 x the usable cores, at least 8
// (so tests and small containers may still oversubscribe), at most
// kHardMaxThreads whatever the machine.
constexpr int kHardMaxThreads = 1024;
int max_threads(const CoreCount& cores);

// The thread count for SessionOptions::threads: 0 gives the usable cores;
// a negative count or one above max_threads() throws kInvalidArgument with a
// sentence naming the value, the ceiling and the cores seen.
int resolve_threads(int requested, const CoreCount& cores);
int resolve_threads(int requested);

// Memory this process can still get, from the sources the kernel enforces.
// Each limit is 0 when unknown or absent.
struct MemoryRoom {
  size_t mem_available = 0;  // /proc/meminfo MemAvailable
  size_t cgroup_limit = 0;   // the tightest cgroup memory limit
  size_t cgroup_usage = 0;   // that cgroup's usage
  std::string cgroup_file;   // where that limit was read
  size_t address_limit = 0;  // RLIMIT_AS (ulimit -v)
  size_t address_used = 0;   // VmSize of this process
  // The least room of the known sources; 0 when none is known.
  size_t available() const;
  // "21.3 GiB: MemAvailable 21.3 GiB, cgroup memory limit 2.00 GiB with
  // 1.20 GiB in use (/sys/fs/cgroup/memory.max), ulimit -v not set"
  std::string describe() const;
};

// Reads the files below `root`; RLIMIT_AS comes from getrlimit (only when
// root is "/").
MemoryRoom memory_room(const std::string& root = "/");

// Host allocations at least this large are checked against memory_room()
// before they are made (smaller ones are not worth reading /proc for).
constexpr size_t kHostRoomCheckBytes = size_t{64} << 20;

// Throws Error(kOutOfMemory) naming `what`, the bytes and memory_room() when
// `bytes` (at least kHostRoomCheckBytes; smaller ones return at once)
// exceeds what the process can get. Under Linux's overcommit such an
// allocation would succeed and the process would be killed later, when the
// memory is touched. Callers that build `what` guard the call with
// kHostRoomCheckBytes themselves, so that small allocations build nothing.
void check_host_room(size_t bytes, std::string_view what);

}  // namespace minirt
