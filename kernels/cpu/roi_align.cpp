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

  size_t workspace_bytes() const override { return static_cast<size_t>(rois_) * sizeof(Region); }

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
    // Each region's bins and sampling grid, checked before any work: the
    // coordinates come from data.
    Region* regions = static_cast<Region*>(args.workspace);  // per run: the plan's kernel is shared by runs
    for (int64_t r = 0; r < rois_; ++r) regions[r] = region(rois + 4 * r, r);
    if (plane == 0) {  // an image without pixels: every sample is outside, every bin 0
      std::fill(y, y + rois_ * c_ * oh * ow, 0.0f);
      return;
    }
    args.pool->parallel_for(rois_ * c_, [&](int64_t u0, int64_t u1) {
      for (int64_t u = u0; u < u1; ++u) {
        const int64_t r = u / c_, ch = u % c_;
        const float* img = x + (batch[r] * c_ + ch) * plane;
        roi(img, regions[r], y + u * oh * ow);
      }
    });
  }

 private:
  // A region in the input's coordinates: its corner, its bins' size and the
  // sampling grid of each bin.
  struct Region {
    float x0 = 0, y0 = 0, bw = 0, bh = 0;
    int64_t gh = 1, gw = 1;
  };
  // More samples than this for one region and channel is refused (the
  // adaptive grid of a region far larger than the image).
  static constexpr double kMaxSamples = double(int64_t{1} << 26);

  Region region(const float* box, int64_t r) const {
    const float offset = a_.half_pixel ? 0.5f : 0.0f;
    Region q;
    q.x0 = box[0] * a_.spatial_scale - offset;
    q.y0 = box[1] * a_.spatial_scale - offset;
    const float x1 = box[2] * a_.spatial_scale - offset, y1 = box[3] * a_.spatial_scale - offset;
    float rw = x1 - q.x0, rh = y1 - q.y0;
    if (!a_.half_pixel) {
      rw = std::max(rw, 1.0f);
      rh = std::max(rh, 1.0f);
    }
    const int64_t oh = a_.output_height, ow = a_.output_width;
    q.bh = rh / static_cast<float>(oh);
    q.bw = rw / static_cast<float>(ow);
    // The grid as onnxruntime sizes it: sampling_ratio, else ceil(size / bins).
    const double gh = a_.sampling_ratio > 0 ? double(a_.sampling_ratio) : std::ceil(double(rh) / double(oh));
    const double gw = a_.sampling_ratio > 0 ? double(a_.sampling_ratio) : std::ceil(double(rw) / double(ow));
    const std::string which = "rois[" + std::to_string(r) + "]";
    if (!std::isfinite(q.x0) || !std::isfinite(q.y0) || !std::isfinite(x1) || !std::isfinite(y1) ||
        !std::isfinite(gh) || !std::isfinite(gw))
      throw Error(ErrorCode::kInvalidArgument, where_ + which + " (" + std::to_string(box[0]) + ", " +
                                                   std::to_string(box[1]) + ", " + std::to_string(box[2]) + ", " +
                                                   std::to_string(box[3]) + ") times spatial_scale is not finite");
    if (std::max(gh, 1.0) * std::max(gw, 1.0) * double(oh) * double(ow) > kMaxSamples)
      throw Error(ErrorCode::kInvalidArgument,
                  where_ + which + " is " + std::to_string(rw) + " x " + std::to_string(rh) +
                      " pixels, whose sampling grid would take more than 2^26 samples per channel; give "
                      "sampling_ratio, or regions within the image");
    q.gh = static_cast<int64_t>(gh);
    q.gw = static_cast<int64_t>(gw);
    return q;
  }

  void roi(const float* img, const Region& q, float* out) const {
    const float x0 = q.x0, y0 = q.y0, bh = q.bh, bw = q.bw;
    const int64_t gh = q.gh, gw = q.gw;
    const int64_t oh = a_.output_height, ow = a_.output_width;
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
