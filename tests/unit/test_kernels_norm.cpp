// The CPU norm kernels (BatchNormalization, InstanceNormalization,
// LayerNormalization, Softmax, LogSoftmax, the Reduce ops, LRN) against
// plain reference loops written here in double.
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
#include "op_runner.h"
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

using namespace ::minirt::testing;

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

// ---- InstanceNormalization, LayerNormalization ----

// Normalizes x over groups of elements: `group(i)` names the group of flat
// index i. Biased variance, in double.
template <typename G>
std::vector<double> normalize_groups(const Tensor& x, int64_t groups, G group, double eps,
                                     std::vector<double>* inv_std = nullptr) {
  std::vector<double> sum(static_cast<size_t>(groups)), sq(static_cast<size_t>(groups)), n(static_cast<size_t>(groups));
  const float* p = x.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    sum[group(i)] += p[i];
    n[group(i)] += 1;
  }
  for (int64_t i = 0; i < x.numel(); ++i) {
    double d = p[i] - sum[group(i)] / n[group(i)];
    sq[group(i)] += d * d;
  }
  std::vector<double> y(static_cast<size_t>(x.numel()));
  for (int64_t i = 0; i < x.numel(); ++i) {
    size_t gi = group(i);
    y[i] = (p[i] - sum[gi] / n[gi]) / std::sqrt(sq[gi] / n[gi] + eps);
  }
  if (inv_std)
    for (int64_t k = 0; k < groups; ++k) inv_std->push_back(1.0 / std::sqrt(sq[k] / n[k] + eps));
  return y;
}

TEST(NormInstanceNorm, MatchesReferenceLoop) {
  std::mt19937 rng(11);
  const std::vector<Shape> shapes = {{2, 3, 5, 7}, {1, 4, 9}, {3, 2, 1, 1}, {2, 5, 6, 4, 3}, {1, 16, 33, 33}, {2, 3}};
  for (const Shape& xs : shapes)
    for (float eps : {1e-5f, 0.1f})
      for (int threads : kThreads) {
        int64_t c = xs[1];
        OpCase oc{"InstanceNormalization", 13, {{"epsilon", float_attr(eps)}}, {}};
        oc.inputs = {random_tensor(xs, rng, -3, 4), random_tensor({c}, rng, -2, 2), random_tensor({c}, rng, -1, 1)};
        Shape ys;
        std::vector<float> got = run_op(oc, threads, &ys);
        ASSERT_EQ(ys, xs);
        int64_t plane = shape_numel(xs) / (xs[0] * c);
        std::vector<double> want = normalize_groups(
            oc.inputs[0], xs[0] * c, [&](int64_t i) { return static_cast<size_t>(i / plane); }, eps);
        const float* sc = oc.inputs[1].data<float>();
        const float* b = oc.inputs[2].data<float>();
        for (size_t i = 0; i < want.size(); ++i) {
          int64_t ch = (static_cast<int64_t>(i) / plane) % c;
          want[i] = want[i] * sc[ch] + b[ch];
        }
        expect_close(got, want, oc.str() + ", threads " + std::to_string(threads));
      }
}

