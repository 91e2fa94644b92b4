// The pooling, Resize and Concat kernels of the channel-blocked layout
// (kernels/cpu/nchwc_ops.h) against the plain kernels, and the plain pooling
// kernels against a per-element reference written here from the ONNX rules.
//
//   plain:   x            -> backend kernel           -> y
//   blocked: x -> blocked -> make_nchwc_data_kernel   -> plain again -> y'
//
// Each case is a one-node graph (attributes parsed, shapes inferred as a plan
// would); both kernels run twice, with guard values after every buffer, at 1
// and 3 threads, for b = 16 with the AVX-512 kernels and b = 8 with the AVX2
// ones (and b = 8 under AVX-512, a combination the kernels also accept),
// each where this CPU has them. The blocked input's padding lanes hold a
// finite non-zero value, which must not reach a real lane; the blocked
// output's padding lanes must be finite.
//
// Max, nearest and Concat must match exactly; averages and linear blends
// within 1e-6 relative (the same sums, perhaps in another order). The
// per-element reference: max is the largest non-NaN value in the window, the
// lowest float when there is none (as onnxruntime); an average divides by the
// count of window positions inside the input, or inside the pads with
// count_include_pad; both compared at 1e-5.
#include "op_runner.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/nchwc.h"
#include "kernels/cpu/nchwc_ops.h"
#include "kernels/cpu/sgemm.h"
#include "runtime/op_registry.h"
#include "runtime/thread_pool.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>

