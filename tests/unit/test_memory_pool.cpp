// The memory pool over a capped fake allocator: growth and preallocation,
// best-fit reuse, splitting and merging, trim, the hard cap, running out and
// recovering, the statistics, and many threads at once.
#include "capped_allocator.h"
#include "runtime/memory_pool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

namespace minirt {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr size_t KiB = 1024;
constexpr size_t MiB = 1024 * 1024;

PoolOptions grow(size_t granularity, size_t limit = 0) {
  PoolOptions o;
  o.segment_granularity = granularity;
  o.limit = limit;
  return o;
}

Error oom(MemoryPool& pool, size_t bytes, std::string_view what = "a test block") {
  try {
    void* p = pool.allocate(bytes, what);
    ADD_FAILURE() << "allocating " << bytes << " bytes succeeded";
    pool.deallocate(p);
  } catch (const Error& e) {
    return e;
  }
  return Error(ErrorCode::kInternal, "");
}

TEST(MemoryPool, GrowsOnDemandInSegmentsRoundedToTheGranularity) {
  auto raw = std::make_shared<CappedAllocator>(16 * MiB);
  MemoryPool pool(raw, grow(64 * KiB));
  EXPECT_EQ(pool.stats().reserved_bytes, 0u);  // nothing until asked
  EXPECT_EQ(raw->allocate_calls(), 0);

  void* a = pool.allocate(1000, "a");
  PoolStats s = pool.stats();
  EXPECT_EQ(s.reserved_bytes, 64 * KiB);
  EXPECT_EQ(s.in_use_bytes, 1024u);  // rounded up to the 64-byte alignment
  EXPECT_EQ(s.segments, 1u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);

  void* b = pool.allocate(10 * KiB, "b");  // fits in the first segment's rest
  EXPECT_EQ(pool.stats().segments, 1u);
  EXPECT_EQ(static_cast<char*>(b), static_cast<char*>(a) + 1024);

  void* c = pool.allocate(100 * KiB, "c");  // does not: a second segment of 128 KiB
  s = pool.stats();
  EXPECT_EQ(s.segments, 2u);
  EXPECT_EQ(s.reserved_bytes, 192 * KiB);
  EXPECT_EQ(raw->outstanding(), 192 * KiB);
  EXPECT_EQ(s.segment_allocations, 2u);
  for (void* p : {a, b, c}) EXPECT_TRUE(pool.deallocate(p));
  EXPECT_EQ(pool.check(), "");
}

TEST(MemoryPool, FreedBlocksAreReusedWithoutAskingTheRawAllocator) {
  auto raw = std::make_shared<CappedAllocator>(16 * MiB);
  MemoryPool pool(raw, grow(1 * MiB));
  void* a = pool.allocate(300 * KiB, "a");
  int64_t calls = raw->allocate_calls();
  pool.deallocate(a);
  for (int i = 0; i < 10; ++i) {
    void* again = pool.allocate(300 * KiB, "again");
    EXPECT_EQ(again, a);
    pool.deallocate(again);
  }
  void* smaller = pool.allocate(10 * KiB, "smaller");
  EXPECT_EQ(smaller, a);
  pool.deallocate(smaller);
  EXPECT_EQ(raw->allocate_calls(), calls);
  EXPECT_EQ(pool.stats().allocations, 12u);
  EXPECT_EQ(pool.stats().frees, 12u);
}

TEST(MemoryPool, BestFitTakesTheSmallestFreeBlockThatIsLargeEnough) {
  auto raw = std::make_shared<CappedAllocator>(16 * MiB);
  MemoryPool pool(raw, grow(64 * KiB));
  // One segment: [big 4K][pin][mid 2K][pin][small 1K][pin][rest]
  char* big = static_cast<char*>(pool.allocate(4 * KiB, "big"));
  void* pin1 = pool.allocate(64, "pin");
  char* mid = static_cast<char*>(pool.allocate(2 * KiB, "mid"));
  void* pin2 = pool.allocate(64, "pin");
  char* small = static_cast<char*>(pool.allocate(1 * KiB, "small"));
  void* pin3 = pool.allocate(64, "pin");
  pool.deallocate(big);
  pool.deallocate(mid);
  pool.deallocate(small);
  EXPECT_EQ(pool.stats().segments, 1u);

  EXPECT_EQ(pool.allocate(900, "x"), small);  // 1K is the best fit for 900 bytes
  EXPECT_EQ(pool.allocate(1500, "y"), mid);   // 2K for 1.5K
  char* z = static_cast<char*>(pool.allocate(1 * KiB, "z"));
  EXPECT_EQ(z, big);                                      // only the 4K hole is left of those: split it
  EXPECT_EQ(pool.allocate(3 * KiB, "w"), big + 1 * KiB);  // the split-off rest, exactly 3K
  EXPECT_EQ(pool.stats().segments, 1u);
  EXPECT_EQ(pool.check(), "");
  (void)pin1, (void)pin2, (void)pin3;
}

TEST(MemoryPool, SplitsAndMergesNeighboursBackIntoOneBlock) {
  auto raw = std::make_shared<CappedAllocator>(16 * MiB);
  MemoryPool pool(raw, grow(64 * KiB));
  char* a = static_cast<char*>(pool.allocate(8 * KiB, "a"));
  char* b = static_cast<char*>(pool.allocate(8 * KiB, "b"));
  char* c = static_cast<char*>(pool.allocate(8 * KiB, "c"));
  EXPECT_EQ(b, a + 8 * KiB);
  EXPECT_EQ(c, b + 8 * KiB);
  EXPECT_EQ(pool.stats().largest_free_block, 40 * KiB);

  pool.deallocate(b);  // a hole between two blocks in use
  EXPECT_EQ(pool.stats().largest_free_block, 40 * KiB);
  EXPECT_EQ(pool.stats().free_bytes, 48 * KiB);
  pool.deallocate(a);  // merges with b's hole
  EXPECT_EQ(pool.check(), "");
  void* ab = pool.allocate(16 * KiB, "ab");  // a and b together fit a block twice the size
  EXPECT_EQ(ab, a);
  pool.deallocate(ab);
  pool.deallocate(c);  // merges with the hole before and the rest after
  PoolStats s = pool.stats();
  EXPECT_EQ(s.largest_free_block, 64 * KiB);
  EXPECT_EQ(s.free_bytes, 64 * KiB);
  EXPECT_EQ(s.fragmentation, 0.0);
  EXPECT_EQ(pool.allocate(64 * KiB, "all"), a);  // the whole segment is one block again
  EXPECT_EQ(pool.check(), "");
}

TEST(MemoryPool, FragmentationIsOneMinusLargestFreeOverFree) {
  auto raw = std::make_shared<CappedAllocator>(16 * MiB);
  MemoryPool pool(raw, grow(64 * KiB));
  std::vector<void*> blocks;
  for (int i = 0; i < 16; ++i) blocks.push_back(pool.allocate(4 * KiB, "piece"));  // the segment, full
  EXPECT_EQ(pool.stats().fragmentation, 0.0);                                      // nothing free
  for (int i = 0; i < 16; i += 2) pool.deallocate(blocks[i]);                      // 8 holes of 4K, none adjacent
  PoolStats s = pool.stats();
  EXPECT_EQ(s.free_bytes, 32 * KiB);
  EXPECT_EQ(s.largest_free_block, 4 * KiB);
  EXPECT_DOUBLE_EQ(s.fragmentation, 1.0 - 4.0 / 32.0);
  // 8K cannot come from the holes, though 32K is free: a new segment.
  void* p = pool.allocate(8 * KiB, "eight");
  EXPECT_EQ(pool.stats().segments, 2u);
  pool.deallocate(p);
  for (int i = 1; i < 16; i += 2) pool.deallocate(blocks[i]);
  s = pool.stats();
  EXPECT_EQ(s.in_use_bytes, 0u);
  // Two fully free segments: free memory in two pieces that cannot merge.
  EXPECT_DOUBLE_EQ(s.fragmentation, 1.0 - 64.0 / 128.0);
  EXPECT_EQ(pool.check(), "");
}

TEST(MemoryPool, TrimGivesBackFullyFreeSegmentsOnly) {
  auto raw = std::make_shared<CappedAllocator>(16 * MiB);
  MemoryPool pool(raw, grow(1 * MiB));
  char* kept = static_cast<char*>(pool.allocate(200 * KiB, "kept"));
  std::memset(kept, 0x5a, 200 * KiB);
  void* gone = pool.allocate(2 * MiB, "gone");   // its own 2 MiB segment
  void* also = pool.allocate(10 * KiB, "also");  // after `kept`, in the first segment
  pool.deallocate(gone);
  pool.deallocate(also);
  EXPECT_EQ(pool.stats().segments, 2u);

  EXPECT_EQ(pool.trim(), 2 * MiB);
  PoolStats s = pool.stats();
  EXPECT_EQ(s.segments, 1u);
  EXPECT_EQ(s.reserved_bytes, 1 * MiB);
  EXPECT_EQ(s.in_use_bytes, 200 * KiB);
  EXPECT_EQ(s.segment_releases, 1u);
  EXPECT_EQ(raw->outstanding(), 1 * MiB);
  for (size_t i = 0; i < 200 * KiB; ++i) ASSERT_EQ(static_cast<unsigned char>(kept[i]), 0x5a) << i;
  EXPECT_EQ(pool.trim(), 0u);  // nothing else is fully free

  pool.deallocate(kept);
  EXPECT_EQ(pool.trim(), 1 * MiB);
  EXPECT_EQ(pool.stats().reserved_bytes, 0u);
  EXPECT_EQ(raw->outstanding(), 0u);
  EXPECT_EQ(raw->mismatched_deallocations(), 0);
  // Still a pool: it grows again.
  void* p = pool.allocate(1 * KiB, "after trim");
  EXPECT_EQ(pool.stats().segments, 1u);
  pool.deallocate(p);
  EXPECT_EQ(pool.check(), "");
}

TEST(MemoryPool, TheLimitIsAHardCapAndTheErrorSaysWhatToChange) {
  auto raw = std::make_shared<CappedAllocator>(16 * MiB);
  MemoryPool pool(raw, grow(64 * KiB, 256 * KiB));
  std::vector<void*> held;
  for (int i = 0; i < 3; ++i) held.push_back(pool.allocate(64 * KiB, "quarter"));
  held.push_back(pool.allocate(40 * KiB, "part of the last quarter"));
  EXPECT_EQ(pool.stats().reserved_bytes, 256 * KiB);

  Error e = oom(pool, 100 * KiB, "the activation arena of m.onnx (inputs x 8x3x32x32)");
  EXPECT_EQ(e.code(), ErrorCode::kOutOfMemory);
  EXPECT_THAT(e.what(),
              AllOf(HasSubstr("capped test memory pool"), HasSubstr("cannot allocate 100.0 KiB (102400 bytes)"),
                    HasSubstr("for the activation arena of m.onnx (inputs x 8x3x32x32)"),
                    HasSubstr("256.0 KiB reserved in 4 segments"), HasSubstr("232.0 KiB of it in use"),
                    HasSubstr("largest free block is 24.0 KiB"), HasSubstr("fragmentation 0.0%"),
                    HasSubstr("memory limit is 256.0 KiB"), HasSubstr("smaller batch"),
                    HasSubstr("SessionOptions::memory_limit"), Not(HasSubstr("--"))));
  EXPECT_EQ(pool.stats().failures, 1u);
  EXPECT_EQ(pool.stats().reserved_bytes, 256 * KiB);  // nothing in use was touched
  EXPECT_EQ(pool.check(), "");

  // Larger than the whole limit: said so.
  EXPECT_THAT(oom(pool, 1 * MiB).what(), HasSubstr("less than this request alone"));

  // Usable afterwards: freeing makes room.
  pool.deallocate(held[0]);
  pool.deallocate(held[1]);
  void* p = pool.allocate(100 * KiB, "now it fits");
  EXPECT_NE(p, nullptr);
  EXPECT_LE(pool.stats().reserved_bytes, 256 * KiB);
  pool.deallocate(p);
  EXPECT_EQ(pool.check(), "");
}

TEST(MemoryPool, OutOfMemoryReleasesCachedSegmentsAndRetriesOnce) {
  auto raw = std::make_shared<CappedAllocator>(192 * KiB);
  MemoryPool pool(raw, grow(64 * KiB));
  void* a = pool.allocate(64 * KiB, "a");
  void* b = pool.allocate(64 * KiB, "b");
  pool.deallocate(a);  // a's segment is now cached, fully free
  int64_t calls = raw->allocate_calls();
  // 128K fits no free block; the raw allocator has only 64K left, so the
  // pool gives a's segment back and asks again.
  void* c = pool.allocate(128 * KiB, "c");
  EXPECT_NE(c, nullptr);
  EXPECT_EQ(raw->allocate_calls(), calls + 2);
  EXPECT_EQ(raw->failed_calls(), 1);
  PoolStats s = pool.stats();
  EXPECT_EQ(s.segment_releases, 1u);
  EXPECT_EQ(s.segments, 2u);
  EXPECT_EQ(s.reserved_bytes, 192 * KiB);
  EXPECT_EQ(s.failures, 0u);
  pool.deallocate(b);
  pool.deallocate(c);
  EXPECT_EQ(pool.check(), "");
}

TEST(MemoryPool, RawFailureAfterTheRetryThrowsAndThePoolRecovers) {
  auto raw = std::make_shared<CappedAllocator>(16 * MiB);
  MemoryPool pool(raw, grow(64 * KiB));
  void* cached = pool.allocate(64 * KiB, "cached");
  void* pinned = pool.allocate(64 * KiB, "pinned");
  pool.deallocate(cached);
  raw->fail_next(100);
  int64_t calls = raw->allocate_calls();
  Error e = oom(pool, 128 * KiB, "a big block");
  // One try, the cached segment given back, one retry: two calls, no more.
  EXPECT_EQ(raw->allocate_calls(), calls + 2);
  EXPECT_EQ(e.code(), ErrorCode::kOutOfMemory);
  EXPECT_THAT(e.what(), AllOf(HasSubstr("cannot allocate 128.0 KiB"), HasSubstr("for a big block"),
                              HasSubstr("no memory limit is set"),
                              HasSubstr("capped test memory refused a new segment"), HasSubstr("smaller batch")));
  PoolStats s = pool.stats();
  EXPECT_EQ(s.segments, 1u);  // the cached one went back
  EXPECT_EQ(s.in_use_bytes, 64 * KiB);
  EXPECT_EQ(s.failures, 1u);
  raw->fail_next(0);
  void* p = pool.allocate(128 * KiB, "a big block, again");
  EXPECT_NE(p, nullptr);
  pool.deallocate(p);
  pool.deallocate(pinned);
  EXPECT_EQ(pool.check(), "");
}

TEST(MemoryPool, RoundedSegmentRefusedFallsBackToTheExactSize) {
  auto raw = std::make_shared<CappedAllocator>(100 * KiB);
  MemoryPool pool(raw, grow(1 * MiB));
  void* p = pool.allocate(90 * KiB, "p");  // 1 MiB is refused; 90K is not
  EXPECT_EQ(pool.stats().reserved_bytes, 90 * KiB);
  pool.deallocate(p);
}

TEST(MemoryPool, PreallocateReservesAFractionOfFreeMemoryAndNeverGrows) {
  auto raw = std::make_shared<CappedAllocator>(1 * MiB);
  PoolOptions o;
  o.policy = PoolPolicy::kPreallocate;
  o.preallocate_fraction = 0.5;
  MemoryPool pool(raw, o);
  PoolStats s = pool.stats();
  EXPECT_EQ(s.reserved_bytes, 512 * KiB);
  EXPECT_EQ(s.segments, 1u);
  EXPECT_EQ(s.limit_bytes, 512 * KiB);
  EXPECT_EQ(raw->allocate_calls(), 1);

  void* a = pool.allocate(300 * KiB, "a");
  void* b = pool.allocate(200 * KiB, "b");
  EXPECT_EQ(raw->allocate_calls(), 1);  // both from the preallocation
  Error e = oom(pool, 100 * KiB, "c");  // the raw allocator has room; the policy says no
  EXPECT_THAT(e.what(), AllOf(HasSubstr("preallocated at 512.0 KiB (50% of free memory)"), HasSubstr("does not grow"),
                              HasSubstr("smaller batch"), HasSubstr("larger fraction"), HasSubstr("grow policy"),
                              HasSubstr("SessionOptions::memory_policy = MemoryPolicy::kGrow"),
                              HasSubstr("SessionOptions::preallocate_fraction"), Not(HasSubstr("--"))));
  EXPECT_EQ(raw->allocate_calls(), 1);
  pool.deallocate(a);
  pool.deallocate(b);

  // Trimmed, it reserves its whole preallocation again when next asked.
  EXPECT_EQ(pool.trim(), 512 * KiB);
  EXPECT_EQ(raw->outstanding(), 0u);
  void* c = pool.allocate(1 * KiB, "c");
  EXPECT_EQ(pool.stats().reserved_bytes, 512 * KiB);
  pool.deallocate(c);
  EXPECT_EQ(pool.check(), "");
}

TEST(MemoryPool, PreallocationIsCappedByTheLimit) {
  auto raw = std::make_shared<CappedAllocator>(4 * MiB);
  PoolOptions o;
  o.policy = PoolPolicy::kPreallocate;
  o.preallocate_fraction = 1.0;
  o.limit = 100 * KiB;
  MemoryPool pool(raw, o);
  EXPECT_EQ(pool.stats().reserved_bytes, 100 * KiB);
  EXPECT_THAT(oom(pool, 200 * KiB).what(),
              AllOf(HasSubstr("100.0 KiB reserved in 1 segment, 0 B of it in use"), HasSubstr("(its memory limit)"),
                    HasSubstr("raise the memory limit"), HasSubstr("grow policy")));
  // Giving the preallocation back could not have helped, so it was kept.
  EXPECT_EQ(pool.stats().segment_releases, 0u);
  EXPECT_EQ(raw->allocate_calls(), 1);
}

TEST(MemoryPool, UnderACapTheCacheIsKeptWhenReleasingItCannotHelp) {
  auto raw = std::make_shared<CappedAllocator>(16 * MiB);
  MemoryPool pool(raw, grow(64 * KiB, 256 * KiB));
  void* a = pool.allocate(64 * KiB, "a");
  void* b = pool.allocate(64 * KiB, "b");
  pool.deallocate(a);  // cached: 64K; at most 192K could be had after releasing it
  oom(pool, 200 * KiB);
  EXPECT_EQ(pool.stats().segment_releases, 0u);
  EXPECT_EQ(pool.stats().segments, 2u);
  void* c = pool.allocate(150 * KiB, "c");  // 192K can be had: the cache goes, one 192K segment comes
  EXPECT_EQ(pool.stats().segment_releases, 1u);
  EXPECT_EQ(pool.stats().reserved_bytes, 256 * KiB);
  pool.deallocate(b);
  pool.deallocate(c);
  EXPECT_EQ(pool.check(), "");
}

TEST(MemoryPool, PreallocationThatCannotBeHadIsAClearError) {
  auto raw = std::make_shared<CappedAllocator>(1 * MiB);
  raw->fail_next(1);
  PoolOptions o;
  o.policy = PoolPolicy::kPreallocate;
  o.preallocate_fraction = 0.25;
  try {
    MemoryPool pool(raw, o);
    FAIL() << "the preallocation succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfMemory);
    EXPECT_THAT(e.what(), AllOf(HasSubstr("could not preallocate 256.0 KiB"), HasSubstr("grow policy")));
  }
}

TEST(MemoryPool, BadOptionsAreRefused) {
  auto raw = std::make_shared<CappedAllocator>(1 * MiB);
  for (double f : {0.0, -0.5, 1.5}) {
    PoolOptions o;
    o.policy = PoolPolicy::kPreallocate;
    o.preallocate_fraction = f;
    try {
      MemoryPool pool(raw, o);
      ADD_FAILURE() << "fraction " << f << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_THAT(e.what(), HasSubstr("(0, 1]"));
    }
  }
  PoolOptions o;
  o.alignment = 48;
  EXPECT_THROW(MemoryPool pool(raw, o), Error);
  EXPECT_THROW(MemoryPool pool(nullptr), Error);
}

TEST(MemoryPool, UnknownAndDoubleFreesAreRefused) {
  auto raw = std::make_shared<CappedAllocator>(1 * MiB);
  MemoryPool pool(raw, grow(64 * KiB));
  char* p = static_cast<char*>(pool.allocate(128, "p"));
  int local = 0;
  EXPECT_FALSE(pool.deallocate(&local));
  EXPECT_FALSE(pool.deallocate(p + 64));  // inside a block, not its start
  EXPECT_TRUE(pool.deallocate(p));
  EXPECT_FALSE(pool.deallocate(p));
  EXPECT_TRUE(pool.deallocate(nullptr));
  EXPECT_EQ(pool.stats().frees, 1u);
  EXPECT_EQ(pool.check(), "");
}

TEST(MemoryPool, StatisticsFollowEveryCall) {
  auto raw = std::make_shared<CappedAllocator>(16 * MiB);
  MemoryPool pool(raw, grow(64 * KiB));
  void* a = pool.allocate(10 * KiB, "a");
  void* b = pool.allocate(20 * KiB, "b");
  pool.deallocate(a);
  void* c = pool.allocate(1, "c");  // rounds up to 64 bytes
  PoolStats s = pool.stats();
  EXPECT_EQ(s.allocations, 3u);
  EXPECT_EQ(s.frees, 1u);
  EXPECT_EQ(s.in_use_bytes, 20 * KiB + 64);
  EXPECT_EQ(s.peak_in_use_bytes, 30 * KiB);
  EXPECT_EQ(s.free_bytes, s.reserved_bytes - s.in_use_bytes);
  EXPECT_EQ(s.segment_allocations, 1u);
  EXPECT_EQ(s.limit_bytes, 0u);
  pool.deallocate(b);
  pool.deallocate(c);
  EXPECT_EQ(pool.stats().in_use_bytes, 0u);
  EXPECT_EQ(pool.stats().peak_in_use_bytes, 30 * KiB);
  EXPECT_EQ(pool.allocate(0, "zero bytes") != nullptr, true);  // a valid, distinct block
}

TEST(MemoryPool, DestroyingThePoolGivesEverySegmentBack) {
  auto raw = std::make_shared<CappedAllocator>(16 * MiB);
  {
    MemoryPool pool(raw, grow(64 * KiB));
    pool.allocate(100 * KiB, "left in use");
    pool.allocate(10 * KiB, "also");
    EXPECT_GT(raw->outstanding(), 0u);
  }
  EXPECT_EQ(raw->outstanding(), 0u);
  EXPECT_EQ(raw->mismatched_deallocations(), 0);
}

TEST(MemoryPool, HostAllocatorGivesAlignedMemoryAndKnowsWhatIsFree) {
  HostAllocator host;
  EXPECT_EQ(host.name(), "host memory");
  EXPECT_GT(host.free_memory(), 0u);  // MemAvailable
  void* p = host.allocate(1000);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  std::memset(p, 1, 1000);
  host.deallocate(p, 1000);
  EXPECT_EQ(host.allocate(0), nullptr);
  EXPECT_EQ(host.allocate(SIZE_MAX - 10), nullptr);

  MemoryPool pool(std::make_shared<HostAllocator>());
  EXPECT_THAT(oom(pool, SIZE_MAX - 10, "an impossible block").what(),
              AllOf(HasSubstr("host memory pool: cannot allocate"), HasSubstr("an impossible block")));
}

TEST(MemoryPool, FormatBytes) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(format_bytes(3 * MiB / 2), "1.50 MiB");
  EXPECT_EQ(format_bytes(size_t{5} << 30), "5.00 GiB");
}

