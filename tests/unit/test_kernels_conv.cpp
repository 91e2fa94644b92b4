// The CPU Conv kernel against a plain direct convolution written here.
//
// Each of the six named lowerings (im2col_gemm, implicit_gemm, gemm_1x1,
// depthwise_direct, winograd_f2x2, winograd_f4x4) runs, through
// make_kernel_with, every shape of a grid it accepts and declines the rest
// with the expected sentence; algorithms() must report the workspace its
// kernel asks for. Grids built for one lowering also check that the rules
// (make_kernel) pick it, and the GEMM lowerings are forced onto every grid
// they can run (make_kernel_with) with each SGEMM microkernel variant the CPU
// has. Every case runs with 1 and with 3 threads (the kernel cuts its work
// into tiles by thread count), on odd sizes, with padding, groups,
// dilations, batch > 1, with a fused activation, and with weights that are
// not constant (packed per run).
//
// Output and workspace get guard bytes after their end, and start filled
// with a NaN pattern: a kernel that writes past its buffers, leaves an output
// unwritten or reads scratch it did not write shows up here.
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/sgemm.h"
#include "runtime/op_registry.h"
#include "runtime/ops/elementwise.h"
#include "runtime/ops/conv.h"
#include "runtime/thread_pool.h"
#include "poison.h"

#include <gtest/gtest.h>

#include <fstream>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <sstream>
#include <tuple>

namespace minirt {
namespace {

using minirt::testing::is_poison;
using minirt::testing::kPoison;
using minirt::testing::poison;

using cpu::SgemmIsa;

struct ConvCase {
  int64_t n = 1, c = 1, m = 1;
  Shape spatial;                 // input H, W (or just W for 1-D)
  std::vector<int64_t> kernel;   // per spatial axis
  std::vector<int64_t> strides;  // per spatial axis
  std::vector<int64_t> dilations;
  std::vector<int64_t> pads;  // begins then ends
  int64_t group = 1;
  bool bias = true;
  Activation act;
  bool const_weights = true;  // false: the weights are a run-time input

  std::string str() const {
    std::ostringstream s;
    s << "n" << n << " c" << c << " m" << m << " in " << shape_str(spatial) << " k " << shape_str(kernel) << " s "
      << shape_str(strides) << " d " << shape_str(dilations) << " pads " << shape_str(pads) << " g" << group
      << (bias ? " bias" : "") << (act.none() ? "" : " act " + act.name()) << (const_weights ? "" : " runtime-weights");
    return s.str();
  }
};

Tensor random_tensor(const Shape& shape, std::mt19937& rng, float scale) {
  Tensor t = Tensor::zeros(DType::kFloat32, shape);
  std::uniform_real_distribution<float> u(-scale, scale);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = u(rng);
  return t;
}

// Direct convolution, double accumulation. 1-D runs as 2-D with height 1.
// `scale` receives, per output, |bias| + sum |x*w|: the size of what was
// accumulated, against which float rounding is judged.
void reference_conv(const ConvCase& cc, const Shape& y_shape, const float* x, const float* w, const float* b,
                    std::vector<float>& y, std::vector<double>& scale) {
  bool one_d = cc.spatial.size() == 1;
  int64_t h = one_d ? 1 : cc.spatial[0], wd = cc.spatial.back();
  int64_t oh_n = one_d ? 1 : y_shape[2], ow_n = y_shape.back();
  int64_t kh = one_d ? 1 : cc.kernel[0], kw = cc.kernel.back();
  int64_t sh = one_d ? 1 : cc.strides[0], sw = cc.strides.back();
  int64_t dh = one_d ? 1 : cc.dilations[0], dw = cc.dilations.back();
  int64_t sp = static_cast<int64_t>(cc.spatial.size());
  int64_t ph = one_d ? 0 : cc.pads[0], pw = cc.pads[sp - 1];
  int64_t cg = cc.c / cc.group, mg = cc.m / cc.group;
  y.assign(static_cast<size_t>(cc.n * cc.m * oh_n * ow_n), 0.0f);
  scale.assign(y.size(), 0.0);
  for (int64_t img = 0; img < cc.n; ++img)
    for (int64_t oc = 0; oc < cc.m; ++oc) {
      int64_t g = oc / mg;
      for (int64_t oh = 0; oh < oh_n; ++oh)
        for (int64_t ow = 0; ow < ow_n; ++ow) {
          double acc = b ? b[oc] : 0.0;
          double mag = std::fabs(acc);
          for (int64_t ic = 0; ic < cg; ++ic)
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                int64_t ih = oh * sh - ph + i * dh, iw = ow * sw - pw + j * dw;
                if (ih < 0 || ih >= h || iw < 0 || iw >= wd) continue;
                double xv = x[((img * cc.c + g * cg + ic) * h + ih) * wd + iw];
                double wv = w[((oc * cg + ic) * kh + i) * kw + j];
                acc += xv * wv;
                mag += std::fabs(xv * wv);
              }
          size_t at = static_cast<size_t>(((img * cc.m + oc) * oh_n + oh) * ow_n + ow);
          y[at] = cc.act.apply(static_cast<float>(acc));
          scale[at] = mag;
        }
    }
}

// A one-node graph: Conv with constant input, weights (unless the case says
// otherwise) and bias, its output shape inferred by the op's schema.
struct ConvGraph {
  Graph g;
  int y = -1;
  Tensor weights;

  explicit ConvGraph(const ConvCase& cc, std::mt19937& rng) {
    g.source = "test_kernels_conv";
    g.opset = 13;
    Shape xs = {cc.n, cc.c};
    xs.insert(xs.end(), cc.spatial.begin(), cc.spatial.end());
    Shape ws = {cc.m, cc.c / cc.group};
    ws.insert(ws.end(), cc.kernel.begin(), cc.kernel.end());
    int64_t fan_in = shape_numel(ws) / cc.m;
    std::vector<int> ins = {constant("x", random_tensor(xs, rng, 1.0f))};
    weights = random_tensor(ws, rng, 1.0f / std::sqrt(static_cast<float>(fan_in)));
    if (cc.const_weights) {
      ins.push_back(constant("w", weights));
    } else {
      int v = g.add_value("w");
      g.values[v].dtype = DType::kFloat32;
      g.values[v].shape = ws;
      g.values[v].shape_known = true;
      ins.push_back(v);
    }
    if (cc.bias) ins.push_back(constant("b", random_tensor({cc.m}, rng, 0.5f)));
    y = g.add_value("y");
    g.add_node("conv", "Conv", ins, {y});
    auto a = std::make_shared<ConvAttrs>();
    a->kernel_shape = cc.kernel;
    a->strides = cc.strides;
    a->dilations = cc.dilations;
    a->pads = cc.pads;
    a->group = cc.group;
    a->act = cc.act;
    g.nodes[0].parsed = a;
    InferContext ctx(g, g.nodes[0]);
    find_schema("Conv")->infer(ctx);
  }