namespace minirt {
namespace {

using namespace ::minirt::testing;
using cpu::SgemmIsa;

constexpr float kPadLane = 7.25f;  // what the blocked inputs' padding lanes hold

// Forces the kernels' ISA for a scope.
struct IsaScope {
  explicit IsaScope(SgemmIsa isa) { cpu::sgemm_force_isa(isa); }
  ~IsaScope() { cpu::sgemm_reset_isa(); }
};

struct Variant {
  int b;
  SgemmIsa isa;
};

// The (block, ISA) pairs this CPU can run.
std::vector<Variant> variants() {
  std::vector<Variant> out;
  if (cpu::sgemm_isa_supported(SgemmIsa::kAvx512)) out.push_back({16, SgemmIsa::kAvx512});
  if (cpu::sgemm_isa_supported(SgemmIsa::kAvx2)) out.push_back({8, SgemmIsa::kAvx2});
  if (cpu::sgemm_isa_supported(SgemmIsa::kAvx512)) out.push_back({8, SgemmIsa::kAvx512});
  return out;
}

std::string isa_str(SgemmIsa isa) { return cpu::sgemm_isa_name(isa); }

// A one-node graph: every input a constant value, attributes parsed,
// the output's shape inferred.
struct OneNode {
  Graph g;
  explicit OneNode(const OpCase& c) {
    g.source = "test_kernels_pool_nchwc";
    g.opset = c.opset;
    std::vector<int> ins;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      if (c.inputs[i].empty()) {
        ins.push_back(-1);
        continue;
      }
      int v = g.add_value("in" + std::to_string(i));
      g.values[v].dtype = c.inputs[i].dtype();
      g.values[v].shape = c.inputs[i].shape();
      g.values[v].shape_known = true;
      g.values[v].constant = std::make_shared<Tensor>(c.inputs[i].clone());
      ins.push_back(v);
    }
    int y = g.add_value("y");
    g.add_node("node", c.op, ins, {y});
    Node& n = g.nodes[0];
    n.attrs = c.attrs;
    const OpSchema* s = find_schema(c.op);
    ParseContext pc(g, n, g.opset);
    n.parsed = s->parse ? s->parse(pc) : std::make_shared<OpAttrs>();
    InferContext ic(g, n);
    s->infer(ic);
  }
  const Node& node() const { return g.nodes[0]; }
  const Shape& out_shape() const { return g.values[g.nodes[0].outputs[0]].shape; }
  // Input i is a 4-D activation (blocked in the blocked run).
  bool activation(size_t i) const {
    int v = node().inputs[i];
    return v >= 0 && g.values[v].shape.size() == 4 && g.values[v].dtype == DType::kFloat32 &&
           (i == 0 || node().op == "Concat");
  }
};

int64_t blocked_floats(const Shape& s, int b) { return s[0] * cpu::nchwc_padded(s[1], b) * s[2] * s[3]; }

// Runs `k` twice on the inputs with guards after the output and workspace;
// returns the output (count floats).
std::vector<float> run_kernel(Kernel& k, const std::vector<const void*>& ins, int64_t count, ThreadPool& pool,
                              const std::string& what) {
  int64_t ws_floats = static_cast<int64_t>((k.workspace_bytes() + 3) / 4);
  std::vector<float> ws(static_cast<size_t>(ws_floats + kGuard)), out(static_cast<size_t>(count + kGuard));
  void* outs[1] = {out.data()};
  KernelArgs args{ins.data(), outs, ws_floats ? ws.data() : nullptr, &pool};
  for (int rep = 0; rep < 2; ++rep) {
    poison(out.data(), count + kGuard);
    poison(ws.data(), ws_floats + kGuard);
    k.run(args);
    for (int64_t i = 0; i < kGuard; ++i) {
      EXPECT_TRUE(is_poison(out[static_cast<size_t>(count + i)])) << "output guard overwritten: " << what;
      EXPECT_TRUE(is_poison(ws[static_cast<size_t>(ws_floats + i)])) << "workspace guard overwritten: " << what;
    }
  }
  out.resize(static_cast<size_t>(count));
  return out;
}

// The plain kernel's output.
std::vector<float> run_plain(const OneNode& one, int threads, const std::string& what) {
  std::unique_ptr<KernelProvider> cpu = make_cpu_backend(threads);
  std::unique_ptr<Kernel> k = cpu->make_kernel(one.g, one.node());
  std::vector<const void*> ins;
  for (int v : one.node().inputs) ins.push_back(v >= 0 ? one.g.values[v].constant->raw() : nullptr);
  ThreadPool pool(threads);
  return run_kernel(*k, ins, shape_numel(one.out_shape()), pool, what);
}

// The blocked kernel's output, back in the plain layout.
std::vector<float> run_blocked(const OneNode& one, int b, int threads, const std::string& what) {
  std::string why;
  EXPECT_TRUE(cpu::nchwc_data_supports(one.g, one.node(), b, &why)) << what << ": " << why;
  std::unique_ptr<Kernel> k = cpu::make_nchwc_data_kernel(one.g, one.node(), threads, b);
  ThreadPool pool(threads);
  std::vector<std::vector<float>> blocked;
  std::vector<const void*> ins;
  for (size_t i = 0; i < one.node().inputs.size(); ++i) {
    int v = one.node().inputs[i];
    if (!one.activation(i)) {
      ins.push_back(v >= 0 ? one.g.values[v].constant->raw() : nullptr);
      continue;
    }
    const Shape& s = one.g.values[v].shape;
    std::vector<float> xb(static_cast<size_t>(blocked_floats(s, b)));
    cpu::nchwc_reorder_to_blocked(one.g.values[v].constant->data<float>(), xb.data(), s[0], s[1], s[2] * s[3], b, pool);
    // Padding lanes: finite, not zero.
    int64_t cb = cpu::nchwc_blocks(s[1], b), hw = s[2] * s[3];
    for (int64_t img = 0; img < s[0]; ++img)
      for (int64_t p = 0; p < hw; ++p)
        for (int64_t l = s[1] - (cb - 1) * b; l < b; ++l)
          xb[static_cast<size_t>(((img * cb + cb - 1) * hw + p) * b + l)] = kPadLane;
    blocked.push_back(std::move(xb));
    ins.push_back(blocked.back().data());
  }
  const Shape& ys = one.out_shape();
  std::vector<float> yb = run_kernel(*k, ins, blocked_floats(ys, b), pool, what);
  int64_t cb = cpu::nchwc_blocks(ys[1], b), hw = ys[2] * ys[3];
  for (int64_t img = 0; img < ys[0]; ++img)
    for (int64_t p = 0; p < hw; ++p)
      for (int64_t l = ys[1] - (cb - 1) * b; l < b; ++l) {
        float v = yb[static_cast<size_t>(((img * cb + cb - 1) * hw + p) * b + l)];
        if (!std::isfinite(v)) {
          ADD_FAILURE() << what << ": padding lane " << l << " of pixel " << p << " is " << v;
          return {};
        }
      }
  std::vector<float> y(static_cast<size_t>(shape_numel(ys)));
  cpu::nchwc_reorder_to_plain(yb.data(), y.data(), ys[0], ys[1], hw, b, pool);
  return y;
}

// Same values (NaN matching NaN); rtol 0: exactly.
void expect_same(const std::vector<float>& got, const std::vector<float>& want, const std::string& what,
                 double rtol = 0) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    float g = got[i], w = want[i];
    bool ok = (std::isnan(g) && std::isnan(w)) || g == w ||
              (rtol > 0 && std::isfinite(w) && std::fabs(g - w) <= rtol * std::max(1.0f, std::fabs(w)));
    if (!ok && bad++ < 3) ADD_FAILURE() << what << ": element " << i << " is " << g << ", expected " << w;
  }
  if (bad) ADD_FAILURE() << bad << " of " << got.size() << " elements differ: " << what;
}

