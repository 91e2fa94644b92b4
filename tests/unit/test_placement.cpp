// Placement and fallback with a pretend GPU (tests/unit/fake_device.h) that
// supports only some ops: nodes go to it when it can run them and to the CPU
// otherwise, copies appear at every seam, weights are uploaded once, and the
// outputs are identical to a CPU-only run. The fake device keeps its memory
// XOR-encoded, so a pointer in the wrong memory space gives wrong numbers.
#include <minirt/minirt.h>

#include "fake_device.h"
#include "model_builder.h"
#include "runtime/api/session_internal.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

namespace minirt {
namespace {

using testing::FakeDevice;
using ::testing::HasSubstr;
using testing::ModelBuilder;

std::shared_ptr<const Model> cnn() {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {-1, 2, 8, 8}, {"N"});
  m.initializer("w1", testing::iota({4, 2, 3, 3}, -0.3f, 0.01f));
  m.initializer("b1", testing::iota({4}, 0.1f, 0.05f));
  m.initializer("fc", testing::iota({5, 64}, 0.02f, -0.001f));
  m.node("Conv", {"x", "w1", "b1"}, {"c"}, "conv").ints("pads", {1, 1, 1, 1});
  m.node("Relu", {"c"}, {"r"}, "relu");
  m.node("MaxPool", {"r"}, {"p"}, "pool").ints("kernel_shape", {2, 2}).ints("strides", {2, 2});
  m.node("Flatten", {"p"}, {"f"}, "flatten");
  m.node("Gemm", {"f", "fc"}, {"g"}, "fc").i("transB", 1);
  m.node("Softmax", {"g"}, {"y"}, "softmax");
  m.output("y");
  m.output("p");
  std::string bytes = m.bytes();
  return Model::load_from_memory(bytes.data(), bytes.size(), "cnn.onnx");
}

Tensor input(int64_t n) { return testing::iota({n, 2, 8, 8}, -1.0f, 0.013f); }

void expect_same(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].shape(), b[i].shape());
    EXPECT_EQ(std::memcmp(a[i].raw(), b[i].raw(), a[i].nbytes()), 0) << "output " << i;
  }
}

struct Outcome {
  std::vector<Tensor> out;
  std::string report, placement;
  SeamCopies seams;  // what runmodel --compare reports as the copies at the seams
};

// A plan that places nodes on a device keeps the CPU's part in NCHW (the
// blocked layout and the residual fusion are the CPU's own), so the
// reference for such plans is the CPU alone in NCHW; a device that takes no
// node leaves the plan exactly the CPU's, blocked layout included.
Outcome run_with(std::shared_ptr<FakeDevice> dev, CpuLayout layout = CpuLayout::kAuto) {
  Session s(cnn(), {.device = Device::kCpu, .threads = 1, .layout = layout});
  if (dev) SessionInternals::add_device(s, dev);
  EXPECT_EQ(s.placement(), "");  // nothing planned yet
  Outcome r;
  r.out = s.run({{"x", input(1)}});
  r.report = s.plan_report();
  r.placement = s.placement();
  r.seams = s.seam_copies();
  if (!dev) {
    EXPECT_EQ(r.placement, "");  // the CPU alone: nothing to say
  }
  return r;
}

TEST(Placement, PartialSupportInsertsCopiesAndMatchesTheCpu) {
  auto dev = std::make_shared<FakeDevice>(std::set<std::string>{"Conv", "MaxPool", "Gemm"});
  Outcome cpu = run_with(nullptr, CpuLayout::kNchw), mixed = run_with(dev);
  expect_same(cpu.out, mixed.out);
  EXPECT_EQ(dev->errors.load(), 0);
  // Conv (with its fused Relu), MaxPool and Gemm on the device; Flatten and Softmax on the CPU.
  EXPECT_EQ(mixed.placement,
            "placed 3 nodes on fakegpu, 2 nodes on cpu (Flatten: not implemented on fakegpu; Softmax: not implemented "
            "on fakegpu)");
  // x in; p out to Flatten (and the graph output, the same copy); f in for Gemm; g out for Softmax.
  EXPECT_EQ(dev->to_device.load(), 2);
  EXPECT_EQ(dev->to_host.load(), 2);
  EXPECT_EQ(dev->uploads.load(), 3);  // w1, b1, fc: once, at plan time
  EXPECT_EQ(dev->kernels_run.load(), 3);
  // The plan's copy steps, per run: x (1x2x8x8) and f (1x64) in, p (1x4x4x4) and g (1x5) out.
  EXPECT_EQ(mixed.seams.to_device, 2);
  EXPECT_EQ(mixed.seams.bytes_to_device, (128u + 64u) * 4);
  EXPECT_EQ(mixed.seams.to_host, 2);
  EXPECT_EQ(mixed.seams.bytes_to_host, (64u + 5u) * 4);
  EXPECT_EQ(cpu.seams.to_device + cpu.seams.to_host, 0);
  EXPECT_THAT(mixed.report, HasSubstr("Copy(cpu->fakegpu)"));
  EXPECT_THAT(mixed.report, HasSubstr("Copy(fakegpu->cpu)"));
  EXPECT_THAT(mixed.report, HasSubstr("arena (fakegpu)"));
  EXPECT_THAT(mixed.report, HasSubstr("weights on devices: 3 tensors"));
}

