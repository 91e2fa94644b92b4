// The elementwise, softmax and LRN kernels built on kernels/cpu/vmath.h, for
// every variant the CPU can run (AVX-512, AVX2, the portable scalar forms),
// forced in turn (test_vmath.cpp has the math itself):
// - the Unary ops against the std:: functions in double at every size and
//   thread count;
// - the Binary (every broadcast shape its inner loop has, with NaNs,
//   infinities and signed zeros in the data) and Variadic kernels against
//   naive loops: bit-identical for Add, Sub, Mul, Div, Max, Min, PRelu and
//   the integer ops; Pow by special exponents against std::pow in double;
// - Softmax, LogSoftmax, LRN and ReduceLogSumExp against loops in double.
#include "op_runner.h"
#include "vmath_test_util.h"
#include "kernels/cpu/sgemm.h"
#include "runtime/thread_pool.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace minirt {
namespace {

using cpu::SgemmIsa;
using namespace ::minirt::testing;
using namespace ::minirt::vmath_test;

TEST(VmathKernels, UnaryOpsMatchStdAtEverySizeAndThreadCount) {
  struct U {
    const char* op;
    std::function<double(float)> ref;
    double ulps;
    float lo, hi;
  };
  const U ops[] = {
      {"Exp", [](float v) { return std::exp(static_cast<double>(v)); }, 1, -100, 100},
      {"Log", [](float v) { return std::log(static_cast<double>(v)); }, 1, 0, 1000},
      {"Erf", [](float v) { return std::erf(static_cast<double>(v)); }, 2, -5, 5},
      {"Sigmoid", [](float v) { return 1.0 / (1.0 + std::exp(-static_cast<double>(v))); }, 3, -30, 30},
      {"Tanh", [](float v) { return std::tanh(static_cast<double>(v)); }, 3, -12, 12},
      {"Sqrt", [](float v) { return std::sqrt(v); }, 0, -1, 1000},
      {"Abs", [](float v) { return std::fabs(v); }, 0, -10, 10},
      {"Neg", [](float v) { return -v; }, 0, -10, 10},
      {"Reciprocal", [](float v) { return 1.0f / v; }, 0, -10, 10},
      {"Floor", [](float v) { return std::floor(v); }, 0, -1e8f, 1e8f},
      {"Ceil", [](float v) { return std::ceil(v); }, 0, -1e8f, 1e8f},
      {"Sign", [](float v) { return v > 0 ? 1.0f : (v < 0 ? -1.0f : v); }, 0, -3, 3},
      {"Relu", [](float v) { return v > 0 ? v : 0.0f; }, 0, -3, 3},
      {"Sin", [](float v) { return std::sin(v); }, 0, -10, 10},
  };
  std::mt19937 rng(7);
  for (SgemmIsa isa : supported_isas()) {
    ForceIsa force(isa);
    for (const U& u : ops)
      for (int64_t n : {1, 7, 16, 33, 1000, 8193, 50000, 100003})
        for (int threads : {1, 3}) {
          std::vector<float> x = random_values(n, rng, u.lo, u.hi, true);
          OpCase oc{u.op, 13, {}, {float_tensor({n}, x)}};
          Shape shape;
          std::string what = oc.str() + " on " + cpu::sgemm_isa_name(isa) + ", threads " + std::to_string(threads);
          std::vector<float> y = run_op(oc, threads, &shape, what);
          int bad = 0;
          for (int64_t i = 0; i < n; ++i) {
            double want = u.ref(x[i]);
            bool ok = u.ulps == 0 ? same_float(y[i], static_cast<float>(want)) : ulp_error(y[i], want) <= u.ulps;
            if (!ok && bad++ < 3) ADD_FAILURE() << what << ": x = " << x[i] << " gives " << y[i] << ", want " << want;
          }
        }
  }
}

// Naive NumPy broadcasting: y[i] from a and b at the coordinates of i.
int64_t bcast_offset(const Shape& y, const Shape& s, int64_t i) {
  int64_t off = 0, stride = 1;
  for (size_t d = y.size(); d-- > 0;) {
    int64_t coord = i % y[d];
    i /= y[d];
    size_t k = d + s.size() - y.size();
    if (d + s.size() >= y.size()) {
      if (s[k] != 1) off += coord * stride;
      stride *= s[k];
    }
  }
  return off;
}

Shape bcast_shape(const Shape& a, const Shape& b) {
  Shape y(std::max(a.size(), b.size()), 1);
  for (size_t d = 0; d < y.size(); ++d) {
    int64_t da = d + a.size() >= y.size() ? a[d + a.size() - y.size()] : 1;
    int64_t db = d + b.size() >= y.size() ? b[d + b.size() - y.size()] : 1;
    y[d] = std::max(da, db);
  }
  return y;
}

float binary_ref(const std::string& op, float a, float b) {
  if (op == "Add") return a + b;
  if (op == "Sub") return a - b;
  if (op == "Mul") return a * b;
  if (op == "Div") return a / b;
  if (op == "Max") return a > b ? a : b;
  if (op == "Min") return a < b ? a : b;
  return a < 0 ? a * b : a;  // PRelu
}

// The broadcast shapes of the inner loop: same shape, a scalar on either
// side, per channel (both orders), along the last axis, both operands
// broadcast, rank 5, and runs of every tail length.
const std::vector<std::pair<Shape, Shape>> kPairs = {{{2, 3, 4, 5}, {2, 3, 4, 5}},
                                                     {{2, 3, 4, 5}, {}},
                                                     {{}, {2, 3, 4, 5}},
                                                     {{2, 16, 9, 9}, {1, 16, 1, 1}},
                                                     {{1, 16, 1, 1}, {2, 16, 9, 9}},
                                                     {{3, 7, 37}, {37}},
                                                     {{3, 1, 5}, {1, 4, 1}},
                                                     {{2, 3, 1, 4, 5}, {3, 2, 1, 1}},
                                                     {{1, 40000}, {1}},
                                                     {{3, 1, 9000}, {3, 5, 1}},
                                                     {{33}, {33}},
                                                     {{8, 64, 17, 17}, {64, 1, 1}}};

TEST(VmathKernels, BinaryOpsBitIdenticalToNaiveLoops) {
  std::mt19937 rng(9);
  for (SgemmIsa isa : supported_isas()) {
    ForceIsa force(isa);
    for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"})
      for (const auto& [sa, sb] : kPairs)
        for (int threads : {1, 3}) {
          Shape ys = bcast_shape(sa, sb);
          std::vector<float> a = random_values(shape_numel(sa), rng, -4, 4, true);
          std::vector<float> b = random_values(shape_numel(sb), rng, -4, 4, true);
          OpCase oc{op,
                    std::string(op) == "Max" || std::string(op) == "Min" ? 13 : 14,
                    {},
                    {float_tensor(sa, a), float_tensor(sb, b)}};
          Shape shape;
          std::string what = oc.str() + " " + cpu::sgemm_isa_name(isa) + " t" + std::to_string(threads);
          std::vector<float> y = run_op(oc, threads, &shape, what);
          ASSERT_EQ(shape, ys) << what;
          int bad = 0;
          for (int64_t i = 0; i < shape_numel(ys); ++i) {
            float want = binary_ref(op, a[bcast_offset(ys, sa, i)], b[bcast_offset(ys, sb, i)]);
            if (!same_float(y[i], want) && bad++ < 3)
              ADD_FAILURE() << what << ": element " << i << " " << y[i] << " vs " << want;
          }
        }
  }
}

TEST(VmathKernels, PReluAndVariadicBitIdenticalToNaiveLoops) {
  std::mt19937 rng(10);
  for (SgemmIsa isa : supported_isas()) {
    ForceIsa force(isa);
    for (const auto& [sx, ss] : std::vector<std::pair<Shape, Shape>>{
             {{2, 16, 9, 9}, {16, 1, 1}}, {{2, 3, 4, 5}, {5}}, {{2, 3, 4, 5}, {}}, {{70000}, {70000}}})
      for (int threads : {1, 3}) {
        std::vector<float> x = random_values(shape_numel(sx), rng, -4, 4, true);
        std::vector<float> s = random_values(shape_numel(ss), rng, -1, 1, false);
        OpCase oc{"PRelu", 16, {}, {float_tensor(sx, x), float_tensor(ss, s)}};
        Shape shape;
        std::vector<float> y = run_op(oc, threads, &shape);
        for (int64_t i = 0; i < shape_numel(sx); ++i)
          ASSERT_TRUE(same_float(y[i], binary_ref("PRelu", x[i], s[bcast_offset(sx, ss, i)]))) << oc.str() << " " << i;
      }
    for (const char* op : {"Max", "Min", "Sum", "Mean"})
      for (int threads : {1, 3}) {
        Shape s0{4, 16, 33}, s1{16, 1}, s2{};
        std::vector<float> a = random_values(shape_numel(s0), rng, -4, 4, true);
        std::vector<float> b = random_values(shape_numel(s1), rng, -4, 4, true);
        std::vector<float> c = random_values(1, rng, -4, 4, false);
        OpCase oc{op, 13, {}, {float_tensor(s0, a), float_tensor(s1, b), float_tensor(s2, c)}};
        Shape shape;
        std::vector<float> y = run_op(oc, threads, &shape);
        std::string o(op);
        for (int64_t i = 0; i < shape_numel(s0); ++i) {
          float u = a[i], v = b[bcast_offset(s0, s1, i)], w = c[0];
          float want = o == "Max"   ? binary_ref("Max", binary_ref("Max", u, v), w)
                       : o == "Min" ? binary_ref("Min", binary_ref("Min", u, v), w)
                                    : (u + v) + w;
          if (o == "Mean") want /= 3.0f;
          ASSERT_TRUE(same_float(y[i], want)) << oc.str() << " " << cpu::sgemm_isa_name(isa) << " element " << i;
        }
      }
  }
}

TEST(VmathKernels, PowBySpecialAndOtherExponents) {
  std::mt19937 rng(11);
  for (SgemmIsa isa : supported_isas()) {
    ForceIsa force(isa);
    for (float e : {2.0f, 3.0f, 0.5f, -1.0f, 0.0f, 1.0f, 2.5f, -0.5f})
      for (int64_t n : {5, 20000}) {
        std::vector<float> x = random_values(n, rng, -50, 50, true);
        x[1] = -0.0f;
        x[2] = -kInf;
        OpCase oc{"Pow", 15, {}, {float_tensor({n}, x), float_tensor({}, {e})}};
        Shape shape;
        std::vector<float> y = run_op(oc, 3, &shape);
        for (int64_t i = 0; i < n; ++i) {
          double want = std::pow(static_cast<double>(x[i]), static_cast<double>(e));
          // The special exponents are correctly rounded; the others are std::pow's (0.52 ULP).
          bool special = e == 2.0f || e == 3.0f || e == 0.5f || e == -1.0f || e == 0.0f || e == 1.0f;
          ASSERT_LE(ulp_error(y[i], want), special ? 0.5001 : 0.53)
              << "Pow(" << x[i] << ", " << e << ") " << cpu::sgemm_isa_name(isa);
          if (want == 0) {
            ASSERT_EQ(std::signbit(y[i]), std::signbit(want)) << "Pow(" << x[i] << ", " << e << ")";
          }
        }
      }
  }
}

// Integer ops keep the scalar loops and their exact rules (division by zero
// and MIN / -1 give 0 and MIN rather than trapping).
TEST(VmathKernels, IntegerBinaryOpsExact) {
  Shape sa{3, 4, 5}, sb{4, 1};
  Tensor a = Tensor::zeros(DType::kInt64, sa), b = Tensor::zeros(DType::kInt64, sb);
  std::mt19937 rng(12);
  for (int64_t i = 0; i < a.numel(); ++i) a.data<int64_t>()[i] = static_cast<int64_t>(rng() % 2001) - 1000;
  a.data<int64_t>()[0] = std::numeric_limits<int64_t>::min();  // against 0
  const int64_t bv[] = {0, -1, 7, -3};
  std::copy(std::begin(bv), std::end(bv), b.data<int64_t>());
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    // MIN / -1 (the others would overflow, which the kernel need not define).
    a.data<int64_t>()[5] = std::string(op) == "Div" ? std::numeric_limits<int64_t>::min() : 5;
    Graph gg;
    gg.opset = 14;
    int va = gg.add_value("a"), vb = gg.add_value("b"), vy = gg.add_value("y");
    for (auto [v, t] : {std::pair{va, &a}, std::pair{vb, &b}}) {
      gg.values[v].dtype = DType::kInt64;
      gg.values[v].shape = t->shape();
      gg.values[v].shape_known = true;
    }
    gg.add_node("n", op, {va, vb}, {vy});
    Node& n = gg.nodes[0];
    ParseContext pc(gg, n, gg.opset);
    n.parsed = find_schema(op)->parse(pc);
    InferContext ic(gg, n);
    find_schema(op)->infer(ic);
    ThreadPool pool(3);
    std::unique_ptr<KernelProvider> cpu = make_cpu_backend(3);
    std::unique_ptr<Kernel> k = cpu->make_kernel(gg, n);
    Tensor y = Tensor::zeros(DType::kInt64, sa);
    const void* ins[2] = {a.raw(), b.raw()};
    void* outs[1] = {y.raw()};
    Tensor ws = Tensor::zeros(DType::kUInt8, {static_cast<int64_t>(k->workspace_bytes()) + 1});
    k->run(KernelArgs{ins, outs, ws.raw(), &pool});
    for (int64_t i = 0; i < y.numel(); ++i) {
      int64_t u = a.data<int64_t>()[i], v = bv[(i / 5) % 4];
      uint64_t uu = static_cast<uint64_t>(u), uv = static_cast<uint64_t>(v);
      int64_t want = std::string(op) == "Add"   ? static_cast<int64_t>(uu + uv)
                     : std::string(op) == "Sub" ? static_cast<int64_t>(uu - uv)
                     : std::string(op) == "Mul" ? static_cast<int64_t>(uu * uv)
                     : v == 0                   ? 0
                     : v == -1                  ? static_cast<int64_t>(0 - uu)
                                                : u / v;
      ASSERT_EQ(y.data<int64_t>()[i], want) << op << " " << u << ", " << v;
    }
  }
}