Tensor random_input(const Shape& s, std::mt19937& rng, bool specials) {
  Tensor t = Tensor::zeros(DType::kFloat32, s);
  std::uniform_real_distribution<float> u(-4, 4);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = u(rng);
  if (specials) {  // a few NaN, infinities and signed zeros
    std::uniform_int_distribution<int64_t> at(0, t.numel() - 1);
    const float sp[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                        -std::numeric_limits<float>::infinity(), -0.0f};
    for (int64_t i = 0; i < std::max<int64_t>(1, t.numel() / 40); ++i) p[at(rng)] = sp[i % 4];
  }
  return t;
}

// Plain vs blocked over every variant and 1 and 3 threads.
void check_blocked(const OpCase& c, double rtol) {
  for (Variant v : variants()) {
    IsaScope isa(v.isa);
    OneNode one(c);
    for (int threads : {1, 3}) {
      std::string what =
          c.str() + ", b " + std::to_string(v.b) + " " + isa_str(v.isa) + ", threads " + std::to_string(threads);
      std::vector<float> plain = run_plain(one, threads, what);
      std::vector<float> blocked = run_blocked(one, v.b, threads, what);
      expect_same(blocked, plain, what, rtol);
    }
  }
}

// ---- pools

struct PoolSpec {
  Shape in;
  std::vector<int64_t> k, s, pads, d;
  bool ceil = false;
};

// The SPP windows, large and dilated windows (spans doubled from 8 taps for
// pixels of one float, from 16 for blocked pixels), windows of only
// padding, odd sizes, C not a multiple of any block, 1x1 planes.
std::vector<PoolSpec> pool_specs() {
  return {
      {{1, 3, 1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}},
      {{1, 3, 1, 1}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}},
      {{1, 5, 1, 1}, {13, 13}, {1, 1}, {6, 6, 6, 6}, {1, 1}},
      {{2, 19, 7, 9}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}},
      {{2, 19, 7, 9}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}},
      {{2, 19, 7, 9}, {3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, true},
      {{1, 17, 8, 5}, {2, 3}, {1, 2}, {0, 1, 1, 0}, {1, 1}, true},
      {{1, 17, 11, 10}, {3, 3}, {1, 1}, {2, 1, 2, 1}, {2, 2}},
      {{1, 9, 13, 9}, {3, 2}, {2, 1}, {0, 1, 1, 0}, {1, 3}, true},
      {{1, 9, 12, 13}, {5, 4}, {3, 2}, {2, 1, 2, 3}, {1, 1}, true},
      {{1, 20, 13, 13}, {5, 5}, {1, 1}, {2, 2, 2, 2}, {1, 1}},
      {{1, 20, 13, 13}, {9, 9}, {1, 1}, {4, 4, 4, 4}, {1, 1}},
      {{1, 20, 13, 13}, {13, 13}, {1, 1}, {6, 6, 6, 6}, {1, 1}},
      {{1, 7, 26, 26}, {13, 13}, {1, 1}, {6, 6, 6, 6}, {1, 1}},
      {{1, 7, 26, 26}, {9, 9}, {2, 2}, {4, 4, 4, 4}, {1, 1}, true},
      {{1, 3, 17, 19}, {7, 6}, {3, 1}, {3, 2, 1, 5}, {2, 2}},
      {{1, 9, 20, 18}, {17, 16}, {1, 1}, {8, 7, 8, 8}, {1, 1}},  // doubled spans for blocked pixels too
      {{1, 9, 21, 40}, {16, 17}, {2, 2}, {8, 8, 7, 8}, {1, 1}, true},
      {{1, 2, 150, 140}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}},  // a plane of many bands
      // 2x2 and 3x3 max windows run directly on blocked pixels: stride 1,
      // windows mostly or wholly in the padding, a one-column plane.
      {{1, 21, 9, 8}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}},
      {{1, 18, 6, 7}, {2, 2}, {1, 1}, {1, 0, 0, 1}, {1, 1}},
      {{1, 33, 5, 5}, {3, 3}, {3, 3}, {2, 2, 2, 2}, {1, 1}, true},
      {{2, 16, 9, 1}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}},
      {{1, 40, 57, 23}, {3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, true},
      {{1, 2, 150, 140}, {5, 5}, {1, 1}, {2, 2, 2, 2}, {1, 1}},
  };
}

