// The backend registry (runtime/backend_registry.h): a session finds its
// backends there and names none. A third backend is added here, in the test
// alone: a pretend GPU (tests/unit/fake_device.h) registered as a device of
// kind Device::kCuda with a higher priority than the CUDA module's, and a
// device backend that cannot start.
#include <minirt/minirt.h>

#include "fake_device.h"
#include "model_builder.h"
#include "runtime/backend_registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

namespace minirt {
namespace {

using testing::FakeDevice;
using ::testing::HasSubstr;
using testing::ModelBuilder;

std::shared_ptr<const Model> cnn() {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {1, 2, 8, 8});
  m.initializer("w", testing::iota({4, 2, 3, 3}, -0.3f, 0.01f));
  m.node("Conv", {"x", "w"}, {"c"}, "conv").ints("pads", {1, 1, 1, 1});
  m.node("Relu", {"c"}, {"r"}, "relu");
  m.node("Flatten", {"r"}, {"f"}, "flatten");
  m.node("Softmax", {"f"}, {"y"}, "softmax");
  m.output("y");
  std::string bytes = m.bytes();
  return Model::load_from_memory(bytes.data(), bytes.size(), "registry.onnx");
}

Tensor input() { return testing::iota({1, 2, 8, 8}, -1.0f, 0.013f); }

// Registers a factory for the test's duration.
class Registered {
 public:
  explicit Registered(BackendFactory f) : name_(f.name) { backend_registry().add(std::move(f)); }
  ~Registered() { backend_registry().remove(name_); }
  Registered(const Registered&) = delete;
  Registered& operator=(const Registered&) = delete;

 private:
  std::string name_;
};

BackendFactory fake_factory(std::string name, int priority, std::shared_ptr<FakeDevice>* made) {
  BackendFactory f;
  f.name = name;
  f.kind = Device::kCuda;
  f.priority = priority;
  f.open = [name, made](const BackendRequest& request) {
    auto dev = std::make_shared<FakeDevice>(std::set<std::string>{"Conv", "Flatten"});
    dev->named(name);
    if (made) *made = dev;
    OpenedBackend b;
    b.kernels = dev;
    b.description = "a pretend GPU, device " + std::to_string(request.device_id);
    return b;
  };
  return f;
}

BackendFactory broken_factory(std::string name, int priority) {
  BackendFactory f;
  f.name = name;
  f.kind = Device::kCuda;
  f.priority = priority;
  f.open = [](const BackendRequest&) {
    OpenedBackend b;
    b.error = "its driver is a pretend one that never starts";
    return b;
  };
  return f;
}

TEST(BackendRegistry, TheBuiltInBackendsAreRegistered) {
  std::vector<std::string> names = backend_registry().names();
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names[0], "cpu");  // the host comes first
  EXPECT_THAT(names, ::testing::Contains("cuda"));
  std::shared_ptr<KernelProvider> host = backend_registry().open_host({.threads = 2});
  ASSERT_TRUE(host);
  EXPECT_STREQ(host->name(), "cpu");
  EXPECT_FALSE(host->device().is_device());
  EXPECT_TRUE(backend_registry().candidates(Device::kCpu).empty());
}

TEST(BackendRegistry, CandidatesFollowKindAndPriority) {
  BackendRegistry r;
  r.add(broken_factory("low", 1));
  r.add(broken_factory("high", 50));
  r.add(broken_factory("same-as-low", 1));
  std::vector<std::string> order;
  for (const BackendFactory& f : r.candidates(Device::kAuto)) order.push_back(f.name);
  EXPECT_EQ(order, (std::vector<std::string>{"high", "low", "same-as-low"}));
  EXPECT_EQ(r.candidates(Device::kCuda).size(), 3u);
  EXPECT_TRUE(r.candidates(Device::kCpu).empty());
  // The same name replaces; remove says whether there was one.
  r.add(broken_factory("low", 99));
  EXPECT_EQ(r.candidates(Device::kAuto).front().name, "low");
  EXPECT_TRUE(r.remove("low"));
  EXPECT_FALSE(r.remove("low"));
  EXPECT_EQ(r.candidates(Device::kAuto).size(), 2u);
}

TEST(BackendRegistry, RefusesWhatItCannotUse) {
  BackendRegistry r;
  try {
    r.open_host({});
    FAIL() << "an empty registry opened a host backend";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInternal);
    EXPECT_THAT(e.what(), HasSubstr("no host backend is registered"));
  }
  BackendFactory nameless = broken_factory("", 0);
  EXPECT_THROW(r.add(nameless), Error);
  BackendFactory automatic = broken_factory("auto-kind", 0);
  automatic.kind = Device::kAuto;
  EXPECT_THROW(r.add(automatic), Error);
  BackendFactory host1 = broken_factory("host1", 0), host2 = broken_factory("host2", 0);
  host1.kind = host2.kind = Device::kCpu;
  r.add(host1);
  try {
    r.add(host2);
    FAIL() << "a second host backend was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("second host backend beside 'host1'"));
  }
  try {
    r.open_host({});
    FAIL() << "a host backend that does not start was used";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("'host1' did not start: its driver is a pretend one"));
  }
}

