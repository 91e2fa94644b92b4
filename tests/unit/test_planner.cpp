// The arena planner: blocks alive at the same time never overlap, and
// blocks with disjoint lifetimes share memory.
#include "runtime/memory_plan.h"

#include <gtest/gtest.h>

#include <random>

namespace minirt {
namespace {

bool overlaps(const Block& a, const Block& b) {
  bool time = a.first <= b.last && b.first <= a.last;
  bool space = a.offset < b.offset + b.size && b.offset < a.offset + a.size;
  return time && space;
}

TEST(AssignOffsets, ChainReusesMemory) {
  // a -> b -> c -> d: each value dies after the next step.
  std::vector<Block> blocks = {{1000, 0, 1}, {1000, 1, 2}, {1000, 2, 3}, {1000, 3, 4}};
  size_t total = assign_offsets(blocks, 64);
  EXPECT_EQ(total, 2 * 1024u);  // two live at a time, each rounded up to 64
  for (size_t i = 0; i < blocks.size(); ++i)
    for (size_t j = i + 1; j < blocks.size(); ++j) EXPECT_FALSE(overlaps(blocks[i], blocks[j])) << i << " " << j;
}

TEST(AssignOffsets, AllAliveNeedTheSum) {
  std::vector<Block> blocks = {{64, 0, 5}, {128, 0, 5}, {256, 0, 5}};
  EXPECT_EQ(assign_offsets(blocks, 64), 448u);
}

TEST(AssignOffsets, OffsetsAreAligned) {
  std::vector<Block> blocks = {{3, 0, 1}, {5, 0, 1}, {7, 1, 2}};
  assign_offsets(blocks, 64);
  for (const auto& b : blocks) EXPECT_EQ(b.offset % 64, 0u);
}

TEST(AssignOffsets, RandomIntervalsNeverCollide) {
  std::mt19937 rng(7);
  for (int round = 0; round < 50; ++round) {
    std::vector<Block> blocks;
    int n = 5 + static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) {
      int first = static_cast<int>(rng() % 30);
      int last = first + static_cast<int>(rng() % 10);
      blocks.push_back({1 + rng() % 5000, first, last});
    }
    size_t total = assign_offsets(blocks, 64);
    size_t peak = 0;  // the largest set alive at one step is a lower bound
    for (int t = 0; t < 40; ++t) {
      size_t live = 0;
      for (const auto& b : blocks)
        if (b.first <= t && t <= b.last) live += (b.size + 63) / 64 * 64;
      peak = std::max(peak, live);
    }
    EXPECT_GE(total, peak);
    for (size_t i = 0; i < blocks.size(); ++i) {
      EXPECT_LE(blocks[i].offset + blocks[i].size, total);
      for (size_t j = i + 1; j < blocks.size(); ++j) ASSERT_FALSE(overlaps(blocks[i], blocks[j]));
    }
  }
}

}  // namespace
}  // namespace minirt
