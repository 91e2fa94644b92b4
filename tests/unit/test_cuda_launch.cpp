// The CUDA global pools' mapping of planes to threads
// (kernels/cuda/global_pool_launch.h), checked on the host with the same
// functions the kernel uses: every element of every plane is read by exactly
// one thread, each plane is written by exactly one thread, and small planes
// keep most lanes busy (issue 11, item 12: one 256-thread block per 7x7
// plane left 207 threads idle).
#include "kernels/cuda/global_pool_launch.h"

#include <gtest/gtest.h>

#include <vector>

namespace minirt::cuda {
namespace {

struct Coverage {
  std::vector<int> reads;   // per element of every plane
  std::vector<int> writes;  // per plane
  int64_t busy_threads = 0, threads = 0;
};

// Walks the grid as the kernel does: thread t of block b reads elements
// lane, lane + lanes, ... of its plane, and lane 0 writes the plane's result.
Coverage walk(int64_t planes, int64_t size) {
  Coverage c;
  c.reads.assign(static_cast<size_t>(planes * size), 0);
  c.writes.assign(static_cast<size_t>(planes), 0);
  const GlobalPoolLaunch l = global_pool_launch(planes, size);
  for (int64_t b = 0; b < l.blocks; ++b)
    for (int t = 0; t < kGlobalPoolThreads; ++t) {
      ++c.threads;
      const int64_t p = global_pool_plane(l.lanes, b, t);
      const int lane = global_pool_lane(l.lanes, t);
      if (p >= planes) continue;
      bool read = false;
      for (int64_t i = lane; i < size; i += l.lanes) {
        ++c.reads[static_cast<size_t>(p * size + i)];
        read = true;
      }
      c.busy_threads += read;
      if (lane == 0) ++c.writes[static_cast<size_t>(p)];
    }
  return c;
}

TEST(CudaGlobalPoolLaunch, EveryElementReadOnceEveryPlaneWrittenOnce) {
  for (int64_t planes : {1, 2, 3, 7, 8, 9, 255, 256, 257, 2048, 4097})
    for (int64_t size : {1, 2, 8, 9, 31, 32, 33, 49, 196, 4096, 4097, 12544}) {
      if (planes * size > 3'000'000) continue;
      SCOPED_TRACE(::testing::Message() << planes << " planes of " << size);
      const Coverage c = walk(planes, size);
      for (size_t i = 0; i < c.reads.size(); ++i) ASSERT_EQ(c.reads[i], 1) << "element " << i;
      for (size_t p = 0; p < c.writes.size(); ++p) ASSERT_EQ(c.writes[p], 1) << "plane " << p;
    }
}

TEST(CudaGlobalPoolLaunch, LanesFollowThePlaneSize) {
  EXPECT_EQ(global_pool_launch(2048, 1).lanes, 1);  // 1x1 planes: a thread each, 8 blocks
  EXPECT_EQ(global_pool_launch(2048, 1).blocks, 8);
  EXPECT_EQ(global_pool_launch(2048, 4).lanes, 1);
  EXPECT_EQ(global_pool_launch(2048, 5).lanes, 2);
  EXPECT_EQ(global_pool_launch(2048, 9).lanes, 4);    // 3x3: 4 lanes of 2 or 3 elements
  EXPECT_EQ(global_pool_launch(2048, 49).lanes, 16);  // ResNet-50's last 7x7: 16 lanes, 16 planes a block
  EXPECT_EQ(global_pool_launch(2048, 49).blocks, 128);
  EXPECT_EQ(global_pool_launch(2048, 128).lanes, 32);
  EXPECT_EQ(global_pool_launch(3, 4096).lanes, kWarp);
  EXPECT_EQ(global_pool_launch(3, 4097).lanes, kGlobalPoolThreads);
  EXPECT_EQ(global_pool_launch(3, 50176).blocks, 3);  // 224x224: a block each
  EXPECT_EQ(global_pool_launch(0, 49).blocks, 0);     // nothing to launch
  EXPECT_EQ(global_pool_launch(5, 0).blocks, 0);
}

TEST(CudaGlobalPoolLaunch, EveryLaneOfAFullBlockReads) {
  // The old launch (a 256-thread block per plane) had 49 of 256 threads
  // reading on a 7x7 plane and 1 of 256 on a 1x1 plane. Now every lane has
  // an element whatever the size, when the planes fill the blocks.
  for (int64_t size = 1; size <= 4200; size += size < 70 ? 1 : 37) {
    const Coverage c = walk(256, size);
    EXPECT_EQ(c.busy_threads, c.threads) << size << " elements a plane";
  }
}

}  // namespace
}  // namespace minirt::cuda
