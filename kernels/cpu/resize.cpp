// Resize and Upsample on the CPU, modes nearest, linear and cubic, any rank
// (GridSample, which samples at a grid's positions, is grid_sample.cpp).
//
//   ResizeAxis ah = make_resize_axis(attrs, legacy, scale_h, h, oh);   // plan time, per axis
//   Resize2dEngine e(ah, aw, linear, planes, h, w, oh, ow, /*lanes=*/1, threads);
//   e.run(x, y, workspace, pool);
//
// When the kernel is made, each axis gets a table mapping every output index
// to its source: one input index (nearest) or two neighbours and their
// weights (linear), following the ONNX Resize rules as onnxruntime applies
// them. An axis whose scale is 1 maps each index to itself.
//
// The common case, only the last two axes resized (an image's H and W), runs
// on Resize2dEngine, which the channel-blocked kernels share (pixels of
// `lanes` floats): parallel over (plane, band of output rows); nearest makes
// each distinct source row once (an output row with the same source as the
// one before is a copy of it) and a 2x upsample duplicates pixels with
// vector shuffles; linear blends each source row along W once into a row
// buffer and then blends two such rows along H, whole rows at a time.
// Other cases walk the output one row (last axis) at a time: nearest
// gathers, linear blends the 2^k corners of the k interpolated outer axes,
// each interpolated along the row.
#include "kernels/cpu/nchwc_ops.h"
#include "kernels/cpu/registry.h"
#include "runtime/ops/resize.h"
#include "kernels/cpu/resize_isa.h"
#include "kernels/cpu/resize_scalar.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#define MINIRT_RESIZE_X86 1
#else
#define MINIRT_RESIZE_X86 0
#endif

