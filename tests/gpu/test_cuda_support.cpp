// What the CUDA backend claims, on every machine: cuda_supports() is a pure
// function of the node (kernels/cuda/support.cpp, compiled into this test),
// asked here through the real planner by a device that records each answer
// and then declines, so the CPU runs everything. And the module loader's
// sentences for a missing, broken or foreign module.
#include <gmock/gmock.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <stdexcept>

#include "gpu_test_util.h"
#include "kernels/cuda/support.h"
#include "tests/unit/declining_device.h"
#include "runtime/op_registry.h"

namespace minirt::gputest {
namespace {

using ::testing::HasSubstr;

// A device backend that answers with the CUDA support table and claims no node.
class SupportProbe final : public minirt::testing::DecliningDevice {
 public:
  bool supports(const Graph& g, const Node& n, std::string* why) const override {
    std::string reason;
    bool ok = cuda::cuda_supports(g, n, &reason);
    answers[n.name.empty() ? n.op : n.name] = ok ? "yes" : reason;
    // For shapes too large to run here: stop the planning (by throwing) once
    // this node has its answer, before anything is allocated.
    if (!stop_after.empty() && n.name == stop_after) throw std::runtime_error("asked; stopping the planning");
    if (why) *why = reason;
    // A claimed node that touches a float16 / bfloat16 value (the lowering
    // of half models should leave none).
    if (ok)
      for (const auto* ids : {&n.inputs, &n.outputs})
        for (int v : *ids)
          if (v >= 0 && is_half_dtype(g.values[v].dtype)) half_claimed.push_back(n.name);
    return false;
  }
  mutable std::map<std::string, std::string> answers;
  mutable std::vector<std::string> half_claimed;
  std::string stop_after;
};

// Plans and runs the model on the CPU with the probe as a device; returns the probe's answers by node name.
std::map<std::string, std::string> ask(ModelBuilder& m, const NamedTensors& inputs) {
  std::string bytes = m.bytes();
  auto model = Model::load_from_memory(bytes.data(), bytes.size(), "support.onnx");
  Session s(model, {.device = Device::kCpu, .threads = 1, .optimize = false});
  auto probe = std::make_shared<SupportProbe>();
  SessionInternals::add_device(s, probe);
  s.run(inputs);
  return probe->answers;
}

TEST(CudaSupport, TheNetworkOpsAreClaimed) {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {1, 3, 16, 16});
  m.initializer("w", random_tensor({8, 3, 3, 3}, 1));
  m.initializer("fc", random_tensor({10, 8}, 2));
  m.node("Conv", {"x", "w"}, {"c"}, "conv").ints("pads", {1, 1, 1, 1});
  m.node("Relu", {"c"}, {"r"}, "relu");
  m.node("MaxPool", {"r"}, {"p"}, "pool")
      .ints("kernel_shape", {3, 3})
      .ints("strides", {2, 2})
      .ints("pads", {0, 0, 1, 1});
  m.node("Add", {"p", "p"}, {"a"}, "add");
  m.node("GlobalAveragePool", {"a"}, {"g"}, "gap");
  m.node("Flatten", {"g"}, {"f"}, "flatten");
  m.node("Gemm", {"f", "fc"}, {"l"}, "fc").i("transB", 1);
  m.node("Softmax", {"l"}, {"y"}, "softmax");
  m.output("y");
  auto a = ask(m, {{"x", random_tensor({1, 3, 16, 16}, 3)}});
  for (const char* n : {"conv", "relu", "pool", "add", "gap", "flatten", "fc", "softmax"}) EXPECT_EQ(a[n], "yes") << n;
}

// A float16 model reaches placement lowered to float32: the compute nodes
// are claimed as in a float32 model, no claimed node touches a half value,
// and the Casts the lowering leaves (input, output, an inner rounding one)
// are declined with a reason (they run on the CPU).
TEST(CudaSupport, AFloat16ModelReachesTheGpuAsFloat32) {
  ModelBuilder m(13);
  m.input("x", DType::kFloat16, {1, 3, 8, 8});
  m.initializer("w", from_float32(random_tensor({4, 3, 3, 3}, 1), DType::kFloat16));
  m.node("Conv", {"x", "w"}, {"c"}, "conv").ints("pads", {1, 1, 1, 1});
  m.node("Relu", {"c"}, {"r"}, "relu");
  m.node("Cast", {"r"}, {"r16"}, "round16").i("to", static_cast<int64_t>(DType::kFloat16));
  m.node("Add", {"r16", "c"}, {"y"}, "add");
  m.output("y", DType::kFloat16);
  std::string bytes = m.bytes();
  auto model = Model::load_from_memory(bytes.data(), bytes.size(), "support_fp16.onnx");
  Session s(model, {.device = Device::kCpu, .threads = 1, .optimize = false});
  auto probe = std::make_shared<SupportProbe>();
  SessionInternals::add_device(s, probe);
  auto out = s.run({{"x", from_float32(random_tensor({1, 3, 8, 8}, 2), DType::kFloat16)}});
  EXPECT_EQ(out[0].dtype(), DType::kFloat16);
  for (const char* n : {"conv", "relu", "add"}) EXPECT_EQ(probe->answers[n], "yes") << n;
  for (const char* n : {"x:to_float32", "round16", "y:to_float16"}) {
    ASSERT_TRUE(probe->answers.count(n)) << n;
    EXPECT_NE(probe->answers[n], "yes") << n;
  }
  EXPECT_EQ(probe->answers["x:to_float32"], "a cast from or to float16 (the CPU runs it)");
  EXPECT_EQ(probe->answers["round16"], "rounding to half precision (the CPU runs it)");
  EXPECT_EQ(probe->answers["y:to_float16"], "a cast from or to float16 (the CPU runs it)");
  EXPECT_TRUE(probe->half_claimed.empty()) << probe->half_claimed.front();
}

TEST(CudaSupport, DeclinesPreciselyWithAReason) {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {1, 8, 4, 4});
  m.input("i", DType::kInt64, {3});
  m.input("e", DType::kInt64, {4});
  m.input("z", DType::kFloat32, {0, 3});
  m.input("v", DType::kFloat32, {1, 2, 4, 4, 4});
  m.initializer("w3", testing::iota({3, 2, 2, 2, 2}, -0.2f, 0.01f));
  m.node("LRN", {"x"}, {"l4"}, "lrn_even").i("size", 4);
  m.node("LRN", {"x"}, {"l5"}, "lrn_odd").i("size", 5);
  m.node("LRN", {"x"}, {"l17"}, "lrn_wide").i("size", 17);
  // The float attributes that equal cuDNN's minimums in decimal fall below
  // them as doubles (cuDNN would refuse them at plan time); just above passes.
  m.node("LRN", {"x"}, {"lb"}, "lrn_beta_min").i("size", 3).f("beta", 0.01f);
  m.node("LRN", {"x"}, {"lk"}, "lrn_bias_min").i("size", 3).f("bias", 1e-5f);
  m.node("LRN", {"x"}, {"lk2"}, "lrn_bias_above").i("size", 3).f("bias", 1.1e-5f).f("beta", 0.011f);
  m.node("Add", {"i", "i"}, {"ii"}, "add_int");
  m.node("Pow", {"x", "e"}, {"pw"}, "pow_int_exponent");
  m.node("Cast", {"x"}, {"ci"}, "cast").i("to", 7);
  m.node("Sum", {"x", "x", "x", "x", "x"}, {"s5"}, "sum_of_five");
  m.node("Sum", {"x", "x", "x", "x"}, {"s4"}, "sum_of_four");
  m.node("Relu", {"z"}, {"zr"}, "relu_empty");
  m.node("Dropout", {"x"}, {"d", "mask"}, "dropout_mask");
  m.node("Transpose", {"i"}, {"it"}, "transpose_int");
  m.node("ArgMax", {"x"}, {"am"}, "argmax");
  // 3-D windows run on the CPU alone (issue 11, item 10).
  m.node("Conv", {"v", "w3"}, {"c3"}, "conv_3d").ints("kernel_shape", {2, 2, 2});
  m.node("MaxPool", {"v"}, {"p3"}, "maxpool_3d").ints("kernel_shape", {2, 2, 2});
  m.node("AveragePool", {"v"}, {"a3"}, "averagepool_3d").ints("kernel_shape", {2, 2, 2});
  for (const char* o : {"l4", "l5", "l17", "lb", "lk", "lk2", "ii", "pw", "ci", "s5", "s4", "zr", "d", "mask", "it",
                        "am", "c3", "p3", "a3"}) {
    DType t = std::string(o) == "ii" || std::string(o) == "ci" || std::string(o) == "it" || std::string(o) == "am"
                  ? DType::kInt64
              : std::string(o) == "mask" ? DType::kBool
                                         : DType::kFloat32;
    m.output(o, t);
  }
  auto a = ask(m, {{"x", random_tensor({1, 8, 4, 4}, 4)},
                   {"i", int_tensor<int64_t>(DType::kInt64, {3}, {1, 2, 3})},
                   {"e", int_tensor<int64_t>(DType::kInt64, {4}, {2, 2, 2, 2})},
                   {"z", Tensor::zeros(DType::kFloat32, {0, 3})},
                   {"v", random_tensor({1, 2, 4, 4, 4}, 5)}});
  EXPECT_EQ(a["lrn_even"], "yes");  // cuDNN's window for even sizes is ONNX's
  EXPECT_EQ(a["lrn_odd"], "yes");
  EXPECT_EQ(a["lrn_wide"], "size 17 (cuDNN's LRN takes sizes from 1 to 16)");
  EXPECT_EQ(a["lrn_beta_min"], "beta below 0.01 (cuDNN's minimum)");
  EXPECT_EQ(a["lrn_bias_min"], "bias below 1e-5 (cuDNN's minimum)");
  EXPECT_EQ(a["lrn_bias_above"], "yes");
  EXPECT_EQ(a["add_int"], "float32 only on cuda, got int64");
  EXPECT_EQ(a["pow_int_exponent"], "exponent of dtype int64 (float32 only on cuda)");
  EXPECT_EQ(a["cast"], "yes");
  EXPECT_EQ(a["sum_of_five"], "5 inputs (at most 4 on cuda)");
  EXPECT_EQ(a["sum_of_four"], "yes");
  EXPECT_EQ(a["relu_empty"], "zero-sized tensor 'z'");
  EXPECT_EQ(a["dropout_mask"], "its mask output");
  EXPECT_EQ(a["transpose_int"], "yes");  // data movement takes any element size
  EXPECT_EQ(a["argmax"], "not implemented on cuda");
  EXPECT_EQ(a["conv_3d"], "3-D convolution (1-D and 2-D on cuda; 3-D on the CPU)");
  EXPECT_EQ(a["maxpool_3d"], "3-D pooling (1-D and 2-D on cuda; 3-D on the CPU)");
  EXPECT_EQ(a["averagepool_3d"], "3-D pooling (1-D and 2-D on cuda; 3-D on the CPU)");
}

