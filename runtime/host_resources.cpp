#include "runtime/host_resources.h"

#include <minirt/error.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <vector>

#include "runtime/memory_pool.h"

namespace minirt {

namespace {

std::string join_root(const std::string& root, const std::string& path) {
  if (root.empty() || root == "/") return path;
  std::string r = root;
  while (!r.empty() && r.back() == '/') r.pop_back();
  return r + path;
}

bool read_first_line(const std::string& file, std::string* line) {
  std::ifstream f(file);
  return f && std::getline(f, *line);
}

bool parse_u64(const std::string& s, unsigned long long* v) {
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  if (i == s.size() || s[i] < '0' || s[i] > '9') return false;
  unsigned long long x = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    unsigned d = static_cast<unsigned>(s[i] - '0');
    if (x > (std::numeric_limits<unsigned long long>::max() - d) / 10) return false;
    x = x * 10 + d;
  }
  *v = x;
  return true;
}

// A "Key:   123 kB" line of /proc/meminfo or /proc/self/status, in bytes.
bool read_kb_field(const std::string& file, const std::string& key, size_t* bytes) {
  std::ifstream f(file);
  std::string line;
  while (std::getline(f, line)) {
    if (line.compare(0, key.size(), key) != 0) continue;
    unsigned long long kb = 0;
    if (!parse_u64(line.substr(key.size()), &kb)) return false;
    *bytes = static_cast<size_t>(kb) * 1024;
    return true;
  }
  return false;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) out.push_back(cur);
  if (!s.empty() && s.back() == sep) out.emplace_back();
  return out;
}

// The folders of this process's cgroup for `controller`, innermost first, up
// to the hierarchy's mount point: v1 (a hierarchy with that controller) when
// there is one, else v2 (the unified hierarchy).
std::vector<std::string> cgroup_dirs(const std::string& root, const std::string& controller) {
  struct Mount {
    std::string mount_root, point;
    bool v2 = false;
    std::vector<std::string> options;
  };
  std::vector<Mount> mounts;
  {
    std::ifstream f(join_root(root, "/proc/self/mountinfo"));
    std::string line;
    while (std::getline(f, line)) {
      size_t dash = line.find(" - ");
      if (dash == std::string::npos) continue;
      std::istringstream pre(line.substr(0, dash)), post(line.substr(dash + 3));
      std::string id, parent, dev, mroot, point, fstype, source, super;
      pre >> id >> parent >> dev >> mroot >> point;
      post >> fstype >> source >> super;
      if (fstype != "cgroup" && fstype != "cgroup2") continue;
      mounts.push_back({mroot, point, fstype == "cgroup2", split(super, ',')});
    }
  }
  std::string v1_path, v2_path;
  bool v1 = false, v2 = false;
  {
    std::ifstream f(join_root(root, "/proc/self/cgroup"));
    std::string line;
    while (std::getline(f, line)) {
      size_t a = line.find(':');
      size_t b = a == std::string::npos ? a : line.find(':', a + 1);
      if (b == std::string::npos) continue;
      std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
      if (line.compare(0, a, "0") == 0 && controllers.empty()) {
        v2 = true;
        v2_path = path;
        continue;
      }
      for (const std::string& c : split(controllers, ','))
        if (c == controller) {
          v1 = true;
          v1_path = path;
        }
    }
  }
  auto dirs_below = [&](const Mount& m, std::string path) {
    // Where the mount shows only part of the hierarchy (a container without
    // a cgroup namespace), the process's path starts with the mount's root.
    if (m.mount_root != "/" && path.compare(0, m.mount_root.size(), m.mount_root) == 0)
      path = path.substr(m.mount_root.size());
    std::vector<std::string> out;
    std::string top = join_root(root, m.point);
    for (;;) {
      while (path.size() > 1 && path.back() == '/') path.pop_back();
      out.push_back(path.empty() || path == "/" ? top : top + path);
      if (path.empty() || path == "/") break;
      size_t slash = path.rfind('/');
      path = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
    }
    return out;
  };
  if (v1)
    for (const Mount& m : mounts)
      if (!m.v2 && std::find(m.options.begin(), m.options.end(), controller) != m.options.end())
        return dirs_below(m, v1_path);
  if (v2)
    for (const Mount& m : mounts)
      if (m.v2) return dirs_below(m, v2_path);
  return {};
}

std::string plural_cores(int n) { return std::to_string(n) + (n == 1 ? " core" : " cores"); }

}  // namespace

// ---- cores ----

std::string CoreCount::describe() const {
  std::string s = plural_cores(usable) + " (";
  s += affinity > 0 ? "affinity " + std::to_string(affinity) + " of " + std::to_string(online) + " online"
                    : std::to_string(online) + " online, affinity unknown";
  if (cgroup_cpus > 0) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3g", cgroup_cpus);
    s += ", cgroup CPU quota " + std::string(buf) + " (" + cgroup_file + ")";
  } else {
    s += ", no cgroup CPU quota";
  }
  return s + ")";
}

