#include "runtime/algo_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/file.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace minirt {

namespace fs = std::filesystem;

namespace {

constexpr const char* kMagic = "minirt-algo-cache";
constexpr size_t kMaxLine = 4096;
constexpr size_t kMaxName = 64;

bool printable(const std::string& s) {
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return false;
  return true;
}

bool valid_algorithm_name(const std::string& s) {
  if (s.empty() || s.size() > kMaxName) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '+')) return false;
  return true;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  size_t e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// YYYY-MM-DDTHH:MM:SSZ exactly, so a line cut short is recognized as such.
bool valid_timestamp(const std::string& t) {
  static const char* shape = "dddd-dd-ddTdd:dd:ddZ";
  if (t.size() != std::strlen(shape)) return false;
  for (size_t i = 0; i < t.size(); ++i)
    if (shape[i] == 'd' ? !std::isdigit(static_cast<unsigned char>(t[i])) : t[i] != shape[i]) return false;
  return true;
}

// "PROBLEM -> ALGO ws=N ms=T at=WHEN"
bool parse_entry(const std::string& line, std::string& problem, AlgoChoice& c) {
  size_t arrow = line.find(" -> ");
  if (arrow == std::string::npos || arrow == 0) return false;
  problem = trim(line.substr(0, arrow));
  std::istringstream rest(line.substr(arrow + 4));
  std::string ws, ms, at;
  if (!(rest >> c.algorithm >> ws >> ms >> at)) return false;
  std::string extra;
  if (rest >> extra) return false;
  if (!valid_algorithm_name(c.algorithm) || problem.empty() || !printable(problem)) return false;
  if (ws.rfind("ws=", 0) != 0 || ms.rfind("ms=", 0) != 0 || at.rfind("at=", 0) != 0) return false;
  char* end = nullptr;
  errno = 0;
  unsigned long long w = std::strtoull(ws.c_str() + 3, &end, 10);
  if (errno || *end || ws.size() == 3 || w > (1ull << 40)) return false;
  double t = std::strtod(ms.c_str() + 3, &end);
  if (*end || ms.size() == 3 || !std::isfinite(t) || t < 0 || t > 1e7) return false;
  c.workspace = w;
  c.time_ms = t;
  c.measured_at = at.substr(3);
  return valid_timestamp(c.measured_at);
}

}  // namespace

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string AlgoCache::default_path() {
  if (const char* p = std::getenv("MINIRT_ALGO_CACHE"); p && *p) return p;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return (fs::path(x) / "minirt" / "algo_cache.txt").string();
  if (const char* h = std::getenv("HOME"); h && *h)
    return (fs::path(h) / ".cache" / "minirt" / "algo_cache.txt").string();
  return (fs::temp_directory_path() / "minirt" / "algo_cache.txt").string();
}

std::vector<std::string> AlgoCache::context_fields(const std::string& context) {
  std::vector<std::string> out;
  std::stringstream ss(context);
  std::string part;
  while (std::getline(ss, part, '|')) out.push_back(trim(part));
  return out;
}

AlgoCache::AlgoCache(std::string path) : path_(std::move(path)) {
  seen_ = stamp();
  read_into(entries_, true);
}

AlgoCache::Stamp AlgoCache::stamp() const {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) return {};
  return {.inode = static_cast<uint64_t>(st.st_ino),
          .size = static_cast<uint64_t>(st.st_size),
          .mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
}

bool AlgoCache::refresh() {
  const Stamp now = stamp();
  if (now == seen_) return false;
  seen_ = now;
  Table fresh;
  if (!read_into(fresh, false)) return false;
  entries_ = std::move(fresh);
  return true;
}

bool AlgoCache::read_into(Table& table, bool report) {
  std::error_code ec;
  if (!fs::exists(path_, ec)) return true;
  auto warn = [&](const std::string& w) {
    if (report) warnings_.push_back("algorithm cache " + path_ + ": " + w);
  };
  if (!fs::is_regular_file(path_, ec)) {
    warn("not a regular file; ignored");
    foreign_ = true;
    return false;
  }
  auto size = fs::file_size(path_, ec);
  if (ec || size > kMaxFileBytes) {
    warn("larger than " + std::to_string(kMaxFileBytes >> 20) + " MiB; ignored (delete it to start afresh)");
    foreign_ = true;
    return false;
  }
  std::ifstream f(path_, std::ios::binary);
  if (!f) {
    warn("cannot be read; ignored");
    return false;
  }
  std::string line;
  if (!std::getline(f, line) || trim(line).rfind(kMagic, 0) != 0) {
    warn("not a minirt algorithm cache (no '" + std::string(kMagic) + "' header); ignored and left untouched");
    foreign_ = true;
    return false;
  }
  int version = std::atoi(trim(line).c_str() + std::strlen(kMagic));
  if (version != kFormatVersion) {
    warn("format version " + std::to_string(version) + ", this minirt reads version " + std::to_string(kFormatVersion) +
         "; ignored (it will be rewritten)");
    return false;
  }
  Table parsed;
  std::string context;
  int lineno = 1, bad = 0;
  while (std::getline(f, line)) {
    ++lineno;
    if (line.size() > kMaxLine || !printable(trim(line))) {
      ++bad;
      continue;
    }
    std::string t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    if (t.front() == '[') {
      if (t.back() != ']' || t.size() < 3) {
        ++bad;
        context.clear();
        continue;
      }
      context = t.substr(1, t.size() - 2);
      continue;
    }
    std::string problem;
    AlgoChoice c;
    if (context.empty() || !parse_entry(t, problem, c)) {
      ++bad;
      continue;
    }
    parsed[context][problem] = c;
  }
  if (!f.eof()) warn("read error; what was read is used");
  if (bad) {
    // A damaged file is not trusted at all: a truncated or edited entry could
    // name a wrong algorithm for its shape.
    warn(std::to_string(bad) + " damaged line(s); the whole file is ignored and will be rewritten");
    return false;
  }
  for (auto& [ctx, problems] : parsed)
    for (auto& [p, c] : problems) table[ctx][p] = c;
  return true;
}

