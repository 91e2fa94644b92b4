// Data-movement and windowed kernels: strided views (Slice, Transpose,
// Expand, Gemm's broadcast C), Pad, Gather, Resize, and the pooling cases
// cuDNN does not take (asymmetric padding, ceil_mode overhang, dilations)
// plus the global pools. Movers work on any element of 1, 2, 4 or 8 bytes.
#include <cuda_runtime.h>

#include <cmath>

#include "kernels/cuda/global_pool_launch.h"
#include "kernels/cuda/kernels.h"

namespace minirt::cuda {

namespace {

constexpr int kThreads = 256;
constexpr float kLowest = -3.402823466e+38f;  // std::numeric_limits<float>::lowest()

unsigned blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  if (b < 1) b = 1;
  if (b > 65536) b = 65536;
  return static_cast<unsigned>(b);
}

#define MINIRT_GRID_LOOP(i, n)                                                           \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

template <typename T>
__global__ void view_kernel(const T* x, T* y, ViewArgs v) {
  MINIRT_GRID_LOOP(i, v.count) {
    int64_t src = v.base, rest = i;
    for (int d = v.rank - 1; d >= 0; --d) {
      src += (rest % v.shape[d]) * v.stride[d];
      rest /= v.shape[d];
    }
    y[i] = x[src];
  }
}

template <typename T>
__global__ void pad_kernel(const T* x, T* y, PadArgs a) {
  T fill;
  static_assert(sizeof(T) <= sizeof(uint64_t));
  memcpy(&fill, &a.fill, sizeof(T));
  MINIRT_GRID_LOOP(i, a.count) {
    int64_t src = 0, rest = i;
    bool filled = false;
    for (int d = a.rank - 1; d >= 0; --d) {
      int64_t o = rest % a.out_shape[d];
      rest /= a.out_shape[d];
      int64_t len = a.in_shape[d];
      int64_t k = o - a.begin[d];
      if (k < 0 || k >= len) {
        if (a.mode == PadModeGpu::kConstant || len == 0) {
          filled = true;
          continue;
        }
        if (a.mode == PadModeGpu::kEdge) {
          k = k < 0 ? 0 : len - 1;
        } else {  // reflect, without repeating the edge
          int64_t period = 2 * (len - 1);
          if (period == 0) {
            k = 0;
          } else {
            k = ((k % period) + period) % period;
            if (k >= len) k = period - k;
          }
        }
      }
      src += k * a.in_stride[d];
    }
    y[i] = filled ? fill : x[src];
  }
}

template <typename T>
__global__ void gather_kernel(const T* x, const void* indices, T* y, GatherArgs a) {
  int64_t n = a.outer * a.count * a.inner;
  MINIRT_GRID_LOOP(i, n) {
    int64_t j = i % a.inner;
    int64_t k = (i / a.inner) % a.count;
    int64_t o = i / (a.inner * a.count);
    int64_t idx = a.index64 ? static_cast<const int64_t*>(indices)[k]
                            : static_cast<int64_t>(static_cast<const int32_t*>(indices)[k]);
    if (idx < 0) idx += a.len;
    y[i] = (idx < 0 || idx >= a.len) ? T(0) : x[(o * a.len + idx) * a.inner + j];
  }
}

__global__ void resize_kernel(const float* x, float* y, ResizeArgs a) {
  MINIRT_GRID_LOOP(i, a.count) {
    int64_t at[kMaxRank];
    int64_t rest = i;
    for (int d = a.rank - 1; d >= 0; --d) {
      at[d] = rest % a.out_shape[d];
      rest /= a.out_shape[d];
    }
    int64_t base = 0;
    int blended = 0;
    for (int d = 0; d < a.rank; ++d) {
      if (!a.off0[d])
        base += at[d] * a.in_stride[d];
      else if (!a.linear)
        base += a.off0[d][at[d]];
      else
        ++blended;
    }
    if (!a.linear || blended == 0) {
      y[i] = x[base];
      continue;
    }
    float acc = 0.0f;
    for (int mask = 0; mask < (1 << blended); ++mask) {
      int64_t off = base;
      float w = 1.0f;
      int b = 0;
      for (int d = 0; d < a.rank; ++d) {
        if (!a.off0[d]) continue;
        bool second = (mask >> b) & 1;
        ++b;
        off += second ? a.off1[d][at[d]] : a.off0[d][at[d]];
        w *= second ? a.w1[d][at[d]] : a.w0[d][at[d]];
      }
      if (w != 0.0f) acc += w * x[off];
    }
    y[i] = acc;
  }
}

__global__ void pool_kernel(const float* x, float* y, PoolArgs a) {
  int64_t per_plane = a.out[0] * a.out[1] * a.out[2];
  int64_t n = a.planes * per_plane;
  int64_t in_plane = a.in[0] * a.in[1] * a.in[2];
  MINIRT_GRID_LOOP(i, n) {
    int64_t o2 = i % a.out[2];
    int64_t o1 = (i / a.out[2]) % a.out[1];
    int64_t o0 = (i / (a.out[2] * a.out[1])) % a.out[0];
    int64_t p = i / per_plane;
    const float* xp = x + p * in_plane;
    float acc = a.max ? kLowest : 0.0f;
    int64_t inside = 0, padded = 0;
    for (int64_t k0 = 0; k0 < a.kernel[0]; ++k0) {
      int64_t i0 = o0 * a.stride[0] - a.pad_begin[0] + k0 * a.dilation[0];
      bool in0 = i0 >= 0 && i0 < a.in[0];
      bool pad0 = i0 >= -a.pad_begin[0] && i0 < a.in[0] + a.pad_end[0];
      for (int64_t k1 = 0; k1 < a.kernel[1]; ++k1) {
        int64_t i1 = o1 * a.stride[1] - a.pad_begin[1] + k1 * a.dilation[1];
        bool in1 = i1 >= 0 && i1 < a.in[1];
        bool pad1 = i1 >= -a.pad_begin[1] && i1 < a.in[1] + a.pad_end[1];
        for (int64_t k2 = 0; k2 < a.kernel[2]; ++k2) {
          int64_t i2 = o2 * a.stride[2] - a.pad_begin[2] + k2 * a.dilation[2];
          bool in2 = i2 >= 0 && i2 < a.in[2];
          if (pad0 && pad1 && i2 >= -a.pad_begin[2] && i2 < a.in[2] + a.pad_end[2]) ++padded;
          if (!(in0 && in1 && in2)) continue;
          float v = xp[(i0 * a.in[1] + i1) * a.in[2] + i2];
          if (a.max)
            acc = v > acc ? v : acc;
          else
            acc += v;
          ++inside;
        }
      }
    }
    if (!a.max) {
      int64_t div = a.count_include_pad ? padded : inside;
      acc = div > 0 ? acc / static_cast<float>(div) : 0.0f;
    }
    y[i] = acc;
  }
}

// The global pools, with kLanes threads per plane (global_pool_launch.h):
// each lane combines the elements it reads at a stride of kLanes, then the
// lanes of a plane combine their partials — none to do for one lane, warp
// shuffles within each slice of kLanes lanes (or the whole warp), and for a
// whole block the warps' results through shared memory. Threads past the
// last plane take part with nothing read.
template <int kLanes>
__global__ void global_pool_kernel(const float* x, float* y, int64_t planes, int64_t size, bool max) {
  const int64_t plane = global_pool_plane(kLanes, blockIdx.x, threadIdx.x);
  const int lane = global_pool_lane(kLanes, threadIdx.x);
  float acc = max ? -INFINITY : 0.0f;  // a plane of -inf has max -inf, not the lowest float
  if (plane < planes) {
    const float* xp = x + plane * size;
    for (int64_t i = lane; i < size; i += kLanes) {
      float v = xp[i];
      if (max)
        acc = v > acc ? v : acc;
      else
        acc += v;
    }
  }
  if constexpr (kLanes > 1) {
    constexpr int kWidth = kLanes < kWarp ? kLanes : kWarp;  // the lanes a shuffle stays within
    for (int off = kWidth / 2; off > 0; off /= 2) {
      float o = __shfl_down_sync(0xffffffffu, acc, off, kWidth);
      acc = max ? (o > acc ? o : acc) : acc + o;
    }
  }
  if constexpr (kLanes > kWarp) {
    __shared__ float part[kGlobalPoolThreads / kWarp];
    const int warp = threadIdx.x / kWarp;
    if (threadIdx.x % kWarp == 0) part[warp] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int w = 1; w < kGlobalPoolThreads / kWarp; ++w) acc = max ? (part[w] > acc ? part[w] : acc) : acc + part[w];
    }
  }
  if (lane == 0 && plane < planes) y[plane] = max ? acc : acc / static_cast<float>(size);
}