// MINIRT_SGEMM_ISA set to something that cannot be followed: the CPU
// backend does not start, and the session says why (it never runs other
// kernels than the ones asked for).
TEST(BackendRegistry, AKernelOverrideThatCannotBeFollowedIsRefused) {
  const char* before = std::getenv("MINIRT_SGEMM_ISA");
  std::string saved = before ? before : "";
  ::setenv("MINIRT_SGEMM_ISA", "avx1024", 1);
  try {
    Session s(cnn(), {.device = Device::kCpu, .threads = 1});
    ADD_FAILURE() << "a session started with MINIRT_SGEMM_ISA=avx1024";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("MINIRT_SGEMM_ISA='avx1024' is not one of generic, avx2, avx512"));
  }
  ::setenv("MINIRT_SGEMM_ISA", "generic", 1);  // every CPU can run the portable kernels
  EXPECT_NO_THROW(Session(cnn(), {.device = Device::kCpu, .threads = 1}));
  if (before)
    ::setenv("MINIRT_SGEMM_ISA", saved.c_str(), 1);
  else
    ::unsetenv("MINIRT_SGEMM_ISA");
}

TEST(BackendRegistry, ASessionRunsOnABackendOnlyTheTestKnows) {
  std::shared_ptr<FakeDevice> made;
  Registered reg(fake_factory("pretendgpu", 1000, &made));
  auto model = cnn();
  Session cpu(model, {.device = Device::kCpu, .threads = 1, .layout = CpuLayout::kNchw});
  std::vector<Tensor> want = cpu.run({{"x", input()}});
  EXPECT_FALSE(made) << "a CPU session opened a device backend";

  Session s(model, {.device = Device::kCuda, .threads = 1, .memory_limit = size_t{1} << 20, .device_id = 3});
  ASSERT_TRUE(made);
  EXPECT_EQ(s.device(), Device::kCuda);
  EXPECT_EQ(s.device_reason(), "running on pretendgpu: a pretend GPU, device 3");
  std::vector<Tensor> got = s.run({{"x", input()}});
  ASSERT_EQ(got.size(), want.size());
  ASSERT_EQ(got[0].shape(), want[0].shape());
  EXPECT_EQ(std::memcmp(got[0].raw(), want[0].raw(), want[0].nbytes()), 0);
  EXPECT_EQ(s.placement(), "placed 2 nodes on pretendgpu, 1 node on cpu (Softmax: not implemented on pretendgpu)");
  EXPECT_EQ(made->kernels_run.load(), 2);
  EXPECT_EQ(made->errors.load(), 0);
  // The session's memory limit reached the device's pool.
  std::vector<DeviceMemoryStats> pools = s.device_memory_stats();
  ASSERT_EQ(pools.size(), 1u);
  EXPECT_EQ(pools[0].device, "pretendgpu");
  EXPECT_EQ(pools[0].stats.limit_bytes, size_t{1} << 20);
  EXPECT_GT(pools[0].stats.peak_in_use_bytes, 0u);
}

TEST(BackendRegistry, SessionsOnOneDeviceShareItsBackend) {
  int opened = 0;
  MathMode last_math = MathMode::kFp32;
  BackendFactory f = fake_factory("sharedgpu", 1000, nullptr);
  auto open = f.open;
  f.open = [open, &opened, &last_math](const BackendRequest& r) {
    ++opened;
    last_math = r.math;
    return open(r);
  };
  Registered reg(f);
  auto model = cnn();
  {
    Session a(model, {.device = Device::kCuda, .threads = 1});
    Session b(model, {.device = Device::kCuda, .threads = 1});
    EXPECT_EQ(opened, 1) << "a second session on the same device opened another backend";
    EXPECT_EQ(a.device_reason(), b.device_reason());
    // Both run, each with its own pool and streams on the one backend.
    std::vector<Tensor> ya = a.run({{"x", input()}}), yb = b.run({{"x", input()}});
    EXPECT_EQ(std::memcmp(ya[0].raw(), yb[0].raw(), ya[0].nbytes()), 0);
    // Another device ordinal is another backend.
    Session c(model, {.device = Device::kCuda, .threads = 1, .device_id = 1});
    EXPECT_EQ(opened, 2);
    EXPECT_EQ(c.device_reason(), "running on sharedgpu: a pretend GPU, device 1");
    // Another math mode is another backend too (its kernels are made for
    // it), opened with the mode asked for.
    int want = 2;
    for (MathMode m : {MathMode::kFp16, MathMode::kTf32, MathMode::kBf16}) {
      Session e(model, {.device = Device::kCuda, .threads = 1, .math = m});
      EXPECT_EQ(last_math, m);
      Session e2(model, {.device = Device::kCuda, .threads = 1, .math = m});
      EXPECT_EQ(opened, ++want) << "one backend per math mode";
    }
  }
  // Once every session is gone, the next one opens it afresh.
  Session d(model, {.device = Device::kCuda, .threads = 1});
  EXPECT_EQ(opened, 6);
}