namespace minirt::cpu {

namespace {

constexpr int64_t kGrain = 16384;  // output elements per parallel chunk, at least

}  // namespace

ResizeAxis make_resize_axis(const ResizeAttrs& a, bool legacy, float scale, int64_t in, int64_t out) {
  ResizeAxis t;
  if (scale == 1.0f && in == out) return t;
  t.identity = false;
  bool linear = a.mode == ResizeMode::kLinear;
  t.i0.resize(static_cast<size_t>(out));
  if (linear) {
    t.i1.resize(static_cast<size_t>(out));
    t.w0.resize(static_cast<size_t>(out));
    t.w1.resize(static_cast<size_t>(out));
  }
  float last = static_cast<float>(in - 1);
  for (int64_t o = 0; o < out; ++o) {
    float c = resize_source_coord(a.coord, static_cast<float>(o), scale, in, out);
    size_t k = static_cast<size_t>(o);
    if (!linear) {
      t.i0[k] = std::clamp<int64_t>(resize_nearest_index(c, a.nearest, legacy, scale < 1.0f), 0, in - 1);
      continue;
    }
    c = std::clamp(c, 0.0f, last);
    int64_t i0 = std::min(static_cast<int64_t>(c), in - 1);
    int64_t i1 = std::min(i0 + 1, in - 1);
    t.i0[k] = i0;
    t.i1[k] = i1;
    if (i0 == i1) {
      t.w0[k] = 1.0f;
      t.w1[k] = 0.0f;
    } else {
      t.w0[k] = static_cast<float>(i1) - c;
      t.w1[k] = c - static_cast<float>(i0);
    }
  }
  return t;
}

namespace {

// ---------------------------------------------------------------- primitives
//
// ResizeOps (resize_isa.h): the portable forms in resize_scalar.h, the
// vector ones in resize_avx512.cpp and resize_avx2.cpp.

const ResizeOps& resize_ops(SgemmIsa isa) {
  static const ResizeOps generic{dup2_generic, blend_generic, scale_generic, hblend_generic};
#if MINIRT_RESIZE_X86
  if (isa == SgemmIsa::kAvx512) return resize_ops_avx512();
  if (isa == SgemmIsa::kAvx2) return resize_ops_avx2();
#endif
  return generic;
}

// The table of an axis with identities spelled out: i0 = i1 = o, weights 1 and 0.
void spell_out(const ResizeAxis& a, int64_t out, bool linear, std::vector<int64_t>& i0, std::vector<int64_t>& i1,
               std::vector<float>& w0, std::vector<float>& w1) {
  if (!a.identity) {
    i0 = a.i0;
    i1 = a.i1;
    w0 = a.w0;
    w1 = a.w1;
    return;
  }
  for (int64_t o = 0; o < out; ++o) i0.push_back(o);
  if (!linear) return;
  i1 = i0;
  w0.assign(static_cast<size_t>(out), 1.0f);
  w1.assign(static_cast<size_t>(out), 0.0f);
}

}  // namespace

// ---------------------------------------------------------------- Resize2dEngine

Resize2dEngine::Resize2dEngine(const ResizeAxis& ah, const ResizeAxis& aw, bool linear, int64_t planes, int64_t h,
                               int64_t w, int64_t oh, int64_t ow, int64_t lanes, int threads)
    : linear_(linear), planes_(planes), h_(h), w_(w), oh_(oh), ow_(ow), lanes_(lanes), isa_(sgemm_default_isa()) {
  if (planes_ <= 0 || oh_ <= 0 || ow_ <= 0) {
    tasks_ = 0;
    return;
  }
  spell_out(ah, oh, linear, hi0_, hi1_, hw0_, hw1_);
  spell_out(aw, ow, linear, wi0_, wi1_, ww0_, ww1_);
  w_identity_ = aw.identity;
  if (!linear) {
    dup_ = aw.identity ? 1 : 0;
    if (!aw.identity && ow == 2 * w) {
      dup_ = 2;
      for (int64_t o = 0; o < ow; ++o)
        if (wi0_[static_cast<size_t>(o)] != o / 2) dup_ = 0;
    }
  }
  // Bands of output rows: a unit writes kGrain floats or more, and the
  // planes are cut into enough units for every thread.
  const int64_t row = ow_ * lanes_;
  band_ = std::clamp<int64_t>(kGrain / row, 1, oh_);
  int64_t want = (2 * static_cast<int64_t>(threads) + planes_ - 1) / planes_;
  if (threads > 1 && want > 1) band_ = std::min(band_, std::max<int64_t>(1, (oh_ + want - 1) / want));
  bands_ = (oh_ + band_ - 1) / band_;
  const int64_t units = planes_ * bands_;
  tasks_ = std::clamp<int64_t>(planes_ * oh_ * row / kGrain, 1, std::min<int64_t>(threads, units));
  // Linear: two rows blended along W (the source rows of one output row).
  slice_ = linear_ && !w_identity_ ? 2 * static_cast<size_t>((row + 15) / 16 * 16) : 0;
}

void Resize2dEngine::run(const float* x, float* y, float* workspace, ThreadPool& pool) const {
  if (tasks_ == 0) return;
  const int64_t units = planes_ * bands_;
  const int64_t in_plane = h_ * w_ * lanes_, out_plane = oh_ * ow_ * lanes_;
  auto body = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      float* scratch = slice_ ? workspace + static_cast<size_t>(t) * slice_ : nullptr;
      for (int64_t u = units * t / tasks_, ue = units * (t + 1) / tasks_; u < ue; ++u) {
        int64_t p = u / bands_, o0 = (u % bands_) * band_;
        band(x + p * in_plane, y + p * out_plane, o0, std::min(oh_, o0 + band_), scratch);
      }
    }
  };
  pool.parallel_for(tasks_, body);
}