TEST(CudaSupport, ConcatAndSplitRowsBeyondTheMemcpy2DPitchStayOnTheCpu) {
  // [1, 1] expanded to [1, 600M] (2.4 GB) twice and concatenated on axis 1:
  // 1.2G elements fit the element limit, but a row of 4.8 GB is beyond
  // cudaMemcpy2D's pitch; so is the 2.4 GB row of a Split of one of them. A
  // small Concat is claimed. Nothing of that size is allocated: the probe
  // stops the planning once it has answered.
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {1, 1});
  m.input("s", DType::kFloat32, {1, 3});
  m.initializer("shape", int_tensor<int64_t>(DType::kInt64, {2}, {1, 600000000}));
  m.node("Concat", {"s", "s"}, {"small"}, "small_concat").i("axis", 1);
  m.node("Expand", {"x", "shape"}, {"e"}, "expand");
  m.node("Split", {"e"}, {"h0", "h1"}, "big_split").i("axis", 1);
  m.node("Concat", {"e", "e"}, {"y"}, "big_concat").i("axis", 1);
  m.output("small");
  m.output("h0");
  m.output("h1");
  m.output("y");
  std::string bytes = m.bytes();
  auto model = Model::load_from_memory(bytes.data(), bytes.size(), "big.onnx");
  Session s(model, {.device = Device::kCpu, .threads = 1, .optimize = false});
  auto probe = std::make_shared<SupportProbe>();
  probe->stop_after = "big_concat";
  SessionInternals::add_device(s, probe);
  EXPECT_ANY_THROW(s.run({{"x", random_tensor({1, 1}, 7)}, {"s", random_tensor({1, 3}, 8)}}));
  EXPECT_EQ(probe->answers["small_concat"], "yes");
  EXPECT_EQ(probe->answers["expand"], "yes");
  EXPECT_EQ(probe->answers["big_split"], "rows of 2400000000 bytes (cudaMemcpy2D takes pitches up to 2^31-1)");
  EXPECT_EQ(probe->answers["big_concat"], "rows of 4800000000 bytes (cudaMemcpy2D takes pitches up to 2^31-1)");
}

