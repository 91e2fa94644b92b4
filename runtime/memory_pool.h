// The memory pool: one design for device and host memory. Whole segments come
// from a raw allocator (aligned host memory here; cudaMalloc/cudaFree in the
// GPU module; a capped fake in tests) and are cut into blocks.
//
//   auto pool = std::make_shared<MemoryPool>(std::make_shared<HostAllocator>(),
//                                            PoolOptions{.limit = 512u << 20});
//   void* arena = pool->allocate(bytes, "the activation arena of resnet18.onnx");
//   ...
//   pool->deallocate(arena);   // the block is kept for the next request
//   pool->trim();              // fully free segments go back to the raw allocator
//   PoolStats s = pool->stats();
//
// Policies: kGrow reserves a new segment when no free block fits (rounded up
// to segment_granularity, never past the limit); kPreallocate reserves one
// segment of preallocate_fraction x the raw allocator's free memory when the
// pool is made and never holds more than that. `limit` caps the bytes
// reserved under either policy (0: no cap).
//
// Requests are served best fit: the smallest free block that is large
// enough (the lowest address among equals), split when larger. A freed block
// merges with free neighbours of its segment. When a request cannot be met,
// the pool gives its fully free segments back and tries once more; then it
// throws minirt::Error(kOutOfMemory) with a sentence saying what was asked,
// what is held, the limit and what to change. It stays usable afterwards.
//
// Every method is thread-safe. Blocks are aligned to `alignment` (64 bytes by
// default), which the raw allocator's segments must be aligned to as well.
#pragma once

#include <minirt/error.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/format_bytes.h"  // format_bytes, for the pool's messages and its users

namespace minirt {

// Where segments come from. Small and C++-only so that a CUDA implementation
// can live in the GPU module.
class RawAllocator {
 public:
  virtual ~RawAllocator() = default;
  // A segment of `bytes` (> 0), aligned to at least 64 bytes, or nullptr when
  // it cannot be had. Never throws.
  virtual void* allocate(size_t bytes) = 0;
  // Gives back a segment from allocate(), with the size it was asked for.
  virtual void deallocate(void* p, size_t bytes) = 0;
  // Bytes this source could still provide, as well as it knows; 0 when unknown.
  virtual size_t free_memory() const = 0;
  // What the memory is, for messages: "host memory", "cuda:0 memory".
  virtual std::string name() const = 0;
  // For a source that grants more than it can back (the host under Linux's
  // overcommit: the allocation succeeds, the process is killed when it
  // touches the memory): the bytes it can really give now, and in `detail`
  // where that number comes from. 0: the source refuses what it cannot give.
  virtual size_t backed_room(std::string* detail) const {
    (void)detail;
    return 0;
  }
};

// Host memory, 64-byte aligned. Free memory, and the room segments are
// checked against before they are reserved, is the least of MemAvailable, the
// cgroup's memory limit less its usage and ulimit -v less the address space
// in use (runtime/host_resources.h).
class HostAllocator final : public RawAllocator {
 public:
  void* allocate(size_t bytes) override;
  void deallocate(void* p, size_t bytes) override;
  size_t free_memory() const override;
  std::string name() const override { return "host memory"; }
  size_t backed_room(std::string* detail) const override;
};

enum class PoolPolicy { kGrow, kPreallocate };

struct PoolOptions {
  PoolPolicy policy = PoolPolicy::kGrow;
  double preallocate_fraction = 0;               // kPreallocate: fraction of free memory, in (0, 1]
  size_t limit = 0;                              // most bytes reserved at once; 0: no cap
  size_t segment_granularity = size_t{1} << 20;  // kGrow: new segments are a multiple of this
  size_t alignment = 64;                         // a power of two
};

// The pool's numbers. Sizes are in bytes; a block's size is the request
// rounded up to the alignment.
//
// fragmentation = 1 - largest_free_block / free_bytes (0 when nothing is
// free): 0 when all free memory is one block, so any request up to free_bytes
// fits without a new segment; near 1 when the free memory is scattered in
// pieces, each much smaller than the total. Free memory in separate segments
// counts as scattered, since segments never merge.
struct PoolStats {
  size_t reserved_bytes = 0;      // held from the raw allocator, in all segments
  size_t in_use_bytes = 0;        // in blocks handed out and not yet freed
  size_t peak_in_use_bytes = 0;   // the most in_use_bytes has been
  size_t free_bytes = 0;          // reserved_bytes - in_use_bytes
  size_t largest_free_block = 0;  // the largest request served without a new segment
  size_t segments = 0;
  double fragmentation = 0;
  uint64_t allocations = 0;          // allocate() calls that succeeded
  uint64_t frees = 0;                // deallocate() calls that freed a block
  uint64_t segment_allocations = 0;  // segments taken from the raw allocator
  uint64_t segment_releases = 0;     // segments given back
  uint64_t failures = 0;             // requests that ended in kOutOfMemory
  size_t limit_bytes = 0;            // the cap in effect (the preallocation under kPreallocate); 0: none
};

class MemoryPool {
 public:
  // Under kPreallocate, reserves the segment now; throws kInvalidArgument for
  // bad options and kOutOfMemory when the preallocation cannot be had.
  explicit MemoryPool(std::shared_ptr<RawAllocator> raw, PoolOptions options = {});
  // Gives every segment back; blocks still handed out must not be used after.
  ~MemoryPool();
  MemoryPool(const MemoryPool&) = delete;
  MemoryPool& operator=(const MemoryPool&) = delete;

