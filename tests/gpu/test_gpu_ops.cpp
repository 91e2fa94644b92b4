// Every GPU op against the CPU kernels, over grids of shapes and attributes:
// each case is a one-node model (weights as initializers, data as inputs so
// nothing folds) run by the CPU backend and by the CUDA backend, with the
// tolerance stated per op (fp32 math; TF32 is off). Skipped, with the gate's
// or the module loader's reason, where no GPU is usable.
//
// Tolerances: data movement, max pooling and nearest resize are exact;
// the module's elementwise math may differ by a few ulps (device
// expf/tanhf/erff against the host's): atol 1e-6 + rtol 1e-5; reductions
// (average pooling, softmax, batch norm, linear resize) sum in another
// order: atol 1e-5 + rtol 1e-5; cuDNN's activations (Sigmoid, Tanh, Elu)
// and LRN may use the GPU's fast approximations of exp, tanh and pow: atol
// 2e-4 + rtol 1e-3; convolutions and matrix products accumulate K products
// in another order and cuDNN may pick Winograd or FFT: atol 2e-4 + rtol
// 2e-3 on inputs in [-1, 1] (|y| is then at most about K). Identity and
// Dropout are not here: the planner removes them before placement. Cast is
// exact, compared bit for bit. The values live in one table,
// tools/gpu_tolerance.h, which minirt-conformance --device cuda --reference
// cpu applies to the op cases (tests/op_cases/).
#include "gpu_test_util.h"
#include "tools/gpu_tolerance.h"

#include <cmath>

