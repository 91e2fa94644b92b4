// The algorithm cache: which algorithm to run for a convolution on this
// device with these library versions, as measured earlier, kept in a
// human-readable file across processes.
//
//   AlgoCache cache(AlgoCache::default_path());
//   std::string ctx = "cpu | AMD EPYC | avx512f | minirt 0.1.0 | eigen 3.4.0 | fp32 | float32";
//   if (auto hit = cache.find(ctx, problem)) use(hit->algorithm);
//   else { measure...; cache.put(ctx, problem, {.algorithm = "winograd_f4x4", ...}); cache.save(); }
//
// The file is only read, never trusted: a file that is not a minirt cache,
// or is damaged, is reported (warnings()) and ignored; entries are checked
// one by one; sizes are bounded. Writes go through a temporary file in the
// same folder and a rename, under an advisory lock, merging with what other
// processes wrote meanwhile, so two processes tuning at once lose nothing.
//
// File format, version 1:
//   minirt-algo-cache 1
//   [CONTEXT]                       backend, device, versions, math, dtype
//   PROBLEM -> ALGORITHM ws=BYTES ms=TIME at=WHEN
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace minirt {

struct AlgoChoice {
  std::string algorithm;
  uint64_t workspace = 0;   // bytes
  double time_ms = 0;       // measured median
  std::string measured_at;  // UTC, ISO 8601
};

class AlgoCache {
 public:
  static constexpr int kFormatVersion = 1;
  static constexpr size_t kMaxFileBytes = 16u << 20;

  // $MINIRT_ALGO_CACHE, else $XDG_CACHE_HOME/minirt/algo_cache.txt, else
  // ~/.cache/minirt/algo_cache.txt.
  static std::string default_path();

  // Reads the file if it exists; never throws for its content.
  explicit AlgoCache(std::string path);

  const std::string& path() const { return path_; }
  std::optional<AlgoChoice> find(const std::string& context, const std::string& problem) const;
  // A context in the file that has this problem but differs from `context`
  // only in its versions (same backend and device): the cache was made with
  // other library versions. Empty when there is none.
  std::string other_versions(const std::string& context, const std::string& problem) const;
  void put(const std::string& context, const std::string& problem, AlgoChoice choice);
  // Merges with the file's current content and writes it atomically.
  // Returns false (with a warning) when it could not write.
  bool save();
  // Reads the file again when it changed since this cache last read or
  // wrote it (another session or process saved choices meanwhile): one
  // stat() when it did not. What put() added and was not saved stays.
  // Returns true when it read it again.
  bool refresh();

  size_t size() const;
  // What reading or writing found wrong, as sentences for the log.
  const std::vector<std::string>& warnings() const { return warnings_; }

  // Splits "a | b | c" into fields; the first two are the backend and device.
  static std::vector<std::string> context_fields(const std::string& context);

 private:
  using Table = std::map<std::string, std::map<std::string, AlgoChoice>>;  // context -> problem -> choice
  bool read_into(Table& table, bool report);
  // The file as last read or written: inode (each save renames a new file
  // in), size and modification time; all 0 when there was none.
  struct Stamp {
    uint64_t inode = 0, size = 0;
    int64_t mtime_ns = 0;
    bool operator==(const Stamp&) const = default;
  };
  Stamp stamp() const;
  std::string render(const Table& table) const;

  std::string path_;
  Table entries_;
  Table added_;  // put() since the last save
  std::vector<std::string> warnings_;
  bool foreign_ = false;  // the file exists and is not a minirt cache: never overwrite it
  Stamp seen_;
};

// The current time as UTC ISO 8601, for AlgoChoice::measured_at.
std::string utc_now();

}  // namespace minirt