  int constant(const std::string& name, Tensor t) {
    int v = g.add_value(name);
    g.values[v].dtype = t.dtype();
    g.values[v].shape = t.shape();
    g.values[v].shape_known = true;
    g.values[v].constant = std::make_shared<Tensor>(std::move(t));
    return v;
  }
  const float* in(size_t i) const {
    if (i == 1) return weights.data<float>();
    int v = g.nodes[0].input(i);
    return v < 0 ? nullptr : g.values[v].constant->data<float>();
  }
};

// The algorithm describe() names ("algo=NAME isa=...").
std::string algo_of(const std::string& describe) {
  std::string a = describe.substr(0, describe.find(' '));
  return a.rfind("algo=", 0) == 0 ? a.substr(5) : describe;
}

constexpr size_t kGuard = 64;  // floats of guard after each buffer

// Error bound of each algorithm, relative to the magnitude accumulated into
// each output (|bias| + sum |x*w|), which bounds the float rounding of a dot
// product: 1e-4 for the direct and GEMM lowerings (they see at most 2.2e-7
// on these grids). Winograd also rounds in its transforms, in proportion to
// the size of its matrices' entries: F(2x2, 3x3)'s are 0, +-1 and 1/2, so it
// keeps the same bound (it sees 1.6e-7); F(4x4, 3x3)'s reach 8 and 1/24 with
// sums that cancel, so it is allowed 5x more, 5e-4 (it sees 1.1e-6: about 5x
// the GEMM lowerings' error, still far inside).
double tolerance_of(const std::string& algo) { return algo == "winograd_f4x4" ? 5e-4 : 1e-4; }

// Runs one case with `threads` threads, with the algorithm the backend's
// rules pick (algo empty) or the one named; returns the kernel's describe().
std::string run_case(const ConvCase& cc, int threads, const std::string& algo = "") {
  std::mt19937 rng(12345);
  ConvGraph cg(cc, rng);
  const Node& node = cg.g.nodes[0];
  const Shape& ys = cg.g.values[cg.y].shape;
  std::vector<float> want;
  std::vector<double> scale;
  reference_conv(cc, ys, cg.in(0), cg.in(1), cg.in(2), want, scale);

  ThreadPool pool(threads);
  std::unique_ptr<KernelProvider> cpu = make_cpu_backend(threads);
  std::string why;
  EXPECT_TRUE(cpu->supports(cg.g, node, &why)) << why;
  std::unique_ptr<Kernel> k = algo.empty() ? cpu->make_kernel(cg.g, node) : cpu->make_kernel_with(cg.g, node, algo);
  const double rel_tol = tolerance_of(algo.empty() ? algo_of(k->describe()) : algo);
  if (!algo.empty()) {
    // What the tuner is told the candidate needs is what its kernel asks for.
    bool listed = false;
    for (const AlgorithmOption& o : cpu->algorithms(cg.g, node))
      if (o.name == algo) {
        listed = true;
        EXPECT_TRUE(o.declined.empty()) << o.declined;
        EXPECT_EQ(o.workspace, k->workspace_bytes()) << algo << ", " << cc.str();
      }
    EXPECT_TRUE(listed) << algo;
  }
  size_t ws_floats = (k->workspace_bytes() + 3) / 4;
  Tensor ws = Tensor::zeros(DType::kFloat32, {static_cast<int64_t>(ws_floats + kGuard)});
  poison(ws.data<float>(), ws_floats + kGuard);
  int64_t count = shape_numel(ys);
  Tensor out = Tensor::zeros(DType::kFloat32, {count + static_cast<int64_t>(kGuard)});
  float* y = out.data<float>();
  poison(y, static_cast<size_t>(count) + kGuard);

  const void* ins[3] = {cg.in(0), cg.in(1), cg.in(2)};
  void* outs[1] = {y};
  KernelArgs args{ins, outs, ws_floats ? ws.raw() : nullptr, &pool};
  // Twice: a kernel is prepared once and run many times.
  for (int rep = 0; rep < 2; ++rep) {
    k->run(args);
    for (size_t i = 0; i < kGuard; ++i) {
      EXPECT_TRUE(is_poison(y[count + static_cast<int64_t>(i)])) << "output guard overwritten, " << cc.str();
      EXPECT_TRUE(is_poison(ws.data<float>()[ws_floats + i])) << "workspace guard overwritten, " << cc.str();
    }
    // The floor of 1e-2 on the magnitude covers outputs with nothing accumulated.
    int64_t bad = 0;
    for (int64_t i = 0; i < count; ++i) {
      double tol = rel_tol * std::max(scale[static_cast<size_t>(i)], 1e-2);
      double d = std::fabs(static_cast<double>(y[i]) - want[static_cast<size_t>(i)]);
      if (!(d <= tol)) {
        if (bad++ < 3)
          ADD_FAILURE() << cc.str() << ", threads " << threads << ": output " << i << " of " << count << " (shape "
                        << shape_str(ys) << ") is " << y[i] << ", expected " << want[static_cast<size_t>(i)];
      }
    }
    if (bad) {
      ADD_FAILURE() << bad << " of " << count << " outputs wrong: " << cc.str() << ", threads " << threads << ", "
                    << k->describe();
      break;
    }
  }
  return k->describe();
}

ConvCase make_2d(int64_t n, int64_t c, int64_t m, Shape hw, int64_t k, int64_t s, int64_t d, std::vector<int64_t> pads,
                 int64_t group, bool bias) {
  ConvCase cc;
  cc.n = n;
  cc.c = c;
  cc.m = m;
  cc.spatial = hw;
  cc.kernel = {k, k};
  cc.strides = {s, s};
  cc.dilations = {d, d};
  cc.pads = pads;
  cc.group = group;
  cc.bias = bias;
  return cc;
}

ConvCase make_1d(int64_t n, int64_t c, int64_t m, int64_t w, int64_t k, int64_t s, int64_t d, std::vector<int64_t> pads,
                 int64_t group, bool bias) {
  ConvCase cc = make_2d(n, c, m, {w}, k, s, d, pads, group, bias);
  cc.kernel = {k};
  cc.strides = {s};
  cc.dilations = {d};
  return cc;
}

// Whether the window fits the padded input on every axis (else the schema
// refuses the node; SchemaRefusesAWindowWiderThanThePaddedInput checks that).
bool window_fits(const ConvCase& cc) {
  size_t sp = cc.spatial.size();
  for (size_t i = 0; i < sp; ++i)
    if (cc.dilations[i] * (cc.kernel[i] - 1) + 1 > cc.spatial[i] + cc.pads[i] + cc.pads[i + sp]) return false;
  return true;
}

// Forces an SGEMM variant for the kernels made while it lives.
class Forced {
 public:
  explicit Forced(const SgemmIsa* isa) {
    if (isa) cpu::sgemm_force_isa(*isa);
  }
  ~Forced() { cpu::sgemm_reset_isa(); }
  Forced(const Forced&) = delete;
  Forced& operator=(const Forced&) = delete;
};

// The SGEMM variants this CPU can run.
std::vector<SgemmIsa> isas() {
  std::vector<SgemmIsa> out;
  for (SgemmIsa isa : {SgemmIsa::kGeneric, SgemmIsa::kAvx2, SgemmIsa::kAvx512})
    if (cpu::sgemm_isa_supported(isa)) out.push_back(isa);
  return out;
}

// Runs every case of a grid with 1 and 3 threads, expecting the algorithm
// `algo(case)` names each time; `forced`: that algorithm (make_kernel_with),
// else the heuristic's (make_kernel).
template <typename AlgoOf>
void run_grid_with(const std::vector<ConvCase>& grid, AlgoOf algo, const std::string& forced = "") {
  ASSERT_FALSE(grid.empty());
  int ran = 0;
  for (const ConvCase& cc : grid) {
    if (!window_fits(cc)) continue;
    ++ran;
    for (int threads : {1, 3}) {
      SCOPED_TRACE(cc.str() + ", threads " + std::to_string(threads));
      std::string got = run_case(cc, threads, forced);
      EXPECT_EQ(algo_of(got), algo(cc)) << cc.str();
    }
  }
  EXPECT_GE(ran * 10, static_cast<int>(grid.size()) * 9) << "most of the grid should be runnable";
}

void run_grid(const std::vector<ConvCase>& grid, const std::string& algo, const std::string& forced = "") {
  run_grid_with(
      grid, [&](const ConvCase&) { return algo; }, forced);
}

// A grid with a GEMM lowering forced, for each SGEMM variant.
void run_grid_forced(const std::vector<ConvCase>& grid, const std::string& algo) {
  for (SgemmIsa isa : isas()) {
    SCOPED_TRACE(std::string("forced ") + algo + " isa " + cpu::sgemm_isa_name(isa));
    Forced f(&isa);
    run_grid(grid, algo, algo);
  }
}

TEST(ConvKernel, DepthwiseMatchesDirectConvolution) {
  std::vector<ConvCase> grid;
  int i = 0;
  for (int64_t k : {1, 3, 5})
    for (int64_t s : {1, 2, 3})
      for (int64_t d : {1, 2}) {
        if (k == 1 && d == 2) continue;
        int64_t p = k / 2 * d;
        int64_t n = i % 3 == 1 ? 3 : 1;
        Shape hw = i % 2 ? Shape{13, 9} : Shape{7, 11};
        grid.push_back(make_2d(n, 5, 5, hw, k, s, d, {p, p, p, p}, 5, i % 4 != 3));
        grid.push_back(make_2d(n, 3, 3, hw, k, s, d, {0, 1, 2, 1}, 3, i % 4 == 3));
        ++i;
      }
  // Rectangular kernels, a single channel, kernel wider than the input.
  ConvCase r = make_2d(3, 4, 4, {9, 13}, 3, 1, 1, {2, 0, 1, 2}, 4, true);
  r.kernel = {3, 5};
  r.strides = {2, 1};
  r.dilations = {1, 2};
  grid.push_back(r);
  grid.push_back(make_2d(1, 1, 1, {5, 6}, 3, 1, 1, {1, 1, 1, 1}, 1, true));
  grid.push_back(make_2d(2, 4, 4, {3, 4}, 5, 1, 1, {2, 2, 2, 2}, 4, false));
  grid.push_back(make_2d(1, 6, 6, {3, 3}, 3, 2, 2, {3, 3, 2, 2}, 6, true));
  // 1-D.
  grid.push_back(make_1d(1, 5, 5, 13, 3, 1, 1, {1, 1}, 5, true));
  grid.push_back(make_1d(3, 5, 5, 13, 5, 2, 2, {0, 3}, 5, false));
  grid.push_back(make_1d(2, 4, 4, 8, 3, 3, 1, {2, 1}, 4, true));
  // Rows longer than one vector, strides 1 and 2, and narrow ones.
  grid.push_back(make_2d(1, 3, 3, {9, 37}, 3, 1, 1, {1, 1, 1, 1}, 3, true));
  grid.push_back(make_2d(2, 4, 4, {8, 41}, 3, 2, 1, {1, 1, 1, 1}, 4, true));
  grid.push_back(make_2d(1, 2, 2, {6, 50}, 5, 2, 2, {4, 0, 3, 1}, 2, false));
  grid.push_back(make_2d(1, 5, 5, {3, 2}, 3, 2, 1, {1, 1, 1, 1}, 5, true));
  // More than one block of 16 channels; a row too wide for the channel-blocked
  // ring (the row-vectorized path).
  grid.push_back(make_2d(2, 21, 21, {9, 20}, 3, 1, 1, {1, 1, 1, 1}, 21, true));
  grid.push_back(make_2d(1, 33, 33, {6, 7}, 3, 2, 1, {1, 0, 1, 1}, 33, false));
  grid.push_back(make_2d(1, 2, 2, {3, 1500}, 3, 1, 1, {1, 1, 1, 1}, 2, true));
  run_grid(grid, "depthwise_direct");
  // Every SGEMM variant the CPU has (AVX-512 has its own depthwise path).
  for (SgemmIsa isa : isas()) {
    SCOPED_TRACE(std::string("isa ") + cpu::sgemm_isa_name(isa));
    Forced f(&isa);
    run_grid(grid, "depthwise_direct");
  }
}

TEST(ConvKernel, Gemm1x1MatchesDirectConvolution) {
  std::vector<ConvCase> grid;
  int i = 0;
  for (Shape hw : {Shape{13, 9}, Shape{7, 11}, Shape{1, 1}, Shape{5, 3}})
    for (auto [c, m, g] : {std::tuple{3, 4, 1}, std::tuple{6, 10, 2}, std::tuple{8, 8, 4}, std::tuple{16, 5, 1}}) {
      grid.push_back(make_2d(i % 3 == 1 ? 3 : 1, c, m, hw, 1, 1, 1, {0, 0, 0, 0}, g, i % 4 != 3));
      ++i;
    }
  // Several column tiles (many input channels, a wide plane).
  grid.push_back(make_2d(2, 128, 24, {31, 23}, 1, 1, 1, {0, 0, 0, 0}, 1, true));
  // Few columns and many output channels: rows are split across threads too.
  grid.push_back(make_2d(1, 8, 64, {3, 3}, 1, 1, 1, {0, 0, 0, 0}, 1, true));
  grid.push_back(make_2d(1, 16, 70, {1, 5}, 1, 1, 1, {0, 0, 0, 0}, 2, false));
  // 1-D.
  grid.push_back(make_1d(3, 6, 4, 13, 1, 1, 1, {0, 0}, 1, true));
  grid.push_back(make_1d(1, 6, 4, 9, 1, 1, 1, {0, 0}, 2, false));
  // Weights that arrive at run time.
  ConvCase rt = make_2d(2, 16, 24, {9, 11}, 1, 1, 1, {0, 0, 0, 0}, 2, true);
  rt.const_weights = false;
  grid.push_back(rt);
  run_grid(grid, "gemm_1x1");
  // The other lowerings run a pointwise convolution too, on every variant.
  run_grid_forced(grid, "gemm_1x1");
  run_grid_forced(grid, "implicit_gemm");
  run_grid_forced(grid, "im2col_gemm");
}

// Everything that is neither depthwise nor pointwise: the rules pick
// Winograd for 3x3 stride-1 convolutions with at least 16 channels and
// filters (F4 from 400 outputs per plane, F2 from 49), on AVX-512 CPUs
// implicit_gemm for output rows of at least 12 columns (32 when strided) and
// windows wider than 1x1, im2col_gemm otherwise; implicit_gemm and
// im2col_gemm are also forced onto the whole grid.
std::vector<ConvCase> general_grid() {
  std::vector<ConvCase> grid;
  int i = 0;
  for (int64_t k : {1, 3, 5, 7})
    for (int64_t s : {1, 2, 3})
      for (int64_t d : {1, 2}) {
        if (k == 1 && d == 2) continue;
        int64_t p = k / 2 * d;
        for (std::vector<int64_t> pads : {std::vector<int64_t>{p, p, p, p}, std::vector<int64_t>{0, 1, 2, 1}}) {
          int64_t n = i % 3 == 1 ? 3 : 1;
          Shape hw = i % 2 ? Shape{13, 9} : Shape{7, 11};
          // Groups: 1, 2, and depthwise with a channel multiplier (not the depthwise path).
          auto [c, m, g] = std::array{std::tuple{3, 4, 1}, std::tuple{4, 6, 2}, std::tuple{3, 6, 3}}[i % 3];
          ConvCase cc = make_2d(n, c, m, hw, k, s, d, pads, g, i % 4 != 3);
          if (k == 1 && s == 1 && pads[0] == 0 && pads[1] == 0) {
            ++i;
            continue;  // that one is gemm_1x1
          }
          grid.push_back(cc);
          ++i;
        }
      }
  // 1x1 with stride or padding still unrolls.
  grid.push_back(make_2d(1, 4, 6, {7, 9}, 1, 2, 1, {0, 0, 0, 0}, 1, true));
  grid.push_back(make_2d(3, 4, 6, {7, 9}, 1, 1, 1, {0, 1, 1, 0}, 2, false));
  // Several column tiles: a long patch row (16 * 7 * 7 values) over a 13x9 plane.
  grid.push_back(make_2d(1, 16, 24, {13, 9}, 7, 1, 1, {3, 3, 3, 3}, 1, true));
  // Few columns, many output channels: row tiles.
  grid.push_back(make_2d(1, 8, 64, {4, 5}, 3, 1, 1, {1, 1, 1, 1}, 1, true));
  grid.push_back(make_2d(2, 32, 48, {5, 4}, 3, 2, 1, {1, 1, 1, 1}, 2, true));
  // An empty batch: nothing to compute, and no tile to divide by (it used to
  // divide by zero cutting row tiles for 3 threads).
  grid.push_back(make_2d(0, 8, 64, {3, 3}, 3, 1, 1, {1, 1, 1, 1}, 1, true));
  // Kernel larger than the input, all of it padding on one side.
  grid.push_back(make_2d(1, 2, 3, {3, 2}, 5, 1, 1, {4, 4, 0, 0}, 1, true));
  // Rectangular everything.
  ConvCase r = make_2d(2, 3, 5, {11, 8}, 3, 1, 1, {1, 0, 2, 3}, 1, true);
  r.kernel = {3, 2};
  r.strides = {1, 3};
  r.dilations = {2, 1};
  grid.push_back(r);
  // 1-D.
  for (int64_t k : {1, 3, 5})
    for (int64_t s : {1, 2, 3}) {
      int64_t d = s == 2 ? 2 : 1;
      std::vector<int64_t> pads = k == 1 ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{1, 2};
      grid.push_back(make_1d(s == 3 ? 3 : 1, 4, 6, 13, k, s, d, pads, s == 2 ? 2 : 1, k != 3));
    }
  // Wide output rows (the in-place tiles: full, partial and narrow), strides
  // 1 to 3, dilation, asymmetric padding, groups, batch > 1.
  grid.push_back(make_2d(1, 8, 16, {6, 56}, 3, 1, 1, {1, 1, 1, 1}, 1, true));
  grid.push_back(make_2d(2, 6, 10, {5, 29}, 3, 1, 2, {2, 0, 1, 3}, 2, false));
  grid.push_back(make_2d(1, 3, 8, {9, 40}, 7, 2, 1, {3, 3, 3, 3}, 1, true));
  grid.push_back(make_2d(1, 4, 9, {7, 45}, 3, 3, 1, {1, 1, 1, 1}, 1, true));
  grid.push_back(make_2d(3, 4, 12, {4, 33}, 3, 2, 2, {0, 2, 1, 0}, 4, true));
  grid.push_back(make_2d(1, 32, 40, {5, 70}, 3, 1, 1, {1, 1, 1, 1}, 1, true));
  grid.push_back(make_2d(1, 3, 5, {13, 27}, 2, 2, 1, {0, 0, 0, 0}, 1, false));
  ConvCase wr = make_2d(1, 5, 7, {6, 31}, 3, 1, 1, {1, 1, 1, 1}, 1, true);
  wr.kernel = {1, 5};
  wr.pads = {0, 2, 0, 2};
  grid.push_back(wr);
  grid.push_back(make_1d(2, 4, 6, 64, 5, 1, 1, {2, 2}, 2, true));
  grid.push_back(make_1d(1, 3, 4, 100, 3, 2, 3, {3, 0}, 1, false));
  // Weights that arrive at run time.
  ConvCase rt1 = make_2d(1, 6, 8, {7, 20}, 3, 1, 1, {1, 1, 1, 1}, 2, true);
  rt1.const_weights = false;
  grid.push_back(rt1);
  ConvCase rt2 = make_2d(2, 4, 6, {7, 9}, 3, 2, 1, {1, 1, 1, 1}, 1, true);
  rt2.const_weights = false;
  grid.push_back(rt2);
  return grid;
}

TEST(ConvKernel, ImplicitAndIm2colMatchDirectConvolution) {
  std::vector<ConvCase> grid = general_grid();
  int wide = 0, narrow = 0;
  for (const ConvCase& cc : grid) (cc.spatial.back() >= 12 ? wide : narrow)++;
  EXPECT_GT(wide, 10);
  EXPECT_GT(narrow, 10);
  run_grid_with(grid, [](const ConvCase& cc) {
    // The output width, as the schema resolves it.
    size_t sp = cc.spatial.size();
    int64_t k = cc.kernel.back(), s = cc.strides.back(), d = cc.dilations.back();
    int64_t ow = (cc.spatial.back() + cc.pads[sp - 1] + cc.pads[2 * sp - 1] - d * (k - 1) - 1) / s + 1;
    int64_t taps = 1;
    for (int64_t kk : cc.kernel) taps *= kk;
    bool s1 = true;
    for (size_t a = 0; a < sp; ++a) s1 = s1 && cc.strides[a] == 1 && cc.dilations[a] == 1 && cc.kernel[a] == 3;
    int64_t oh = cc.spatial[0] + cc.pads[0] + cc.pads[sp] - 2;  // 3x3, stride 1
    if (sp == 2 && s1 && cc.group == 1 && cc.const_weights && cc.c >= 16 && cc.m >= 16 && oh * ow >= 49)
      return oh * ow >= 400 ? "winograd_f4x4" : "winograd_f2x2";
    bool avx512 = cpu::sgemm_default_isa() == SgemmIsa::kAvx512;
    return avx512 && ow >= (s == 1 ? 12 : 32) && taps > 1 ? "implicit_gemm" : "im2col_gemm";
  });
}

// Winograd F(2x2, 3x3) and F(4x4, 3x3), named: 3x3, stride 1, one group,
// on every CPU and SGEMM variant. Output sizes that are and are not
// multiples of the tile (partial edge tiles), one row or column of output,
// every padding, narrow and wide planes, batch > 1, blocks of tiles split
// across threads, output channels split across threads, fused activations,
// and channel counts the rules would not pick it for.
std::vector<ConvCase> winograd_grid() {
  std::vector<ConvCase> grid;
  int i = 0;
  for (Shape hw : {Shape{7, 7}, Shape{8, 9}, Shape{13, 11}, Shape{3, 40}, Shape{30, 29}, Shape{1, 5}, Shape{2, 2},
                   Shape{5, 1}, Shape{12, 16}})
    for (std::vector<int64_t> pads :
         {std::vector<int64_t>{1, 1, 1, 1}, std::vector<int64_t>{0, 0, 0, 0}, std::vector<int64_t>{2, 0, 1, 2}}) {
      auto [c, m] = std::array{std::pair{16, 16}, std::pair{24, 40}, std::pair{33, 17}, std::pair{3, 5}}[i % 4];
      ConvCase cc = make_2d(i % 4 == 1 ? 3 : 1, c, m, hw, 3, 1, 1, pads, 1, i % 5 != 4);
      if (i % 3 == 0) cc.act = {ActKind::kRelu, 0, 0};
      if (i % 7 == 3) cc.act = {ActKind::kClip, 0.0f, 0.3f};
      if (i % 11 == 5) cc.act = {ActKind::kSigmoid, 0, 0};
      grid.push_back(cc);
      ++i;
    }
  // Many channels and tiles: several blocks, output channels split for threads.
  grid.push_back(make_2d(1, 64, 72, {28, 28}, 3, 1, 1, {1, 1, 1, 1}, 1, true));
  grid.push_back(make_2d(1, 128, 96, {7, 7}, 3, 1, 1, {1, 1, 1, 1}, 1, true));
  grid.push_back(make_2d(2, 300, 20, {6, 6}, 3, 1, 1, {1, 1, 1, 1}, 1, false));  // K over two SGEMM blocks
  grid.push_back(make_2d(3, 5, 2, {6, 17}, 3, 1, 1, {0, 1, 2, 1}, 1, false));
  grid.push_back(make_2d(1, 1, 2, {3, 3}, 3, 1, 1, {0, 0, 0, 0}, 1, true));
  return grid;
}

TEST(ConvKernel, WinogradMatchesDirectConvolution) {
  std::vector<ConvCase> grid = winograd_grid();
  for (const char* algo : {"winograd_f2x2", "winograd_f4x4"})
    for (SgemmIsa isa : isas()) {
      SCOPED_TRACE(std::string(algo) + " isa " + cpu::sgemm_isa_name(isa));
      Forced f(&isa);
      for (const ConvCase& cc : grid) {
        if (!window_fits(cc)) continue;  // (1 x 5 without padding)
        for (int threads : {1, 3}) {
          SCOPED_TRACE(cc.str() + ", threads " + std::to_string(threads));
          EXPECT_EQ(algo_of(run_case(cc, threads, algo)), algo);
        }
      }
    }
}

TEST(ConvKernel, Im2colForcedMatchesDirectConvolution) { run_grid_forced(general_grid(), "im2col_gemm"); }

TEST(ConvKernel, ImplicitForcedMatchesDirectConvolution) { run_grid_forced(general_grid(), "implicit_gemm"); }

TEST(ConvKernel, FusedActivationOnEveryAlgorithm) {
  std::vector<Activation> acts;
  acts.push_back({ActKind::kRelu, 0, 0});
  acts.push_back({ActKind::kClip, 0.0f, 0.3f});
  acts.push_back({ActKind::kLeakyRelu, 0.1f, 0});
  acts.push_back({ActKind::kSigmoid, 0, 0});
  acts.push_back({ActKind::kTanh, 0, 0});
  std::vector<std::pair<ConvCase, std::string>> bases = {
      {make_2d(3, 5, 5, {13, 9}, 3, 2, 1, {1, 1, 1, 1}, 5, true), "depthwise_direct"},
      {make_2d(1, 4, 4, {6, 40}, 3, 1, 1, {1, 1, 1, 1}, 4, true), "depthwise_direct"},
      {make_2d(1, 18, 18, {6, 9}, 3, 2, 1, {1, 1, 1, 1}, 18, true), "depthwise_direct"},
      {make_2d(1, 3, 3, {3, 1300}, 3, 1, 1, {1, 1, 1, 1}, 3, true), "depthwise_direct"},
      {make_2d(1, 6, 40, {5, 7}, 1, 1, 1, {0, 0, 0, 0}, 1, true), "gemm_1x1"},
      {make_2d(3, 4, 6, {7, 9}, 3, 1, 2, {0, 1, 2, 1}, 2, false), "im2col_gemm"},
      {make_1d(2, 3, 33, 17, 5, 2, 1, {2, 2}, 1, true), "im2col_gemm"},
      {make_2d(1, 4, 12, {5, 40}, 3, 1, 1, {1, 1, 1, 1}, 1, true), "implicit_gemm"},
      {make_1d(2, 3, 20, 80, 3, 2, 1, {1, 1}, 1, false), "implicit_gemm"},
      {make_2d(2, 5, 7, {9, 11}, 3, 1, 1, {1, 0, 2, 1}, 1, true), "winograd_f2x2"},
      {make_2d(1, 6, 9, {13, 10}, 3, 1, 1, {1, 1, 1, 1}, 1, false), "winograd_f4x4"},
  };
  // Named, so that each base runs on its algorithm whatever the rules say.
  for (const auto& [base, algo] : bases)
    for (const Activation& act : acts) {
      ConvCase cc = base;
      cc.act = act;
      for (int threads : {1, 3}) EXPECT_EQ(algo_of(run_case(cc, threads, algo)), algo) << cc.str();
    }
}

TEST(ConvKernel, SchemaRefusesAWindowWiderThanThePaddedInput) {
  // A 5x5 window over a 3x3 input with one pad on each side has no output
  // position; the node is refused when it is planned, never run.
  std::mt19937 rng(1);
  try {
    ConvGraph g(make_2d(1, 2, 2, {3, 3}, 5, 1, 1, {1, 1, 0, 0}, 1, false), rng);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
    EXPECT_NE(std::string(e.what()).find("window spans 5"), std::string::npos) << e.what();
  }
}

TEST(ConvKernel, SchemaResolvesShapesTheReferenceAgreesWith) {
  // Output sizes for odd inputs with asymmetric pads, as ONNX defines them:
  // floor((in + pad_begin + pad_end - dilation * (k - 1) - 1) / stride) + 1.
  std::mt19937 rng(1);
  ConvGraph g1(make_2d(1, 3, 4, {13, 9}, 3, 2, 1, {0, 1, 2, 1}, 1, true), rng);
  EXPECT_EQ(g1.g.values[g1.y].shape, (Shape{1, 4, 7, 5}));
  ConvGraph g2(make_2d(2, 4, 6, {7, 11}, 5, 3, 2, {4, 4, 4, 4}, 2, false), rng);
  EXPECT_EQ(g2.g.values[g2.y].shape, (Shape{2, 6, 3, 4}));
  ConvGraph g3(make_1d(1, 3, 4, 8, 3, 3, 1, {2, 1}, 1, true), rng);
  EXPECT_EQ(g3.g.values[g3.y].shape, (Shape{1, 4, 3}));
}

// ---- The algorithm choice (KernelProvider::algorithms and friends) ----

// The decline sentence the test expects for `algo` on a case (empty: it
// runs), from the rules as the task states them, not from the kernel.
std::string expected_decline(const ConvCase& cc, const std::string& algo) {
  const size_t sp = cc.spatial.size();
  if (algo == "im2col_gemm" || algo == "implicit_gemm") return "";
  if (algo == "gemm_1x1") {
    bool ok = true;
    for (size_t a = 0; a < sp; ++a) ok = ok && cc.kernel[a] == 1 && cc.strides[a] == 1;
    for (int64_t p : cc.pads) ok = ok && p == 0;
    return ok ? "" : "1x1 stride 1 without padding only";
  }
  if (algo == "depthwise_direct") return cc.group == cc.c && cc.m == cc.c ? "" : "needs group == channels == filters";
  bool s1 = sp == 2;
  for (size_t a = 0; a < sp; ++a) s1 = s1 && cc.kernel[a] == 3 && cc.strides[a] == 1 && cc.dilations[a] == 1;
  if (!s1) return "needs a 3x3 window at stride 1 and dilation 1";
  if (cc.group != 1) return "needs one group";
  if (!cc.const_weights) return "needs constant weights";
  return "";
}

// Every candidate on a grid of small shapes: odd and tiny planes, every
// padding, strides, dilations, groups, depthwise, batch 1 and 3, 1-D, with
// and without bias, fused Relu and Clip, run-time weights; 1 and 3 threads.
// A candidate runs where the expected rules accept the shape (and must match
// the direct convolution, with algorithms() reporting its kernel's
// workspace), and declines with the expected sentence elsewhere (and
// make_kernel_with then refuses it).
TEST(ConvAlgorithms, EveryAlgorithmMatchesDirectConvolutionOrDeclines) {
  std::vector<ConvCase> grid;
  int i = 0;
  const std::vector<std::vector<int64_t>> pad_sets = {{0, 0, 0, 0}, {1, 1, 1, 1}, {2, 2, 2, 2}, {0, 1, 2, 1}};
  for (Shape hw : {Shape{1, 1}, Shape{2, 2}, Shape{5, 7}, Shape{13, 5}, Shape{7, 13}})
    for (int64_t k : {1, 3, 5})
      for (int64_t st : {1, 2})
        for (int64_t d : {1, 2}) {
          if (k == 1 && d == 2) continue;
          for (const auto& pads : pad_sets) {
            auto [c, m, g] =
                std::array{std::tuple{4, 6, 1}, std::tuple{6, 4, 2}, std::tuple{5, 5, 5}, std::tuple{16, 17, 1}}[i % 4];
            ConvCase cc = make_2d(i % 5 == 2 ? 3 : 1, c, m, hw, k, st, d, pads, g, i % 3 != 1);
            if (i % 4 == 1) cc.act = {ActKind::kRelu, 0, 0};
            if (i % 6 == 3) cc.act = {ActKind::kClip, -0.2f, 0.4f};
            if (i % 13 == 7) cc.const_weights = false;
            ++i;
            if (window_fits(cc)) grid.push_back(cc);
          }
        }
  for (int64_t k : {1, 3})
    for (int64_t st : {1, 2})
      for (int64_t w : {1, 5, 13}) {
        ConvCase cc = make_1d(st == 2 ? 3 : 1, 4, 6, w, k, st, 1,
                              k == 1 ? std::vector<int64_t>{0, 0} : std::vector<int64_t>{1, 2}, k == 3 ? 2 : 1, w != 5);
        if (window_fits(cc)) grid.push_back(cc);
      }
  grid.push_back(make_1d(1, 4, 4, 9, 3, 1, 1, {1, 1}, 4, true));  // 1-D depthwise
  std::map<std::string, int> ran, refused;
  std::mt19937 rng(7);
  std::unique_ptr<KernelProvider> cpu = make_cpu_backend(1);
  for (const ConvCase& cc : grid) {
    SCOPED_TRACE(cc.str());
    ConvGraph cg(cc, rng);
    const Node& node = cg.g.nodes[0];
    std::vector<AlgorithmOption> opts = cpu->algorithms(cg.g, node);
    ASSERT_EQ(opts.size(), 6u);
    const char* names[] = {"im2col_gemm",      "implicit_gemm", "gemm_1x1",
                           "depthwise_direct", "winograd_f2x2", "winograd_f4x4"};
    for (size_t a = 0; a < opts.size(); ++a) {
      const std::string algo = names[a];
      ASSERT_EQ(opts[a].name, algo);
      std::string want = expected_decline(cc, algo);
      EXPECT_EQ(opts[a].declined, want) << algo;
      if (!opts[a].declined.empty()) {
        ++refused[algo];
        EXPECT_EQ(opts[a].workspace, 0u);
        EXPECT_THROW(cpu->make_kernel_with(cg.g, node, algo), Error) << algo;
        continue;
      }
      ++ran[algo];
      for (int threads : {1, 3}) {
        SCOPED_TRACE(algo + ", threads " + std::to_string(threads));
        EXPECT_EQ(algo_of(run_case(cc, threads, algo)), algo);
      }
    }
  }
  // The grid reaches every candidate, and every decline rule.
  EXPECT_EQ(ran["im2col_gemm"], static_cast<int>(grid.size()));
  EXPECT_EQ(ran["implicit_gemm"], static_cast<int>(grid.size()));
  for (const char* a : {"gemm_1x1", "depthwise_direct", "winograd_f2x2", "winograd_f4x4"}) {
    EXPECT_GE(ran[a], 8) << a;
    EXPECT_GE(refused[a], 8) << a;
  }
}

TEST(ConvAlgorithms, MakeKernelWithAnUnknownOrDeclinedNameSaysWhy) {
  std::mt19937 rng(3);
  std::unique_ptr<KernelProvider> cpu = make_cpu_backend(2);
  auto message = [&](const ConvCase& cc, const std::string& algo) -> std::string {
    ConvGraph cg(cc, rng);
    try {
      cpu->make_kernel_with(cg.g, cg.g.nodes[0], algo);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      std::string m = e.what();
      EXPECT_NE(m.find("node 'conv' (Conv)"), std::string::npos) << m;
      EXPECT_NE(m.find(algo), std::string::npos) << m;
      return m;
    }
    ADD_FAILURE() << "expected an error for " << algo;
    return {};
  };
  ConvCase strided = make_2d(1, 4, 6, {7, 7}, 1, 2, 1, {0, 0, 0, 0}, 2, true);
  EXPECT_NE(message(strided, "fft").find("no Conv algorithm named 'fft' (it has im2col_gemm, "), std::string::npos);
  // No name: no choice made, the rules' pick.
  {
    ConvGraph cg(strided, rng);
    EXPECT_EQ(algo_of(cpu->make_kernel_with(cg.g, cg.g.nodes[0], "")->describe()), "im2col_gemm");
  }
  EXPECT_NE(
      message(strided, "winograd_f4x4").find("cannot run this node: needs a 3x3 window at stride 1 and dilation 1"),
      std::string::npos);
  EXPECT_NE(message(strided, "gemm_1x1").find("1x1 stride 1 without padding only"), std::string::npos);
  EXPECT_NE(message(strided, "depthwise_direct").find("needs group == channels == filters"), std::string::npos);
  ConvCase grouped = make_2d(1, 4, 6, {7, 7}, 3, 1, 1, {1, 1, 1, 1}, 2, true);
  EXPECT_NE(message(grouped, "winograd_f2x2").find("needs one group"), std::string::npos);
  ConvCase runtime_w = make_2d(1, 4, 6, {7, 7}, 3, 1, 1, {1, 1, 1, 1}, 1, true);
  runtime_w.const_weights = false;
  EXPECT_NE(message(runtime_w, "winograd_f4x4").find("needs constant weights"), std::string::npos);

  // Other ops have no choice: nothing listed, no heuristic, no name accepted.
  Graph g;
  g.source = "test_kernels_conv";
  g.opset = 13;
  int x = g.add_value("x"), y = g.add_value("y");
  g.values[x].dtype = DType::kFloat32;
  g.values[x].shape = {2, 3};
  g.values[x].shape_known = true;
  g.add_node("act", "Relu", {x}, {y});
  g.nodes[0].parsed = std::make_shared<UnaryAttrs>();  // what the Relu schema parses into
  InferContext ctx(g, g.nodes[0]);
  find_schema("Relu")->infer(ctx);
  EXPECT_TRUE(cpu->algorithms(g, g.nodes[0]).empty());
  EXPECT_EQ(cpu->heuristic_algorithm(g, g.nodes[0]), "");
  EXPECT_NE(cpu->make_kernel_with(g, g.nodes[0], ""), nullptr);
  try {
    cpu->make_kernel_with(g, g.nodes[0], "im2col_gemm");
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 'act' (Relu)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("im2col_gemm"), std::string::npos) << e.what();
  }
}