// ---- Softmax, LogSoftmax, LRN, ReduceLogSumExp on every variant

std::vector<double> softmax_ref(const std::vector<float>& x, int64_t outer, int64_t len, int64_t inner, bool log) {
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      auto at = [&](int64_t k) { return static_cast<size_t>((o * len + k) * inner + j); };
      double m = -INFINITY, sum = 0;
      for (int64_t k = 0; k < len; ++k) m = std::max(m, static_cast<double>(x[at(k)]));
      for (int64_t k = 0; k < len; ++k) sum += std::exp(x[at(k)] - m);
      for (int64_t k = 0; k < len; ++k) y[at(k)] = log ? (x[at(k)] - m) - std::log(sum) : std::exp(x[at(k)] - m) / sum;
    }
  return y;
}

TEST(VmathKernels, SoftmaxLrnLogSumExpOnEveryVariant) {
  std::mt19937 rng(13);
  for (SgemmIsa isa : supported_isas()) {
    ForceIsa force(isa);
    SCOPED_TRACE(cpu::sgemm_isa_name(isa));
    for (bool log : {false, true})
      for (auto [shape, axis] :
           std::vector<std::pair<Shape, int64_t>>{{{3, 1001}, 1}, {{2, 37, 70}, 1}, {{4, 5, 200}, 2}, {{2, 3, 5}, 0}})
        for (int threads : {1, 3}) {
          std::vector<float> x = random_values(shape_numel(shape), rng, -30, 30, false);
          x[0] = -kInf;
          OpCase oc{log ? "LogSoftmax" : "Softmax", 13, {{"axis", int_attr(axis)}}, {float_tensor(shape, x)}};
          Shape ys;
          std::vector<float> y = run_op(oc, threads, &ys);
          int64_t outer = 1, inner = 1;
          for (int64_t d = 0; d < axis; ++d) outer *= shape[static_cast<size_t>(d)];
          for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
          expect_close(y, softmax_ref(x, outer, shape[static_cast<size_t>(axis)], inner, log), oc.str(), 1e-5);
        }
    for (int threads : {1, 3}) {
      Shape xs{2, 7, 9, 11};
      std::vector<float> x = random_values(shape_numel(xs), rng, -3, 3, false);
      OpCase oc{
          "LRN",
          13,
          {{"size", int_attr(3)}, {"alpha", float_attr(0.5f)}, {"beta", float_attr(0.75f)}, {"bias", float_attr(2.0f)}},
          {float_tensor(xs, x)}};
      Shape ys;
      std::vector<float> y = run_op(oc, threads, &ys);
      std::vector<double> want(x.size());
      int64_t plane = 9 * 11;
      for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i) {
        int64_t c = (i / plane) % 7, base = i - c * plane;
        double sq = 0;
        for (int64_t k = std::max<int64_t>(0, c - 1); k <= std::min<int64_t>(6, c + 1); ++k) {
          double v = x[static_cast<size_t>(base + k * plane)];
          sq += v * v;
        }
        want[static_cast<size_t>(i)] = x[static_cast<size_t>(i)] / std::pow(2.0 + 0.5 / 3 * sq, 0.75);
      }
      expect_close(y, want, oc.str(), 1e-5);
    }
    for (const auto& [shape, axes_list] :
         std::vector<std::pair<Shape, std::vector<int64_t>>>{{{3, 50000}, {1}}, {{40, 300}, {0}}, {{100000}, {0}}})
      for (int threads : {1, 3}) {
        const Shape& xs = shape;  // (structured bindings are not captured by clang 14's lambdas)
        const std::vector<int64_t>& axes = axes_list;
        std::vector<float> x = random_values(shape_numel(xs), rng, -20, 60, false);
        OpCase oc{"ReduceLogSumExp", 13, {{"axes", ints_attr(axes)}, {"keepdims", int_attr(0)}}, {float_tensor(xs, x)}};
        Shape ys;
        std::vector<float> y = run_op(oc, threads, &ys);
        int64_t rows = xs.size() == 1 ? 1 : axes[0] == 1 ? xs[0] : xs[1];
        int64_t len = xs.size() == 1 ? xs[0] : axes[0] == 1 ? xs[1] : xs[0];
        std::vector<double> want(static_cast<size_t>(rows));
        for (int64_t r = 0; r < rows; ++r) {
          auto at = [&](int64_t k) {
            return static_cast<size_t>(xs.size() == 1 ? k : axes[0] == 1 ? r * len + k : k * rows + r);
          };
          double m = -INFINITY, sum = 0;
          for (int64_t k = 0; k < len; ++k) m = std::max(m, static_cast<double>(x[at(k)]));
          for (int64_t k = 0; k < len; ++k) sum += std::exp(x[at(k)] - m);
          want[static_cast<size_t>(r)] = m + std::log(sum);
        }
        expect_close(y, want, oc.str(), 1e-6);
      }
  }
}

}  // namespace
}  // namespace minirt