// Session::copy_to_device / copy_from_device go through the device the
// session runs on, on one stream of their own; a session on the CPU alone
// says it has no device memory.
TEST(Placement, CopiesBetweenTheHostAndTheSessionsDevice) {
  auto dev = std::make_shared<FakeDevice>(std::set<std::string>{"Conv"});
  Session s(cnn(), {.device = Device::kCpu, .threads = 1});
  SessionInternals::add_device(s, dev);
  std::vector<float> src(16), back(16, -1.0f);
  for (size_t i = 0; i < src.size(); ++i) src[i] = 0.5f * static_cast<float>(i) - 2.0f;
  void* on_device = dev->allocator()->allocate(src.size() * sizeof(float));
  s.copy_to_device(on_device, src.data(), src.size() * sizeof(float));
  std::vector<float> decoded(16);
  testing::xor_bytes(decoded.data(), on_device, decoded.size() * sizeof(float));  // the fake's encoding
  EXPECT_EQ(decoded, src);
  s.copy_from_device(back.data(), on_device, back.size() * sizeof(float));
  EXPECT_EQ(back, src);
  s.copy_from_device(back.data(), on_device, 0);  // nothing to do
  EXPECT_EQ(dev->to_device.load(), 1);
  EXPECT_EQ(dev->to_host.load(), 1);
  const long streams = dev->streams_made.load();
  s.copy_to_device(on_device, src.data(), 4);
  EXPECT_EQ(dev->streams_made.load(), streams);  // the copies' stream is made once
  // A host pointer given as device memory: the device's own error, no crash.
  EXPECT_THROW(s.copy_from_device(back.data(), src.data(), 4), std::logic_error);
  dev->errors = 0;
  dev->allocator()->deallocate(on_device, 0);
  s.run({{"x", input(1)}});  // runs still work beside the copies

  Session cpu(cnn(), {.device = Device::kCpu, .threads = 1});
  try {
    cpu.copy_from_device(back.data(), src.data(), 4);
    ADD_FAILURE() << "a CPU session copied from a device";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("Session::copy_from_device: cnn.onnx runs on the CPU alone ("));
    EXPECT_THAT(e.what(), HasSubstr("it has no device memory to copy with"));
  }
  EXPECT_THROW(cpu.copy_to_device(back.data(), src.data(), 4), Error);
}

// A device kernel that keeps a weight in a form of its own (as the CUDA
// kernels keep float16 weights under --math fp16) gets no upload of it: the
// device holds the weight once, not twice, the outputs are the CPU's, and
// the plan report counts what the kernels hold.
TEST(Placement, AKernelThatKeepsItsWeightsGetsNoUploadOfThem) {
  auto dev = std::make_shared<FakeDevice>(std::set<std::string>{"Conv", "MaxPool", "Gemm"});
  dev->keeps_weights();
  Outcome cpu = run_with(nullptr, CpuLayout::kNchw), mixed = run_with(dev);
  expect_same(cpu.out, mixed.out);
  EXPECT_EQ(dev->errors.load(), 0);
  EXPECT_EQ(dev->uploads.load(), 1);  // b1 alone: w1 (Conv) and fc (Gemm) are the kernels' own
  EXPECT_EQ(dev->kernels_run.load(), 3);
  EXPECT_THAT(mixed.report, HasSubstr("weights on devices: 1 tensors, 16 B; and 1.5 KiB held by 2 kernels"));
}