void Resize2dEngine::band(const float* xp, float* yp, int64_t o0, int64_t o1, float* scratch) const {
  const ResizeOps& ops = resize_ops(isa_);
  const int64_t L = lanes_, row = ow_ * L, in_row = w_ * L;
  if (!linear_) {
    int64_t prev = -1;
    for (int64_t o = o0; o < o1; ++o) {
      float* yr = yp + o * row;
      int64_t src = hi0_[static_cast<size_t>(o)];
      if (src == prev) {  // the same source row as the output row before
        std::memcpy(yr, yr - row, static_cast<size_t>(row) * sizeof(float));
        continue;
      }
      prev = src;
      const float* xr = xp + src * in_row;
      if (dup_ == 1) {
        std::memcpy(yr, xr, static_cast<size_t>(row) * sizeof(float));
      } else if (dup_ == 2) {
        ops.dup2(yr, xr, w_, L);
      } else if (L == 1) {
        for (int64_t j = 0; j < ow_; ++j) yr[j] = xr[wi0_[static_cast<size_t>(j)]];
      } else {
        for (int64_t j = 0; j < ow_; ++j)
          std::memcpy(yr + j * L, xr + wi0_[static_cast<size_t>(j)] * L, static_cast<size_t>(L) * sizeof(float));
      }
    }
    return;
  }
  // Linear: source rows blended along W, two kept (keyed by source row).
  float* buf[2] = {scratch, scratch ? scratch + slice_ / 2 : nullptr};
  int64_t key[2] = {-1, -1};
  auto source = [&](int64_t i, int keep) -> const float* {
    const float* xr = xp + i * in_row;
    if (w_identity_) return xr;
    for (int s = 0; s < 2; ++s)
      if (key[s] == i) return buf[s];
    int s = keep == 0 ? 1 : 0;
    ops.hblend(buf[s], xr, wi0_.data(), wi1_.data(), ww0_.data(), ww1_.data(), ow_, L);
    key[s] = i;
    return buf[s];
  };
  auto slot = [&](const float* p) { return p == buf[0] ? 0 : p == buf[1] ? 1 : -1; };
  for (int64_t o = o0; o < o1; ++o) {
    size_t k = static_cast<size_t>(o);
    float* yr = yp + o * row;
    // Keep the slot that holds the second source row, if any.
    int keep = key[0] == hi1_[k] ? 0 : key[1] == hi1_[k] ? 1 : -1;
    const float* r0 = source(hi0_[k], keep);
    // A zero weight leaves its row out (as the per-corner loop skips it), so
    // an infinity in a row of weight 0 does not make NaN.
    if (hw1_[k] == 0.0f) {
      ops.scale(yr, r0, hw0_[k], row);
      continue;
    }
    const float* r1 = source(hi1_[k], slot(r0));
    if (hw0_[k] == 0.0f)
      ops.scale(yr, r1, hw1_[k], row);
    else
      ops.blend(yr, r0, r1, hw0_[k], hw1_[k], row);
  }
}