TEST(CudaSupport, PlacementLineCarriesTheReasons) {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {1, 8, 4, 4});
  m.node("LRN", {"x"}, {"y"}, "lrn").i("size", 20);
  m.output("y");
  std::string bytes = m.bytes();
  auto model = Model::load_from_memory(bytes.data(), bytes.size(), "lrn.onnx");
  Session s(model, {.device = Device::kCpu, .threads = 1});
  SessionInternals::add_device(s, std::make_shared<SupportProbe>());
  s.run({{"x", random_tensor({1, 8, 4, 4}, 5)}});
  EXPECT_EQ(s.placement(), "placed 1 node on cpu (LRN: size 20 (cuDNN's LRN takes sizes from 1 to 16))");
}

TEST(CudaSupport, OpListHasTheNetworkOps) {
  size_t n = 0;
  const char* const* ops = cuda::cuda_ops(&n);
  std::vector<std::string> list(ops, ops + n);
  for (const char* op : {"Conv", "MaxPool", "Gemm", "MatMul", "Resize", "Concat", "Softmax", "BatchNormalization"})
    EXPECT_NE(std::find(list.begin(), list.end(), op), list.end()) << op;
}

// Every op of the table once, each a real op (a schema), each with a rule;
// and an op outside the table is declined before any rule is asked.
TEST(CudaSupport, OpTableNamesEachKnownOpOnce) {
  size_t n = 0;
  const char* const* ops = cuda::cuda_ops(&n);
  EXPECT_EQ(n, std::size(cuda::kDnnSupport) + std::size(cuda::kBlasSupport) + std::size(cuda::kSimpleSupport));
  std::set<std::string> seen;
  for (size_t i = 0; i < n; ++i) {
    EXPECT_TRUE(seen.insert(ops[i]).second) << ops[i] << " twice";
    EXPECT_NE(find_schema(ops[i]), nullptr) << ops[i] << " has no schema";
  }
  for (const cuda::SupportEntry& e : cuda::kDnnSupport) EXPECT_NE(e.supports, nullptr) << e.op;
  for (const cuda::SupportEntry& e : cuda::kBlasSupport) EXPECT_NE(e.supports, nullptr) << e.op;
  for (const cuda::SupportEntry& e : cuda::kSimpleSupport) EXPECT_NE(e.supports, nullptr) << e.op;
}