OpCase pool_case(const std::string& op, const PoolSpec& p, const Tensor& x, int cip) {
  OpCase c{op, op == "AveragePool" ? 19 : 13, {}, {x}};
  c.attrs["kernel_shape"] = ints_attr(p.k);
  c.attrs["strides"] = ints_attr(p.s);
  c.attrs["pads"] = ints_attr(p.pads);
  c.attrs["dilations"] = ints_attr(p.d);
  c.attrs["ceil_mode"] = int_attr(p.ceil ? 1 : 0);
  if (cip >= 0) c.attrs["count_include_pad"] = int_attr(cip);
  return c;
}

// The ONNX pooling rules element by element.
std::vector<float> reference_pool(const PoolSpec& p, const Tensor& x, const Shape& ys, bool is_max, bool cip) {
  const float* xp = x.data<float>();
  int64_t h = p.in[2], w = p.in[3];
  std::vector<float> y;
  for (int64_t pl = 0; pl < ys[0] * ys[1]; ++pl)
    for (int64_t oh = 0; oh < ys[2]; ++oh)
      for (int64_t ow = 0; ow < ys[3]; ++ow) {
        float m = std::numeric_limits<float>::lowest();
        double sum = 0;
        int64_t inside = 0, padded = 0;
        for (int64_t i = 0; i < p.k[0]; ++i)
          for (int64_t j = 0; j < p.k[1]; ++j) {
            int64_t ih = oh * p.s[0] - p.pads[0] + i * p.d[0], iw = ow * p.s[1] - p.pads[1] + j * p.d[1];
            if (ih >= -p.pads[0] && ih < h + p.pads[2] && iw >= -p.pads[1] && iw < w + p.pads[3]) ++padded;
            if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
            float v = xp[(pl * h + ih) * w + iw];
            if (v > m) m = v;
            sum += v;
            ++inside;
          }
        int64_t div = cip ? padded : inside;
        y.push_back(is_max ? m : div ? static_cast<float>(sum / static_cast<double>(div)) : 0.0f);
      }
  return y;
}

TEST(NchwcPool, MaxPoolMatchesPlainAndReference) {
  std::mt19937 rng(21);
  for (const PoolSpec& p : pool_specs()) {
    Tensor x = random_input(p.in, rng, true);
    OpCase c = pool_case("MaxPool", p, x, -1);
    check_blocked(c, 0);
    for (SgemmIsa isa : {SgemmIsa::kGeneric, SgemmIsa::kAvx2, SgemmIsa::kAvx512}) {
      if (!cpu::sgemm_isa_supported(isa)) continue;
      IsaScope scope(isa);
      OneNode one(c);
      std::string what = c.str() + " vs reference, " + isa_str(isa);
      expect_same(run_plain(one, 3, what), reference_pool(p, x, one.out_shape(), true, false), what);
    }
  }
}

// The 2x2 and 3x3 max windows take the direct kernel for every block the
// CPU has; other windows and averages the separable engine.
TEST(NchwcPool, SmallMaxWindowsRunDirectly) {
  std::mt19937 rng(24);
  for (Variant v : variants()) {
    IsaScope isa(v.isa);
    for (const PoolSpec& p : pool_specs())
      for (const std::string op : {"MaxPool", "AveragePool"}) {
        OpCase c = pool_case(op, p, random_input(p.in, rng, false), op == "MaxPool" ? -1 : 0);
        OneNode one(c);
        const bool direct = op == "MaxPool" && p.k[0] == p.k[1] && (p.k[0] == 2 || p.k[0] == 3);
        std::unique_ptr<Kernel> k = cpu::make_nchwc_data_kernel(one.g, one.node(), 2, v.b);
        EXPECT_EQ(k->describe(), direct ? "nchwc direct" : "nchwc") << c.str() << ", b " << v.b;
        if (direct) {
          EXPECT_EQ(k->workspace_bytes(), 0u) << c.str();
        }
      }
  }
}