namespace {

// ---------------------------------------------------------------- the kernel

// Output index -> source along one axis, for the any-rank path. Offsets are
// premultiplied by the axis's input stride.
struct AxisTable {
  bool identity = true;
  std::vector<int64_t> off0, off1;  // nearest uses off0 only
  std::vector<float> w0, w1;        // linear weights of off0 and off1
};

AxisTable strided_table(const ResizeAxis& a, int64_t stride) {
  AxisTable t;
  t.identity = a.identity;
  for (int64_t i : a.i0) t.off0.push_back(i * stride);
  for (int64_t i : a.i1) t.off1.push_back(i * stride);
  t.w0 = a.w0;
  t.w1 = a.w1;
  return t;
}

class ResizeKernel final : public Kernel {
 public:
  ResizeKernel(const Graph& g, const Node& n, int threads) {
    const auto& a = n.attrs_as<ResizeAttrs>();
    const Shape& x = in_shape(g, n, 0);
    const Shape& y = out_shape(g, n, 0);
    linear_ = a.mode == ResizeMode::kLinear;
    bool legacy = n.op == "Upsample" || g.opset < 11;
    out_shape_ = y;
    out_count_ = shape_numel(y);
    if (x.empty() || out_count_ == 0) return;
    std::vector<ResizeAxis> axes;
    for (size_t d = 0; d < x.size(); ++d) axes.push_back(make_resize_axis(a, legacy, a.scales[d], x[d], y[d]));
    // Only the last two axes resized: the 2-D engine, over planes of the rest.
    size_t r = x.size();
    bool two_d = r >= 2;
    for (size_t d = 0; d + 2 < r; ++d) two_d = two_d && axes[d].identity;
    if (two_d) {
      int64_t planes = 1;
      for (size_t d = 0; d + 2 < r; ++d) planes *= x[d];
      engine_ = std::make_unique<Resize2dEngine>(axes[r - 2], axes[r - 1], linear_, planes, x[r - 2], x[r - 1],
                                                 y[r - 2], y[r - 1], 1, threads);
      return;
    }
    std::vector<int64_t> st = strides_of(x);
    for (size_t d = 0; d < r; ++d) axes_.push_back(strided_table(axes[d], st[d]));
    in_strides_ = st;
    row_ = y.back();
    rows_ = out_count_ / row_;
    for (size_t d = 0; d + 1 < r; ++d)
      if (linear_ && !axes_[d].identity) blended_.push_back(d);
    if (blended_.size() > kMaxBlended)
      node_fail(
          ErrorCode::kUnsupported, g, n,
          "linear resize of more than " + std::to_string(kMaxBlended) + " axes besides the last is not supported");
  }

  std::string describe() const override { return linear_ ? "linear" : "nearest"; }
  size_t workspace_bytes() const override { return engine_ ? engine_->workspace_bytes() : 0; }

  void run(const KernelArgs& args) override {
    const float* x = static_cast<const float*>(args.inputs[0]);
    float* y = static_cast<float*>(args.outputs[0]);
    if (out_count_ == 0) return;
    if (engine_) {
      engine_->run(x, y, static_cast<float*>(args.workspace), *args.pool);
      return;
    }
    if (axes_.empty()) {  // a scalar
      y[0] = x[0];
      return;
    }
    auto body = [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        if (linear_)
          linear_row(x, y + r * row_, r);
        else
          nearest_row(x, y + r * row_, r);
      }
    };
    int64_t corners = int64_t{1} << blended_.size();
    args.pool->parallel_for(rows_, body, std::max<int64_t>(1, kGrain / (row_ * corners)));
  }

 private:
  static constexpr size_t kMaxBlended = 16;  // 2^16 corners per output row at most

  // Source offset of output index `i` along axis d, for a nearest or
  // identity axis (the first neighbour for a linear one).
  int64_t source(size_t d, int64_t i) const {
    const AxisTable& t = axes_[d];
    return t.identity ? i * in_strides_[d] : t.off0[static_cast<size_t>(i)];
  }

  void nearest_row(const float* x, float* y, int64_t r) const {
    int64_t base = 0;
    for (size_t d = axes_.size() - 1; d-- > 0;) {
      base += source(d, r % out_shape_[d]);
      r /= out_shape_[d];
    }
    const float* xb = x + base;
    const AxisTable& t = axes_.back();
    if (t.identity) {
      std::memcpy(y, xb, static_cast<size_t>(row_) * sizeof(float));
      return;
    }
    for (int64_t j = 0; j < row_; ++j) y[j] = xb[t.off0[static_cast<size_t>(j)]];
  }

