#include "runtime/memory_pool.h"

#include "runtime/host_memory.h"
#include "runtime/host_resources.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>

namespace minirt {

namespace {

constexpr size_t kHostAlignment = 64;

// Rounds up to a multiple of `step` (a power of two or not); false on overflow.
bool round_up(size_t n, size_t step, size_t& out) {
  size_t r = n % step;
  if (r == 0) {
    out = n;
    return true;
  }
  if (n > std::numeric_limits<size_t>::max() - (step - r)) return false;
  out = n + (step - r);
  return true;
}

std::string plural(uint64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string percent(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * f);
  return buf;
}

// A fraction as a percentage with up to three significant digits: "25%", "0.01%".
std::string fraction_percent(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g%%", 100.0 * f);
  return buf;
}

}  // namespace

// ---- HostAllocator ----

void* HostAllocator::allocate(size_t bytes) {
  size_t n = 0;
  if (bytes == 0 || !round_up(bytes, kHostAlignment, n)) return nullptr;
  return host_alloc(n);
}

void HostAllocator::deallocate(void* p, size_t bytes) {
  size_t n = 0;
  if (round_up(bytes, kHostAlignment, n)) host_free(p, n);
}

size_t HostAllocator::free_memory() const { return memory_room().available(); }

size_t HostAllocator::backed_room(std::string* detail) const {
  MemoryRoom m = memory_room();
  if (detail) *detail = m.describe();
  return m.available();
}

// ---- MemoryPool ----

MemoryPool::MemoryPool(std::shared_ptr<RawAllocator> raw, PoolOptions options)
    : raw_(std::move(raw)), options_(options) {
  if (!raw_) throw Error(ErrorCode::kInvalidArgument, "memory pool: the raw allocator is null");
  size_t a = options_.alignment;
  if (a == 0 || (a & (a - 1)) != 0 || a > kHostAlignment)
    throw Error(ErrorCode::kInvalidArgument,
                "memory pool: the alignment must be a power of two up to 64 bytes, got " + std::to_string(a));
  if (options_.segment_granularity == 0) options_.segment_granularity = a;
  if (!round_up(options_.segment_granularity, a, options_.segment_granularity))
    throw Error(ErrorCode::kInvalidArgument, "memory pool: the segment granularity is too large");
  if (options_.policy != PoolPolicy::kPreallocate) return;

  double f = options_.preallocate_fraction;
  if (!(f > 0.0 && f <= 1.0))
    throw Error(
        ErrorCode::kInvalidArgument,
        "memory pool: the preallocate policy needs a fraction of free memory in (0, 1], got " + std::to_string(f));
  size_t avail = raw_->free_memory();
  if (avail == 0)
    throw Error(ErrorCode::kInvalidArgument, "memory pool: cannot preallocate a fraction of " + raw_->name() +
                                                 ": its free memory is unknown; use the grow policy");
  double want = std::floor(f * static_cast<double>(avail));
  size_t n = want >= static_cast<double>(std::numeric_limits<size_t>::max()) ? std::numeric_limits<size_t>::max()
                                                                             : static_cast<size_t>(want);
  if (options_.limit && options_.limit < n) {
    n = options_.limit;
    preallocated_by_limit_ = true;
  }
  n = n / a * a;
  if (n == 0)
    throw Error(ErrorCode::kInvalidArgument, "memory pool: preallocating " + fraction_percent(f) + " of " +
                                                 raw_->name() + " (" + format_bytes(avail) +
                                                 " free) gives nothing to allocate from");
  std::lock_guard<std::mutex> lock(mu_);
  if (!add_segment(n)) {
    throw Error(ErrorCode::kOutOfMemory, raw_->name() + " pool: could not preallocate " + format_bytes(n) + " (" +
                                             std::to_string(n) + " bytes, " + fraction_percent(f) + " of the " +
                                             format_bytes(avail) + " reported free); use a smaller " +
                                             "fraction (SessionOptions::preallocate_fraction) or the grow policy "
                                             "(SessionOptions::memory_policy = MemoryPolicy::kGrow)");
  }
  preallocated_ = n;
}

MemoryPool::~MemoryPool() {
  for (auto& [base, seg] : segments_) {
    for (Block* b = seg->first; b;) {
      Block* next = b->next;
      delete b;
      b = next;
    }
    raw_->deallocate(seg->base, seg->size);
  }
}

size_t MemoryPool::budget() const {
  return options_.policy == PoolPolicy::kPreallocate ? preallocated_ : options_.limit;
}

MemoryPool::Block* MemoryPool::add_segment(size_t size) {
  void* p = raw_->allocate(size);
  if (!p) return nullptr;
  if (reinterpret_cast<uintptr_t>(p) % options_.alignment != 0) {
    raw_->deallocate(p, size);
    throw Error(ErrorCode::kInternal, raw_->name() + " returned a segment that is not " +
                                          std::to_string(options_.alignment) + "-byte aligned");
  }
  auto seg = std::make_unique<Segment>();
  seg->base = static_cast<char*>(p);
  seg->size = size;
  auto* b = new Block{seg->base, size, true, seg.get(), nullptr, nullptr};
  seg->first = b;
  segments_.emplace(seg->base, std::move(seg));
  free_.insert(b);
  reserved_ += size;
  ++segment_allocations_;
  return b;
}

// Hands out `size` bytes from the free block `b`, splitting off the rest.
void* MemoryPool::take(Block* b, size_t size) {
  free_.erase(b);
  if (b->size > size) {
    auto* rest = new Block{b->ptr + size, b->size - size, true, b->segment, b, b->next};
    if (b->next) b->next->prev = rest;
    b->next = rest;
    b->size = size;
    free_.insert(rest);
  }
  b->free = false;
  used_.emplace(b->ptr, b);
  in_use_ += b->size;
  peak_ = std::max(peak_, in_use_);
  ++allocations_;
  return b->ptr;
}

void* MemoryPool::try_allocate(size_t size) {
  auto it = free_.lower_bound(size);  // best fit: the smallest block that is large enough
  if (it != free_.end()) return take(*it, size);

  // A new segment: rounded up to the granularity when growing; under
  // kPreallocate (after a trim) all that is left of the preallocation.
  size_t cap = budget();
  size_t seg = size;
  if (!round_up(size, options_.segment_granularity, seg)) seg = size;
  if (cap) {
    if (reserved_ > cap || size > cap - reserved_) {
      shortfall_ = Shortfall::kLimit;
      return nullptr;
    }
    seg = options_.policy == PoolPolicy::kPreallocate ? cap - reserved_ : std::min(seg, cap - reserved_);
  }
  // A segment the host would grant but not back ends in the OOM killer
  // later: refuse it now with a sentence.
  std::string detail;
  if (size_t room = raw_->backed_room(&detail)) {
    if (size > room) {
      shortfall_ = Shortfall::kBacked;
      shortfall_room_ = detail;
      return nullptr;
    }
    seg = std::min(seg, room);
  }
  Block* b = add_segment(seg);
  if (!b && seg > size) {
    seg = size;  // the rounded segment was refused; the exact size may still fit
    b = add_segment(seg);
  }
  if (!b) {
    shortfall_ = Shortfall::kRaw;
    shortfall_segment_ = seg;
    return nullptr;
  }
  return take(b, size);
}

void* MemoryPool::allocate(size_t bytes, std::string_view what) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t size = 0;
  if (!round_up(std::max<size_t>(bytes, 1), options_.alignment, size)) {
    shortfall_ = budget() ? Shortfall::kLimit : Shortfall::kRaw;
    shortfall_segment_ = bytes;
  } else {
    if (void* p = try_allocate(size)) return p;
    // Give back the cached (fully free) segments and try once more: the raw
    // allocator may then have room, and under a cap their bytes may come
    // back as one segment large enough. Under a cap that cannot be enough,
    // the cache is kept.
    bool may_help = true;
    if (shortfall_ == Shortfall::kLimit) {
      size_t cached = 0;
      for (const auto& [base, seg] : segments_)
        if (seg->first->free && !seg->first->next) cached += seg->size;
      may_help = cached > 0 && size <= budget() - (reserved_ - cached);
    }
    if (may_help && release_free_segments() > 0)
      if (void* p = try_allocate(size)) return p;
  }
  ++failures_;
  throw Error(ErrorCode::kOutOfMemory, oom_sentence(bytes, what));
}