namespace minirt::gputest {
namespace {

// The families of tools/gpu_tolerance.h (shared with minirt-conformance --device cuda).
constexpr Tol tol(const tools::GpuTolerance& t) { return Tol{t.atol, t.rtol}; }
constexpr Tol kExact = tol(tools::kGpuExact);
constexpr Tol kUlps = tol(tools::kGpuUlps);
constexpr Tol kReduce = tol(tools::kGpuReduce);
constexpr Tol kLibrary = tol(tools::kGpuLibrary);
constexpr Tol kProducts = tol(tools::kGpuProducts);

std::string dims(const Shape& s) { return shape_str(s); }

// ---- Conv ----

struct ConvSpec {
  Shape x;    // N, C, spatial...
  int64_t m;  // output channels
  Shape k;    // kernel per spatial axis
  std::vector<int64_t> strides, pads, dilations;
  int64_t group = 1;
  bool bias = true;
};

void conv_case(const ConvSpec& s, uint64_t seed, const char* act = nullptr) {
  std::string name = "Conv x" + dims(s.x) + " m" + std::to_string(s.m) + " k" + dims(s.k) + " g" +
                     std::to_string(s.group) + (act ? std::string(" +") + act : "");
  OpCase c(name);
  Shape w = {s.m, s.x[1] / s.group};
  w.insert(w.end(), s.k.begin(), s.k.end());
  c.m.input("x", DType::kFloat32, s.x);
  c.m.initializer("w", random_tensor(w, seed + 1));
  std::vector<std::string> ins = {"x", "w"};
  if (s.bias) {
    c.m.initializer("b", random_tensor({s.m}, seed + 2));
    ins.push_back("b");
  }
  auto node = c.m.node("Conv", ins, {act ? "c" : "y"}, "conv");
  node.i("group", s.group);
  auto set = [&](const char* key, const std::vector<int64_t>& v) {
    if (v.empty()) return;
    auto* a = c.m.proto().mutable_graph()->mutable_node(0)->add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  };
  set("strides", s.strides);
  set("pads", s.pads);
  set("dilations", s.dilations);
  if (act) {
    if (std::string(act) == "Clip") {
      c.m.initializer("lo", Tensor::zeros(DType::kFloat32, {}));
      Tensor hi = Tensor::zeros(DType::kFloat32, {});
      *hi.data<float>() = 0.5f;
      c.m.initializer("hi", hi);
      c.m.node("Clip", {"c", "lo", "hi"}, {"y"}, "act");
    } else {
      c.m.node(act, {"c"}, {"y"}, "act");
    }
    c.optimize = true;  // fused into the Conv
  }
  c.m.output("y");
  c.feed("x", random_tensor(s.x, seed));
  check_case(c, kProducts);
}

TEST(GpuOps, Conv2D) {
  MINIRT_CASES_SKIP_WITHOUT_GPU();
  uint64_t seed = 100;
  for (Shape x : {Shape{1, 3, 9, 9}, Shape{2, 8, 12, 10}})
    for (int64_t k : {1, 3, 5})
      for (int64_t stride : {1, 2})
        for (bool pad : {false, true}) {
          int64_t p = pad ? k / 2 : 0;
          conv_case({x, 16, {k, k}, {stride, stride}, {p, p, p, p}, {}, 1, true}, seed++);
        }
  // Dilations, no bias, rectangular kernels.
  conv_case({{1, 4, 11, 11}, 6, {3, 3}, {1, 1}, {2, 2, 2, 2}, {2, 2}, 1, false}, seed++);
  conv_case({{2, 3, 10, 7}, 5, {3, 1}, {2, 1}, {1, 0, 1, 0}, {1, 1}, 1, true}, seed++);
}

TEST(GpuOps, ConvGroupsAndDepthwise) {
  MINIRT_CASES_SKIP_WITHOUT_GPU();
  conv_case({{1, 8, 10, 10}, 8, {3, 3}, {1, 1}, {1, 1, 1, 1}, {}, 8, true}, 200);    // depthwise
  conv_case({{2, 16, 9, 9}, 16, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, 16, false}, 201);  // depthwise, stride 2
  conv_case({{1, 8, 8, 8}, 12, {3, 3}, {1, 1}, {1, 1, 1, 1}, {}, 4, true}, 202);     // 4 groups
  conv_case({{1, 8, 8, 8}, 16, {1, 1}, {1, 1}, {}, {}, 2, true}, 203);
}

TEST(GpuOps, ConvAsymmetricPadding) {
  MINIRT_CASES_SKIP_WITHOUT_GPU();
  conv_case({{1, 3, 8, 8}, 4, {3, 3}, {2, 2}, {0, 0, 1, 1}, {}, 1, true}, 300);  // SAME_UPPER-like
  conv_case({{2, 4, 7, 9}, 6, {3, 3}, {1, 1}, {1, 2, 0, 1}, {}, 1, true}, 301);
  conv_case({{1, 4, 6, 6}, 4, {2, 2}, {1, 1}, {1, 0, 0, 1}, {}, 2, false}, 302);
}

// 1-D only: the loader refuses 3-D windows for every backend
// (runtime/ops/conv_ops.cpp), so the GPU claims none (CudaSupport tests).
TEST(GpuOps, Conv1D) {
  MINIRT_CASES_SKIP_WITHOUT_GPU();
  conv_case({{2, 4, 17}, 6, {3}, {1}, {1, 1}, {}, 1, true}, 400);
  conv_case({{1, 3, 20}, 5, {5}, {2}, {2, 1}, {2}, 1, true}, 401);  // asymmetric, dilated
}

TEST(GpuOps, ConvFusedActivations) {
  MINIRT_CASES_SKIP_WITHOUT_GPU();
  // Bias + ReLU go through cudnnConvolutionBiasActivationForward; the others after the convolution.
  conv_case({{2, 8, 12, 12}, 16, {3, 3}, {1, 1}, {1, 1, 1, 1}, {}, 1, true}, 500, "Relu");
  conv_case({{1, 8, 12, 12}, 16, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, 1, false}, 501, "Relu");
  conv_case({{1, 8, 12, 12}, 8, {3, 3}, {1, 1}, {1, 1, 1, 1}, {}, 8, true}, 502, "Clip");
  conv_case({{1, 4, 9, 9}, 6, {3, 3}, {1, 1}, {0, 0, 1, 1}, {}, 1, true}, 503, "Sigmoid");
  conv_case({{1, 4, 9, 9}, 6, {1, 1}, {1, 1}, {}, {}, 1, true}, 504, "LeakyRelu");
}

// ---- Pooling ----

struct PoolSpec {
  Shape x;
  std::vector<int64_t> k, strides, pads, dilations;
  bool ceil = false, include_pad = false;
};

void pool_case(const char* op, const PoolSpec& s, uint64_t seed) {
  OpCase c(std::string(op) + " x" + dims(s.x) + " k" + dims(Shape(s.k)) + (s.ceil ? " ceil" : "") +
           (s.include_pad ? " include_pad" : ""));
  c.m.input("x", DType::kFloat32, s.x);
  c.m.node(op, {"x"}, {"y"}, "pool");
  auto* n = c.m.proto().mutable_graph()->mutable_node(0);
  auto ints = [&](const char* key, const std::vector<int64_t>& v) {
    if (v.empty()) return;
    auto* a = n->add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  };
  auto one = [&](const char* key, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  };
  ints("kernel_shape", s.k);
  ints("strides", s.strides);
  ints("pads", s.pads);
  ints("dilations", s.dilations);
  if (s.ceil) one("ceil_mode", 1);
  if (s.include_pad) one("count_include_pad", 1);
  c.m.output("y");
  c.feed("x", random_tensor(s.x, seed));
  check_case(c, std::string(op) == "MaxPool" ? kExact : kReduce);
}

TEST(GpuOps, Pooling) {
  MINIRT_CASES_SKIP_WITHOUT_GPU();
  uint64_t seed = 600;
  for (const char* op : {"MaxPool", "AveragePool"}) {
    for (Shape x : {Shape{1, 3, 8, 8}, Shape{2, 5, 11, 9}}) {
      pool_case(op, {x, {2, 2}, {2, 2}, {}, {}}, seed++);                         // cuDNN
      pool_case(op, {x, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}}, seed++);               // cuDNN, padded
      pool_case(op, {x, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, false, true}, seed++);  // count_include_pad
      pool_case(op, {x, {3, 3}, {2, 2}, {0, 0, 1, 1}, {}}, seed++);               // asymmetric: own kernel
      pool_case(op, {x, {3, 3}, {2, 2}, {}, {}, true}, seed++);                   // ceil_mode: own kernel
      pool_case(op, {x, {3, 3}, {2, 2}, {1, 0, 1, 0}, {}, true, true}, seed++);
    }
    pool_case(op, {{2, 3, 15}, {3}, {2}, {1, 1}, {}}, seed++);  // 1-D (3-D windows are refused at load)
  }
  pool_case("MaxPool", {{1, 3, 12, 12}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {2, 2}}, seed++);  // dilated
}

TEST(GpuOps, GlobalPooling) {
  MINIRT_CASES_SKIP_WITHOUT_GPU();
  uint64_t seed = 700;
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"})
    // Planes of 1 and 4 elements (a thread each), 6 to 4096 (2 to 32 lanes: 6, 9, 25, 49, 60, 196,
    // 4096), more (a block each); plane counts that do not fill the last block.
    for (Shape x : {Shape{1, 3, 7, 7}, Shape{4, 64, 14, 14}, Shape{2, 5, 9}, Shape{1, 2, 3, 4, 5}, Shape{2, 2048, 1, 1},
                    Shape{3, 5, 2, 2}, Shape{2, 300, 7, 7}, Shape{1, 3, 64, 64}, Shape{1, 4, 224, 224}, Shape{2, 3, 6},
                    Shape{1, 4, 5, 5}}) {
      OpCase c(std::string(op) + " " + dims(x));
      c.m.input("x", DType::kFloat32, x);
      c.m.node(op, {"x"}, {"y"});
      c.m.output("y");
      c.feed("x", random_tensor(x, seed++));
      check_case(c, std::string(op) == "GlobalMaxPool" ? kExact : kReduce);
    }
  // A plane all -inf has max -inf (the kernel once started from the lowest
  // float); one -inf among finite values changes nothing.
  OpCase c("GlobalMaxPool of -inf planes");
  c.m.input("x", DType::kFloat32, {1, 2, 3, 3});
  c.m.node("GlobalMaxPool", {"x"}, {"y"});
  c.m.output("y");
  Tensor x = random_tensor({1, 2, 3, 3}, seed++);
  for (int i = 0; i < 9; ++i) x.data<float>()[i] = -INFINITY;
  x.data<float>()[12] = -INFINITY;
  c.feed("x", x);
  check_case(c, kExact);
}

// ---- Normalizations, Softmax ----

TEST(GpuOps, SoftmaxAndLogSoftmax) {
  MINIRT_CASES_SKIP_WITHOUT_GPU();
  uint64_t seed = 800;
  for (const char* op : {"Softmax", "LogSoftmax"})
    for (int64_t opset : {11, 13})
      for (Shape x : {Shape{2, 10}, Shape{3, 4, 5}, Shape{2, 3, 4, 6}})
        for (int64_t axis : {-1, 1}) {
          OpCase c(
              std::string(op) + " opset " + std::to_string(opset) + " " + dims(x) + " axis " + std::to_string(axis),
              opset);
          c.m.input("x", DType::kFloat32, x);
          c.m.node(op, {"x"}, {"y"}).i("axis", axis);
          c.m.output("y");
          c.feed("x", random_tensor(x, seed++, -4.0f, 4.0f));
          check_case(c, kReduce);
        }
}

TEST(GpuOps, Lrn) {
  MINIRT_CASES_SKIP_WITHOUT_GPU();
  uint64_t seed = 900;
  for (int64_t size : {1, 2, 3, 4, 5})  // even sizes: cuDNN's window leans forward as ONNX's does
    for (Shape x : {Shape{1, 8, 5, 5}, Shape{2, 16, 7, 3}}) {
      OpCase c("LRN size " + std::to_string(size) + " " + dims(x));
      c.m.input("x", DType::kFloat32, x);
      c.m.node("LRN", {"x"}, {"y"}).i("size", size).f("alpha", 1e-3f).f("beta", 0.75f).f("bias", 2.0f);
      c.m.output("y");
      c.feed("x", random_tensor(x, seed++, -3.0f, 3.0f));
      check_case(c, kLibrary);
    }
}

TEST(GpuOps, BatchNormalization) {
  MINIRT_CASES_SKIP_WITHOUT_GPU();
  uint64_t seed = 1000;
  for (Shape x : {Shape{2, 6, 5, 4}, Shape{3, 6}, Shape{2, 6, 7}, Shape{1, 6, 2, 3, 4}}) {
    OpCase c("BatchNormalization " + dims(x));
    c.m.input("x", DType::kFloat32, x);
    c.m.initializer("s", random_tensor({6}, seed + 1, 0.5f, 1.5f));
    c.m.initializer("b", random_tensor({6}, seed + 2));
    c.m.initializer("mean", random_tensor({6}, seed + 3));
    c.m.initializer("var", random_tensor({6}, seed + 4, 0.5f, 2.0f));
    c.m.node("BatchNormalization", {"x", "s", "b", "mean", "var"}, {"y"}).f("epsilon", 1e-3f);
    c.m.output("y");
    c.feed("x", random_tensor(x, seed));
    check_case(c, kReduce);
    seed += 10;
  }
}

// ---- Elementwise ----

TEST(GpuOps, Activations) {
  MINIRT_CASES_SKIP_WITHOUT_GPU();
  // Every activation op of the op table (runtime/ops/op_table.h) but Clip
  // (below), its attributes away from their defaults, within its row's
  // tolerance family.
  uint64_t seed = 1100;
  for (const ActInfo& a : kActInfo) {
    if (!a.op || a.kind == ActKind::kClip) continue;
    const int opset = a.versions[0] > 13 ? a.versions[0] : 13;  // the op exists there
    for (Shape x : {Shape{7}, Shape{2, 3, 33, 17}}) {
      std::string op = a.op;
      OpCase c(op + " " + dims(x), opset);
      c.m.input("x", DType::kFloat32, x);
      auto n = c.m.node(a.op, {"x"}, {"y"});
      if (a.alpha.attr) n.f(a.alpha.attr, a.alpha.value * 1.5f);
      if (a.beta.attr) n.f(a.beta.attr, a.beta.value * 0.8f);
      c.m.output("y");
      c.feed("x", random_tensor(x, seed++, -5.0f, 5.0f));
      check_case(c, a.tol == GpuTolFamily::kLibrary ? kLibrary : kUlps);
    }
  }
  // Clip: cuDNN's clipped ReLU when min is 0, the module's kernel otherwise.
  for (float lo : {0.0f, -0.5f}) {
    OpCase c("Clip min " + std::to_string(lo));
    Tensor tlo = Tensor::zeros(DType::kFloat32, {}), thi = Tensor::zeros(DType::kFloat32, {});
    *tlo.data<float>() = lo;
    *thi.data<float>() = 6.0f;
    c.m.input("x", DType::kFloat32, {2, 3, 8, 8});
    c.m.initializer("lo", tlo);
    c.m.initializer("hi", thi);
    c.m.node("Clip", {"x", "lo", "hi"}, {"y"});
    c.m.output("y");
    // With NaN and infinities: Clip keeps a NaN (max(lo, x) then min(hi, .)
    // on the CPU), so cuDNN's clipped ReLU must propagate it.
    Tensor x = random_tensor({2, 3, 8, 8}, seed++, -10.0f, 10.0f);
    x.data<float>()[3] = std::nanf("");
    x.data<float>()[17] = INFINITY;
    x.data<float>()[40] = -INFINITY;
    c.feed("x", x);
    check_case(c, kExact);
  }
}

TEST(GpuOps, UnaryMath) {
  MINIRT_CASES_SKIP_WITHOUT_GPU();
  uint64_t seed = 1200;
  for (const char* op :
       {"Exp", "Log", "Sqrt", "Reciprocal", "Floor", "Ceil", "Erf", "Sin", "Cos", "Sign", "Neg", "Abs"}) {
    bool positive = std::string(op) == "Log" || std::string(op) == "Sqrt" || std::string(op) == "Reciprocal";
    OpCase c(op);
    c.m.input("x", DType::kFloat32, {3, 5, 7});
    c.m.node(op, {"x"}, {"y"});
    c.m.output("y");
    c.feed("x", random_tensor({3, 5, 7}, seed++, positive ? 0.1f : -3.0f, 3.0f));
    check_case(c, kUlps);
  }
}

TEST(GpuOps, BroadcastArithmetic) {
  MINIRT_CASES_SKIP_WITHOUT_GPU();
  const std::pair<Shape, Shape> shapes[] = {
      {{2, 3, 4, 5}, {2, 3, 4, 5}}, {{2, 3, 4, 5}, {5}}, {{2, 3, 4, 5}, {3, 1, 1}},
      {{1, 3, 1, 5}, {2, 1, 4, 1}}, {{4, 5}, {}},        {{1}, {3, 2}}};
  uint64_t seed = 1300;
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow"})
    for (const auto& [a, b] : shapes) {
      bool pow = std::string(op) == "Pow";
      OpCase c(std::string(op) + " " + dims(a) + " with " + dims(b));
      c.m.input("a", DType::kFloat32, a);
      c.m.input("b", DType::kFloat32, b);
      c.m.node(op, {"a", "b"}, {"y"});
      c.m.output("y");
      c.feed("a", random_tensor(a, seed++, pow ? 0.1f : -2.0f, 2.0f));
      c.feed("b", random_tensor(b, seed++, std::string(op) == "Div" ? 0.5f : -2.0f, 2.0f));
      check_case(c, kUlps);
    }
  {
    OpCase c("PRelu with per-channel slope");
    c.m.input("x", DType::kFloat32, {2, 4, 3, 3});
    c.m.initializer("s", random_tensor({4, 1, 1}, 1390, 0.0f, 0.5f));
    c.m.node("PRelu", {"x", "s"}, {"y"});
    c.m.output("y");
    c.feed("x", random_tensor({2, 4, 3, 3}, 1391));
    check_case(c, kExact);
  }
  for (const char* op : {"Sum", "Mean", "Max", "Min"}) {
    OpCase c(std::string(op) + " of three");
    c.m.input("a", DType::kFloat32, {2, 3, 4});
    c.m.input("b", DType::kFloat32, {3, 1});
    c.m.input("c", DType::kFloat32, {4});
    c.m.node(op, {"a", "b", "c"}, {"y"});
    c.m.output("y");
    c.feed("a", random_tensor({2, 3, 4}, seed++));
    c.feed("b", random_tensor({3, 1}, seed++));
    c.feed("c", random_tensor({4}, seed++));
    check_case(c, kUlps);
  }
}

// ---- Gemm, MatMul ----

TEST(GpuOps, Gemm) {
  MINIRT_CASES_SKIP_WITHOUT_GPU();
  uint64_t seed = 1400;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (int cshape = 0; cshape < 5; ++cshape) {
        int64_t m = 7, n = 13, k = 29;
        Shape c_shapes[] = {{}, {n}, {m, 1}, {m, n}, {1}};
        OpCase c("Gemm transA " + std::to_string(ta) + " transB " + std::to_string(tb) + " C " +
                 (cshape ? dims(c_shapes[cshape]) : std::string("none")));
        Shape a = ta ? Shape{k, m} : Shape{m, k};
        Shape b = tb ? Shape{n, k} : Shape{k, n};
        c.m.input("a", DType::kFloat32, a);
        c.m.initializer("b", random_tensor(b, seed++));
        std::vector<std::string> ins = {"a", "b"};
        if (cshape) {
          c.m.initializer("c", random_tensor(c_shapes[cshape], seed++));
          ins.push_back("c");
        }
        c.m.node("Gemm", ins, {"y"}).i("transA", ta).i("transB", tb).f("alpha", 0.7f).f("beta", 1.3f);
        c.m.output("y");
        c.feed("a", random_tensor(a, seed++));
        check_case(c, kProducts);
      }
  {
    OpCase c("Gemm + Relu (fused)");
    c.m.input("a", DType::kFloat32, {4, 64});
    c.m.initializer("b", random_tensor({10, 64}, 1490));
    c.m.initializer("c", random_tensor({10}, 1491));
    c.m.node("Gemm", {"a", "b", "c"}, {"g"}).i("transB", 1);
    c.m.node("Relu", {"g"}, {"y"});
    c.m.output("y");
    c.feed("a", random_tensor({4, 64}, 1492));
    c.optimize = true;
    check_case(c, kProducts);
  }
}

TEST(GpuOps, MatMul) {
  MINIRT_CASES_SKIP_WITHOUT_GPU();
  const std::pair<Shape, Shape> shapes[] = {
      {{5, 7}, {7, 3}},          {{7}, {7, 3}},          {{5, 7}, {7}},
      {{4, 5, 7}, {4, 7, 3}},    {{2, 4, 5, 7}, {7, 3}}, {{5, 7}, {4, 7, 3}},
      {{2, 1, 5, 7}, {3, 7, 6}}, {{3, 5, 7}, {1, 7, 2}}, {{1, 64, 96}, {96, 128}}};
  uint64_t seed = 1500;
  for (const auto& [a, b] : shapes) {
    OpCase c("MatMul " + dims(a) + " x " + dims(b));
    c.m.input("a", DType::kFloat32, a);
    c.m.input("b", DType::kFloat32, b);
    c.m.node("MatMul", {"a", "b"}, {"y"});
    c.m.output("y");
    c.feed("a", random_tensor(a, seed++));
    c.feed("b", random_tensor(b, seed++));
    check_case(c, kProducts);
  }
}

// ---- Data movement ----

TEST(GpuOps, ConcatAndSplit) {
  MINIRT_CASES_SKIP_WITHOUT_GPU();
  uint64_t seed = 1600;
  for (int64_t axis : {0, 1, 3, -1}) {
    Shape a = {2, 3, 4, 5}, b = a;
    int64_t ax = axis < 0 ? axis + 4 : axis;
    b[ax] = 2;
    OpCase c("Concat axis " + std::to_string(axis));
    c.m.input("a", DType::kFloat32, a);
    c.m.input("b", DType::kFloat32, b);
    c.m.input("c", DType::kFloat32, a);
    c.m.node("Concat", {"a", "b", "c"}, {"y"}).i("axis", axis);
    c.m.output("y");
    c.feed("a", random_tensor(a, seed++));
    c.feed("b", random_tensor(b, seed++));
    c.feed("c", random_tensor(a, seed++));
    check_case(c, kExact);
  }
  for (int64_t axis : {0, 2}) {
    OpCase c("Split axis " + std::to_string(axis));
    c.m.input("x", DType::kFloat32, {6, 4, 6});
    c.m.initializer("split", testing::ints64({1, 2, 3}));
    c.m.node("Split", {"x", "split"}, {"y0", "y1", "y2"}).i("axis", axis);
    c.m.output("y0");
    c.m.output("y1");
    c.m.output("y2");
    c.feed("x", random_tensor({6, 4, 6}, seed++));
    check_case(c, kExact);
  }
}

TEST(GpuOps, TransposeSliceExpand) {
  MINIRT_CASES_SKIP_WITHOUT_GPU();
  uint64_t seed = 1700;
  for (std::vector<int64_t> perm : {std::vector<int64_t>{1, 0, 2, 3}, {0, 2, 3, 1}, {3, 2, 1, 0}, {0, 1, 3, 2}}) {
    OpCase c("Transpose " + dims(Shape(perm)));
    c.m.input("x", DType::kFloat32, {2, 3, 4, 5});
    auto* a = c.m.proto().mutable_graph()->add_node();
    a->set_op_type("Transpose");
    a->add_input("x");
    a->add_output("y");
    auto* at = a->add_attribute();
    at->set_name("perm");
    at->set_type(onnx::AttributeProto::INTS);
    for (int64_t p : perm) at->add_ints(p);
    c.m.output("y");
    c.feed("x", random_tensor({2, 3, 4, 5}, seed++));
    check_case(c, kExact);
  }
  {
    OpCase c("Transpose int64");
    c.m.input("x", DType::kInt64, {3, 4});
    c.m.node("Transpose", {"x"}, {"y"});
    c.m.output("y", DType::kInt64);
    std::vector<int64_t> v(12);
    for (int i = 0; i < 12; ++i) v[i] = i * 1000003LL - 7;
    c.feed("x", int_tensor<int64_t>(DType::kInt64, {3, 4}, v));
    check_case(c, kExact);
  }
  struct SliceSpec {
    std::vector<int64_t> starts, ends, axes, steps;
  };
  const SliceSpec slices[] = {{{1, 0}, {3, 4}, {0, 2}, {1, 1}},
                              {{0}, {100}, {3}, {2}},
                              {{-1}, {-100}, {1}, {-1}},
                              {{4, 1}, {0, 3}, {3, 2}, {-2, 1}}};
  for (const auto& s : slices) {
    OpCase c("Slice starts " + dims(Shape(s.starts)) + " steps " + dims(Shape(s.steps)));
    c.m.input("x", DType::kFloat32, {3, 4, 5, 6});
    c.m.initializer("s", testing::ints64(s.starts));
    c.m.initializer("e", testing::ints64(s.ends));
    c.m.initializer("a", testing::ints64(s.axes));
    c.m.initializer("p", testing::ints64(s.steps));
    c.m.node("Slice", {"x", "s", "e", "a", "p"}, {"y"});
    c.m.output("y");
    c.feed("x", random_tensor({3, 4, 5, 6}, seed++));
    check_case(c, kExact);
  }
  for (auto [x, shape] : {std::pair<Shape, std::vector<int64_t>>{{3, 1}, {2, 3, 4}}, {{1, 4, 1}, {2, 1, 5}}}) {
    OpCase c("Expand " + dims(x) + " to " + dims(Shape(shape)));
    c.m.input("x", DType::kFloat32, x);
    c.m.initializer("shape", testing::ints64(shape));
    c.m.node("Expand", {"x", "shape"}, {"y"});
    c.m.output("y");
    c.feed("x", random_tensor(x, seed++));
    check_case(c, kExact);
  }
}

TEST(GpuOps, Pad) {
  MINIRT_CASES_SKIP_WITHOUT_GPU();
  uint64_t seed = 1800;
  for (const char* mode : {"constant", "reflect", "edge"})
    for (std::vector<int64_t> pads :
         {std::vector<int64_t>{0, 0, 1, 2, 0, 0, 2, 1}, {0, 1, 0, 3, 0, 0, 2, 0}, {0, 0, -1, 1, 0, 0, 1, -2}}) {
      OpCase c(std::string("Pad ") + mode + " " + dims(Shape(pads)));
      c.m.input("x", DType::kFloat32, {2, 3, 5, 6});
      c.m.initializer("pads", testing::ints64(pads));
      Tensor v = Tensor::zeros(DType::kFloat32, {});
      *v.data<float>() = 1.5f;
      c.m.initializer("v", v);
      c.m.node("Pad", {"x", "pads", "v"}, {"y"}).s("mode", mode);
      c.m.output("y");
      c.feed("x", random_tensor({2, 3, 5, 6}, seed++));
      check_case(c, kExact);
    }
}

TEST(GpuOps, Gather) {
  MINIRT_CASES_SKIP_WITHOUT_GPU();
  uint64_t seed = 1900;
  for (int64_t axis : {0, 1, 2})
    for (DType it : {DType::kInt64, DType::kInt32}) {
      OpCase c("Gather axis " + std::to_string(axis) + (it == DType::kInt64 ? " int64" : " int32"));
      c.m.input("x", DType::kFloat32, {4, 5, 6});
      if (it == DType::kInt64)
        c.m.initializer("i", int_tensor<int64_t>(it, {2, 2}, {0, -1, 2, 1}));
      else
        c.m.initializer("i", int_tensor<int32_t>(it, {2, 2}, {3, -2, 0, 1}));
      c.m.node("Gather", {"x", "i"}, {"y"}).i("axis", axis);
      c.m.output("y");
      c.feed("x", random_tensor({4, 5, 6}, seed++));
      check_case(c, kExact);
    }
}

TEST(GpuOps, Resize) {
  MINIRT_CASES_SKIP_WITHOUT_GPU();
  uint64_t seed = 2000;
  const char* coords[] = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"};
  for (const char* mode : {"nearest", "linear"})
    for (const char* coord : coords)
      for (std::vector<float> scales : {std::vector<float>{1, 1, 2, 2}, {1, 1, 0.5f, 0.75f}, {1, 1, 1.5f, 3}}) {
        OpCase c(std::string("Resize ") + mode + " " + coord + " scales " + std::to_string(scales[2]) + "," +
                 std::to_string(scales[3]));
        c.m.input("x", DType::kFloat32, {1, 2, 6, 8});
        Tensor s = Tensor::zeros(DType::kFloat32, {4});
        for (int i = 0; i < 4; ++i) s.data<float>()[i] = scales[i];
        c.m.initializer("scales", s);
        auto n =
            c.m.node("Resize", {"x", "", "scales"}, {"y"}).s("mode", mode).s("coordinate_transformation_mode", coord);
        if (std::string(mode) == "nearest") n.s("nearest_mode", "round_prefer_ceil");
        c.m.output("y");
        c.feed("x", random_tensor({1, 2, 6, 8}, seed++));
        check_case(c, std::string(mode) == "nearest" ? kExact : kReduce);
      }
  {
    OpCase c("Upsample opset 9 nearest", 9);
    c.m.input("x", DType::kFloat32, {1, 3, 4, 5});
    Tensor s = Tensor::zeros(DType::kFloat32, {4});
    for (int i = 0; i < 4; ++i) s.data<float>()[i] = i < 2 ? 1.0f : 2.0f;
    c.m.initializer("scales", s);
    c.m.node("Upsample", {"x", "scales"}, {"y"}).s("mode", "nearest");
    c.m.output("y");
    c.feed("x", random_tensor({1, 3, 4, 5}, seed++));
    check_case(c, kExact);
  }
}

TEST(GpuOps, ReshapeLikeCopies) {
  MINIRT_CASES_SKIP_WITHOUT_GPU();
  {
    OpCase c("Reshape");
    c.m.input("x", DType::kFloat32, {2, 3, 4});
    c.m.initializer("shape", testing::ints64({4, -1}));
    c.m.node("Reshape", {"x", "shape"}, {"y"});
    c.m.output("y");
    c.feed("x", random_tensor({2, 3, 4}, 2100));
    check_case(c, kExact);
  }
  {
    OpCase c("Flatten");
    c.m.input("x", DType::kFloat32, {2, 3, 4});
    c.m.node("Flatten", {"x"}, {"y"}).i("axis", 2);
    c.m.output("y");
    c.feed("x", random_tensor({2, 3, 4}, 2101));
    check_case(c, kExact);
  }
}

// Cast between the dtypes the GPU takes, bit for bit against the CPU: floats
// beyond an integer type's range saturate, NaN gives 0, fractions truncate,
// any non-zero value is true.
TEST(GpuOps, Cast) {
  MINIRT_SKIP_WITHOUT_GPU();
  const std::vector<float> edge = {0.0f,    -0.0f,    0.5f,      -0.5f,  2.5f,   -2.5f,    127.9f, 128.0f,
                                   -128.9f, -129.0f,  255.5f,    256.0f, 3.0e9f, -3.0e9f,  1e20f,  -1e20f,
                                   NAN,     INFINITY, -INFINITY, 1.0f,   -1.0f,  65537.25f};
  Tensor f = Tensor::zeros(DType::kFloat32, {2, static_cast<int64_t>(edge.size())});
  for (size_t i = 0; i < edge.size(); ++i) {
    f.data<float>()[i] = edge[i];
    f.data<float>()[edge.size() + i] = static_cast<float>(i) * 7.25f - 60.0f;
  }
  for (DType to : {DType::kInt64, DType::kInt32, DType::kInt8, DType::kUInt8, DType::kBool}) {
    OpCase c(std::string("Cast float32 to ") + dtype_name(to));
    c.m.input("x", DType::kFloat32, f.shape());
    c.m.node("Cast", {"x"}, {"y"}).i("to", static_cast<int64_t>(to));
    c.m.output("y", to);
    c.feed("x", f);
    check_case(c, kExact);
  }
  const Shape s = {3, 4};
  std::vector<int64_t> big = {0, 1, -1, 127, 128, -129, 255, 256, 1LL << 40, -(1LL << 40), 16777217, INT64_MAX};
  for (DType to : {DType::kFloat32, DType::kInt32, DType::kInt8, DType::kUInt8, DType::kBool}) {
    OpCase c(std::string("Cast int64 to ") + dtype_name(to));
    c.m.input("x", DType::kInt64, s);
    c.m.node("Cast", {"x"}, {"y"}).i("to", static_cast<int64_t>(to));
    c.m.output("y", to);
    c.feed("x", int_tensor<int64_t>(DType::kInt64, s, big));
    check_case(c, kExact);
  }
  {
    OpCase c("Cast bool to float32");
    c.m.input("x", DType::kBool, s);
    c.m.node("Cast", {"x"}, {"y"}).i("to", static_cast<int64_t>(DType::kFloat32));
    c.m.output("y", DType::kFloat32);
    c.feed("x", int_tensor<uint8_t>(DType::kBool, s, {1, 0, 1, 1, 0, 0, 1, 0, 1, 0, 0, 1}));
    check_case(c, kExact);
  }
  {
    OpCase c("Cast int32 to int64");
    c.m.input("x", DType::kInt32, s);
    c.m.node("Cast", {"x"}, {"y"}).i("to", static_cast<int64_t>(DType::kInt64));
    c.m.output("y", DType::kInt64);
    c.feed("x", int_tensor<int32_t>(DType::kInt32, s, {0, 1, -1, INT32_MAX, INT32_MIN, 7, -7, 100000, 3, 4, 5, 6}));
    check_case(c, kExact);
  }
}

}  // namespace
}  // namespace minirt::gputest
