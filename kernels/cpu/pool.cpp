// MaxPool, AveragePool and the global pools on the CPU, for 1-D and 2-D
// windows (1-D runs as 2-D with height 1). Parallel over (image, channel)
// planes.
#include "kernels/cpu/registry.h"
#include "runtime/ops/conv.h"

#include <algorithm>
#include <limits>

namespace minirt::cpu {

namespace {

struct PoolGeom {
  int64_t planes, h, w, oh, ow, kh, kw, sh, sw, dh, dw, ph, pw, peh, pew;
};

class PoolKernel final : public Kernel {
 public:
  PoolKernel(const Graph& g, const Node& n, int) : a_(n.attrs_as<PoolAttrs>()) {
    const Shape& x = in_shape(g, n, 0);
    const Shape& y = out_shape(g, n, 0);
    bool one_d = x.size() == 3;
    q_.planes = x[0] * x[1];
    q_.h = one_d ? 1 : x[2];
    q_.w = x.back();
    q_.oh = one_d ? 1 : y[2];
    q_.ow = y.back();
    size_t wi = one_d ? 0 : 1;
    q_.kh = one_d ? 1 : a_.kernel_shape[0];
    q_.kw = a_.kernel_shape[wi];
    q_.sh = one_d ? 1 : a_.strides[0];
    q_.sw = a_.strides[wi];
    q_.dh = one_d ? 1 : a_.dilations[0];
    q_.dw = a_.dilations[wi];
    int64_t sp = a_.spatial();
    q_.ph = one_d ? 0 : a_.pads[0];
    q_.peh = one_d ? 0 : a_.pads[sp];
    q_.pw = a_.pads[wi];
    q_.pew = a_.pads[sp + wi];
  }

  void run(const KernelArgs& args) override {
    const float* x = static_cast<const float*>(args.inputs[0]);
    float* y = static_cast<float*>(args.outputs[0]);
    const PoolGeom& q = q_;
    bool is_max = a_.kind == PoolKind::kMax;
    bool include_pad = a_.count_include_pad;
    auto body = [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const float* xp = x + p * q.h * q.w;
        float* yp = y + p * q.oh * q.ow;
        for (int64_t oh = 0; oh < q.oh; ++oh) {
          int64_t hs = oh * q.sh - q.ph;
          for (int64_t ow = 0; ow < q.ow; ++ow) {
            int64_t ws = ow * q.sw - q.pw;
            // A window that holds only padding gives the lowest float, as in
            // onnxruntime (not -inf).
            float acc = is_max ? std::numeric_limits<float>::lowest() : 0.0f;
            int64_t inside = 0, padded = 0;
            for (int64_t i = 0; i < q.kh; ++i) {
              int64_t ih = hs + i * q.dh;
              bool h_in = ih >= 0 && ih < q.h;
              bool h_pad = ih >= -q.ph && ih < q.h + q.peh;
              for (int64_t j = 0; j < q.kw; ++j) {
                int64_t iw = ws + j * q.dw;
                bool w_in = iw >= 0 && iw < q.w;
                if (h_pad && iw >= -q.pw && iw < q.w + q.pew) ++padded;
                if (!h_in || !w_in) continue;
                float v = xp[ih * q.w + iw];
                if (is_max) acc = v > acc ? v : acc;
                else acc += v;
                ++inside;
              }
            }
            if (!is_max) {
              int64_t div = include_pad ? padded : inside;
              acc = div > 0 ? acc / static_cast<float>(div) : 0.0f;
            }
            yp[oh * q.ow + ow] = acc;
          }
        }
      }
    };
    args.pool->parallel_for(q.planes, body);
  }

 private:
  PoolAttrs a_;
  PoolGeom q_{};
};

class GlobalPoolKernel final : public Kernel {
 public:
  GlobalPoolKernel(const Graph& g, const Node& n, int) : is_max_(n.op == "GlobalMaxPool") {
    const Shape& x = in_shape(g, n, 0);
    planes_ = x[0] * x[1];
    size_ = shape_numel(x) / std::max<int64_t>(planes_, 1);
  }
  void run(const KernelArgs& args) override {
    const float* x = static_cast<const float*>(args.inputs[0]);
    float* y = static_cast<float*>(args.outputs[0]);
    auto body = [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const float* xp = x + p * size_;
        if (is_max_) {
          float m = -std::numeric_limits<float>::infinity();
          for (int64_t i = 0; i < size_; ++i) m = xp[i] > m ? xp[i] : m;
          y[p] = m;
        } else {
          double s = 0;
          for (int64_t i = 0; i < size_; ++i) s += xp[i];
          y[p] = static_cast<float>(s / static_cast<double>(size_));
        }
      }
    };
    args.pool->parallel_for(planes_, body, 8);
  }

 private:
  bool is_max_;
  int64_t planes_ = 0, size_ = 0;
};

std::unique_ptr<Kernel> make_pool(const Graph& g, const Node& n, int t) { return std::make_unique<PoolKernel>(g, n, t); }
std::unique_ptr<Kernel> make_global(const Graph& g, const Node& n, int t) {
  return std::make_unique<GlobalPoolKernel>(g, n, t);
}

}  // namespace

void add_pool_kernels(std::vector<KernelEntry>& out) {
  out.push_back({"MaxPool", make_pool});
  out.push_back({"AveragePool", make_pool});
  out.push_back({"GlobalMaxPool", make_global});
  out.push_back({"GlobalAveragePool", make_global});
}

}  // namespace minirt::cpu
