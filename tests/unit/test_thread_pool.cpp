// The thread pool: every index is covered exactly once, for any size, grain
// and pool size; concurrent and nested calls work; workers that fell asleep
// wake up. parallel_ranges: every unit once, per-task scratch never shared,
// and a slow thread's range finished by the others.
#include "runtime/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace minirt {
namespace {

void expect_each_index_once(ThreadPool& pool, int64_t n, int64_t grain) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
  pool.parallel_for(
      n,
      [&](int64_t b, int64_t e) {
        ASSERT_LE(0, b);
        ASSERT_LE(b, e);
        ASSERT_LE(e, n);
        for (int64_t i = b; i < e; ++i) hits[i]++;
      },
      grain);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " grain=" << grain << " i=" << i;
}

TEST(ThreadPool, CoversEveryIndexOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int64_t n : {0, 1, 2, 7, 64, 1000, 4097})
      for (int64_t grain : {1, 3, 100, 5000}) expect_each_index_once(pool, n, grain);
  }
}

TEST(ThreadPool, ConcurrentCallersEachGetTheirWorkDone) {
  ThreadPool pool(3);
  std::vector<std::thread> callers;
  std::atomic<int> bad{0};
  for (int c = 0; c < 6; ++c)
    callers.emplace_back([&, c] {
      for (int round = 0; round < 200; ++round) {
        int64_t n = 50 + c * 17 + round % 13;
        std::vector<int> hits(static_cast<size_t>(n), 0);
        pool.parallel_for(n, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) hits[i]++;
        });
        for (int h : hits) bad += h != 1;
      }
    });
  for (auto& t : callers) t.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST(ThreadPool, NestedCallsRunInline) {
  ThreadPool pool(4);
  std::atomic<int64_t> total{0};
  pool.parallel_for(8, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) pool.parallel_for(10, [&](int64_t b2, int64_t e2) { total += e2 - b2; });
  });
  EXPECT_EQ(total.load(), 80);
}

TEST(ThreadPool, SleepingWorkersWakeUp) {
  ThreadPool pool(3);
  expect_each_index_once(pool, 100, 1);
  // Long enough for the workers to stop spinning and sleep.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  for (int i = 0; i < 20; ++i) {
    // The caller waits for every worker to report back; a worker that missed
    // its wake-up would hang this call (and the test times out).
    std::atomic<int> chunks_done{0};
    pool.parallel_for(3, [&](int64_t, int64_t) {
      auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(2);
      while (std::chrono::steady_clock::now() < until) {
      }
      chunks_done++;
    });
    EXPECT_EQ(chunks_done.load(), 3);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// Ranges of uneven length (some empty), every unit run once, each piece
// inside one task's range, and no two threads running pieces with one t at a
// time (the scratch rule).
void expect_ranges_once(ThreadPool& pool, const std::vector<int64_t>& bounds, int64_t pieces) {
  const int64_t tasks = static_cast<int64_t>(bounds.size()) - 1, n = bounds.back();
  std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
  std::vector<std::atomic<int>> in_use(static_cast<size_t>(tasks));
  std::atomic<int> bad{0};
  pool.parallel_ranges(
      tasks, [&](int64_t t) { return bounds[static_cast<size_t>(t)]; }, pieces,
      [&](int64_t t, int64_t u0, int64_t u1) {
        if (t < 0 || t >= tasks || u0 >= u1) {
          bad++;
          return;
        }
        if (in_use[t].fetch_add(1) != 0) bad++;
        int64_t owner = 0;
        while (bounds[owner + 1] <= u0) ++owner;
        if (u1 > bounds[owner + 1]) bad++;  // a piece never spans two ranges
        for (int64_t u = u0; u < u1; ++u) hits[u]++;
        std::this_thread::yield();
        in_use[t].fetch_sub(1);
      });
  EXPECT_EQ(bad.load(), 0);
  for (int64_t u = 0; u < n; ++u) ASSERT_EQ(hits[u].load(), 1) << "unit " << u << " pieces " << pieces;
}

TEST(ThreadPool, RangesRunEveryUnitOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    for (int64_t pieces : {1, 3, 8, 1000}) {
      expect_ranges_once(pool, {0, 10}, pieces);
      expect_ranges_once(pool, {0, 5, 5, 40}, pieces);
      expect_ranges_once(pool, {0, 1, 2, 3}, pieces);
      std::vector<int64_t> b{0};
      for (int t = 0; t < threads; ++t) b.push_back(b.back() + 100 + 37 * t);
      expect_ranges_once(pool, b, pieces);
    }
  }
}

// The thread that runs task 1 stalls in its first piece (as a thread whose
// core another process took would): the other thread finishes its own range
// and then takes the rest of range 1, which it runs as t = 0.
TEST(ThreadPool, RangesOfASlowThreadAreTakenByTheOthers) {
  ThreadPool pool(2);
  std::vector<std::atomic<int>> by(100);
  std::atomic<bool> stalled{false};
  pool.parallel_ranges(
      2, [](int64_t t) { return t * 50; }, 10,
      [&](int64_t t, int64_t u0, int64_t u1) {
        if (t == 1 && !stalled.exchange(true)) std::this_thread::sleep_for(std::chrono::milliseconds(200));
        for (int64_t u = u0; u < u1; ++u) by[u] = static_cast<int>(t) + 1;
      });
  int by_other = 0;
  for (int u = 50; u < 100; ++u) {
    ASSERT_NE(by[u].load(), 0) << "unit " << u << " never ran";
    by_other += by[u].load() == 1;
  }
  // 5 pieces of range 1 at least went to the thread of task 0 (all 10 when the
  // worker came too late to take task 1 at all).
  EXPECT_GE(by_other, 25);
}

TEST(ThreadPool, RangesNestedInAJobRunInline) {
  ThreadPool pool(3);
  std::atomic<int64_t> sum{0};
  pool.parallel_for(6, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      pool.parallel_ranges(
          3, [](int64_t t) { return t * 4; }, 4,
          [&](int64_t, int64_t u0, int64_t u1) {
            for (int64_t u = u0; u < u1; ++u) sum += u;
          });
  });
  EXPECT_EQ(sum.load(), 6 * (11 * 12 / 2));
}

}  // namespace
}  // namespace minirt
