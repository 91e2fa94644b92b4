// GridSample on the CPU (2-D; nearest, linear, cubic; zeros, border,
// reflection; align_corners), the sampler spatial transformers and
// detectors' heads export.
#include "kernels/cpu/registry.h"
#include "runtime/ops/resize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace minirt::cpu {

namespace {

constexpr int64_t kGrain = 16384;  // output elements per parallel chunk, at least

// Y[n, c, i, j] = X[n, c] sampled at the grid's position (x, y) = grid[n, i,
// j], normalized to [-1, 1] over the image (align_corners: -1 and 1 are the
// centres of the corner pixels, else their outer edges). Per output pixel
// the taps (1, 4 or 16 input offsets and weights) are worked out once and
// applied to every channel. Positions outside the image: zeros reads 0 for
// each tap outside; border clamps the position (then each tap) to the
// image; reflection reflects the position about the image's edges (then
// each tap). nearest rounds half to even, cubic is cubic convolution with
// A = -0.75. For cubic, border and reflection apply to the 16 taps, not to
// the position: PyTorch's grid_sample and onnxruntime do so, the ONNX
// reference implementation clamps the position first (it differs from them
// near the edges; minirt follows the exporters' runtime).
class GridSampleKernel final : public Kernel {
 public:
  GridSampleKernel(const Graph& g, const Node& n, int) : a_(n.attrs_as<GridSampleAttrs>()) {
    const Shape& x = in_shape(g, n, 0);
    const Shape& grid = in_shape(g, n, 1);
    n_ = x[0], c_ = x[1], h_ = x[2], w_ = x[3];
    oh_ = grid[1], ow_ = grid[2];
  }

  std::string describe() const override {
    return a_.mode == GridMode::kNearest ? "nearest" : a_.mode == GridMode::kLinear ? "linear" : "cubic";
  }