CoreCount count_cores(const std::string& root) {
  CoreCount c;
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  c.online = online > 0 ? static_cast<int>(online) : 1;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) c.affinity = CPU_COUNT(&set);
  for (const std::string& dir : cgroup_dirs(root, "cpu")) {
    std::string line;
    double cpus = 0;
    std::string file;
    if (read_first_line(dir + "/cpu.max", &line)) {  // v2: "max 100000" or "150000 100000"
      file = dir + "/cpu.max";
      unsigned long long quota = 0, period = 0;
      size_t sp = line.find(' ');
      if (sp != std::string::npos && parse_u64(line.substr(0, sp), &quota) && parse_u64(line.substr(sp + 1), &period) &&
          period > 0)
        cpus = static_cast<double>(quota) / static_cast<double>(period);
    } else if (read_first_line(dir + "/cpu.cfs_quota_us", &line)) {  // v1: -1 for none
      file = dir + "/cpu.cfs_quota_us";
      unsigned long long quota = 0, period = 0;
      std::string pline;
      if (parse_u64(line, &quota) && read_first_line(dir + "/cpu.cfs_period_us", &pline) && parse_u64(pline, &period) &&
          period > 0)
        cpus = static_cast<double>(quota) / static_cast<double>(period);
    }
    if (cpus > 0 && (c.cgroup_cpus == 0 || cpus < c.cgroup_cpus)) {
      c.cgroup_cpus = cpus;
      c.cgroup_file = file;
    }
  }
  int usable = c.online;
  if (c.affinity > 0) usable = std::min(usable, c.affinity);
  if (c.cgroup_cpus > 0) usable = std::min(usable, static_cast<int>(std::ceil(c.cgroup_cpus - 1e-9)));
  c.usable = std::max(usable, 1);
  return c;
}

int max_threads(const CoreCount& cores) { return std::min(std::max(4 * cores.usable, 8), kHardMaxThreads); }

int resolve_threads(int requested, const CoreCount& cores) {
  if (requested == 0) return cores.usable;
  int ceiling = max_threads(cores);
  if (requested < 0 || requested > ceiling)
    throw Error(
        ErrorCode::kInvalidArgument,
        "SessionOptions: threads is " + std::to_string(requested) + ", " +
            (requested < 0 ? std::string("a negative count") : "more than the ceiling of " + std::to_string(ceiling)) +
            " (4 x the usable cores, at least 8, at most " + std::to_string(kHardMaxThreads) +
            "); this process may use " + cores.describe() + "; give a count from 1 to " + std::to_string(ceiling) +
            ", or 0 for all usable cores");
  return requested;
}

int resolve_threads(int requested) { return resolve_threads(requested, count_cores()); }

// ---- memory ----

size_t MemoryRoom::available() const {
  size_t room = 0;
  auto take = [&](size_t r) { room = room == 0 ? r : std::min(room, r); };
  if (mem_available) take(mem_available);
  if (cgroup_limit) take(cgroup_limit > cgroup_usage ? cgroup_limit - cgroup_usage : 1);
  if (address_limit) take(address_limit > address_used ? address_limit - address_used : 1);
  return room;
}

std::string MemoryRoom::describe() const {
  size_t a = available();
  std::string s = a ? format_bytes(a) : std::string("unknown");
  s += " (MemAvailable " + (mem_available ? format_bytes(mem_available) : std::string("unknown"));
  if (cgroup_limit)
    s += "; cgroup memory limit " + format_bytes(cgroup_limit) + " with " + format_bytes(cgroup_usage) + " in use, " +
         cgroup_file;
  else
    s += "; no cgroup memory limit";
  if (address_limit)
    s += "; ulimit -v " + format_bytes(address_limit) + " with " + format_bytes(address_used) +
         " of address space in use";
  return s + ")";
}

MemoryRoom memory_room(const std::string& root) {
  MemoryRoom m;
  read_kb_field(join_root(root, "/proc/meminfo"), "MemAvailable:", &m.mem_available);
  size_t best_room = 0;
  for (const std::string& dir : cgroup_dirs(root, "memory")) {
    std::string lim, use, file;
    unsigned long long limit = 0, usage = 0;
    if (read_first_line(dir + "/memory.max", &lim)) {  // v2: "max" for none
      file = dir + "/memory.max";
      read_first_line(dir + "/memory.current", &use);
    } else if (read_first_line(dir + "/memory.limit_in_bytes", &lim)) {  // v1: a huge number for none
      file = dir + "/memory.limit_in_bytes";
      read_first_line(dir + "/memory.usage_in_bytes", &use);
    } else {
      continue;
    }
    if (!parse_u64(lim, &limit) || limit >= (1ull << 60)) continue;
    parse_u64(use, &usage);
    size_t room = limit > usage ? static_cast<size_t>(limit - usage) : 0;
    if (m.cgroup_limit == 0 || room < best_room) {
      best_room = room;
      m.cgroup_limit = static_cast<size_t>(limit);
      m.cgroup_usage = static_cast<size_t>(usage);
      m.cgroup_file = file;
    }
  }
  if (root.empty() || root == "/") {
    rlimit rl{};
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
      m.address_limit = static_cast<size_t>(rl.rlim_cur);
      read_kb_field("/proc/self/status", "VmSize:", &m.address_used);
    }
  }
  return m;
}

void check_host_room(size_t bytes, std::string_view what) {
  if (bytes < kHostRoomCheckBytes) return;
  MemoryRoom m = memory_room();
  size_t room = m.available();
  if (room == 0 || bytes <= room) return;
  throw Error(ErrorCode::kOutOfMemory, "cannot allocate " + format_bytes(bytes) + " (" + std::to_string(bytes) +
                                           " bytes) for " + std::string(what) + ": this process can get " +
                                           m.describe() +
                                           "; use a smaller batch or input shape, or give the process more memory");
}

}  // namespace minirt