  // A block of at least `bytes` (0 counts as 1), aligned. `what` says what it
  // is for, in the error sentence ("the activation arena of m.onnx").
  void* allocate(size_t bytes, std::string_view what);
  // Returns a block to the pool; false (and nothing done) when `p` is not a
  // block handed out by this pool. nullptr is ignored (returns true).
  bool deallocate(void* p);
  // Gives fully free segments back to the raw allocator; returns the bytes
  // given back. Blocks in use are untouched.
  size_t trim();

  PoolStats stats() const;
  const PoolOptions& options() const { return options_; }
  RawAllocator& raw() const { return *raw_; }
  // Checks the pool's bookkeeping (blocks tile each segment, no two free
  // neighbours, the indexes and counters agree); "" when consistent, else
  // what is wrong. For tests.
  std::string check() const;

 private:
  struct Segment;
  struct Block {
    char* ptr = nullptr;
    size_t size = 0;
    bool free = true;
    Segment* segment = nullptr;
    Block* prev = nullptr;  // neighbours in the same segment, by address
    Block* next = nullptr;
  };
  struct Segment {
    char* base = nullptr;
    size_t size = 0;
    Block* first = nullptr;
  };
  // Free blocks by (size, address), searchable by size alone.
  struct BySize {
    using is_transparent = void;
    bool operator()(const Block* a, const Block* b) const {
      return a->size != b->size ? a->size < b->size : a->ptr < b->ptr;
    }
    bool operator()(const Block* a, size_t s) const { return a->size < s; }
    bool operator()(size_t s, const Block* b) const { return s < b->size; }
  };
  enum class Shortfall { kNone, kLimit, kRaw, kBacked };

  void* try_allocate(size_t size);
  Block* add_segment(size_t size);
  void* take(Block* b, size_t size);
  size_t release_free_segments();
  size_t budget() const;
  PoolStats stats_locked() const;
  std::string oom_sentence(size_t bytes, std::string_view what) const;

  std::shared_ptr<RawAllocator> raw_;
  PoolOptions options_;
  size_t preallocated_ = 0;             // kPreallocate: the size reserved at start
  bool preallocated_by_limit_ = false;  // the limit, not the fraction, set that size

  mutable std::mutex mu_;
  std::map<char*, std::unique_ptr<Segment>> segments_;  // by base address
  std::set<Block*, BySize> free_;
  std::unordered_map<void*, Block*> used_;
  size_t reserved_ = 0, in_use_ = 0, peak_ = 0;
  uint64_t allocations_ = 0, frees_ = 0, segment_allocations_ = 0, segment_releases_ = 0, failures_ = 0;
  Shortfall shortfall_ = Shortfall::kNone;  // why the last try_allocate failed
  size_t shortfall_segment_ = 0;            // the segment the raw allocator refused
  std::string shortfall_room_;              // kBacked: what the raw allocator could back, in words
};

}  // namespace minirt
