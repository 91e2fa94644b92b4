// How the CUDA global pools (GlobalAveragePool, GlobalMaxPool) spread their
// planes over threads. A plane is one (n, c) run of `size` floats; the lanes
// of a plane read its elements at a stride of the lane count and combine
// their partial results. The lane count follows the plane's size, so that
// small planes (a ResNet's last 7x7, or 1x1) do not leave most of a block's
// threads without an element:
//   size <= kGlobalPoolWarpPlane     the fewest of 1, 2, 4, ..., 32 lanes (a
//                                    warp or a slice of one) that give each
//                                    lane at most kGlobalPoolPerLane elements
//                                    (up to 128 at 32 lanes): every lane reads
//   larger                           one block per plane
// Plain C++ with __host__ __device__ under nvcc, so the kernel and the unit
// test (tests/unit/test_cuda_launch.cpp, every machine) use the same mapping.
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define MINIRT_HOST_DEVICE __host__ __device__
#else
#define MINIRT_HOST_DEVICE
#endif

namespace minirt::cuda {

constexpr int kGlobalPoolThreads = 256;         // threads per block
constexpr int kWarp = 32;                       // lanes of a warp on every NVIDIA GPU so far
constexpr int64_t kGlobalPoolPerLane = 4;       // elements a lane reads before the plane gets more lanes
constexpr int64_t kGlobalPoolWarpPlane = 4096;  // up to this many: at most a warp (128 elements a lane)

struct GlobalPoolLaunch {
  int lanes = 1;       // threads that share one plane: 1, 2, 4, ..., kWarp, or kGlobalPoolThreads
  int64_t blocks = 0;  // blocks of kGlobalPoolThreads in the grid (0: nothing to do)
};

inline GlobalPoolLaunch global_pool_launch(int64_t planes, int64_t size) {
  GlobalPoolLaunch l;
  if (planes <= 0 || size <= 0) return l;
  if (size > kGlobalPoolWarpPlane) {
    l.lanes = kGlobalPoolThreads;
  } else {
    while (l.lanes < kWarp && l.lanes * kGlobalPoolPerLane < size) l.lanes *= 2;
  }
  const int64_t per_block = kGlobalPoolThreads / l.lanes;
  l.blocks = (planes + per_block - 1) / per_block;
  return l;
}

// The plane a thread works on (may be >= planes in the last block: such a
// thread still takes part in its warp's or block's combining, reading nothing).
MINIRT_HOST_DEVICE inline int64_t global_pool_plane(int lanes, int64_t block, int thread) {
  return block * (kGlobalPoolThreads / lanes) + thread / lanes;
}

MINIRT_HOST_DEVICE inline int global_pool_lane(int lanes, int thread) { return thread % lanes; }

}  // namespace minirt::cuda
