// Pooling, Resize and Concat on the channel-blocked layout; see nchwc_ops.h.
//
// The windowed ops run the engines of the plain kernels (pool.cpp,
// resize.cpp) with pixels of b floats and planes of one channel block of one
// image; Concat on the channel axis copies whole blocks where a block of the
// output is a block of one input (every offset a multiple of b), and
// gathers lanes otherwise.
//
// MaxPool with a 2x2 or 3x3 window (the strided pools after a stem, the
// stride-1 ones of detectors) runs directly instead: each output pixel is the
// maximum of its window's taps, one vector of b lanes each, read straight
// from the input rows (the window unrolled for the interior, the taps inside
// the input looped over at the edges), so the input streams through once
// with no scratch rows written and read back. The separable engine makes
// about 2k + 2 vector accesses per output for a k x k window, the direct one
// k^2 + 1, but all of them loads from rows in L1: on a 64 x 111 x 111 ->
// 55 x 55 pool (3 MB, from L3) it is memory-bound at about half the
// engine's time (bench/kernels_bench_data.cpp, NchwcMaxPool).
#include "kernels/cpu/nchwc_ops.h"

#include "kernels/cpu/nchwc.h"
#include "kernels/cpu/bf16_values_isa.h"
#include "kernels/cpu/conv_int8_isa.h"
#include "kernels/cpu/registry.h"
#include "kernels/cpu/sgemm.h"
#include "kernels/cpu/vmath.h"
#include "runtime/ops/shape_ops.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace minirt::cpu {

namespace {

constexpr int64_t kCopyGrain = 16384;  // floats per parallel chunk of a copy, at least

bool is_blockable(const Graph& g, int v) {
  return v >= 0 && g.values[v].dtype == DType::kFloat32 && g.values[v].shape.size() == 4;
}

// ---------------------------------------------------------------- kernels

// ---- direct MaxPool

constexpr int64_t kPoolGrain = 16384;  // floats read and written per task, at least

// The direct row kernel for a window and pixels of b lanes, or null: 2x2 and
// 3x3 windows (any stride, dilation, padding) with the ISA's vectors.
MaxRowsFn direct_max_rows(const PoolWindow& q, int64_t b) {
#if MINIRT_VMATH_X86
  const SgemmIsa isa = sgemm_default_isa();
  const bool k2 = q.kh == 2 && q.kw == 2, k3 = q.kh == 3 && q.kw == 3;
  if (!q.is_max || !(k2 || k3)) return nullptr;
  if (b == 16 && isa == SgemmIsa::kAvx512) return k2 ? pool_direct_max_avx512().k2 : pool_direct_max_avx512().k3;
  if (b == 8 && (isa == SgemmIsa::kAvx512 || isa == SgemmIsa::kAvx2))
    return k2 ? pool_direct_max_avx2().k2 : pool_direct_max_avx2().k3;
#else
  (void)q, (void)b;
#endif
  return nullptr;
}

class PoolKernel final : public Kernel {
 public:
  PoolKernel(const Graph& g, const Node& n, int threads, int b)
      : q_(pool_window(n.attrs_as<PoolAttrs>(), in_shape(g, n, 0), out_shape(g, n, 0))),
        planes_(in_shape(g, n, 0)[0] * nchwc_blocks(in_shape(g, n, 0)[1], b)),
        b_(b),
        direct_(direct_max_rows(q_, b)),
        engine_(q_, direct_ ? 0 : planes_, b, threads) {
    if (!direct_) return;
    // Interior columns: ox * sw - pw >= 0 and ox * sw - pw + (kw - 1) * dw <= w - 1.
    col_lo_ = std::min(q_.ow, (q_.pw + q_.sw - 1) / q_.sw);
    const int64_t last = q_.w - 1 - (q_.kw - 1) * q_.dw + q_.pw;  // the largest ox * sw allowed
    col_hi_ = last < 0 ? col_lo_ : std::clamp<int64_t>(last / q_.sw + 1, col_lo_, q_.ow);
    units_ = planes_ * q_.oh;
    const int64_t moved = planes_ * b * (q_.h * q_.w + q_.oh * q_.ow);
    tasks_ = std::clamp<int64_t>(moved / kPoolGrain, 1, std::min<int64_t>(threads, std::max<int64_t>(1, units_)));
  }
  size_t workspace_bytes() const override { return direct_ ? 0 : engine_.workspace_bytes(); }
  std::string describe() const override { return direct_ ? "nchwc direct" : "nchwc"; }
  void run(const KernelArgs& args) override {
    const float* x = static_cast<const float*>(args.inputs[0]);
    float* y = static_cast<float*>(args.outputs[0]);
    if (!direct_) return engine_.run(x, y, static_cast<float*>(args.workspace), *args.pool);
    if (units_ == 0 || q_.ow == 0) return;
    const int64_t in_plane = q_.h * q_.w * b_, out_plane = q_.oh * q_.ow * b_;
    // Task t takes units (plane, output row) [units * t / tasks, units * (t + 1) / tasks).
    args.pool->parallel_for(tasks_, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t)
        for (int64_t u = units_ * t / tasks_, ue = units_ * (t + 1) / tasks_; u < ue;) {
          const int64_t p = u / q_.oh, r0 = u % q_.oh, r1 = std::min(q_.oh, r0 + (ue - u));
          direct_(MaxRows{&q_, x + p * in_plane, y + p * out_plane, r0, r1, col_lo_, col_hi_});
          u += r1 - r0;
        }
    });
  }

 private:
  PoolWindow q_;
  int64_t planes_;
  int64_t b_;
  MaxRowsFn direct_;  // the direct kernel, or null: the separable engine
  PoolEngine engine_;
  int64_t col_lo_ = 0, col_hi_ = 0, units_ = 0, tasks_ = 1;
};