  void linear_row(const float* x, float* y, int64_t r) const {
    // Identity outer axes add a fixed offset; blended ones are looked up per corner.
    int64_t base = 0;
    int64_t at[kMaxBlended];  // output index along each blended axis
    size_t slot = blended_.size();
    for (size_t d = axes_.size() - 1; d-- > 0;) {
      int64_t i = r % out_shape_[d];
      r /= out_shape_[d];
      if (axes_[d].identity)
        base += i * in_strides_[d];
      else
        at[--slot] = i;
    }
    const AxisTable& t = axes_.back();
    std::fill(y, y + row_, 0.0f);
    int64_t corners = int64_t{1} << blended_.size();
    for (int64_t mask = 0; mask < corners; ++mask) {
      int64_t off = base;
      float w = 1.0f;
      for (size_t b = 0; b < blended_.size(); ++b) {
        const AxisTable& a = axes_[blended_[b]];
        size_t i = static_cast<size_t>(at[b]);
        bool second = (mask >> b) & 1;
        off += second ? a.off1[i] : a.off0[i];
        w *= second ? a.w1[i] : a.w0[i];
      }
      if (w == 0.0f) continue;
      const float* xb = x + off;
      if (t.identity) {
        for (int64_t j = 0; j < row_; ++j) y[j] += w * xb[j];
      } else {
        for (int64_t j = 0; j < row_; ++j) {
          size_t k = static_cast<size_t>(j);
          y[j] += w * (t.w0[k] * xb[t.off0[k]] + t.w1[k] * xb[t.off1[k]]);
        }
      }
    }
  }

  bool linear_ = false;
  std::unique_ptr<Resize2dEngine> engine_;  // only the last two axes resized
  Shape out_shape_;
  int64_t out_count_ = 0, rows_ = 0, row_ = 1;
  std::vector<AxisTable> axes_;
  std::vector<int64_t> in_strides_;
  std::vector<size_t> blended_;  // outer axes interpolated linearly
};

// ---- Resize, cubic ----

// Cubic convolution (Keys), one axis at a time: each resized axis has a
// table of 4 taps per output index (the source indices, clamped to the
// axis, or with exclude_outside the outside taps weighted 0 and the rest
// renormalized) with the weights of the coefficient A = cubic_coeff_a, as
// the ONNX reference and onnxruntime compute them. The passes run from the
// last resized axis to the first, through two buffers of the workspace; the
// last pass writes the output. Each pass is parallel over (outer, output
// index) and blends whole rows of the inner axes.
// Separable resampling, one axis at a time: cubic convolution (4 taps),
// linear or cubic with antialias (opset 18), whose filter is stretched by
// 1/scale on an axis that shrinks, so every input element under the output
// element's footprint contributes, and every mode under tf_crop_and_resize,
// whose output elements with a source coordinate outside the input take
// extrapolation_value. Each axis's taps (input index, weight) are worked out
// once per output index and applied to all rows.
class SeparableResizeKernel final : public Kernel {
 public:
  SeparableResizeKernel(const Graph& g, const Node& n, int) {
    const auto& a = n.attrs_as<ResizeAttrs>();
    Shape cur = in_shape(g, n, 0);
    const Shape& y = out_shape(g, n, 0);
    for (int64_t d = static_cast<int64_t>(cur.size()) - 1; d >= 0; --d) {
      size_t k = static_cast<size_t>(d);
      // An axis left as it is (a crop box other than [0, 1] moves even a same-sized axis).
      bool boxed = !a.roi.empty() && (a.roi[k] != 0.0f || a.roi[cur.size() + k] != 1.0f);
      if (a.scales[k] == 1.0f && cur[k] == y[k] && !boxed) continue;
      Pass p;
      p.outer = product(cur, 0, k);
      p.in = cur[k];
      p.out = y[k];
      p.inner = product(cur, k + 1, cur.size());
      if (!a.roi.empty()) {
        p.roi_start = a.roi[k];
        p.roi_end = a.roi[cur.size() + k];
      }
      if (a.antialias)
        antialias_taps(a, a.scales[k], p);
      else if (a.mode == ResizeMode::kCubic)
        cubic_taps(a, a.scales[k], p);
      else if (a.mode == ResizeMode::kLinear)
        linear_taps(a, a.scales[k], p);
      else
        nearest_taps(a, a.scales[k], p);
      if (a.coord == CoordMode::kTfCropAndResize) mark_outside(a, a.scales[k], p);
      cur[k] = y[k];
      p.elements = shape_numel(cur);
      passes_.push_back(std::move(p));
    }
    for (size_t i = 0; i + 1 < passes_.size(); ++i) buffer_ = std::max(buffer_, passes_[i].elements);
    count_ = shape_numel(y);
    what_ = std::string(a.mode == ResizeMode::kCubic    ? "cubic"
                        : a.mode == ResizeMode::kLinear ? "linear"
                                                        : "nearest") +
            (a.antialias ? " antialias" : "") + (a.coord == CoordMode::kTfCropAndResize ? " tf_crop_and_resize" : "");
  }