bool MemoryPool::deallocate(void* p) {
  if (!p) return true;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = used_.find(p);
  if (it == used_.end()) return false;
  Block* b = it->second;
  used_.erase(it);
  in_use_ -= b->size;
  ++frees_;
  b->free = true;
  if (Block* n = b->next; n && n->free) {
    free_.erase(n);
    b->size += n->size;
    b->next = n->next;
    if (n->next) n->next->prev = b;
    delete n;
  }
  if (Block* q = b->prev; q && q->free) {
    free_.erase(q);
    q->size += b->size;
    q->next = b->next;
    if (b->next) b->next->prev = q;
    delete b;
    b = q;
  }
  free_.insert(b);
  return true;
}

size_t MemoryPool::release_free_segments() {
  size_t released = 0;
  for (auto it = segments_.begin(); it != segments_.end();) {
    Segment& s = *it->second;
    Block* b = s.first;
    if (!b->free || b->next) {
      ++it;
      continue;
    }
    free_.erase(b);
    delete b;
    raw_->deallocate(s.base, s.size);
    reserved_ -= s.size;
    released += s.size;
    ++segment_releases_;
    it = segments_.erase(it);
  }
  return released;
}

size_t MemoryPool::trim() {
  std::lock_guard<std::mutex> lock(mu_);
  return release_free_segments();
}

PoolStats MemoryPool::stats_locked() const {
  PoolStats s;
  s.reserved_bytes = reserved_;
  s.in_use_bytes = in_use_;
  s.peak_in_use_bytes = peak_;
  s.free_bytes = reserved_ - in_use_;
  s.largest_free_block = free_.empty() ? 0 : (*free_.rbegin())->size;
  s.segments = segments_.size();
  s.fragmentation =
      s.free_bytes ? 1.0 - static_cast<double>(s.largest_free_block) / static_cast<double>(s.free_bytes) : 0.0;
  s.allocations = allocations_;
  s.frees = frees_;
  s.segment_allocations = segment_allocations_;
  s.segment_releases = segment_releases_;
  s.failures = failures_;
  s.limit_bytes = budget();
  return s;
}

