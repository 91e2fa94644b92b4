// The CPU norm kernels (BatchNormalization, Softmax, LogSoftmax, the Reduce
// ops, LRN) against plain reference loops written here in double.
//
// Each case is a one-node graph whose inputs are constants: the op's schema
// parses the raw attributes at the given opset and infers the output shape,
// then the CPU backend's kernel runs it, with 1 and with several threads.
// Grids cover odd sizes, ranks 1 to 5, every axis (also written negative),
// keepdims on and off, and opset 11 against 13 semantics.
//
// Output and workspace start filled with a NaN pattern and carry guard
// values after their end: a kernel that leaves an output unwritten or writes
// past its buffers fails here.
//
// Tolerance: 1e-5 relative, with an absolute floor of 1e-5 for results of
// magnitude below 1 (where cancellation, e.g. x - mean, leaves no relative
// precision to speak of).
#include "kernels/cpu/cpu_backend.h"
#include "runtime/op_registry.h"
#include "runtime/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <sstream>

namespace minirt {
namespace {

// ---- running one node ----

Attribute int_attr(int64_t v) {
  Attribute a;
  a.kind = Attribute::Kind::kInt;
  a.i = v;
  return a;
}
Attribute float_attr(float v) {
  Attribute a;
  a.kind = Attribute::Kind::kFloat;
  a.f = v;
  return a;
}
Attribute ints_attr(std::vector<int64_t> v) {
  Attribute a;
  a.kind = Attribute::Kind::kInts;
  a.ints = std::move(v);
  return a;
}

struct OpCase {
  std::string op;
  int64_t opset = 13;
  std::map<std::string, Attribute> attrs;
  std::vector<Tensor> inputs;  // an empty Tensor leaves that input out

