// RoiAlign: each region of interest (x1, y1, x2, y2 in the image's
// coordinates times spatial_scale) cut into output_height x output_width
// bins, each bin the average (or, in max mode, the largest) of a regular grid
// of bilinear samples. The sampling follows onnxruntime's (and Detectron's)
// rules: a sample more than one pixel outside the image counts as zero, one
// at or below -1..0 is clamped to the first row or column, one past the last
// is clamped to it; output_half_pixel (opset 10's only mode) shifts nothing and
// makes every region at least one pixel wide and high, half_pixel shifts by
// half a pixel and does not; max mode takes, per sample, the largest of its
// four weighted corners.
#include "kernels/cpu/registry.h"
#include "runtime/ops/resize.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace minirt::cpu {

namespace {

class RoiAlignKernel final : public Kernel {
 public:
  RoiAlignKernel(const Graph& g, const Node& n, int) : a_(n.attrs_as<RoiAlignAttrs>()), where_(node_context(g, n)) {
    const Shape& x = in_shape(g, n, 0);
    n_ = x[0];
    c_ = x[1];
    h_ = x[2];
    w_ = x[3];
    rois_ = in_shape(g, n, 1)[0];
  }

  void run(const KernelArgs& args) override {
    const float* x = static_cast<const float*>(args.inputs[0]);
    const float* rois = static_cast<const float*>(args.inputs[1]);
    const int64_t* batch = static_cast<const int64_t*>(args.inputs[2]);
    float* y = static_cast<float*>(args.outputs[0]);
    for (int64_t r = 0; r < rois_; ++r)
      if (batch[r] < 0 || batch[r] >= n_)
        throw Error(ErrorCode::kInvalidArgument, where_ + "batch_indices[" + std::to_string(r) + "] is " +
                                                     std::to_string(batch[r]) + ", not an image of the " +
                                                     std::to_string(n_) + " in X");
    const int64_t oh = a_.output_height, ow = a_.output_width, plane = h_ * w_;
    args.pool->parallel_for(rois_ * c_, [&](int64_t u0, int64_t u1) {
      for (int64_t u = u0; u < u1; ++u) {
        const int64_t r = u / c_, ch = u % c_;
        const float* img = x + (batch[r] * c_ + ch) * plane;
        roi(img, rois + 4 * r, y + u * oh * ow);
      }
    });
  }

 private:
  void roi(const float* img, const float* box, float* out) const {
    const float offset = a_.half_pixel ? 0.5f : 0.0f;
    const float x0 = box[0] * a_.spatial_scale - offset, y0 = box[1] * a_.spatial_scale - offset;
    const float x1 = box[2] * a_.spatial_scale - offset, y1 = box[3] * a_.spatial_scale - offset;
    float rw = x1 - x0, rh = y1 - y0;
    if (!a_.half_pixel) {
      rw = std::max(rw, 1.0f);
      rh = std::max(rh, 1.0f);
    }
    const int64_t oh = a_.output_height, ow = a_.output_width;
    const float bh = rh / static_cast<float>(oh), bw = rw / static_cast<float>(ow);
    const int64_t gh = a_.sampling_ratio > 0 ? a_.sampling_ratio : static_cast<int64_t>(std::ceil(rh / oh));
    const int64_t gw = a_.sampling_ratio > 0 ? a_.sampling_ratio : static_cast<int64_t>(std::ceil(rw / ow));
    const float count = static_cast<float>(std::max<int64_t>(gh * gw, 1));
    for (int64_t ph = 0; ph < oh; ++ph)
      for (int64_t pw = 0; pw < ow; ++pw) {
        float sum = 0.0f, best = 0.0f;
        bool any = false;
        for (int64_t iy = 0; iy < gh; ++iy) {
          const float sy = y0 + ph * bh + (iy + 0.5f) * bh / static_cast<float>(gh);
          for (int64_t ix = 0; ix < gw; ++ix) {
            const float sx = x0 + pw * bw + (ix + 0.5f) * bw / static_cast<float>(gw);
            float v = 0.0f;
            sample(img, sy, sx, &v);
            sum += v;
            best = any ? std::max(best, v) : v;
            any = true;
          }
        }
        out[ph * ow + pw] = a_.max ? best : sum / count;
      }
  }

  // The sample at (y, x): the bilinear sum of its four corners (avg mode) or
  // the largest of the four weighted corners (max mode); 0 outside.
  void sample(const float* img, float y, float x, float* v) const {
    if (y < -1.0f || y > static_cast<float>(h_) || x < -1.0f || x > static_cast<float>(w_)) return;
    y = std::max(y, 0.0f);
    x = std::max(x, 0.0f);
    int64_t yl = static_cast<int64_t>(y), xl = static_cast<int64_t>(x), yh, xh;
    if (yl >= h_ - 1) {
      yh = yl = h_ - 1;
      y = static_cast<float>(yl);
    } else {
      yh = yl + 1;
    }
    if (xl >= w_ - 1) {
      xh = xl = w_ - 1;
      x = static_cast<float>(xl);
    } else {
      xh = xl + 1;
    }
    const float ly = y - static_cast<float>(yl), lx = x - static_cast<float>(xl), hy = 1.0f - ly, hx = 1.0f - lx;
    const float v1 = hy * hx * img[yl * w_ + xl], v2 = hy * lx * img[yl * w_ + xh];
    const float v3 = ly * hx * img[yh * w_ + xl], v4 = ly * lx * img[yh * w_ + xh];
    *v = a_.max ? std::max(std::max(v1, v2), std::max(v3, v4)) : v1 + v2 + v3 + v4;
  }

  RoiAlignAttrs a_;
  std::string where_;
  int64_t n_ = 0, c_ = 0, h_ = 0, w_ = 0, rois_ = 0;
};

std::unique_ptr<Kernel> make_roi_align(const Graph& g, const Node& n, int t) {
  return std::make_unique<RoiAlignKernel>(g, n, t);
}

}  // namespace

void add_roi_align_kernels(std::vector<KernelEntry>& out) { out.push_back({"RoiAlign", make_roi_align}); }

}  // namespace minirt::cpu