template <int kLanes>
void launch_lanes(const float* x, float* y, int64_t planes, int64_t size, bool max, unsigned blocks,
                  cudaStream_t stream) {
  global_pool_kernel<kLanes><<<blocks, kGlobalPoolThreads, 0, stream>>>(x, y, planes, size, max);
}

template <template <typename> class Launch, typename... Args>
void by_size(size_t elem_size, Args&&... args) {
  switch (elem_size) {
    case 1:
      Launch<uint8_t>::go(args...);
      break;
    case 2:
      Launch<uint16_t>::go(args...);
      break;
    case 4:
      Launch<uint32_t>::go(args...);
      break;
    default:
      Launch<uint64_t>::go(args...);
      break;
  }
}

template <typename T>
struct ViewLaunch {
  static void go(const void* x, void* y, const ViewArgs& v, cudaStream_t s) {
    view_kernel<T><<<blocks_for(v.count), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(y), v);
  }
};

template <typename T>
struct PadLaunch {
  static void go(const void* x, void* y, const PadArgs& a, cudaStream_t s) {
    pad_kernel<T><<<blocks_for(a.count), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(y), a);
  }
};

template <typename T>
struct GatherLaunch {
  static void go(const void* x, const void* idx, void* y, const GatherArgs& a, cudaStream_t s) {
    gather_kernel<T><<<blocks_for(a.outer * a.count * a.inner), kThreads, 0, s>>>(static_cast<const T*>(x), idx,
                                                                                  static_cast<T*>(y), a);
  }
};

}  // namespace

