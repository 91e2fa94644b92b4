// The GPU module's function table (runtime/gpu/module_api.h) as the loader
// takes it, on every machine: a fake module (tests/gpu_fakes/fake_module.cpp)
// plays an older minor (only the required entries: the rest take the
// interface's defaults), a newer minor, another major and broken tables; and
// the module's own side of the table (kernels/cuda/module_table.cpp) round
// trips every entry to a C++ backend of this file through the runtime's
// adapters.
#include <gmock/gmock.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include <minirt/error.h>

#include "kernels/cuda/module_table.h"
#include "runtime/gpu/module.h"
#include "runtime/gpu/module_api.h"
#include "runtime/gpu/module_provider.h"

namespace minirt::gputest {
namespace {

using ::testing::HasSubstr;

const std::string kFake = std::string(MINIRT_GPU_FAKES_DIR) + "/libminirt_fake_module.so";

// Points the loader at the fake and picks its table (MINIRT_FAKE_MODULE).
class FakeModule {
 public:
  explicit FakeModule(const char* kind) {
    save("MINIRT_MODULE_PATH", path_);
    save("MINIRT_FAKE_MODULE", kind_);
    setenv("MINIRT_MODULE_PATH", kFake.c_str(), 1);
    setenv("MINIRT_FAKE_MODULE", kind, 1);
  }
  ~FakeModule() {
    restore("MINIRT_MODULE_PATH", path_);
    restore("MINIRT_FAKE_MODULE", kind_);
  }