class GlobalPoolKernel final : public Kernel {
 public:
  GlobalPoolKernel(const Graph& g, const Node& n, int b)
      : engine_(n.op == "GlobalMaxPool", in_shape(g, n, 0)[0] * nchwc_blocks(in_shape(g, n, 0)[1], b),
                in_shape(g, n, 0)[2] * in_shape(g, n, 0)[3], b) {}
  std::string describe() const override { return "nchwc"; }
  void run(const KernelArgs& args) override {
    engine_.run(static_cast<const float*>(args.inputs[0]), static_cast<float*>(args.outputs[0]), *args.pool);
  }

 private:
  GlobalPoolEngine engine_;
};

Resize2dEngine make_resize_engine(const Graph& g, const Node& n, int threads, int b) {
  const auto& a = n.attrs_as<ResizeAttrs>();
  const Shape& x = in_shape(g, n, 0);
  const Shape& y = out_shape(g, n, 0);
  bool legacy = n.op == "Upsample" || g.opset < 11;
  return Resize2dEngine(make_resize_axis(a, legacy, a.scales[2], x[2], y[2]),
                        make_resize_axis(a, legacy, a.scales[3], x[3], y[3]), a.mode == ResizeMode::kLinear,
                        x[0] * nchwc_blocks(x[1], b), x[2], x[3], y[2], y[3], b, threads);
}

class ResizeKernel final : public Kernel {
 public:
  ResizeKernel(const Graph& g, const Node& n, int threads, int b)
      : engine_(make_resize_engine(g, n, threads, b)), linear_(n.attrs_as<ResizeAttrs>().mode == ResizeMode::kLinear) {}
  size_t workspace_bytes() const override { return engine_.workspace_bytes(); }
  std::string describe() const override { return linear_ ? "nchwc linear" : "nchwc nearest"; }
  void run(const KernelArgs& args) override {
    engine_.run(static_cast<const float*>(args.inputs[0]), static_cast<float*>(args.outputs[0]),
                static_cast<float*>(args.workspace), *args.pool);
  }

 private:
  Resize2dEngine engine_;
  bool linear_;
};