  std::string str() const {
    std::ostringstream s;
    s << op << "-" << opset << " in";
    for (const auto& t : inputs) s << " " << (t.empty() ? "-" : shape_str(t.shape()));
    for (const auto& [name, a] : attrs) {
      s << " " << name << "=";
      if (a.kind == Attribute::Kind::kInts) s << "[" << shape_str(a.ints) << "]";
      else if (a.kind == Attribute::Kind::kFloat) s << a.f;
      else s << a.i;
    }
    return s.str();
  }
};

constexpr int64_t kGuard = 16;            // floats of guard after each buffer
constexpr uint32_t kPoison = 0x7fc0beef;  // a NaN no kernel produces

bool is_poison(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u == kPoison;
}
void poison(float* p, int64_t n) {
  for (int64_t i = 0; i < n; ++i) std::memcpy(p + i, &kPoison, 4);
}

// Parses, infers and runs the case's node on the CPU backend with `threads`
// threads (twice: a kernel is made once and run many times). Returns the
// output; `shape` receives its inferred shape.
std::vector<float> run_op(const OpCase& c, int threads, Shape* shape) {
  Graph g;
  g.source = "test_kernels_norm";
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
  EXPECT_NE(s, nullptr) << c.op;
  ParseContext pc(g, n, g.opset);
  n.parsed = s->parse ? s->parse(pc) : std::make_shared<OpAttrs>();
  InferContext ic(g, n);
  s->infer(ic);
  *shape = g.values[y].shape;

  ThreadPool pool(threads);
  std::unique_ptr<Backend> cpu = make_cpu_backend(threads);
  std::string why;
  EXPECT_TRUE(cpu->supports(g, n, &why)) << why;
  std::unique_ptr<Kernel> k = cpu->make_kernel(g, n);
  int64_t ws_floats = static_cast<int64_t>((k->workspace_bytes() + 3) / 4);
  Tensor ws = Tensor::zeros(DType::kFloat32, {ws_floats + kGuard});
  int64_t count = shape_numel(*shape);
  Tensor out = Tensor::zeros(DType::kFloat32, {count + kGuard});
  std::vector<const void*> in_ptrs;
  for (int v : n.inputs) in_ptrs.push_back(v >= 0 ? g.values[v].constant->raw() : nullptr);
  void* outs[1] = {out.raw()};
  KernelArgs args{in_ptrs.data(), outs, ws_floats ? ws.raw() : nullptr, &pool};
  float* yp = out.data<float>();
  for (int rep = 0; rep < 2; ++rep) {
    poison(yp, count + kGuard);
    poison(ws.data<float>(), ws_floats + kGuard);
    k->run(args);
    for (int64_t i = 0; i < kGuard; ++i) {
      EXPECT_TRUE(is_poison(yp[count + i])) << "output guard overwritten: " << c.str();
      EXPECT_TRUE(is_poison(ws.data<float>()[ws_floats + i])) << "workspace guard overwritten: " << c.str();
    }
  }
  return std::vector<float>(yp, yp + count);
}

// Compares with the reference; reports the first few differences.
void expect_close(const std::vector<float>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double w = want[i];
    bool ok;
    if (std::isinf(w)) ok = got[i] == w;
    else ok = std::fabs(got[i] - w) <= 1e-5 * std::max(std::fabs(w), 1.0);  // see the tolerance note at the top
    if (!ok && bad++ < 3) ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", expected " << w;
  }
  if (bad) ADD_FAILURE() << bad << " of " << got.size() << " elements wrong: " << what;
}

Tensor random_tensor(const Shape& shape, std::mt19937& rng, float lo, float hi) {
  Tensor t = Tensor::zeros(DType::kFloat32, shape);
  std::uniform_real_distribution<float> u(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

Tensor int64_tensor(const std::vector<int64_t>& v) {
  Tensor t = Tensor::zeros(DType::kInt64, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data<int64_t>());
  return t;
}

std::vector<int64_t> unravel(int64_t i, const Shape& s) {
  std::vector<int64_t> idx(s.size());
  for (size_t d = s.size(); d-- > 0;) {
    idx[d] = i % s[d];
    i /= s[d];
  }
  return idx;
}

int64_t ravel(const std::vector<int64_t>& idx, const Shape& s) {
  int64_t i = 0;
  for (size_t d = 0; d < s.size(); ++d) i = i * s[d] + idx[d];
  return i;
}

const std::vector<Shape> kShapes = {{7}, {3, 5}, {1, 1}, {2, 3, 5}, {2, 3, 4, 5}, {3, 1, 4, 1, 2}};
const int kThreads[] = {1, 4};

// ---- BatchNormalization ----

TEST(NormBatchNorm, MatchesReferenceLoop) {
  std::mt19937 rng(1);
  const std::vector<Shape> shapes = {{2, 3}, {1, 5, 7}, {2, 3, 5, 7}, {3, 4, 1, 3, 5}, {1, 1}, {2, 16, 33, 33}};
  for (const Shape& xs : shapes)
    for (float eps : {1e-5f, 0.1f})
      for (int threads : kThreads) {
        int64_t c = xs[1];
        OpCase oc{"BatchNormalization", 15, {{"epsilon", float_attr(eps)}}, {}};
        oc.inputs = {random_tensor(xs, rng, -3, 3), random_tensor({c}, rng, -2, 2), random_tensor({c}, rng, -1, 1),
                     random_tensor({c}, rng, -1, 1), random_tensor({c}, rng, 0.01f, 3)};
        Shape ys;
        std::vector<float> got = run_op(oc, threads, &ys);
        ASSERT_EQ(ys, xs);
        const float* x = oc.inputs[0].data<float>();
        const float* sc = oc.inputs[1].data<float>();
        const float* b = oc.inputs[2].data<float>();
        const float* mean = oc.inputs[3].data<float>();
        const float* var = oc.inputs[4].data<float>();
        std::vector<double> want(got.size());
        for (int64_t i = 0; i < shape_numel(xs); ++i) {
          int64_t ch = unravel(i, xs)[1];
          double inv_std = 1.0 / std::sqrt(static_cast<double>(var[ch]) + eps);
          want[i] = sc[ch] * (x[i] - static_cast<double>(mean[ch])) * inv_std + b[ch];
        }
        expect_close(got, want, oc.str() + ", threads " + std::to_string(threads));
      }
}

// ---- Softmax, LogSoftmax ----

// Softmax over the elements that share every coordinate outside the softmax
// axes: the one axis (opset 13) or the axes [axis, rank) (before 13).
std::vector<double> reference_softmax(const Tensor& x, int64_t axis, bool coerce_2d, bool log) {
  const Shape& s = x.shape();
  std::map<std::vector<int64_t>, std::vector<int64_t>> groups;
  for (int64_t i = 0; i < x.numel(); ++i) {
    std::vector<int64_t> key = unravel(i, s);
    for (size_t d = 0; d < s.size(); ++d)
      if (static_cast<int64_t>(d) == axis || (coerce_2d && static_cast<int64_t>(d) > axis)) key[d] = 0;
    groups[key].push_back(i);
  }
  std::vector<double> y(static_cast<size_t>(x.numel()));
  const float* xp = x.data<float>();
  for (const auto& [key, members] : groups) {
    double m = -INFINITY;
    for (int64_t i : members) m = std::max(m, static_cast<double>(xp[i]));
    double sum = 0;
    for (int64_t i : members) sum += std::exp(xp[i] - m);
    for (int64_t i : members) y[i] = log ? xp[i] - m - std::log(sum) : std::exp(xp[i] - m) / sum;
  }
  return y;
}

void softmax_grid(const char* op) {
  std::mt19937 rng(2);
  std::vector<Shape> shapes = kShapes;
  shapes.push_back({2, 130, 3});  // a long strided axis
  shapes.push_back({3, 2, 130});  // inner spanning several column blocks
  bool log = std::string(op) == "LogSoftmax";
  for (const Shape& xs : shapes) {
    int64_t r = static_cast<int64_t>(xs.size());
    for (int64_t opset : {11, 13})
      for (int64_t axis = -r - 1; axis < r; ++axis)  // -r-1: the attribute left out
        for (int threads : kThreads) {
          bool has_axis = axis >= -r;
          int64_t resolved = has_axis ? (axis < 0 ? axis + r : axis) : (opset < 13 ? 1 : r - 1);
          if (resolved >= r) continue;  // default axis 1 of a rank-1 input
          OpCase oc{op, opset, {}, {random_tensor(xs, rng, -4, 4)}};
          if (has_axis) oc.attrs["axis"] = int_attr(axis);
          Shape ys;
          std::vector<float> got = run_op(oc, threads, &ys);
          ASSERT_EQ(ys, xs);
          expect_close(got, reference_softmax(oc.inputs[0], resolved, opset < 13, log),
                       oc.str() + ", threads " + std::to_string(threads));
        }
  }
}

TEST(NormSoftmax, EveryAxisBothOpsets) { softmax_grid("Softmax"); }
TEST(NormLogSoftmax, EveryAxisBothOpsets) { softmax_grid("LogSoftmax"); }

TEST(NormSoftmax, LargeValuesStayFinite) {
  std::mt19937 rng(3);
  for (const char* op : {"Softmax", "LogSoftmax"})
    for (int64_t axis : {0, 1}) {
      OpCase oc{op, 13, {{"axis", int_attr(axis)}}, {random_tensor({5, 9}, rng, 1000, 3000)}};
      Shape ys;
      std::vector<float> got = run_op(oc, 2, &ys);
      for (float v : got) EXPECT_TRUE(std::isfinite(v)) << oc.str();
      expect_close(got, reference_softmax(oc.inputs[0], axis, false, std::string(op) == "LogSoftmax"), oc.str());
    }
}

// ---- ReduceMean, ReduceSum, ReduceMax, ReduceMin ----

enum class Red { kMean, kSum, kMax, kMin };

std::vector<double> reference_reduce(const Tensor& x, Red kind, const std::vector<bool>& reduced, bool keepdims,
                                     Shape* out_shape) {
  const Shape& s = x.shape();
  Shape kept_shape;  // the output shape as if keepdims
  for (size_t d = 0; d < s.size(); ++d) kept_shape.push_back(reduced[d] ? 1 : s[d]);
  *out_shape = {};
  for (size_t d = 0; d < s.size(); ++d)
    if (!reduced[d] || keepdims) out_shape->push_back(kept_shape[d]);
  int64_t outs = shape_numel(kept_shape);
  double init = kind == Red::kMax ? -INFINITY : kind == Red::kMin ? INFINITY : 0.0;
  std::vector<double> acc(static_cast<size_t>(outs), init);
  std::vector<int64_t> count(static_cast<size_t>(outs), 0);
  for (int64_t i = 0; i < x.numel(); ++i) {
    std::vector<int64_t> idx = unravel(i, s);
    for (size_t d = 0; d < s.size(); ++d)
      if (reduced[d]) idx[d] = 0;
    size_t o = static_cast<size_t>(ravel(idx, kept_shape));
    double v = x.data<float>()[i];
    if (kind == Red::kMax) acc[o] = std::max(acc[o], v);
    else if (kind == Red::kMin) acc[o] = std::min(acc[o], v);
    else acc[o] += v;
    ++count[o];
  }
  if (kind == Red::kMean)
    for (size_t o = 0; o < acc.size(); ++o) acc[o] /= static_cast<double>(count[o]);
  return acc;
}

// The op at `opset`, axes as an attribute or as an input as that opset has
// it; `axes` nullopt-like when `given` is false (the attribute left out).
OpCase reduce_case(const char* op, int64_t opset, const Tensor& x, bool given, const std::vector<int64_t>& axes,
                   int keepdims, int noop) {
  OpCase oc{op, opset, {}, {x}};
  if (keepdims >= 0) oc.attrs["keepdims"] = int_attr(keepdims);
  if (noop >= 0) oc.attrs["noop_with_empty_axes"] = int_attr(noop);
  bool as_input = opset >= 18 || (opset >= 13 && std::string(op) == "ReduceSum");
  if (as_input) {
    if (given) oc.inputs.push_back(int64_tensor(axes));
  } else if (given) {
    oc.attrs["axes"] = ints_attr(axes);
  }
  return oc;
}

const std::pair<const char*, Red> kReduceOps[] = {
    {"ReduceMean", Red::kMean}, {"ReduceSum", Red::kSum}, {"ReduceMax", Red::kMax}, {"ReduceMin", Red::kMin}};

TEST(NormReduce, EverySubsetOfAxes) {
  std::mt19937 rng(4);
  std::vector<Shape> shapes = kShapes;
  shapes.push_back({3, 300, 7});  // kept inner run wider than one column block
  for (const Shape& xs : shapes) {
    int64_t r = static_cast<int64_t>(xs.size());
    Tensor x = random_tensor(xs, rng, -5, 5);
    for (const auto& [op, kind] : kReduceOps)
      for (int64_t opset : {13, 18})
        for (int64_t mask = 1; mask < (int64_t{1} << r); ++mask)
          for (int keepdims : {0, 1}) {
            std::vector<int64_t> axes;
            std::vector<bool> reduced(xs.size());
            for (int64_t d = 0; d < r; ++d)
              if ((mask >> d) & 1) {
                reduced[d] = true;
                axes.push_back((mask + d) % 2 ? d - r : d);  // some written negative
              }
            std::reverse(axes.begin(), axes.end());  // any order is allowed
            OpCase oc = reduce_case(op, opset, x, true, axes, keepdims, -1);
            Shape want_shape;
            std::vector<double> want = reference_reduce(x, kind, reduced, keepdims != 0, &want_shape);
            int threads = kThreads[mask % 2];
            Shape ys;
            std::vector<float> got = run_op(oc, threads, &ys);
            ASSERT_EQ(ys, want_shape) << oc.str();
            expect_close(got, want, oc.str() + ", threads " + std::to_string(threads));
          }
  }
}

TEST(NormReduce, NoAxesReducesEverything) {
  std::mt19937 rng(5);
  // The large shapes are reduced in parallel pieces.
  for (const Shape& xs : {Shape{7}, Shape{2, 3, 5}, Shape{64, 700}, Shape{3, 50, 401}}) {
    Tensor x = random_tensor(xs, rng, -1, 2);
    std::vector<bool> all(xs.size(), true);
    for (const auto& [op, kind] : kReduceOps)
      for (int64_t opset : {11, 18})
        for (int keepdims : {-1, 0})
          for (int threads : kThreads) {
            OpCase oc = reduce_case(op, opset, x, false, {}, keepdims, -1);
            Shape want_shape;
            std::vector<double> want = reference_reduce(x, kind, all, keepdims != 0, &want_shape);
            Shape ys;
            std::vector<float> got = run_op(oc, threads, &ys);
            ASSERT_EQ(ys, want_shape) << oc.str();
            expect_close(got, want, oc.str() + ", threads " + std::to_string(threads));
          }
  }
}

TEST(NormReduce, EmptyAxesWithNoopIsACopy) {
  std::mt19937 rng(6);
  Tensor x = random_tensor({3, 4, 5}, rng, -1, 1);
  std::vector<double> want(x.data<float>(), x.data<float>() + x.numel());
  for (const auto& [op, kind] : kReduceOps)
    for (bool empty_input : {false, true}) {
      // ReduceSum takes axes as an input from opset 13, the others from 18.
      int64_t opset = std::string(op) == "ReduceSum" ? 13 : 18;
      OpCase oc = reduce_case(op, opset, x, empty_input, {}, 1, 1);
      Shape ys;
      std::vector<float> got = run_op(oc, 2, &ys);
      ASSERT_EQ(ys, x.shape()) << oc.str();
      expect_close(got, want, oc.str());
    }
}

TEST(NormReduce, EmptyAxisGivesTheIdentity) {
  Tensor x = Tensor::zeros(DType::kFloat32, {2, 0, 3});
  for (const auto& [op, kind] : kReduceOps) {
    OpCase oc = reduce_case(op, 13, x, true, {1}, 0, -1);
    Shape ys;
    std::vector<float> got = run_op(oc, 1, &ys);
    ASSERT_EQ(ys, (Shape{2, 3})) << oc.str();
    // Sum 0, mean NaN (0/0), max -inf, min +inf.
    float want = kind == Red::kSum    ? 0.0f
                 : kind == Red::kMean ? std::numeric_limits<float>::quiet_NaN()
                 : kind == Red::kMax  ? -INFINITY
                                      : INFINITY;
    for (float v : got) {
      if (std::isnan(want)) EXPECT_TRUE(std::isnan(v)) << oc.str();
      else EXPECT_EQ(v, want) << oc.str();
    }
  }
}

// ---- LRN ----

TEST(NormLrn, MatchesReferenceLoop) {
  std::mt19937 rng(7);
  const std::vector<Shape> shapes = {{2, 5, 3, 4}, {1, 7, 5}, {1, 3}, {2, 6, 2, 3, 2}, {1, 16, 40, 40}};
  for (const Shape& xs : shapes)
    for (int64_t size : {1, 2, 3, 4, 5, 9})
      for (int threads : kThreads) {
        float alpha = size % 2 ? 1e-4f : 0.02f, beta = size % 2 ? 0.75f : 0.5f, bias = size % 2 ? 1.0f : 2.0f;
        OpCase oc{"LRN", 13, {{"size", int_attr(size)}}, {random_tensor(xs, rng, -3, 3)}};
        if (size % 2 == 0) {  // otherwise the defaults
          oc.attrs["alpha"] = float_attr(alpha);
          oc.attrs["beta"] = float_attr(beta);
          oc.attrs["bias"] = float_attr(bias);
        }
        Shape ys;
        std::vector<float> got = run_op(oc, threads, &ys);
        ASSERT_EQ(ys, xs);
        const float* x = oc.inputs[0].data<float>();
        int64_t c_n = xs[1];
        std::vector<double> want(got.size());
        for (int64_t i = 0; i < shape_numel(xs); ++i) {
          std::vector<int64_t> idx = unravel(i, xs);
          int64_t c = idx[1];
          int64_t lo = c - (size - 1) / 2, hi = c + size / 2;  // floor and ceil of (size-1)/2
          double sq = 0;
          for (int64_t k = std::max<int64_t>(lo, 0); k <= std::min(hi, c_n - 1); ++k) {
            idx[1] = k;
            double v = x[ravel(idx, xs)];
            sq += v * v;
          }
          want[i] = x[i] / std::pow(bias + alpha / size * sq, static_cast<double>(beta));
        }
        expect_close(got, want, oc.str() + ", threads " + std::to_string(threads));
      }
}

}  // namespace
}  // namespace minirt