TEST(NchwcPool, AveragePoolMatchesPlainAndReference) {
  std::mt19937 rng(22);
  for (const PoolSpec& p : pool_specs())
    for (int cip : {0, 1}) {
      Tensor x = random_input(p.in, rng, false);
      OpCase c = pool_case("AveragePool", p, x, cip);
      check_blocked(c, 1e-6);
      for (SgemmIsa isa : {SgemmIsa::kGeneric, SgemmIsa::kAvx2, SgemmIsa::kAvx512}) {
        if (!cpu::sgemm_isa_supported(isa)) continue;
        IsaScope scope(isa);
        OneNode one(c);
        std::string what = c.str() + " vs reference, " + isa_str(isa);
        expect_same(run_plain(one, 3, what), reference_pool(p, x, one.out_shape(), false, cip), what, 1e-5);
      }
    }
}

TEST(NchwcPool, GlobalPoolsMatchPlainAndReference) {
  std::mt19937 rng(23);
  for (const Shape& s : std::vector<Shape>{{1, 3, 1, 1}, {2, 19, 7, 9}, {1, 40, 13, 13}, {1, 16, 1, 37}}) {
    for (const char* op : {"GlobalMaxPool", "GlobalAveragePool"}) {
      bool is_max = std::string(op) == "GlobalMaxPool";
      Tensor x = random_input(s, rng, is_max);
      OpCase c{op, 13, {}, {x}};
      check_blocked(c, 1e-6);
      // Reference: max ignores NaN (-inf when none), mean in double.
      std::vector<float> want;
      int64_t hw = s[2] * s[3];
      for (int64_t p = 0; p < s[0] * s[1]; ++p) {
        float m = -std::numeric_limits<float>::infinity();
        double sum = 0;
        for (int64_t i = 0; i < hw; ++i) {
          float v = x.data<float>()[p * hw + i];
          if (v > m) m = v;
          sum += v;
        }
        want.push_back(is_max ? m : static_cast<float>(sum / static_cast<double>(hw)));
      }
      for (SgemmIsa isa : {SgemmIsa::kGeneric, SgemmIsa::kAvx2, SgemmIsa::kAvx512}) {
        if (!cpu::sgemm_isa_supported(isa)) continue;
        IsaScope scope(isa);
        OneNode one(c);
        std::string what = c.str() + " vs reference, " + isa_str(isa);
        expect_same(run_plain(one, 3, what), want, what, 1e-6);
      }
    }
  }
}

// ---- Resize and Upsample