// The op table's rows (runtime/ops/op_table.h) in the families' tables: each
// activation op in cuDNN's or the module's, as its row says, every unary math
// op in the module's; and a rule that accepts a float tensor of each.
TEST(CudaSupport, TheOpTablesRowsAreInTheirFamilies) {
  for (const ActInfo& r : kActInfo) {
    if (!r.op) continue;
    EXPECT_EQ(cuda::count_op(cuda::kDnnSupport, r.op), r.gpu == ActGpu::kDnn ? 1 : 0) << r.op;
    EXPECT_EQ(cuda::count_op(cuda::kSimpleSupport, r.op), r.gpu == ActGpu::kModule ? 1 : 0) << r.op;
  }
  for (const UnaryInfo& r : kUnaryInfo)
    if (r.op) {
      EXPECT_EQ(cuda::count_op(cuda::kSimpleSupport, r.op), 1) << r.op;
    }
}

// The check each kernel file makes at compile time between its kernel table
// and its family's support table (kernels/cuda/registry.h): a kernel table
// that forgets an op, names one twice, or names another fails it, so the
// module does not build. Shown here on look-alike tables.
struct FakeKernelEntry {
  const char* op;
  int make;
};
constexpr cuda::SupportEntry kTwoRules[] = {{"Gemm", cuda::rules::float32_only}, {"MatMul", cuda::rules::float32_only}};
constexpr FakeKernelEntry kBoth[] = {{"MatMul", 1}, {"Gemm", 2}};
constexpr FakeKernelEntry kForgot[] = {{"Gemm", 1}};
constexpr FakeKernelEntry kTwice[] = {{"Gemm", 1}, {"Gemm", 2}};
constexpr FakeKernelEntry kOther[] = {{"Gemm", 1}, {"MatMulInteger", 2}};
static_assert(cuda::same_ops(kTwoRules, kBoth));
static_assert(!cuda::same_ops(kTwoRules, kForgot) && !cuda::same_ops(kForgot, kTwoRules));
static_assert(!cuda::same_ops(kTwoRules, kTwice) && !cuda::same_ops(kTwice, kTwoRules));
static_assert(!cuda::same_ops(kTwoRules, kOther));
static_assert(cuda::same_ops(cuda::kBlasSupport, kBoth));