// Concat on the channel axis. Each block of the output (per image) is
// either a whole block of one input (the block's channels start at a
// multiple of b in that input and end inside it: one contiguous copy of
// H * W * b floats, padding lanes included) or gathered lane by lane from the
// inputs' blocks, its padding lanes zero.
// T: float (blocks of b floats), or uint16_t for bf16 values (groups of 32
// bfloat16: b = 32), whose lanes move the same way.
template <typename T>
class ConcatKernel final : public Kernel {
 public:
  ConcatKernel(const Graph& g, const Node& n, int b) : b_(b) {
    const Shape& y = out_shape(g, n, 0);
    n_ = y[0];
    hw_ = y[2] * y[3];
    c_ = y[1];
    cb_ = nchwc_blocks(c_, b);
    int64_t off = 0;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      int64_t ci = in_shape(g, n, i)[1];
      in_c_.push_back(ci);
      in_off_.push_back(off);
      off += ci;
    }
    // Per output block: the source of each lane (input, block, lane), or
    // none for padding; a whole-block copy when the lanes are one input block.
    for (int64_t ob = 0; ob < cb_; ++ob) {
      Block blk;
      for (int64_t l = 0; l < b; ++l) {
        int64_t c = ob * b + l;
        Lane src{-1, 0, 0};
        if (c < c_) {
          size_t i = 0;
          while (c >= in_off_[i] + in_c_[i]) ++i;  // empty inputs are stepped over
          src = {static_cast<int64_t>(i), (c - in_off_[i]) / b, (c - in_off_[i]) % b};
        }
        blk.lanes.push_back(src);
      }
      const Lane& first = blk.lanes[0];
      blk.whole = first.lane == 0;
      for (int64_t l = 0; l < b && blk.whole; ++l) {
        const Lane& s = blk.lanes[static_cast<size_t>(l)];
        // Real lanes from the same input block at the same lane; padding
        // lanes of the output lie past the input's channels too.
        if (s.input >= 0) blk.whole = s.input == first.input && s.block == first.block && s.lane == l;
      }
      blocks_.push_back(std::move(blk));
    }
  }
  std::string describe() const override { return "nchwc"; }

  void run(const KernelArgs& args) override {
    T* y = static_cast<T*>(args.outputs[0]);
    const int64_t b = b_, blk_elems = hw_ * b;
    auto body = [&](int64_t u0, int64_t u1) {
      for (int64_t u = u0; u < u1; ++u) {
        int64_t img = u / cb_, ob = u % cb_;
        const Block& blk = blocks_[static_cast<size_t>(ob)];
        T* dst = y + u * blk_elems;
        auto src_block = [&](const Lane& s) {
          size_t i = static_cast<size_t>(s.input);
          const T* x = static_cast<const T*>(args.inputs[i]);
          return x + (img * nchwc_blocks(in_c_[i], b_) + s.block) * blk_elems;
        };
        if (blk.whole) {
          std::memcpy(dst, src_block(blk.lanes[0]), static_cast<size_t>(blk_elems) * sizeof(T));
          continue;
        }
        const T* src[32];
        for (int64_t l = 0; l < b; ++l) {
          const Lane& s = blk.lanes[static_cast<size_t>(l)];
          src[l] = s.input >= 0 ? src_block(s) + s.lane : nullptr;
        }
        for (int64_t p = 0; p < hw_; ++p) {
          T* d = dst + p * b;
          for (int64_t l = 0; l < b; ++l) d[l] = src[l] ? src[l][p * b] : T{0};
        }
      }
    };
    args.pool->parallel_for(n_ * cb_, body, std::max<int64_t>(1, kCopyGrain / std::max<int64_t>(blk_elems, 1)));
  }

 private:
  struct Lane {
    int64_t input, block, lane;  // input -1: a padding lane
  };
  struct Block {
    std::vector<Lane> lanes;
    bool whole = false;
  };
  int b_;
  int64_t n_ = 0, c_ = 0, cb_ = 0, hw_ = 0;
  std::vector<int64_t> in_c_, in_off_;
  std::vector<Block> blocks_;
};