Tensor floats(const std::vector<float>& v) {
  Tensor t = Tensor::zeros(DType::kFloat32, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

TEST(NchwcResize, MatchesPlain) {
  std::mt19937 rng(24);
  struct Mode {
    const char* mode;
    const char* coord;
    const char* nearest;
  };
  const Mode modes[] = {{"nearest", "half_pixel", "round_prefer_floor"},
                        {"nearest", "asymmetric", "floor"},
                        {"nearest", "align_corners", "round_prefer_ceil"},
                        {"nearest", "pytorch_half_pixel", "ceil"},
                        {"nearest", "tf_half_pixel_for_nn", "round_prefer_floor"},
                        {"linear", "half_pixel", ""},
                        {"linear", "pytorch_half_pixel", ""},
                        {"linear", "align_corners", ""},
                        {"linear", "asymmetric", ""}};
  const std::vector<std::vector<float>> scales = {
      {1, 1, 2, 2}, {1, 1, 1.5f, 0.7f}, {1, 1, 0.5f, 0.5f}, {1, 1, 1, 3}, {1, 1, 2.5f, 1}};
  for (const Shape& s : std::vector<Shape>{{1, 19, 5, 7}, {2, 8, 13, 13}, {1, 3, 1, 1}, {1, 33, 26, 26}})
    for (const Mode& m : modes) {
      for (const auto& sc : scales) {
        Tensor x = random_input(s, rng, false);
        OpCase c{"Resize",
                 13,
                 {{"mode", string_attr(m.mode)}, {"coordinate_transformation_mode", string_attr(m.coord)}},
                 {x, Tensor(), floats(sc)}};
        if (*m.nearest) c.attrs["nearest_mode"] = string_attr(m.nearest);
        check_blocked(c, std::string(m.mode) == "linear" ? 1e-6 : 0);
      }
      // By sizes.
      Tensor x = random_input(s, rng, false);
      Tensor sizes = Tensor::zeros(DType::kInt64, {4});
      int64_t want[] = {s[0], s[1], s[2] * 2 + 1, std::max<int64_t>(1, s[3] - 2)};
      std::copy(want, want + 4, sizes.data<int64_t>());
      OpCase c{"Resize",
               13,
               {{"mode", string_attr(m.mode)}, {"coordinate_transformation_mode", string_attr(m.coord)}},
               {x, Tensor(), Tensor(), sizes}};
      check_blocked(c, std::string(m.mode) == "linear" ? 1e-6 : 0);
    }
}

TEST(NchwcResize, UpsampleAndResize10MatchPlain) {
  std::mt19937 rng(25);
  for (const char* mode : {"nearest", "linear"})
    for (const auto& sc : std::vector<std::vector<float>>{{1, 1, 2, 2}, {1, 1, 3, 1.5f}, {1, 1, 0.6f, 0.5f}}) {
      Tensor x = random_input({1, 21, 6, 7}, rng, false);
      double rtol = std::string(mode) == "linear" ? 1e-6 : 0;
      if (sc[2] >= 1) check_blocked(OpCase{"Upsample", 9, {{"mode", string_attr(mode)}}, {x, floats(sc)}}, rtol);
      check_blocked(OpCase{"Resize", 10, {{"mode", string_attr(mode)}}, {x, floats(sc)}}, rtol);
    }
}

// ---- Concat

TEST(NchwcConcat, AnyChannelOffsets) {
  std::mt19937 rng(26);
  // Offsets multiples of 16 (whole blocks for both b), of 8 only, and of neither.
  for (const std::vector<int64_t>& cs :
       std::vector<std::vector<int64_t>>{{16, 16}, {32, 48, 5}, {8, 8, 3}, {3, 5, 17}, {1, 1, 1, 1}, {24, 9}, {7}})
    for (const Shape& hw : std::vector<Shape>{{1, 1}, {5, 7}, {13, 13}}) {
      OpCase c{"Concat", 13, {{"axis", int_attr(1)}}, {}};
      for (int64_t ch : cs) c.inputs.push_back(random_input({2, ch, hw[0], hw[1]}, rng, true));
      check_blocked(c, 0);
    }
}

// ---- what the blocked kernels decline

TEST(NchwcSupports, DeclinesWithReasons) {
  std::mt19937 rng(27);
  Tensor x4 = random_input({1, 8, 4, 4}, rng, false);
  auto declined = [](const OpCase& c, int b) {
    OneNode one(c);
    std::string why;
    bool ok = cpu::nchwc_data_supports(one.g, one.node(), b, &why);
    EXPECT_FALSE(ok) << c.str();
    EXPECT_FALSE(why.empty()) << c.str();
    return why;
  };
  OpCase concat2{"Concat", 13, {{"axis", int_attr(2)}}, {x4, x4}};
  EXPECT_NE(declined(concat2, 16).find("axis"), std::string::npos);
  OpCase resize_c{"Resize", 13, {}, {x4, Tensor(), floats({1, 2, 2, 2})}};
  EXPECT_NE(declined(resize_c, 8).find("channel"), std::string::npos);
  OpCase pool1d{"MaxPool", 13, {{"kernel_shape", ints_attr({3})}}, {random_input({1, 8, 9}, rng, false)}};
  EXPECT_NE(declined(pool1d, 8).find("4-D"), std::string::npos);
  OpCase relu{"Relu", 13, {}, {x4}};
  declined(relu, 8);
  OpCase pool{"MaxPool", 13, {{"kernel_shape", ints_attr({3, 3})}}, {x4}};
  EXPECT_NE(declined(pool, 4).find("8 or 16"), std::string::npos);
  OneNode ok(pool);
  EXPECT_TRUE(cpu::nchwc_data_supports(ok.g, ok.node(), 8, nullptr));
}

}  // namespace
}  // namespace minirt