 private:
  struct Saved {
    bool had = false;
    std::string value;
  };
  static void save(const char* name, Saved& s) {
    if (const char* v = std::getenv(name)) s.had = true, s.value = v;
  }
  static void restore(const char* name, const Saved& s) {
    if (s.had)
      setenv(name, s.value.c_str(), 1);
    else
      unsetenv(name);
  }
  Saved path_, kind_;
};

std::string ours() { return std::to_string(MINIRT_CUDA_ABI_MAJOR) + "." + std::to_string(MINIRT_CUDA_ABI_MINOR); }

Node node_named(const std::string& name) {
  Node n;
  n.name = name;
  n.op = "Relu";
  return n;
}

float run_once(Kernel& k) {
  float out = 0;
  void* outputs[] = {&out};
  const void* inputs[] = {nullptr};
  KernelArgs args{inputs, outputs, nullptr, nullptr};
  k.run(args);
  return out;
}

TEST(ModuleTable, AnOlderMinorLoadsAndTakesTheDefaults) {
  FakeModule fake("old");
  gpu::LoadedBackend r = gpu::load_cuda_backend({});
  ASSERT_NE(r.backend, nullptr) << r.error;
  EXPECT_EQ(r.path, kFake);
  EXPECT_EQ(r.abi, std::to_string(MINIRT_CUDA_ABI_MAJOR) + ".0");
  EXPECT_EQ(r.table_size, kMinirtCudaTableRequiredSize);
  EXPECT_EQ(r.description, "fake GPU (host memory)");
  const KernelProvider& b = *r.backend;
  Graph g;
  Node n = node_named("x");

  // Its own entries.
  EXPECT_STREQ(b.name(), "fakegpu");
  EXPECT_TRUE(b.supports(g, n, nullptr));
  std::unique_ptr<Kernel> k = b.make_kernel(g, n);
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(run_once(*k), 42.0f);
  const ComputeDevice& d = b.device();
  EXPECT_TRUE(d.is_device());
  std::shared_ptr<RawAllocator> a = d.allocator();
  EXPECT_EQ(a->name(), "fake memory");
  EXPECT_EQ(a->free_memory(), size_t{1} << 20);
  void* p = a->allocate(64);
  ASSERT_NE(p, nullptr);
  a->deallocate(p, 64);
  void* s = d.create_stream();
  d.begin_run(s);
  d.end_run(s);
  EXPECT_FALSE(d.run_times(s).valid);
  d.destroy_stream(s);
  EXPECT_NE(d.upload(Tensor{}), nullptr);

  // The entries it has not got: the interface's defaults (runtime/backend.h).
  EXPECT_EQ(k->describe(), "");
  EXPECT_STREQ(k->precision(), "fp32");
  EXPECT_EQ(k->workspace_bytes(), 0u);
  EXPECT_EQ(k->own_constant_bytes(), 0u);
  EXPECT_TRUE(b.reads_uploaded_constant(g, n, 1));
  EXPECT_EQ(b.channel_block(), 0);
  EXPECT_FALSE(b.blocked_inputs(g, n, nullptr));
  EXPECT_TRUE(b.algorithms(g, n).empty());
  EXPECT_EQ(b.heuristic_algorithm(g, n), "");
  EXPECT_EQ(b.keep_heuristic_within(g, n, 1.25), 1.25);
  EXPECT_EQ(b.tuning_context(), "fakegpu");  // the default: name()
  EXPECT_EQ(b.math_note(), "");
  EXPECT_EQ(b.narrow_values(g, {}), 0);
  EXPECT_EQ(b.fuse_chosen(g, {}, {}), 0);
  EXPECT_TRUE(b.measure_algorithms(g, n, {}, 0).empty());
  EXPECT_EQ(a->backed_room(nullptr), 0u);
  d.step_begun(nullptr, 0);
  d.step_ended(nullptr, 0);
  EXPECT_TRUE(d.step_times(nullptr).empty());
  // make_kernel_with and make_tuning_kernel default to make_kernel, through the table.
  std::unique_ptr<Kernel> k2 = b.make_tuning_kernel(g, n, "any");
  ASSERT_NE(k2, nullptr);
  EXPECT_EQ(run_once(*k2), 42.0f);
}

TEST(ModuleTable, AModulesErrorIsThrownWithItsCode) {
  FakeModule fake("old");
  gpu::LoadedBackend r = gpu::load_cuda_backend({});
  ASSERT_NE(r.backend, nullptr) << r.error;
  Graph g;
  try {
    (void)r.backend->make_kernel(g, node_named("fail"));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_STREQ(e.what(), "fake: no kernel for node fail");
  }
}

TEST(ModuleTable, ANewerMinorLoadsAndItsEntriesRun) {
  FakeModule fake("newer");
  gpu::LoadedBackend r = gpu::load_cuda_backend({});
  ASSERT_NE(r.backend, nullptr) << r.error;
  EXPECT_EQ(r.abi, std::to_string(MINIRT_CUDA_ABI_MAJOR) + "." + std::to_string(MINIRT_CUDA_ABI_MINOR + 1));
  EXPECT_GT(r.table_size, sizeof(MinirtCudaModuleTable));
  EXPECT_EQ(r.backend->tuning_context(), "fakegpu | newer");
  Graph g;
  std::unique_ptr<Kernel> k = r.backend->make_kernel(g, node_named("x"));
  EXPECT_EQ(run_once(*k), 42.0f);
  EXPECT_EQ(k->describe(), "fake kernel, 1 runs");
  EXPECT_STREQ(k->precision(), "tf32");
}

TEST(ModuleTable, AnotherMajorIsRefusedWithASentence) {
  FakeModule fake("major");
  gpu::LoadedBackend r = gpu::load_cuda_backend({});
  EXPECT_EQ(r.backend, nullptr);
  EXPECT_EQ(r.error, "the GPU module " + kFake + " speaks module interface " +
                         std::to_string(MINIRT_CUDA_ABI_MAJOR + 1) + ".0, this minirt speaks " + ours() +
                         " (another major version: the entries mean other things); use the libminirt_cuda.so "
                         "built with this minirt");
}

TEST(ModuleTable, ATableWithoutTheRequiredEntriesIsRefused) {
  {
    FakeModule fake("small");
    gpu::LoadedBackend r = gpu::load_cuda_backend({});
    EXPECT_EQ(r.backend, nullptr);
    EXPECT_THAT(r.error, HasSubstr("the GPU module " + kFake + " speaks module interface "));
    EXPECT_THAT(r.error, HasSubstr("fewer than the " + std::to_string(kMinirtCudaTableRequiredSize) +
                                   " of the entries this minirt (" + ours() + ") requires"));
  }
  {
    FakeModule fake("hole");
    gpu::LoadedBackend r = gpu::load_cuda_backend({});
    EXPECT_EQ(r.backend, nullptr);
    EXPECT_THAT(r.error, HasSubstr("leaves its required entry kernel_run empty"));
  }
}

TEST(ModuleTable, InspectSaysTheInterfaceWithoutStarting) {
  {
    FakeModule fake("old");
    gpu::ModuleInfo m = gpu::inspect_cuda_module();
    EXPECT_TRUE(m.loaded) << m.error;
    EXPECT_EQ(m.path, kFake);
    EXPECT_EQ(m.abi, std::to_string(MINIRT_CUDA_ABI_MAJOR) + ".0");
    EXPECT_EQ(m.table_size, kMinirtCudaTableRequiredSize);
  }
  {
    FakeModule fake("major");
    gpu::ModuleInfo m = gpu::inspect_cuda_module();
    EXPECT_FALSE(m.loaded);
    EXPECT_EQ(m.abi, std::to_string(MINIRT_CUDA_ABI_MAJOR + 1) + ".0");
    EXPECT_THAT(m.error, HasSubstr("speaks module interface"));
  }
}

// ---- The module's side of the table, on a backend of this file ----

int g_providers = 0;  // alive RoundTripProviders
int g_uploads = 0;    // alive uploads

class RoundTripKernel final : public Kernel {
 public:
  explicit RoundTripKernel(std::string note) : note_(std::move(note)) {}
  void run(const KernelArgs& args) override { *static_cast<float*>(args.outputs[0]) = 7.0f; }
  size_t workspace_bytes() const override { return 128; }
  std::string describe() const override { return note_; }
  size_t own_constant_bytes() const override { return 3; }
  const char* precision() const override { return "fp16"; }