  void run(const KernelArgs& args) override {
    const float* x = static_cast<const float*>(args.inputs[0]);
    const float* grid = static_cast<const float*>(args.inputs[1]);
    float* y = static_cast<float*>(args.outputs[0]);
    const int64_t plane = h_ * w_, oplane = oh_ * ow_;
    if (n_ * c_ * oplane == 0) return;
    auto body = [&](int64_t r0, int64_t r1) {  // output rows of all images
      int64_t off[16];
      float wt[16];
      for (int64_t r = r0; r < r1; ++r) {
        int64_t b = r / oh_;
        const float* xb = x + b * c_ * plane;
        for (int64_t j = 0; j < ow_; ++j) {
          const float* gp = grid + (r * ow_ + j) * 2;
          int taps = this->taps(gp[0], gp[1], off, wt);
          float* yp = y + b * c_ * oplane + (r % oh_) * ow_ + j;
          for (int64_t ch = 0; ch < c_; ++ch) {
            const float* xc = xb + ch * plane;
            float v = 0.0f;
            for (int t = 0; t < taps; ++t) v += wt[t] * (off[t] < 0 ? 0.0f : xc[off[t]]);
            yp[ch * oplane] = v;
          }
        }
      }
    };
    args.pool->parallel_for(n_ * oh_, body, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, ow_ * c_)));
  }

 private:
  // The position along an axis of `len` pixels, from its normalized value.
  float denormalize(float v, int64_t len) const {
    float l = static_cast<float>(len);
    return a_.align_corners ? (v + 1.0f) / 2.0f * (l - 1.0f) : ((v + 1.0f) * l - 1.0f) / 2.0f;
  }
  // v reflected about lo and hi until it lies between them.
  static float reflect(float v, float lo, float hi) {
    float range = hi - lo;
    if (range <= 0.0f) return lo;
    if (v < lo) {
      float d = lo - v;
      float k = std::floor(d / range), rest = d - k * range;
      return std::fmod(k, 2.0f) == 0.0f ? lo + rest : hi - rest;
    }
    if (v > hi) {
      float d = v - hi;
      float k = std::floor(d / range), rest = d - k * range;
      return std::fmod(k, 2.0f) == 0.0f ? hi - rest : lo + rest;
    }
    return v;
  }
  // The position after the padding rule (border, reflection), per axis.
  float pad_position(float v, int64_t len) const {
    float lo = a_.align_corners ? 0.0f : -0.5f;
    float hi = a_.align_corners ? static_cast<float>(len - 1) : static_cast<float>(len) - 0.5f;
    if (v >= lo && v <= hi) return v;
    if (a_.padding == GridPadding::kBorder) return std::clamp(v, 0.0f, static_cast<float>(len - 1));
    if (a_.padding == GridPadding::kReflection) return reflect(v, lo, hi);
    return v;
  }
  // A tap's index along an axis, or -1 (reads 0) outside under zeros padding.
  int64_t tap_index(int64_t i, int64_t len) const {
    if (i >= 0 && i < len) return i;
    switch (a_.padding) {
      case GridPadding::kZeros:
        return -1;
      case GridPadding::kBorder:
        return std::clamp<int64_t>(i, 0, len - 1);
      case GridPadding::kReflection: {
        float lo = a_.align_corners ? 0.0f : -0.5f;
        float hi = a_.align_corners ? static_cast<float>(len - 1) : static_cast<float>(len) - 0.5f;
        return std::clamp<int64_t>(static_cast<int64_t>(reflect(static_cast<float>(i), lo, hi)), 0, len - 1);
      }
    }
    return -1;
  }
  static void cubic_weights(float t, float w[4]) {
    constexpr float A = -0.75f;
    float x0 = t + 1.0f, x1 = t, x2 = 1.0f - t, x3 = 2.0f - t;
    w[0] = ((A * x0 - 5.0f * A) * x0 + 8.0f * A) * x0 - 4.0f * A;
    w[1] = ((A + 2.0f) * x1 - (A + 3.0f)) * x1 * x1 + 1.0f;
    w[2] = ((A + 2.0f) * x2 - (A + 3.0f)) * x2 * x2 + 1.0f;
    w[3] = ((A * x3 - 5.0f * A) * x3 + 8.0f * A) * x3 - 4.0f * A;
  }
  // Offsets into a plane (-1: reads 0) and weights of one position's taps.
  int taps(float gx, float gy, int64_t* off, float* wt) const {
    float px = denormalize(gx, w_), py = denormalize(gy, h_);
    if (std::isnan(px) || std::isnan(py)) {  // no position: a NaN out, as the reference's arithmetic gives
      off[0] = 0;
      wt[0] = std::numeric_limits<float>::quiet_NaN();
      return 1;
    }
    if (a_.mode == GridMode::kNearest) {
      px = std::nearbyint(px);
      py = std::nearbyint(py);
    }
    if (a_.mode != GridMode::kCubic) {  // cubic pads each tap only, as PyTorch and onnxruntime do
      px = pad_position(px, w_);
      py = pad_position(py, h_);
      // A grid value so large that its position overflowed to infinity has
      // no reflection (inf - inf): a NaN out too, not an integer conversion of NaN.
      if (std::isnan(px) || std::isnan(py)) {
        off[0] = 0;
        wt[0] = std::numeric_limits<float>::quiet_NaN();
        return 1;
      }
    }
    auto at = [&](int64_t i, int64_t j) {
      int64_t ti = tap_index(i, h_), tj = tap_index(j, w_);
      return ti < 0 || tj < 0 ? int64_t{-1} : ti * w_ + tj;
    };
    // Positions far outside (zeros padding) give no valid tap; clamped here so
    // that the integer conversions below stay defined.
    px = std::clamp(px, -4.0f - static_cast<float>(w_), 4.0f + 2.0f * static_cast<float>(w_));
    py = std::clamp(py, -4.0f - static_cast<float>(h_), 4.0f + 2.0f * static_cast<float>(h_));
    if (a_.mode == GridMode::kNearest) {
      off[0] = at(static_cast<int64_t>(py), static_cast<int64_t>(px));
      wt[0] = 1.0f;
      return 1;
    }
    float fx = std::floor(px), fy = std::floor(py);
    int64_t x0 = static_cast<int64_t>(fx), y0 = static_cast<int64_t>(fy);
    float dx = px - fx, dy = py - fy;
    if (a_.mode == GridMode::kLinear) {
      float wx[2] = {1.0f - dx, dx}, wy[2] = {1.0f - dy, dy};
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) {
          off[i * 2 + j] = at(y0 + i, x0 + j);
          wt[i * 2 + j] = wy[i] * wx[j];
        }
      return 4;
    }
    float wx[4], wy[4];
    cubic_weights(dx, wx);
    cubic_weights(dy, wy);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) {
        off[i * 4 + j] = at(y0 - 1 + i, x0 - 1 + j);
        wt[i * 4 + j] = wy[i] * wx[j];
      }
    return 16;
  }

  GridSampleAttrs a_;
  int64_t n_ = 0, c_ = 0, h_ = 0, w_ = 0, oh_ = 0, ow_ = 0;
};

}  // namespace

void add_grid_sample_kernels(std::vector<KernelEntry>& out) {
  out.push_back({"GridSample", [](const Graph& g, const Node& n, int) -> std::unique_ptr<Kernel> {
                   return std::make_unique<GridSampleKernel>(g, n, 0);
                 }});
}

}  // namespace minirt::cpu