PoolStats MemoryPool::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_locked();
}

// One sentence: what was asked, what is held, the limit, what to change.
std::string MemoryPool::oom_sentence(size_t bytes, std::string_view what) const {
  PoolStats s = stats_locked();
  std::string m = raw_->name() + " pool: cannot allocate " + format_bytes(bytes) + " (" + std::to_string(bytes) +
                  " bytes) for " + (what.empty() ? std::string("a request") : std::string(what)) + "; the pool holds " +
                  format_bytes(s.reserved_bytes) + " reserved in " + plural(s.segments, "segment", "segments") + ", " +
                  format_bytes(s.in_use_bytes) + " of it in use, its largest free block is " +
                  format_bytes(s.largest_free_block) + " (fragmentation " + percent(s.fragmentation) + ")";
  const std::string limit_option = "SessionOptions::memory_limit";
  const std::string grow_option = "SessionOptions::memory_policy = MemoryPolicy::kGrow";
  if (options_.policy == PoolPolicy::kPreallocate) {
    bool by_limit = preallocated_by_limit_;
    m += ", and it was preallocated at " + format_bytes(preallocated_) +
         (by_limit ? " (its memory limit)"
                   : " (" + fraction_percent(options_.preallocate_fraction) + " of free memory)") +
         " and does not grow";
    if (shortfall_ == Shortfall::kRaw)
      m += "; after a trim, " + raw_->name() + " refused to give back a segment of " + format_bytes(shortfall_segment_);
    m += "; use a smaller batch, " +
         std::string(by_limit ? "raise the memory limit (" + limit_option + ")"
                              : "preallocate a larger fraction (SessionOptions::preallocate_fraction)") +
         ", or the grow policy (" + grow_option + ")";
    return m;
  }
  if (shortfall_ == Shortfall::kBacked) {
    m += "; this process can get only " + shortfall_room_ + ", less than this request" +
         "; use a smaller batch or input shape, fewer concurrent runs, or give the process more memory";
    if (!options_.limit) m += " (a memory limit, " + limit_option + ", keeps the session within a budget)";
    return m;
  }
  if (shortfall_ == Shortfall::kLimit) {
    m += ", and its memory limit is " + format_bytes(options_.limit);
    if (bytes > options_.limit) m += ", less than this request alone";
    m += "; use a smaller batch or raise the memory limit (" + limit_option + ")";
    return m;
  }
  m += ", and " +
       std::string(options_.limit ? "its memory limit is " + format_bytes(options_.limit) : "no memory limit is set") +
       "; " + raw_->name() + " refused a new segment of " + format_bytes(shortfall_segment_) + " (" +
       format_bytes(raw_->free_memory()) + " reported free); use a smaller batch, fewer concurrent runs, " +
       "or free memory for this process";
  if (!options_.limit) m += " (a memory limit, " + limit_option + ", keeps the session within a budget)";
  return m;
}

std::string MemoryPool::check() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t reserved = 0, in_use = 0, free_blocks = 0, used_blocks = 0;
  for (const auto& [base, seg] : segments_) {
    if (base != seg->base) return "a segment is filed under the wrong address";
    reserved += seg->size;
    char* expect = seg->base;
    const Block* prev = nullptr;
    for (const Block* b = seg->first; b; prev = b, b = b->next) {
      if (b->segment != seg.get()) return "a block names the wrong segment";
      if (b->prev != prev) return "a block's back link is wrong";
      if (b->ptr != expect) return "the blocks of a segment leave a gap or overlap";
      if (b->size == 0 || b->size % options_.alignment != 0) return "a block's size is not a multiple of the alignment";
      if (reinterpret_cast<uintptr_t>(b->ptr) % options_.alignment != 0) return "a block is not aligned";
      if (b->free) {
        if (prev && prev->free) return "two neighbouring free blocks were not merged";
        if (!free_.count(const_cast<Block*>(b))) return "a free block is missing from the free index";
        ++free_blocks;
      } else {
        auto it = used_.find(b->ptr);
        if (it == used_.end() || it->second != b) return "a block in use is missing from the used index";
        in_use += b->size;
        ++used_blocks;
      }
      expect += b->size;
    }
    if (expect != seg->base + seg->size) return "the blocks of a segment do not cover it";
  }
  if (free_blocks != free_.size()) return "the free index holds blocks that are not in any segment";
  if (used_blocks != used_.size()) return "the used index holds blocks that are not in any segment";
  if (reserved != reserved_) return "the reserved counter disagrees with the segments";
  if (in_use != in_use_) return "the in-use counter disagrees with the blocks";
  if (in_use_ > peak_) return "the peak is below what is in use";
  if (budget() && reserved_ > budget()) return "more is reserved than the limit allows";
  return "";
}

}  // namespace minirt