 private:
  std::string note_;
};

class RoundTripAllocator final : public RawAllocator {
 public:
  void* allocate(size_t bytes) override { return std::malloc(bytes); }
  void deallocate(void* p, size_t) override { std::free(p); }
  size_t free_memory() const override { return 5; }
  std::string name() const override { return "round-trip memory"; }
  size_t backed_room(std::string* detail) const override {
    if (detail) *detail = "as the test says";
    return 9;
  }
};

class RoundTripDevice final : public ComputeDevice {
 public:
  bool is_device() const override { return true; }
  std::shared_ptr<RawAllocator> allocator() const override { return allocator_; }
  void copy_to_device(void* dst, const void* src, size_t bytes, void*) const override { std::memcpy(dst, src, bytes); }
  void copy_to_host(void* dst, const void* src, size_t bytes, void* stream) const override {
    if (!stream) throw Error(ErrorCode::kInternal, "round trip: no stream");
    std::memcpy(dst, src, bytes);
  }
  void* create_stream() const override { return new int(0); }
  void destroy_stream(void* stream) const override { delete static_cast<int*>(stream); }
  void synchronize(void*) const override {}
  std::shared_ptr<void> upload(const Tensor&) const override {
    ++g_uploads;
    return std::shared_ptr<int>(new int(5), [](int* p) {
      --g_uploads;
      delete p;
    });
  }
  void begin_run(void*) const override {}
  void end_run(void*) const override {}
  DeviceRunTimes run_times(void*) const override {
    DeviceRunTimes t;
    t.valid = true;
    t.kernels = 3;
    return t;
  }
  void step_begun(void*, size_t step) const override { begun_ = step; }
  void step_ended(void*, size_t step) const override { ended_ = step; }
  std::vector<DeviceStepTime> step_times(void*) const override { return {{begun_ * 10 + ended_, 1.0, 2.0}}; }

 private:
  std::shared_ptr<RoundTripAllocator> allocator_ = std::make_shared<RoundTripAllocator>();
  mutable size_t begun_ = 0, ended_ = 0;
};

class RoundTripProvider final : public KernelProvider {
 public:
  RoundTripProvider() { ++g_providers; }
  ~RoundTripProvider() override { --g_providers; }
  const char* name() const override { return "roundtrip"; }
  const ComputeDevice& device() const override { return device_; }
  bool supports(const Graph&, const Node& n, std::string* why) const override {
    if (why) *why = "only x";
    return n.name == "x";
  }
  std::unique_ptr<Kernel> make_kernel(const Graph&, const Node& n) const override {
    if (n.name == "fail") throw Error(ErrorCode::kUnsupported, "no kernel for fail");
    if (n.name == "oom") throw std::bad_alloc();
    if (n.name == "logic") throw std::logic_error("broken");
    return std::make_unique<RoundTripKernel>("plain");
  }
  bool reads_uploaded_constant(const Graph&, const Node&, size_t input) const override { return input != 1; }
  int channel_block() const override { return 8; }
  bool blocked_inputs(const Graph&, const Node&, std::vector<LayoutNeed>* needs) const override {
    needs->assign(2, LayoutNeed::kBlocked);
    return true;
  }
  std::vector<AlgorithmOption> algorithms(const Graph&, const Node&) const override {
    return {{"a", 16, ""}, {"b", 0, "no"}};
  }
  std::string heuristic_algorithm(const Graph&, const Node&) const override { return "a"; }
  std::unique_ptr<Kernel> make_kernel_with(const Graph&, const Node&, const std::string& algorithm) const override {
    return std::make_unique<RoundTripKernel>("with " + algorithm);
  }
  std::unique_ptr<Kernel> make_tuning_kernel(const Graph&, const Node&, const std::string& algorithm) const override {
    return std::make_unique<RoundTripKernel>("tuning " + algorithm);
  }
  double keep_heuristic_within(const Graph&, const Node&, double usual) const override { return usual * 2; }
  std::string tuning_context() const override { return "roundtrip context"; }
  std::string math_note() const override { return "a note"; }
  int narrow_values(Graph&, const std::map<int, std::string>& algorithm) const override {
    return static_cast<int>(algorithm.size());
  }
  int fuse_chosen(Graph&, const std::map<int, std::string>&, const std::vector<int>& order) const override {
    return static_cast<int>(order.size());
  }
  std::vector<double> measure_algorithms(const Graph&, const Node&, const std::vector<AlgorithmOption>& candidates,
                                         size_t workspace_limit) const override {
    return std::vector<double>(candidates.size(), static_cast<double>(workspace_limit));
  }