void launch_view_copy(const void* x, void* y, const ViewArgs& v, size_t elem_size, cudaStream_t stream) {
  if (v.count <= 0) return;
  by_size<ViewLaunch>(elem_size, x, y, v, stream);
}

void launch_pad(const void* x, void* y, const PadArgs& a, size_t elem_size, cudaStream_t stream) {
  if (a.count <= 0) return;
  by_size<PadLaunch>(elem_size, x, y, a, stream);
}

void launch_gather(const void* x, const void* indices, void* y, const GatherArgs& a, size_t elem_size,
                   cudaStream_t stream) {
  if (a.outer * a.count * a.inner <= 0) return;
  by_size<GatherLaunch>(elem_size, x, indices, y, a, stream);
}

void launch_resize(const float* x, float* y, const ResizeArgs& a, cudaStream_t stream) {
  if (a.count <= 0) return;
  resize_kernel<<<blocks_for(a.count), kThreads, 0, stream>>>(x, y, a);
}

void launch_pool(const float* x, float* y, const PoolArgs& a, cudaStream_t stream) {
  int64_t n = a.planes * a.out[0] * a.out[1] * a.out[2];
  if (n <= 0) return;
  pool_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, y, a);
}

void launch_global_pool(const float* x, float* y, int64_t planes, int64_t size, bool max, cudaStream_t stream) {
  const GlobalPoolLaunch l = global_pool_launch(planes, size);
  if (l.blocks == 0) return;
  // One instantiation per lane count: 1, 2, 4, 8, 16, 32, then a block.
  using Launch = void (*)(const float*, float*, int64_t, int64_t, bool, unsigned, cudaStream_t);
  constexpr Launch kByLanes[] = {launch_lanes<1>,
                                 launch_lanes<2>,
                                 launch_lanes<4>,
                                 launch_lanes<8>,
                                 launch_lanes<16>,
                                 launch_lanes<kWarp>,
                                 launch_lanes<kGlobalPoolThreads>};
  int k = 0;
  while (k < 5 && (1 << k) < l.lanes) ++k;
  if (l.lanes == kGlobalPoolThreads) k = 6;
  kByLanes[k](x, y, planes, size, max, static_cast<unsigned>(l.blocks), stream);
}

}  // namespace minirt::cuda