  std::string describe() const override {
    std::string taps;
    for (const Pass& p : passes_) taps += (taps.empty() ? "" : "/") + std::to_string(p.taps);
    return what_ + ", " + std::to_string(passes_.size()) + " axes" + (taps.empty() ? "" : ", taps " + taps);
  }
  size_t workspace_bytes() const override {
    return passes_.size() > 1 ? 2 * static_cast<size_t>(buffer_) * sizeof(float) + 64 : 0;
  }

  void run(const KernelArgs& args) override {
    const float* src = static_cast<const float*>(args.inputs[0]);
    float* y = static_cast<float*>(args.outputs[0]);
    if (passes_.empty()) {
      if (count_) std::memcpy(y, src, static_cast<size_t>(count_) * sizeof(float));
      return;
    }
    float* bufs[2] = {static_cast<float*>(args.workspace), static_cast<float*>(args.workspace) + buffer_ + 16};
    for (size_t i = 0; i < passes_.size(); ++i) {
      float* dst = i + 1 == passes_.size() ? y : bufs[i % 2];
      run_pass(passes_[i], src, dst, args.pool);
      src = dst;
    }
  }

 private:
  struct Pass {
    int64_t outer = 1, in = 1, out = 1, inner = 1, elements = 0;
    int64_t taps = 4;
    std::vector<int64_t> idx;                // out x taps
    std::vector<float> w;                    // out x taps
    float roi_start = 0.0f, roi_end = 1.0f;  // tf_crop_and_resize's box on this axis
    std::vector<uint8_t> outside;            // tf_crop_and_resize: per output index, 1 when it takes `fill`
    float fill = 0.0f;
  };

  static float raw_source(const ResizeAttrs& a, float scale, const Pass& p, int64_t o) {
    return resize_source_coord(a.coord, static_cast<float>(o), scale, p.in, p.out, p.roi_start, p.roi_end);
  }
  // The source coordinate of output index o, finite (a NaN or huge one from
  // a degenerate transform lands somewhere harmless; its taps are clamped).
  static float source(const ResizeAttrs& a, float scale, const Pass& p, int64_t o) {
    float c = raw_source(a, scale, p, o);
    return c == c ? std::clamp(c, -0x1p30f, 0x1p30f) : 0.0f;
  }

  // tf_crop_and_resize: an output index whose coordinate lies outside
  // [0, in - 1] takes extrapolation_value instead of its taps.
  static void mark_outside(const ResizeAttrs& a, float scale, Pass& p) {
    p.fill = a.extrapolation;
    p.outside.assign(static_cast<size_t>(p.out), 0);
    const float last = static_cast<float>(p.in - 1);
    for (int64_t o = 0; o < p.out; ++o) {
      float c = raw_source(a, scale, p, o);
      p.outside[static_cast<size_t>(o)] = !(c >= 0.0f && c <= last);
    }
  }

  static void nearest_taps(const ResizeAttrs& a, float scale, Pass& p) {
    p.taps = 1;
    p.idx.resize(static_cast<size_t>(p.out));
    p.w.assign(static_cast<size_t>(p.out), 1.0f);
    for (int64_t o = 0; o < p.out; ++o)
      p.idx[static_cast<size_t>(o)] = std::clamp<int64_t>(
          resize_nearest_index(source(a, scale, p, o), a.nearest, false, scale < 1.0f), 0, p.in - 1);
  }