 private:
  RoundTripDevice device_;
};

}  // namespace
}  // namespace minirt::gputest

// What backend.cpp supplies in the module; here, for minirt_cuda_table.
namespace minirt::cuda {
KernelProvider* create_backend(const MinirtCudaOptions* options, char* error, size_t error_size, char* description,
                               size_t description_size) {
  if (!options || options->abi_major != MINIRT_CUDA_ABI_MAJOR) {
    std::snprintf(error, error_size, "round trip: options of another interface");
    return nullptr;
  }
  std::snprintf(description, description_size, "round trip");
  return new gputest::RoundTripProvider;
}
}  // namespace minirt::cuda

namespace minirt::gputest {
namespace {

TEST(ModuleTable, TheModulesTableIsCompleteAndRoundTripsEveryEntry) {
  const MinirtCudaModuleTable* t = minirt_cuda_module();
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->size, sizeof(MinirtCudaModuleTable));
  EXPECT_EQ(t->abi_major, uint32_t{MINIRT_CUDA_ABI_MAJOR});
  EXPECT_EQ(t->abi_minor, uint32_t{MINIRT_CUDA_ABI_MINOR});
  EXPECT_EQ(gpu::check_module_table(t, "the table"), "");
  // Every entry is set: the module leaves none to the defaults.
  const auto* entries = reinterpret_cast<void* const*>(reinterpret_cast<const char*>(t) + 4 * sizeof(uint32_t));
  const size_t count = (sizeof(MinirtCudaModuleTable) - 4 * sizeof(uint32_t)) / sizeof(void*);
  for (size_t i = 0; i < count; ++i) EXPECT_NE(entries[i], nullptr) << "entry " << i;