// MaxPool on narrow values, groups of L channels of T: bf16 values (L 32),
// whose max is exact on bf16 numbers, and int8 values (L 64), whose largest
// code is the code of the largest value (the grid rises with the code). A
// max pool between bf16 (int8) convolutions (ResNet's stem -> max pool ->
// first block) so keeps their values narrow: half (a quarter of) the float
// traffic. `rows` does output rows [r0, r1) of one group (ISA files).
template <typename T, int L>
class NarrowMaxPoolKernel final : public Kernel {
 public:
  using Rows = void (*)(const Bf16PoolGeom& q, const T* x, T* y, int64_t row0, int64_t row1);
  NarrowMaxPoolKernel(const Graph& g, const Node& n, int threads, Rows rows, const char* name)
      : rows_(rows), name_(name) {
    const PoolWindow w = pool_window(n.attrs_as<PoolAttrs>(), in_shape(g, n, 0), out_shape(g, n, 0));
    q_ = Bf16PoolGeom{w.h, w.w, w.oh, w.ow, w.kh, w.kw, w.sh, w.sw, w.dh, w.dw, w.ph, w.pw};
    planes_ = in_shape(g, n, 0)[0] * nchwc_blocks(in_shape(g, n, 0)[1], L);
    units_ = planes_ * q_.oh;
    const int64_t moved = planes_ * L * (q_.h * q_.w + q_.oh * q_.ow);
    tasks_ = std::clamp<int64_t>(moved / kPoolGrain, 1, std::min<int64_t>(threads, std::max<int64_t>(1, units_)));
  }
  std::string describe() const override { return name_; }
  void run(const KernelArgs& args) override {
    const T* x = static_cast<const T*>(args.inputs[0]);
    T* y = static_cast<T*>(args.outputs[0]);
    if (units_ == 0 || q_.ow == 0) return;
    const int64_t in_plane = q_.h * q_.w * L, out_plane = q_.oh * q_.ow * L;
    args.pool->parallel_for(tasks_, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t)
        for (int64_t u = units_ * t / tasks_, ue = units_ * (t + 1) / tasks_; u < ue;) {
          const int64_t p = u / q_.oh, r0 = u % q_.oh, r1 = std::min(q_.oh, r0 + (ue - u));
          rows_(q_, x + p * in_plane, y + p * out_plane, r0, r1);
          u += r1 - r0;
        }
    });
  }

 private:
  Rows rows_;
  const char* name_;
  Bf16PoolGeom q_;
  int64_t planes_ = 0, units_ = 0, tasks_ = 1;
};

}  // namespace

bool nchwc_data_supports(const Graph& g, const Node& n, int b, std::string* why) {
  auto no = [&](const std::string& s) {
    if (why) *why = s;
    return false;
  };
  if (b != 8 && b != 16) return no("the channel block must be 8 or 16, not " + std::to_string(b));
  if (!n.parsed && n.op != "GlobalAveragePool" && n.op != "GlobalMaxPool") return no("its attributes were not parsed");
  const bool pool = n.op == "MaxPool" || n.op == "AveragePool";
  const bool global = n.op == "GlobalAveragePool" || n.op == "GlobalMaxPool";
  const bool resize = n.op == "Resize" || n.op == "Upsample";
  const bool concat = n.op == "Concat";
  if (!pool && !global && !resize && !concat) return no(n.op + " has no blocked-layout kernel");
  if (n.outputs.empty() || !is_blockable(g, n.outputs[0])) return no("its output is not a 4-D float tensor");
  for (size_t i = 1; i < n.outputs.size(); ++i)
    if (n.outputs[i] >= 0) return no("it has more than one output");
  if (n.inputs.empty() || !is_blockable(g, n.inputs[0])) return no("its input is not a 4-D float tensor");
  const Shape& x = in_shape(g, n, 0);
  const Shape& y = out_shape(g, n, 0);
  if (pool) {
    if (n.attrs_as<PoolAttrs>().spatial() != 2) return no("its window is not 2-D");
    return true;
  }
  if (global) return true;
  if (resize) {
    const auto& a = n.attrs_as<ResizeAttrs>();
    if (a.scales.size() != 4) return no("its scales are not resolved for 4 axes");
    if (a.mode == ResizeMode::kCubic) return no("cubic runs on the plain layout");
    if (a.scales[0] != 1.0f || a.scales[1] != 1.0f || y[0] != x[0] || y[1] != x[1])
      return no("it resizes the batch or channel axis");
    return true;
  }
  // Concat.
  if (n.attrs_as<AxisAttrs>().axis != 1) return no("it concatenates along an axis other than channels");
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (!is_blockable(g, n.inputs[i])) return no("input " + std::to_string(i) + " is not a 4-D float tensor");
  return true;
}