  // Two taps either side of the coordinate (clamped into the input), as
  // make_resize_axis weighs them.
  static void linear_taps(const ResizeAttrs& a, float scale, Pass& p) {
    p.taps = 2;
    p.idx.resize(static_cast<size_t>(p.out) * 2);
    p.w.resize(static_cast<size_t>(p.out) * 2);
    const float last = static_cast<float>(p.in - 1);
    for (int64_t o = 0; o < p.out; ++o) {
      float c = std::clamp(source(a, scale, p, o), 0.0f, last);
      int64_t i0 = std::min(static_cast<int64_t>(c), p.in - 1), i1 = std::min(i0 + 1, p.in - 1);
      size_t k = static_cast<size_t>(o) * 2;
      p.idx[k] = i0;
      p.idx[k + 1] = i1;
      p.w[k] = i0 == i1 ? 1.0f : static_cast<float>(i1) - c;
      p.w[k + 1] = i0 == i1 ? 0.0f : c - static_cast<float>(i0);
    }
  }

  // Weight 0 for taps outside the input (exclude_outside), the rest
  // renormalized; every tap's index clamped into the input (the edge
  // element repeats, as the ONNX reference pads with the edge).
  static void finish_taps(const ResizeAttrs& a, Pass& p, int64_t o, int64_t base, float* w) {
    const int64_t t = p.taps;
    float sum = 0.0f;
    for (int64_t j = 0; j < t; ++j) {
      int64_t i = base + j;
      if (a.exclude_outside && (i < 0 || i >= p.in)) w[j] = 0.0f;
      sum += w[j];
      p.idx[static_cast<size_t>(o * t + j)] = std::clamp<int64_t>(i, 0, p.in - 1);
    }
    for (int64_t j = 0; j < t; ++j)
      p.w[static_cast<size_t>(o * t + j)] = a.exclude_outside && sum != 0.0f ? w[j] / sum : w[j];
  }

  static void cubic_taps(const ResizeAttrs& a, float scale, Pass& p) {
    p.taps = 4;
    p.idx.resize(static_cast<size_t>(p.out) * 4);
    p.w.resize(static_cast<size_t>(p.out) * 4);
    for (int64_t o = 0; o < p.out; ++o) {
      float c = source(a, scale, p, o);
      float f = std::floor(c);
      float w[4];
      cubic_coefficients(c - f, a.cubic_a, w);
      finish_taps(a, p, o, static_cast<int64_t>(f) - 1, w);
    }
  }

  // Cubic convolution's kernel at distance x (|x| < 2; 0 beyond).
  static float cubic_kernel(float x, float A) {
    x = std::fabs(x);
    if (x <= 1.0f) return ((A + 2.0f) * x - (A + 3.0f)) * x * x + 1.0f;
    if (x < 2.0f) return ((A * x - 5.0f * A) * x + 8.0f * A) * x - 4.0f * A;
    return 0.0f;
  }

  // Resize-18's antialias, as ONNX defines it: with s = min(scale, 1), the
  // taps are the input elements base + i for i in [start, start + n), where
  // base + ratio is the source coordinate (ratio in (0, 1], 1 when the
  // coordinate is whole), start = floor(-R / s) + 1 and n = 2 - 2 start for
  // the filter's radius R (1 linear, 2 cubic); tap i weighs
  // filter((i - ratio) s), normalized to sum 1.
  static void antialias_taps(const ResizeAttrs& a, float scale, Pass& p) {
    const bool cubic = a.mode == ResizeMode::kCubic;
    const float s = std::min(scale, 1.0f);
    const float radius = cubic ? 2.0f : 1.0f;
    const int64_t start = static_cast<int64_t>(std::floor(-radius / s)) + 1;
    p.taps = 2 - 2 * start;
    p.idx.resize(static_cast<size_t>(p.out * p.taps));
    p.w.resize(static_cast<size_t>(p.out * p.taps));
    std::vector<float> w(static_cast<size_t>(p.taps));
    for (int64_t o = 0; o < p.out; ++o) {
      float c = source(a, scale, p, o);
      float f = std::floor(c);
      float ratio = c == f ? 1.0f : c - f;
      int64_t base = static_cast<int64_t>(f) - (c == f ? 1 : 0);
      float sum = 0.0f;
      for (int64_t j = 0; j < p.taps; ++j) {
        float x = (static_cast<float>(start + j) - ratio) * s;
        w[static_cast<size_t>(j)] = cubic ? cubic_kernel(x, a.cubic_a) : std::max(0.0f, 1.0f - std::fabs(x));
        sum += w[static_cast<size_t>(j)];
      }
      if (sum != 0.0f)
        for (float& v : w) v /= sum;
      finish_taps(a, p, o, base + start, w.data());
    }
  }