TEST(NormLayerNorm, EveryAxisWithBroadcastParameters) {
  std::mt19937 rng(12);
  const std::vector<Shape> shapes = {{7}, {3, 5}, {2, 3, 5}, {2, 3, 4, 5}, {4, 300}};
  for (const Shape& xs : shapes) {
    int64_t r = static_cast<int64_t>(xs.size());
    for (int64_t axis = -r; axis < r; ++axis) {
      int64_t a = axis < 0 ? axis + r : axis;
      Shape norm(xs.begin() + a, xs.end());
      // Scale and B: the whole normalized shape, its last axis only, or the
      // normalized shape with a leading 1.
      std::vector<Shape> params = {norm, {norm.back()}};
      Shape lead = norm;
      lead.insert(lead.begin(), 1);
      if (lead.size() <= xs.size()) params.push_back(lead);
      for (size_t pi = 0; pi < params.size(); ++pi)
        for (bool bias : {false, true}) {
          int threads = kThreads[(pi + bias) % 2];
          const Shape& ps = params[pi];
          OpCase oc{"LayerNormalization", 17, {{"axis", int_attr(axis)}, {"epsilon", float_attr(1e-3f)}}, {}};
          oc.inputs = {random_tensor(xs, rng, -2, 3), random_tensor(ps, rng, 0.5f, 1.5f)};
          if (bias) oc.inputs.push_back(random_tensor(ps, rng, -1, 1));
          Shape ys;
          std::vector<float> got = run_op(oc, threads, &ys);
          ASSERT_EQ(ys, xs) << oc.str();
          int64_t len = shape_numel(norm);
          std::vector<double> want = normalize_groups(
              oc.inputs[0], shape_numel(xs) / len, [&](int64_t i) { return static_cast<size_t>(i / len); }, 1e-3);
          // The parameter element of normalized position j, right-aligned.
          Shape pn = ps;
          while (pn.size() > norm.size()) pn.erase(pn.begin());
          pn.insert(pn.begin(), norm.size() - pn.size(), 1);
          for (size_t i = 0; i < want.size(); ++i) {
            std::vector<int64_t> idx = unravel(static_cast<int64_t>(i) % len, norm);
            for (size_t d = 0; d < idx.size(); ++d)
              if (pn[d] == 1) idx[d] = 0;
            int64_t k = ravel(idx, pn);
            want[i] = want[i] * oc.inputs[1].data<float>()[k] + (bias ? oc.inputs[2].data<float>()[k] : 0.0);
          }
          expect_close(got, want, oc.str() + ", threads " + std::to_string(threads));
        }
    }
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
  shapes.push_back({2, 130, 3});   // a long strided axis
  shapes.push_back({3, 2, 130});   // inner spanning several column blocks
  shapes.push_back({1, 4420, 2});  // many short rows (a detector's scores), split across threads
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

// ---- The Reduce ops ----

enum class Red { kMean, kSum, kMax, kMin, kL1, kL2, kLogSum, kLogSumExp, kProd, kSumSquare };

std::vector<double> reference_reduce(const Tensor& x, Red kind, const std::vector<bool>& reduced, bool keepdims,
                                     Shape* out_shape) {
  const Shape& s = x.shape();
  Shape kept_shape;  // the output shape as if keepdims
  for (size_t d = 0; d < s.size(); ++d) kept_shape.push_back(reduced[d] ? 1 : s[d]);
  *out_shape = {};
  for (size_t d = 0; d < s.size(); ++d)
    if (!reduced[d] || keepdims) out_shape->push_back(kept_shape[d]);
  int64_t outs = shape_numel(kept_shape);
  double init = kind == Red::kMax ? -INFINITY : kind == Red::kMin ? INFINITY : kind == Red::kProd ? 1.0 : 0.0;
  std::vector<double> acc(static_cast<size_t>(outs), init);
  std::vector<int64_t> count(static_cast<size_t>(outs), 0);
  // LogSumExp straight from the definition, log(sum(exp(v))): the inputs
  // here are small enough for exp in double.
  for (int64_t i = 0; i < x.numel(); ++i) {
    std::vector<int64_t> idx = unravel(i, s);
    for (size_t d = 0; d < s.size(); ++d)
      if (reduced[d]) idx[d] = 0;
    size_t o = static_cast<size_t>(ravel(idx, kept_shape));
    double v = x.data<float>()[i];
    switch (kind) {
      case Red::kMax:
        acc[o] = std::max(acc[o], v);
        break;
      case Red::kMin:
        acc[o] = std::min(acc[o], v);
        break;
      case Red::kL1:
        acc[o] += std::fabs(v);
        break;
      case Red::kL2:
      case Red::kSumSquare:
        acc[o] += v * v;
        break;
      case Red::kLogSumExp:
        acc[o] += std::exp(v);
        break;
      case Red::kProd:
        acc[o] *= v;
        break;
      default:
        acc[o] += v;
    }
    ++count[o];
  }
  for (size_t o = 0; o < acc.size(); ++o) {
    if (kind == Red::kMean) acc[o] /= static_cast<double>(count[o]);
    if (kind == Red::kL2) acc[o] = std::sqrt(acc[o]);
    if (kind == Red::kLogSum || kind == Red::kLogSumExp) acc[o] = std::log(acc[o]);
  }
  return acc;
}

// Inputs each op is defined and well conditioned on: LogSum needs positive
// sums, and a product of thousands of values stays in range only near 1.
Tensor reduce_input(Red kind, const Shape& shape, std::mt19937& rng, float lo, float hi) {
  if (kind == Red::kLogSum) return random_tensor(shape, rng, 0.1f, 2.0f);
  if (kind == Red::kProd) return random_tensor(shape, rng, 0.95f, 1.05f);
  return random_tensor(shape, rng, lo, hi);
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

const std::pair<const char*, Red> kReduceOps[] = {{"ReduceMean", Red::kMean},     {"ReduceSum", Red::kSum},
                                                  {"ReduceMax", Red::kMax},       {"ReduceMin", Red::kMin},
                                                  {"ReduceL1", Red::kL1},         {"ReduceL2", Red::kL2},
                                                  {"ReduceLogSum", Red::kLogSum}, {"ReduceLogSumExp", Red::kLogSumExp},
                                                  {"ReduceProd", Red::kProd},     {"ReduceSumSquare", Red::kSumSquare}};

TEST(NormReduce, EverySubsetOfAxes) {
  std::mt19937 rng(4);
  std::vector<Shape> shapes = kShapes;
  shapes.push_back({3, 300, 7});  // kept inner run wider than one column block
  for (const Shape& xs : shapes) {
    int64_t r = static_cast<int64_t>(xs.size());
    for (const auto& [op, kind] : kReduceOps) {
      Tensor x = reduce_input(kind, xs, rng, -5, 5);
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
}

TEST(NormReduce, NoAxesReducesEverything) {
  std::mt19937 rng(5);
  // The large shapes are reduced in parallel pieces.
  for (const Shape& xs : {Shape{7}, Shape{2, 3, 5}, Shape{64, 700}, Shape{3, 50, 401}}) {
    std::vector<bool> all(xs.size(), true);
    for (const auto& [op, kind] : kReduceOps) {
      Tensor x = reduce_input(kind, xs, rng, -1, 2);
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
}

// With no axes and noop_with_empty_axes, each element is reduced on its own:
// a copy for most ops, |x| for L1 and L2, log x for LogSum, x*x for
// SumSquare (as onnxruntime and the ONNX reference do).
TEST(NormReduce, EmptyAxesWithNoopReducesEachElementAlone) {
  std::mt19937 rng(6);
  for (const auto& [op, kind] : kReduceOps) {
    Tensor x = reduce_input(kind, {3, 4, 5}, rng, -1, 1);
    Shape unused;
    std::vector<double> want = reference_reduce(x, kind, std::vector<bool>(3, false), true, &unused);
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
}

TEST(NormReduce, EmptyAxisGivesTheIdentity) {
  Tensor x = Tensor::zeros(DType::kFloat32, {2, 0, 3});
  for (const auto& [op, kind] : kReduceOps) {
    OpCase oc = reduce_case(op, 13, x, true, {1}, 0, -1);
    Shape ys;
    std::vector<float> got = run_op(oc, 1, &ys);
    ASSERT_EQ(ys, (Shape{2, 3})) << oc.str();
    // Sum, L1, L2, SumSquare 0; mean NaN (0/0); max, LogSum, LogSumExp -inf;
    // min +inf; product 1.
    float want = kind == Red::kMean                                                     ? NAN
                 : kind == Red::kMax || kind == Red::kLogSum || kind == Red::kLogSumExp ? -INFINITY
                 : kind == Red::kMin                                                    ? INFINITY
                 : kind == Red::kProd                                                   ? 1.0f
                                                                                        : 0.0f;
    for (float v : got) {
      if (std::isnan(want))
        EXPECT_TRUE(std::isnan(v)) << oc.str();
      else
        EXPECT_EQ(v, want) << oc.str();
    }
  }
}

TEST(NormReduce, LogSumExpOfLargeValuesDoesNotOverflow) {
  // exp(1000) overflows even a double; the shifted sum does not.
  Tensor x = Tensor::zeros(DType::kFloat32, {2, 3});
  const float v[] = {1000, 1000, 999, -INFINITY, -INFINITY, -INFINITY};
  std::copy(v, v + 6, x.data<float>());
  for (int64_t opset : {13, 18}) {
    OpCase oc = reduce_case("ReduceLogSumExp", opset, x, true, {1}, 0, -1);
    Shape ys;
    std::vector<float> got = run_op(oc, 1, &ys);
    ASSERT_EQ(ys, (Shape{2})) << oc.str();
    EXPECT_NEAR(got[0], 1000.0 + std::log(2.0 + std::exp(-1.0)), 1e-3) << oc.str();
    EXPECT_EQ(got[1], -INFINITY) << oc.str();
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