std::unique_ptr<Kernel> make_nchwc_data_kernel(const Graph& g, const Node& n, int threads, int b) {
  std::string why;
  if (!nchwc_data_supports(g, n, b, &why))
    node_fail(ErrorCode::kUnsupported, g, n, "no channel-blocked kernel: " + why);
  if (n.op == "MaxPool" || n.op == "AveragePool") return std::make_unique<PoolKernel>(g, n, threads, b);
  if (n.op == "GlobalAveragePool" || n.op == "GlobalMaxPool") return std::make_unique<GlobalPoolKernel>(g, n, b);
  if (n.op == "Resize" || n.op == "Upsample") return std::make_unique<ResizeKernel>(g, n, threads, b);
  return std::make_unique<ConcatKernel<float>>(g, n, b);
}

bool nchwc_bf16_data_supports(const Graph& g, const Node& n) {
  if (n.dead || !n.parsed || n.outputs.empty() || n.outputs[0] < 0) return false;
  for (size_t i = 1; i < n.outputs.size(); ++i)
    if (n.outputs[i] >= 0) return false;  // MaxPool's Indices
  if (n.op == "MaxPool") return n.attrs_as<PoolAttrs>().spatial() == 2 && n.inputs.size() == 1;
  if (n.op == "Concat") return n.attrs_as<AxisAttrs>().axis == 1;
  return false;
}

bool nchwc_u8_maxpool_supports(const Graph& g, const Node& n) {
  if (n.dead || !n.parsed || n.op != "MaxPool" || n.outputs.empty() || n.outputs[0] < 0 || n.inputs.size() != 1)
    return false;
  for (size_t i = 1; i < n.outputs.size(); ++i)
    if (n.outputs[i] >= 0) return false;  // Indices
  return n.attrs_as<PoolAttrs>().spatial() == 2 && in_shape(g, n, 0).size() == 4;
}

std::unique_ptr<Kernel> make_nchwc_u8_data_kernel(const Graph& g, const Node& n, int threads) {
  if (n.op == "Concat" && n.parsed && n.attrs_as<AxisAttrs>().axis == 1)
    return std::make_unique<ConcatKernel<uint8_t>>(g, n, 64);
  if (!nchwc_u8_maxpool_supports(g, n))
    node_fail(ErrorCode::kUnsupported, g, n, "no kernel for " + n.op + " on int8 values");
  return std::make_unique<NarrowMaxPoolKernel<uint8_t, 64>>(g, n, threads, u8_max_rows_avx512, "nchwc int8 (64c u8)");
}

std::unique_ptr<Kernel> make_nchwc_bf16_data_kernel(const Graph& g, const Node& n, int threads) {
  if (!nchwc_bf16_data_supports(g, n))
    node_fail(ErrorCode::kUnsupported, g, n, "no kernel for " + n.op + " on bf16 values");
  if (n.op == "MaxPool")
    return std::make_unique<NarrowMaxPoolKernel<uint16_t, 32>>(g, n, threads, bf16_max_rows_avx512, "nchwc bf16 (32c)");
  return std::make_unique<ConcatKernel<uint16_t>>(g, n, 32);
}

}  // namespace minirt::cpu