// A factory replaced (or removed and added back) while a session still
// holds a backend it opened: that backend stays with the session, and new
// sessions open the new factory's (a test that stands in for the CUDA
// backend must not leave its pretend GPU behind for the next session).
TEST(BackendRegistry, AReplacedFactorysBackendIsNotHandedOutAgain) {
  std::shared_ptr<FakeDevice> first, second;
  Registered reg(fake_factory("swapgpu", 1000, &first));
  auto model = cnn();
  Session a(model, {.device = Device::kCuda, .threads = 1});
  ASSERT_NE(first, nullptr);
  backend_registry().add(fake_factory("swapgpu", 1000, &second));  // replaces it
  Session b(model, {.device = Device::kCuda, .threads = 1});
  ASSERT_NE(second, nullptr) << "the replaced factory's backend was handed out again";
  EXPECT_NE(first, second);
  std::shared_ptr<FakeDevice> third;
  backend_registry().remove("swapgpu");
  backend_registry().add(fake_factory("swapgpu", 1000, &third));
  Session c(model, {.device = Device::kCuda, .threads = 1});
  EXPECT_NE(third, nullptr) << "a removed factory's backend was handed out again";
  // Each session runs on the backend it was given.
  for (Session* s : {&a, &b, &c}) s->run({{"x", input()}});
  EXPECT_GE(first->kernels_run.load(), 1);
  EXPECT_GE(second->kernels_run.load(), 1);
  EXPECT_GE(third->kernels_run.load(), 1);
}

TEST(BackendRegistry, ABackendThatCannotStartIsPassedOverWithItsReason) {
  Registered broken(broken_factory("brokengpu", 2000));
  // kAuto: the broken one first, then the others of the registry (the CUDA
  // module's, which cannot start without a GPU either), then the CPU with
  // every reason, each named.
  Session s(cnn(), {.device = Device::kAuto, .threads = 1});
  if (s.device() == Device::kCpu) {
    EXPECT_THAT(s.device_reason(),
                HasSubstr("running on the CPU: brokengpu: its driver is a pretend one that never starts"));
    EXPECT_THAT(s.device_reason(), HasSubstr("; cuda: "));
  }
  // With a working pretend GPU of lower priority, kAuto goes on to it.
  std::shared_ptr<FakeDevice> made;
  Registered fake(fake_factory("pretendgpu", 1500, &made));
  Session t(cnn(), {.device = Device::kAuto, .threads = 1});
  EXPECT_EQ(t.device(), Device::kCuda);
  EXPECT_EQ(t.device_reason(), "running on pretendgpu: a pretend GPU, device 0");
  EXPECT_NO_THROW(t.run({{"x", input()}}));
}

TEST(BackendRegistry, AskingForTheKindOfABrokenBackendFailsWithItsReason) {
  {
    // Only broken backends of kind kCuda: the CUDA module's is set aside for
    // the test, so the outcome does not depend on this machine's GPU.
    BackendRegistry& r = backend_registry();
    // Put back whatever happens below (a FAIL() returns from the test).
    struct SetAside {
      BackendRegistry& r;
      std::vector<BackendFactory> saved;
      ~SetAside() {
        for (BackendFactory& f : saved) r.add(std::move(f));
      }
    } aside{r, r.candidates(Device::kCuda)};
    for (const BackendFactory& f : aside.saved) r.remove(f.name);
    {
      Registered broken(broken_factory("brokengpu", 1));
      try {
        Session s(cnn(), {.device = Device::kCuda, .threads = 1});
        FAIL() << "a session started on a backend that did not";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kDeviceUnavailable);
        EXPECT_THAT(e.what(), HasSubstr("Device::kCuda"));
        EXPECT_THAT(e.what(), HasSubstr("its driver is a pretend one that never starts"));
        EXPECT_THAT(e.what(), HasSubstr("use the CPU instead"));
      }
    }
    try {
      Session s(cnn(), {.device = Device::kCuda, .threads = 1});
      FAIL() << "a session started with no device backend registered";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("no cuda backend is registered in this build"));
    }
    Session fallback(cnn(), {.device = Device::kAuto, .threads = 1});
    EXPECT_EQ(fallback.device_reason(), "running on the CPU: no device backend is registered in this build");
  }
  // The CUDA module's entry is back once the guard is gone.
  EXPECT_THAT(backend_registry().names(), ::testing::Contains("cuda"));
}

}  // namespace
}  // namespace minirt