// The rules' pick is what make_kernel runs; nothing in the environment
// changes it (one algorithm everywhere is TuningMode::kFixed).
TEST(ConvAlgorithms, HeuristicIsWhatMakeKernelRuns) {
  std::mt19937 rng(5);
  std::vector<std::pair<ConvCase, std::string>> cases = {
      {make_2d(1, 32, 32, {56, 56}, 3, 1, 1, {1, 1, 1, 1}, 32, true), "depthwise_direct"},
      {make_2d(1, 64, 128, {28, 28}, 1, 1, 1, {0, 0, 0, 0}, 1, true), "gemm_1x1"},
      {make_2d(1, 64, 64, {28, 28}, 3, 1, 1, {1, 1, 1, 1}, 1, true), "winograd_f4x4"},
      {make_2d(1, 64, 64, {14, 14}, 3, 1, 1, {1, 1, 1, 1}, 1, true), "winograd_f2x2"},
      {make_2d(1, 16, 32, {7, 7}, 3, 1, 1, {1, 1, 1, 1}, 1, true), "winograd_f2x2"},
      {make_2d(1, 16, 32, {6, 6}, 3, 1, 1, {1, 1, 1, 1}, 1, true), "im2col_gemm"},  // too few outputs
      {make_2d(1, 8, 64, {28, 28}, 3, 1, 1, {1, 1, 1, 1}, 1, true),                 // too few channels
       cpu::sgemm_default_isa() == SgemmIsa::kAvx512 ? "implicit_gemm" : "im2col_gemm"},
      {make_2d(1, 64, 64, {9, 9}, 3, 2, 1, {1, 1, 1, 1}, 1, true), "im2col_gemm"},
  };
  for (int threads : {1, 2}) {
    std::unique_ptr<KernelProvider> cpu = make_cpu_backend(threads);
    for (const auto& [cc, want] : cases) {
      ConvGraph cg(cc, rng);
      const Node& n = cg.g.nodes[0];
      EXPECT_EQ(cpu->heuristic_algorithm(cg.g, n), want) << cc.str() << ", threads " << threads;
      EXPECT_EQ(algo_of(cpu->make_kernel(cg.g, n)->describe()), want) << cc.str();
    }
  }
}