  MinirtCudaOptions o = minirt_cuda_default_options();
  char error[256] = {0}, description[256] = {0};
  MinirtCudaProvider* p = t->create(&o, error, sizeof error, description, sizeof description);
  ASSERT_NE(p, nullptr) << error;
  EXPECT_STREQ(description, "round trip");
  {
    std::shared_ptr<KernelProvider> b = gpu::wrap_module_provider(t, p);
    Graph g;
    Node x = node_named("x");
    std::string why;
    EXPECT_STREQ(b->name(), "roundtrip");
    EXPECT_TRUE(b->supports(g, x, &why));
    EXPECT_FALSE(b->supports(g, node_named("y"), &why));
    EXPECT_EQ(why, "only x");
    std::unique_ptr<Kernel> k = b->make_kernel(g, x);
    EXPECT_EQ(run_once(*k), 7.0f);
    EXPECT_EQ(k->workspace_bytes(), 128u);
    EXPECT_EQ(k->describe(), "plain");
    EXPECT_EQ(k->own_constant_bytes(), 3u);
    EXPECT_STREQ(k->precision(), "fp16");
    EXPECT_TRUE(b->reads_uploaded_constant(g, x, 0));
    EXPECT_FALSE(b->reads_uploaded_constant(g, x, 1));
    EXPECT_EQ(b->channel_block(), 8);
    std::vector<LayoutNeed> needs;
    EXPECT_TRUE(b->blocked_inputs(g, x, &needs));
    EXPECT_EQ(needs, std::vector<LayoutNeed>(2, LayoutNeed::kBlocked));
    std::vector<AlgorithmOption> algos = b->algorithms(g, x);
    ASSERT_EQ(algos.size(), 2u);
    EXPECT_EQ(algos[0].name, "a");
    EXPECT_EQ(algos[0].workspace, 16u);
    EXPECT_EQ(algos[1].declined, "no");
    EXPECT_EQ(b->heuristic_algorithm(g, x), "a");
    EXPECT_EQ(b->make_kernel_with(g, x, "b")->describe(), "with b");
    EXPECT_EQ(b->make_tuning_kernel(g, x, "a")->describe(), "tuning a");
    EXPECT_EQ(b->keep_heuristic_within(g, x, 1.5), 3.0);
    EXPECT_EQ(b->tuning_context(), "roundtrip context");
    EXPECT_EQ(b->math_note(), "a note");
    EXPECT_EQ(b->narrow_values(g, {{1, "a"}, {2, "b"}}), 2);
    EXPECT_EQ(b->fuse_chosen(g, {}, {3, 4, 5}), 3);
    EXPECT_EQ(b->measure_algorithms(g, x, algos, 64), (std::vector<double>{64.0, 64.0}));

    const ComputeDevice& d = b->device();
    EXPECT_TRUE(d.is_device());
    std::shared_ptr<RawAllocator> a = d.allocator();
    EXPECT_EQ(a->name(), "round-trip memory");
    EXPECT_EQ(a->free_memory(), 5u);
    std::string detail;
    EXPECT_EQ(a->backed_room(&detail), 9u);
    EXPECT_EQ(detail, "as the test says");
    void* mem = a->allocate(8);
    ASSERT_NE(mem, nullptr);
    void* s = d.create_stream();
    const float in = 2.5f;
    float back = 0;
    d.copy_to_device(mem, &in, sizeof in, s);
    d.copy_to_host(&back, mem, sizeof back, s);
    EXPECT_EQ(back, 2.5f);
    a->deallocate(mem, 8);
    d.synchronize(s);
    d.begin_run(s);
    d.step_begun(s, 2);
    d.step_ended(s, 3);
    d.end_run(s);
    EXPECT_TRUE(d.run_times(s).valid);
    EXPECT_EQ(d.run_times(s).kernels, 3);
    std::vector<DeviceStepTime> steps = d.step_times(s);
    ASSERT_EQ(steps.size(), 1u);
    EXPECT_EQ(steps[0].step, 23u);
    EXPECT_EQ(steps[0].duration_us, 2.0);
    d.destroy_stream(s);
    {
      std::shared_ptr<void> u = d.upload(Tensor{});
      ASSERT_NE(u, nullptr);
      EXPECT_EQ(*static_cast<int*>(u.get()), 5);
      EXPECT_EQ(g_uploads, 1);
    }
    EXPECT_EQ(g_uploads, 0);

    // Errors come back as what was thrown.
    try {
      (void)b->make_kernel(g, node_named("fail"));
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
      EXPECT_STREQ(e.what(), "no kernel for fail");
    }
    EXPECT_THROW((void)b->make_kernel(g, node_named("oom")), std::bad_alloc);
    try {
      (void)b->make_kernel(g, node_named("logic"));
      ADD_FAILURE() << "no error";
    } catch (const Error&) {
      ADD_FAILURE() << "a std::logic_error came back as a minirt::Error";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "broken");
    }
    try {
      d.copy_to_host(&back, &in, sizeof back, nullptr);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInternal);
      EXPECT_STREQ(e.what(), "round trip: no stream");
    }
    // The provider outlives its kernels and its allocator's users.
    b.reset();
    EXPECT_EQ(g_providers, 1);
    k.reset();
    EXPECT_EQ(g_providers, 1);
  }
  EXPECT_EQ(g_providers, 0);
}

// The module of this build exports a full table of this interface.
TEST(ModuleTable, ThisBuildsModuleSpeaksThisInterface) {
  if (!MINIRT_CUDA_MODULE_BUILT) GTEST_SKIP() << "this build has no GPU module";
  gpu::ModuleInfo m = gpu::inspect_cuda_module();
  if (!m.loaded && m.abi.empty()) GTEST_SKIP() << "the module does not open here: " << m.error;
  EXPECT_TRUE(m.loaded) << m.error;
  EXPECT_EQ(m.abi, ours());
  EXPECT_EQ(m.table_size, sizeof(MinirtCudaModuleTable));
}

}  // namespace
}  // namespace minirt::gputest