// --profile with a device that times itself: its steps take the device's
// durations (the pretend clock: step k lasts 1000 + k us, back to back), laid
// on the host's line from the host's start of the first device step; the
// CPU's steps keep the host's times. Issue 11, item 13: a GPU step's time
// was the enqueue's.
TEST(Placement, ProfiledDeviceStepsCarryTheDevicesClock) {
  for (bool clocked : {true, false}) {
    SCOPED_TRACE(clocked ? "a device that times itself" : "a device that does not");
    auto dev = std::make_shared<FakeDevice>(std::set<std::string>{"Conv", "MaxPool", "Gemm"});
    if (clocked) dev->clocked();
    Session s(cnn(), {.device = Device::kCpu, .threads = 1, .profile = true});
    SessionInternals::add_device(s, dev);
    for (int run = 0; run < 2; ++run) {  // the second run reuses the context and its device clock
      s.run({{"x", input(1)}});
      const std::vector<StepTiming> prof = s.last_profile();
      ASSERT_FALSE(prof.empty());
      int on_device = 0, on_cpu = 0;
      double next_start = -1;
      for (size_t k = 0; k < prof.size(); ++k) {
        const StepTiming& t = prof[k];
        SCOPED_TRACE(t.op + " '" + t.name + "'");
        ASSERT_TRUE(t.device == "fakegpu" || t.device == "cpu") << t.device;
        if (t.device == "cpu") {
          ++on_cpu;
          EXPECT_FALSE(t.device_clock);
          EXPECT_NE(t.duration_us, 1000.0 + static_cast<double>(k));  // the host's own measure, not the pretend clock's
          continue;
        }
        ++on_device;
        EXPECT_EQ(t.device_clock, clocked);
        if (!clocked) continue;
        EXPECT_DOUBLE_EQ(t.duration_us, 1000.0 + static_cast<double>(k));
        if (next_start >= 0) {
          EXPECT_DOUBLE_EQ(t.start_us, next_start);
        }
        next_start = t.start_us + t.duration_us;
      }
      // Conv+Relu, MaxPool, Gemm and the two copies to the device and two back run on it.
      EXPECT_EQ(on_device, 7);
      EXPECT_EQ(on_cpu, 2);  // Flatten, Softmax
    }
  }
  // Without --profile the session asks the device for nothing and keeps no profile.
  auto dev = std::make_shared<FakeDevice>(std::set<std::string>{"Conv"});
  dev->clocked();
  Session s(cnn(), {.device = Device::kCpu, .threads = 1});
  SessionInternals::add_device(s, dev);
  s.run({{"x", input(1)}});
  EXPECT_TRUE(s.last_profile().empty());
  EXPECT_EQ(dev->errors.load(), 0);
}

TEST(Placement, EverythingOnTheDeviceNeedsOnlyTheEdgeCopies) {
  auto dev = std::make_shared<FakeDevice>(std::set<std::string>{"Conv", "MaxPool", "Flatten", "Gemm", "Softmax"});
  Outcome cpu = run_with(nullptr, CpuLayout::kNchw), gpu = run_with(dev);
  expect_same(cpu.out, gpu.out);
  EXPECT_EQ(gpu.placement, "placed 5 nodes on fakegpu, 0 nodes on cpu");
  EXPECT_EQ(dev->to_device.load(), 1);  // the input
  EXPECT_EQ(dev->to_host.load(), 2);    // the two graph outputs
  EXPECT_EQ(gpu.seams.to_device, 1);
  EXPECT_EQ(gpu.seams.bytes_to_device, 128u * 4);
  EXPECT_EQ(gpu.seams.to_host, 2);
  EXPECT_EQ(gpu.seams.bytes_to_host, (64u + 5u) * 4);
  EXPECT_EQ(dev->errors.load(), 0);
}

TEST(Placement, NothingSupportedRunsOnTheCpuWithoutCopies) {
  auto dev = std::make_shared<FakeDevice>(std::set<std::string>{});
  Outcome cpu = run_with(nullptr), none = run_with(dev);
  expect_same(cpu.out, none.out);
  EXPECT_EQ(dev->to_device.load() + dev->to_host.load() + dev->uploads.load(), 0);
  // Exactly the CPU's plan: blocked where the CPU alone blocks (every x86
  // machine with AVX2), with the same layout line and its reorder as a node.
  size_t at = cpu.report.find("layout:");
  bool blocked = at != std::string::npos;
  EXPECT_THAT(none.placement, HasSubstr(blocked ? "placed 6 nodes on cpu" : "placed 5 nodes on cpu"));
  EXPECT_THAT(none.report, ::testing::Not(HasSubstr("Copy(")));
  if (blocked) {
    std::string layout = cpu.report.substr(at);
    layout = layout.substr(0, layout.find('\n'));
    EXPECT_THAT(layout, HasSubstr("reorder"));
    EXPECT_THAT(none.report, HasSubstr(layout));
  }
}