TEST(ConvAlgorithms, TuningContextNamesCpuIsaVersionsAndMath) {
  std::string ctx = make_cpu_backend(1)->tuning_context();
  std::vector<std::string> fields;
  for (size_t at = 0;;) {
    size_t bar = ctx.find(" | ", at);
    fields.push_back(ctx.substr(at, bar == std::string::npos ? std::string::npos : bar - at));
    if (bar == std::string::npos) break;
    at = bar + 3;
  }
  ASSERT_EQ(fields.size(), 6u) << ctx;
  EXPECT_EQ(fields[0], "cpu");
  EXPECT_FALSE(fields[1].empty());
  // The CPU's family, model and caches where Linux says them: a cache file
  // from another CPU of the same name is not trusted.
  if (std::ifstream("/sys/devices/system/cpu/cpu0/cache/index0/size").good()) {
    EXPECT_NE(fields[1].find(" L2 "), std::string::npos) << fields[1];
  }
  if (std::ifstream("/proc/cpuinfo").good()) {
    EXPECT_NE(fields[1].find("family "), std::string::npos) << fields[1];
  }
  const char* isa = cpu::sgemm_default_isa() == SgemmIsa::kAvx512 ? "avx512f+fma"
                    : cpu::sgemm_default_isa() == SgemmIsa::kAvx2 ? "avx2+fma"
                                                                  : "generic";
  EXPECT_EQ(fields[2], isa);
  EXPECT_EQ(fields[3], "minirt 0.1.0");
  EXPECT_EQ(fields[4].rfind("eigen 3.", 0), 0u) << fields[4];
  EXPECT_EQ(std::count(fields[4].begin(), fields[4].end(), '.'), 2) << fields[4];
  EXPECT_EQ(fields[5], "fp32");
  // A forced lesser SGEMM variant is a different context (different speeds).
  cpu::sgemm_force_isa(SgemmIsa::kGeneric);
  std::string generic = make_cpu_backend(1)->tuning_context();
  cpu::sgemm_reset_isa();
  EXPECT_NE(generic.find("| generic |"), std::string::npos) << generic;
}

}  // namespace
}  // namespace minirt