TEST(MemoryPool, ManyThreadsKeepTheBookkeepingConsistent) {
  // Threads allocate, fill, check and free blocks of random sizes under a cap
  // that makes some requests fail, while one thread trims and reads the
  // statistics. No block is ever handed out twice (each one's pattern holds),
  // and at the end everything adds up.
  auto raw = std::make_shared<CappedAllocator>(2 * MiB);
  MemoryPool pool(raw, grow(256 * KiB));
  constexpr int kThreads = 6;
  constexpr int kOps = 3000;
  std::atomic<int> failures{0}, successes{0};
  std::atomic<bool> stop{false};
  std::vector<std::string> problems(kThreads);
  std::string trimmer_problem;

  auto worker = [&](int t) {
    std::mt19937 rng(1234 + t);
    std::uniform_int_distribution<size_t> size(1, 96 * KiB);
    struct Held {
      unsigned char* p;
      size_t n;
      unsigned char tag;
    };
    std::vector<Held> held;
    for (int i = 0; i < kOps; ++i) {
      bool release = held.size() >= 8 || (!held.empty() && rng() % 3 == 0);
      if (release) {
        size_t k = rng() % held.size();
        Held h = held[k];
        for (size_t j = 0; j < h.n; j += 61)
          if (h.p[j] != h.tag) problems[t] = "a block was overwritten while held";
        if (!pool.deallocate(h.p)) problems[t] = "a held block was not known to the pool";
        held.erase(held.begin() + static_cast<long>(k));
        continue;
      }
      size_t n = size(rng);
      try {
        auto* p = static_cast<unsigned char*>(pool.allocate(n, "a stress block"));
        if (reinterpret_cast<uintptr_t>(p) % 64 != 0) problems[t] = "a block is not aligned";
        auto tag = static_cast<unsigned char>(t * 37 + i);
        std::memset(p, tag, n);
        held.push_back({p, n, tag});
        ++successes;
      } catch (const Error& e) {
        if (e.code() != ErrorCode::kOutOfMemory) problems[t] = e.what();
        ++failures;
      }
    }
    for (const Held& h : held) pool.deallocate(h.p);
  };
  std::thread trimmer([&] {
    while (!stop.load()) {
      pool.trim();
      PoolStats s = pool.stats();
      if (s.in_use_bytes > s.reserved_bytes || s.largest_free_block > s.free_bytes) {
        trimmer_problem = "inconsistent statistics";
      }
      std::this_thread::yield();
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  for (auto& th : threads) th.join();
  stop = true;
  trimmer.join();

  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(problems[t], "") << "thread " << t;
  EXPECT_EQ(trimmer_problem, "");
  EXPECT_EQ(pool.check(), "");
  PoolStats s = pool.stats();
  EXPECT_EQ(s.in_use_bytes, 0u);
  EXPECT_EQ(s.allocations, static_cast<uint64_t>(successes.load()));
  EXPECT_EQ(s.frees, s.allocations);
  EXPECT_EQ(s.failures, static_cast<uint64_t>(failures.load()));
  EXPECT_GT(successes.load(), kThreads * kOps / 4);
  std::printf("stress: %d blocks served, %d refused at the cap\n", successes.load(), failures.load());
  EXPECT_LE(s.peak_in_use_bytes, 2 * MiB);
  pool.trim();
  EXPECT_EQ(pool.stats().reserved_bytes, 0u);
  EXPECT_EQ(raw->outstanding(), 0u);
  EXPECT_EQ(raw->mismatched_deallocations(), 0);
}

}  // namespace
}  // namespace minirt