TEST(CudaSupport, TheFamilyTablesCheckIsExact) {
  EXPECT_TRUE(cuda::same_ops(kTwoRules, kBoth));
  EXPECT_FALSE(cuda::same_ops(kTwoRules, kForgot));
  EXPECT_FALSE(cuda::same_ops(kTwoRules, kTwice));
  EXPECT_FALSE(cuda::same_ops(kTwoRules, kOther));
}

// ---- The module loader ----

class EnvVar {
 public:
  EnvVar(const char* name, const std::string& value) : name_(name) {
    if (const char* v = std::getenv(name)) old_ = v, had_ = true;
    setenv(name, value.c_str(), 1);
  }
  ~EnvVar() {
    if (had_)
      setenv(name_, old_.c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

TEST(ModuleLoader, MissingModuleIsASentence) {
  EnvVar env("MINIRT_MODULE_PATH", "/nonexistent/minirt/libminirt_cuda.so");
  auto candidates = gpu::module_candidates();
  ASSERT_FALSE(candidates.empty());
  EXPECT_EQ(candidates[0], "/nonexistent/minirt/libminirt_cuda.so");
  gpu::LoadedBackend r = gpu::load_cuda_backend({});
  EXPECT_EQ(r.backend, nullptr);
  EXPECT_THAT(r.error, HasSubstr("was not found (looked for /nonexistent/minirt/libminirt_cuda.so"));
  EXPECT_THAT(r.error, HasSubstr("MINIRT_MODULE_PATH is set: only it is searched"));
}

TEST(ModuleLoader, BrokenFileIsASentence) {
  auto dir = std::filesystem::temp_directory_path() / ("minirt_loader_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream f(dir / "libminirt_cuda.so");
    f << "not an ELF file\n";
  }
  EnvVar env("MINIRT_MODULE_PATH", dir.string());  // a folder: its libminirt_cuda.so
  gpu::LoadedBackend r = gpu::load_cuda_backend({});
  EXPECT_EQ(r.backend, nullptr);
  EXPECT_THAT(r.error, HasSubstr((dir / "libminirt_cuda.so").string() + " could not be loaded: "));
  std::filesystem::remove_all(dir);
}

TEST(ModuleLoader, ForeignLibraryIsASentence) {
  std::string libm;
  for (const char* p : {"/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6", "/lib64/libm.so.6"})
    if (std::filesystem::exists(p)) libm = p;
  if (libm.empty()) GTEST_SKIP() << "no libm.so.6 at the usual places";
  EnvVar env("MINIRT_MODULE_PATH", libm);
  gpu::LoadedBackend r = gpu::load_cuda_backend({});
  EXPECT_EQ(r.backend, nullptr);
  EXPECT_THAT(r.error, HasSubstr("is not a minirt GPU module"));
}

// The module of this build, found next to the test (BUILD/bin/../lib): it
// starts where a GPU is usable, and otherwise says why without crashing.
TEST(ModuleLoader, ThisBuildsModule) {
  if (!MINIRT_CUDA_MODULE_BUILT) GTEST_SKIP() << "this build has no GPU module";
  // The gate first, as a Session asks (load_cuda_backend also runs it
  // itself): the libraries it judged are what the module binds to.
  const bool usable = gpu::check_gpu_stack().usable;
  gpu::LoadedBackend r = gpu::load_cuda_backend({});
  EXPECT_THAT(r.path, HasSubstr("libminirt_cuda.so"));
  if (usable) {
    ASSERT_NE(r.backend, nullptr) << r.error;
    EXPECT_STREQ(r.backend->name(), "cuda");
    EXPECT_THAT(r.description, HasSubstr("(cc "));
    std::printf("module: %s\n", r.description.c_str());
  } else {
    // No driver here: the module loads, and its start fails with CUDA's words.
    EXPECT_EQ(r.backend, nullptr);
    EXPECT_THAT(r.error, HasSubstr("could not start"));
    std::printf("module here: %s\n", r.error.c_str());
  }
}

}  // namespace
}  // namespace minirt::gputest