TEST(Placement, TheMemoryLimitCapsTheDevicePoolToo) {
  auto all = std::set<std::string>{"Conv", "MaxPool", "Flatten", "Gemm", "Softmax"};
  // Unlimited: how much each pool needs at batch 4.
  Session free_(cnn(), {.device = Device::kCpu, .threads = 1});
  SessionInternals::add_device(free_, std::make_shared<FakeDevice>(all));
  auto want = free_.run({{"x", input(4)}});
  std::vector<DeviceMemoryStats> d = free_.device_memory_stats();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].device, "fakegpu");
  const size_t device_need = d[0].stats.peak_in_use_bytes, host_need = free_.memory_stats().peak_in_use_bytes;
  ASSERT_GT(device_need, host_need) << "the device holds the intermediates";
  EXPECT_EQ(d[0].stats.limit_bytes, 0u);
  // A limit just below the device's need: the host pool fits, the device pool does not.
  const size_t limit = device_need - 64;
  ASSERT_LT(host_need, limit);
  Session s(cnn(), {.device = Device::kCpu, .threads = 1, .memory_limit = limit});
  SessionInternals::add_device(s, std::make_shared<FakeDevice>(all));
  try {
    s.run({{"x", input(4)}});
    FAIL() << "the device pool was not capped";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfMemory);
    EXPECT_THAT(e.what(), HasSubstr("fake device memory pool: cannot allocate"));
    EXPECT_THAT(e.what(), HasSubstr("the fakegpu activation arena of cnn.onnx"));
    EXPECT_THAT(e.what(), ::testing::AllOf(HasSubstr("SessionOptions::memory_limit"),
                                           ::testing::Not(HasSubstr("--memory-limit"))));
  }
  d = s.device_memory_stats();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].stats.limit_bytes, limit);
  EXPECT_LE(d[0].stats.reserved_bytes, limit);
  // The session stays usable: batch 1 fits under the same cap, and is right.
  auto one = s.run({{"x", input(1)}});
  Session ref(cnn(), {.device = Device::kCpu, .threads = 1, .layout = CpuLayout::kNchw});
  expect_same(ref.run({{"x", input(1)}}), one);
  EXPECT_TRUE(Session(cnn(), {.device = Device::kCpu}).device_memory_stats().empty());
}

TEST(Placement, BatchChangeAndConcurrentRunsWithADevice) {
  auto dev = std::make_shared<FakeDevice>(std::set<std::string>{"Conv", "Gemm"});
  auto model = cnn();
  Session cpu(model, {.device = Device::kCpu, .threads = 1, .layout = CpuLayout::kNchw});
  Session mixed(model, {.device = Device::kCpu, .threads = 2});
  SessionInternals::add_device(mixed, dev);
  std::vector<std::vector<Tensor>> want;
  for (int64_t n : {1, 3, 2}) want.push_back(cpu.run({{"x", input(n)}}));
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 6; ++i) {
        int k = (t + i) % 3;
        auto got = mixed.run({{"x", input(k == 0 ? 1 : k == 1 ? 3 : 2)}});
        for (size_t o = 0; o < got.size(); ++o)
          if (std::memcmp(got[o].raw(), want[k][o].raw(), got[o].nbytes()) != 0) bad++;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(dev->errors.load(), 0);
  EXPECT_EQ(mixed.plans_made(), 3);
  EXPECT_GE(dev->streams_made.load(), 1);  // one per concurrent run context
}

TEST(Placement, DevicesMustBeAddedBeforeTheFirstRun) {
  Session s(cnn(), {.device = Device::kCpu, .threads = 1});
  s.run({{"x", input(1)}});
  EXPECT_THROW(SessionInternals::add_device(s, std::make_shared<FakeDevice>(std::set<std::string>{})), Error);
}

}  // namespace
}  // namespace minirt