  static void cubic_coefficients(float t, float A, float w[4]) {
    float x0 = t + 1.0f, x1 = t, x2 = 1.0f - t, x3 = 2.0f - t;
    w[0] = ((A * x0 - 5.0f * A) * x0 + 8.0f * A) * x0 - 4.0f * A;
    w[1] = ((A + 2.0f) * x1 - (A + 3.0f)) * x1 * x1 + 1.0f;
    w[2] = ((A + 2.0f) * x2 - (A + 3.0f)) * x2 * x2 + 1.0f;
    w[3] = ((A * x3 - 5.0f * A) * x3 + 8.0f * A) * x3 - 4.0f * A;
  }

  static int64_t product(const Shape& s, size_t b, size_t e) {
    int64_t p = 1;
    for (size_t i = b; i < e; ++i) p *= s[i];
    return p;
  }

  static void run_pass(const Pass& p, const float* x, float* y, ThreadPool* pool) {
    const int64_t t = p.taps;
    auto body = [&](int64_t r0, int64_t r1) {  // (outer, output index) pairs
      for (int64_t r = r0; r < r1; ++r) {
        int64_t o = r / p.out, j = r % p.out;
        const int64_t* ix = &p.idx[static_cast<size_t>(j * t)];
        const float* w = &p.w[static_cast<size_t>(j * t)];
        const float* xo = x + o * p.in * p.inner;
        float* yr = y + r * p.inner;
        if (!p.outside.empty() && p.outside[static_cast<size_t>(j)]) {
          std::fill(yr, yr + p.inner, p.fill);
          continue;
        }
        if (t == 4) {
          const float* a = xo + ix[0] * p.inner;
          const float* b = xo + ix[1] * p.inner;
          const float* c = xo + ix[2] * p.inner;
          const float* d = xo + ix[3] * p.inner;
          for (int64_t e = 0; e < p.inner; ++e) yr[e] = w[0] * a[e] + w[1] * b[e] + w[2] * c[e] + w[3] * d[e];
          continue;
        }
        for (int64_t e = 0; e < p.inner; ++e) yr[e] = 0.0f;
        for (int64_t k = 0; k < t; ++k) {
          const float* src = xo + ix[k] * p.inner;
          for (int64_t e = 0; e < p.inner; ++e) yr[e] += w[k] * src[e];
        }
      }
    };
    pool->parallel_for(p.outer * p.out, body, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, p.inner * t)));
  }

  std::vector<Pass> passes_;
  int64_t buffer_ = 0, count_ = 0;
  std::string what_;
};

std::unique_ptr<Kernel> make_resize(const Graph& g, const Node& n, int t) {
  const auto& a = n.attrs_as<ResizeAttrs>();
  if (a.mode == ResizeMode::kCubic || a.antialias || a.coord == CoordMode::kTfCropAndResize)
    return std::make_unique<SeparableResizeKernel>(g, n, t);
  return std::make_unique<ResizeKernel>(g, n, t);
}

}  // namespace

void add_resize_kernels(std::vector<KernelEntry>& out) {
  out.push_back({"Resize", make_resize});
  out.push_back({"Upsample", make_resize});
}

}  // namespace minirt::cpu
