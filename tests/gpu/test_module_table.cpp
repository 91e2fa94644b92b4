// The GPU module's function table (runtime/gpu/module_api.h) as the loader
// takes it, on every machine: a fake module (tests/gpu_fakes/fake_module.cpp)
// plays an older minor (only the required entries: the rest take the
// interface's defaults), a newer minor, another major and broken tables.
#include <gmock/gmock.h>

#include <cstdlib>
#include <string>

#include <minirt/error.h>

#include "runtime/gpu/module.h"
#include "runtime/gpu/module_api.h"

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

}  // namespace
}  // namespace minirt::gputest