std::optional<AlgoChoice> AlgoCache::find(const std::string& context, const std::string& problem) const {
  for (const Table* t : {&added_, &entries_}) {
    auto c = t->find(context);
    if (c == t->end()) continue;
    auto p = c->second.find(problem);
    if (p != c->second.end()) return p->second;
  }
  return std::nullopt;
}

std::string AlgoCache::other_versions(const std::string& context, const std::string& problem) const {
  auto mine = context_fields(context);
  for (const auto& [ctx, problems] : entries_) {
    if (ctx == context || !problems.count(problem)) continue;
    auto theirs = context_fields(ctx);
    if (theirs.size() >= 2 && mine.size() >= 2 && theirs[0] == mine[0] && theirs[1] == mine[1]) return ctx;
  }
  return {};
}

void AlgoCache::put(const std::string& context, const std::string& problem, AlgoChoice choice) {
  // What the file could not hold, or would read back as damaged, is not kept.
  bool ok_context =
      !context.empty() && printable(context) && context.find(']') == std::string::npos && context.size() < kMaxLine;
  bool ok_problem = !problem.empty() && printable(problem) && problem.find(" -> ") == std::string::npos &&
                    trim(problem) == problem && problem[0] != '[' && problem[0] != '#' && problem.size() < kMaxLine / 2;
  if (!ok_context || !ok_problem || !valid_algorithm_name(choice.algorithm)) {
    warnings_.push_back("algorithm cache " + path_ + ": not keeping '" + choice.algorithm + "' for '" + problem +
                        "': the file cannot hold that name");
    return;
  }
  added_[context][problem] = std::move(choice);
}

size_t AlgoCache::size() const {
  size_t n = 0;
  for (const Table* t : {&entries_, &added_})
    for (const auto& [c, p] : *t) n += p.size();
  return n;
}

std::string AlgoCache::render(const Table& table) const {
  std::ostringstream os;
  os << kMagic << " " << kFormatVersion << "\n";
  os << "# Convolution algorithms chosen by measurement. One section per backend, device,\n"
        "# library versions, math mode and dtype; entries of other versions are kept but not used.\n";
  for (const auto& [ctx, problems] : table) {
    os << "[" << ctx << "]\n";
    for (const auto& [p, c] : problems) {
      char ms[32];
      std::snprintf(ms, sizeof ms, "%.4f", c.time_ms);
      os << p << " -> " << c.algorithm << " ws=" << c.workspace << " ms=" << ms << " at=" << c.measured_at << "\n";
    }
  }
  return os.str();
}

bool AlgoCache::save() {
  if (added_.empty()) return true;
  if (foreign_) {
    warnings_.push_back("algorithm cache " + path_ + ": not writing over a file that is not a minirt cache");
    return false;
  }
  std::error_code ec;
  fs::path target(path_);
  fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  fs::create_directories(dir, ec);
  // One writer at a time: an advisory lock on a file beside the cache.
  std::string lock_path = path_ + ".lock";
  int lock = ::open(lock_path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (lock < 0 || ::flock(lock, LOCK_EX) != 0) {
    if (lock >= 0) ::close(lock);
    warnings_.push_back("algorithm cache " + path_ + ": cannot lock " + lock_path + " (" + std::strerror(errno) +
                        "); choices not saved");
    return false;
  }
  // What other processes wrote since we read, then ours on top.
  Table merged;
  read_into(merged, false);
  if (foreign_) {  // replaced by something else since we read it
    ::flock(lock, LOCK_UN);
    ::close(lock);
    warnings_.push_back("algorithm cache " + path_ + ": not writing over a file that is not a minirt cache");
    return false;
  }
  for (auto& [ctx, problems] : added_)
    for (auto& [p, c] : problems) merged[ctx][p] = c;
  std::string text = render(merged);
  std::mt19937_64 rng(std::random_device{}());
  fs::path tmp =
      dir / (target.filename().string() + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(rng() % 1000000));
  bool ok = false;
  {
    int fd = ::open(tmp.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
    if (fd >= 0) {
      ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
      ok = (::close(fd) == 0) && ok;
    }
  }
  if (ok) ok = std::rename(tmp.c_str(), target.c_str()) == 0;
  if (!ok) {
    warnings_.push_back("algorithm cache " + path_ + ": cannot write (" + std::strerror(errno) +
                        "); choices not saved");
    fs::remove(tmp, ec);
  } else {
    entries_ = std::move(merged);
    added_.clear();
    seen_ = stamp();
  }
  ::flock(lock, LOCK_UN);
  ::close(lock);
  return ok;
}

}  // namespace minirt
