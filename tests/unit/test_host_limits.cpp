// Hostile settings and the machine's limits: the cores a process may use
// (affinity, cgroup CPU quota), the thread ceiling, a thread pool the system
// will not start, memory the process cannot get, and a run's time limit.
// Each case ends in a sentence and an error code, never a hang, a crash or
// the OOM killer. (End to end, under ulimit: tests/cli/limits_test.sh.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <minirt/minirt.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "model_builder.h"
#include "runtime/host_resources.h"
#include "runtime/thread_pool.h"

namespace minirt {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::ModelBuilder;
using ::testing::Not;
namespace fs = std::filesystem;

// A folder standing for "/": fake /proc/self and /sys/fs/cgroup files.
class FakeRoot {
 public:
  FakeRoot() {
    dir_ = fs::temp_directory_path() /
           ("minirt_fake_root_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~FakeRoot() { fs::remove_all(dir_); }
  void write(const std::string& path, const std::string& text) const {
    fs::path p = dir_ / path.substr(1);
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  std::string root() const { return dir_.string(); }

 private:
  static inline int counter_ = 0;
  fs::path dir_;
};

// cgroup v2 mounted at /sys/fs/cgroup, the process in `path`.
void cgroup_v2(const FakeRoot& r, const std::string& path) {
  r.write("/proc/self/cgroup", "0::" + path + "\n");
  r.write("/proc/self/mountinfo",
          "22 1 0:20 / /proc rw - proc proc rw\n"
          "30 22 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n");
}

TEST(HostLimits, CgroupV2CpuQuotaLimitsTheCoresAndTheTightestLevelCounts) {
  FakeRoot r;
  cgroup_v2(r, "/kubepods/pod1");
  r.write("/sys/fs/cgroup/kubepods/pod1/cpu.max", "max 100000\n");  // no quota here...
  r.write("/sys/fs/cgroup/kubepods/cpu.max", "150000 100000\n");    // ...1.5 CPUs above
  r.write("/sys/fs/cgroup/cpu.max", "800000 100000\n");
  CoreCount c = count_cores(r.root());
  EXPECT_DOUBLE_EQ(c.cgroup_cpus, 1.5);
  EXPECT_THAT(c.cgroup_file, HasSubstr("/sys/fs/cgroup/kubepods/cpu.max"));
  EXPECT_EQ(c.usable, std::min({c.online, c.affinity > 0 ? c.affinity : c.online, 2}));
  EXPECT_THAT(c.describe(), AllOf(HasSubstr("cgroup CPU quota 1.5"), HasSubstr("online")));
}

TEST(HostLimits, CgroupV1QuotaUnderAContainersMountRoot) {
  FakeRoot r;
  // Docker without a cgroup namespace: the process's path is the mount's root.
  r.write("/proc/self/cgroup", "4:cpu,cpuacct:/docker/abc\n3:memory:/docker/abc\n");
  r.write("/proc/self/mountinfo",
          "40 30 0:35 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro,nosuid - cgroup cgroup rw,cpu,cpuacct\n"
          "41 30 0:36 /docker/abc /sys/fs/cgroup/memory ro,nosuid - cgroup cgroup rw,memory\n");
  r.write("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "100000\n");
  r.write("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  r.write("/sys/fs/cgroup/memory/memory.limit_in_bytes", "2147483648\n");
  r.write("/sys/fs/cgroup/memory/memory.usage_in_bytes", "536870912\n");
  r.write("/proc/meminfo", "MemTotal:       32000000 kB\nMemAvailable:   30000000 kB\n");
  CoreCount c = count_cores(r.root());
  EXPECT_DOUBLE_EQ(c.cgroup_cpus, 1.0);
  EXPECT_EQ(c.usable, 1);
  EXPECT_EQ(resolve_threads(0, c), 1);  // 0: the usable cores, not the machine's
  MemoryRoom m = memory_room(r.root());
  EXPECT_EQ(m.cgroup_limit, size_t{2} << 30);
  EXPECT_EQ(m.cgroup_usage, size_t{512} << 20);
  EXPECT_EQ(m.mem_available, size_t{30000000} * 1024);
  EXPECT_EQ(m.available(), size_t{1536} << 20);  // the cgroup's room, not MemAvailable
  EXPECT_THAT(m.describe(), AllOf(HasSubstr("1.50 GiB"), HasSubstr("cgroup memory limit 2.00 GiB"),
                                  HasSubstr("512.00 MiB in use"), HasSubstr("memory.limit_in_bytes")));
}

TEST(HostLimits, NoQuotaAndNoMemoryLimitLeaveTheMachinesNumbers) {
  FakeRoot r;
  cgroup_v2(r, "/");
  r.write("/sys/fs/cgroup/cpu.max", "max 100000\n");
  r.write("/sys/fs/cgroup/memory.max", "max\n");
  r.write("/sys/fs/cgroup/memory.current", "123456\n");
  r.write("/proc/meminfo", "MemAvailable:   1000 kB\n");
  CoreCount c = count_cores(r.root());
  EXPECT_EQ(c.cgroup_cpus, 0);
  EXPECT_THAT(c.describe(), HasSubstr("no cgroup CPU quota"));
  MemoryRoom m = memory_room(r.root());
  EXPECT_EQ(m.cgroup_limit, 0u);
  EXPECT_EQ(m.available(), 1000u * 1024);
  EXPECT_THAT(m.describe(), HasSubstr("no cgroup memory limit"));
}

TEST(HostLimits, CgroupV2MemoryLimitOfAParentCounts) {
  FakeRoot r;
  cgroup_v2(r, "/a/b");
  r.write("/sys/fs/cgroup/a/b/memory.max", "max\n");
  r.write("/sys/fs/cgroup/a/b/memory.current", "1000\n");
  r.write("/sys/fs/cgroup/a/memory.max", "1073741824\n");
  r.write("/sys/fs/cgroup/a/memory.current", "805306368\n");
  MemoryRoom m = memory_room(r.root());
  EXPECT_EQ(m.cgroup_limit, size_t{1} << 30);
  EXPECT_EQ(m.available(), size_t{256} << 20);
}

TEST(HostLimits, AffinityOfTheCallingThreadCounts) {
  // A thread pinned to one CPU sees one usable core, whatever the machine has.
  CoreCount seen;
  std::thread t([&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    cpu_set_t mine;
    ASSERT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
    for (int i = 0; i < CPU_SETSIZE; ++i)
      if (CPU_ISSET(i, &mine)) {
        CPU_SET(i, &one);
        break;
      }
    ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
    seen = count_cores();
  });
  t.join();
  EXPECT_EQ(seen.affinity, 1);
  EXPECT_EQ(seen.usable, 1);
  EXPECT_THAT(seen.describe(), HasSubstr("affinity 1 of"));
}

TEST(HostLimits, TheThreadCeilingScalesWithTheCoresWithinItsBounds) {
  CoreCount c;
  c.usable = 1;
  EXPECT_EQ(max_threads(c), 8);
  c.usable = 64;
  EXPECT_EQ(max_threads(c), 256);
  c.usable = 4096;
  EXPECT_EQ(max_threads(c), kHardMaxThreads);
  c.usable = 2;
  c.online = 2;
  c.affinity = 2;
  EXPECT_EQ(resolve_threads(8, c), 8);
  try {
    resolve_threads(100000, c);
    FAIL() << "100000 threads were accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(e.what(), AllOf(HasSubstr("threads is 100000"), HasSubstr("ceiling of 8"), HasSubstr("2 cores"),
                                HasSubstr("give a count from 1 to 8")));
  }
  try {
    resolve_threads(-3, c);
    FAIL() << "-3 threads were accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("negative"));
  }
}

TEST(HostLimits, RoomChecksRefuseWhatTheProcessCannotGet) {
  MemoryRoom m = memory_room();
  ASSERT_GT(m.available(), 0u) << "no source of free memory could be read on this machine";
  EXPECT_NO_THROW(check_host_room(1 << 20, "a small buffer"));
  size_t too_much = m.available() * 2 + (size_t{1} << 30);
  try {
    check_host_room(too_much, "the test's buffer");
    FAIL() << "a request of twice the available memory passed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfMemory);
    EXPECT_THAT(e.what(), AllOf(HasSubstr("for the test's buffer"), HasSubstr("MemAvailable"),
                                HasSubstr("smaller batch or input shape")));
  }
  // A tensor of that size is refused the same way, before any memory is touched.
  int64_t floats = static_cast<int64_t>(too_much / 4);
  try {
    Tensor::zeros(DType::kFloat32, {floats});
    FAIL() << "an oversized tensor was made";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfMemory);
    EXPECT_THAT(e.what(), HasSubstr("this process can get"));
  }
}

}  // namespace

// ---- thread pools the system will not start ----

TEST(ThreadPoolLimits, AFailedStartJoinsTheStartedWorkersAndSaysHowMany) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    try {
      ThreadPool pool(8, 3);
      FAIL() << "the pool started although it was refused a thread";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kResourceExhausted);
      EXPECT_THAT(e.what(),
                  AllOf(HasSubstr("asked for 8 threads"), HasSubstr("the caller and 7 workers"), HasSubstr("let 4 run"),
                        HasSubstr("Resource temporarily unavailable"), HasSubstr("ulimit -u"),
                        HasSubstr("SessionOptions::threads"), Not(HasSubstr("--threads"))));
    }
  }
  // Nothing was left behind: a pool of the same size starts and works.
  ThreadPool pool(8);
  std::atomic<int64_t> sum{0};
  pool.parallel_for(1000, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) sum += i;
  });
  EXPECT_EQ(sum.load(), 999 * 1000 / 2);
}

namespace {

// x (1, 16, H, W) -> Resize (nearest, x scale) -> Relu -> GlobalAveragePool.
std::shared_ptr<const Model> upsampler(float scale) {
  ModelBuilder m;
  m.input("x", DType::kFloat32, {1, 16, -1, -1}, {"", "", "H", "W"});
  Tensor scales = Tensor::zeros(DType::kFloat32, {4});
  float* s = scales.data<float>();
  s[0] = 1;
  s[1] = 1;
  s[2] = scale;
  s[3] = scale;
  m.initializer("roi", Tensor::zeros(DType::kFloat32, {0}));
  m.initializer("scales", scales);
  m.node("Resize", {"x", "roi", "scales"}, {"big"}, "upsample").s("mode", "nearest");
  m.node("Relu", {"big"}, {"r"}, "relu");
  m.node("GlobalAveragePool", {"r"}, {"y"}, "gap");
  m.output("y");
  std::string bytes = m.bytes();
  return Model::load_from_memory(bytes.data(), bytes.size(), "upsampler.onnx");
}

// 40 convolutions 16 -> 16 (3x3, pad 1) with Relu, H and W symbolic.
std::shared_ptr<const Model> deep_chain() {
  ModelBuilder m;
  m.input("x", DType::kFloat32, {1, 16, -1, -1}, {"", "", "H", "W"});
  std::string prev = "x";
  for (int i = 0; i < 40; ++i) {
    std::string w = "w" + std::to_string(i), c = "c" + std::to_string(i), r = "r" + std::to_string(i);
    m.initializer(w, testing::noise({16, 16, 3, 3}, static_cast<uint32_t>(i + 1)));
    m.node("Conv", {prev, w}, {c}, "conv" + std::to_string(i)).ints("pads", {1, 1, 1, 1});
    m.node("Relu", {c}, {r}, "relu" + std::to_string(i));
    prev = r;
  }
  m.node("GlobalAveragePool", {prev}, {"y"}, "gap");
  m.output("y");
  std::string bytes = m.bytes();
  return Model::load_from_memory(bytes.data(), bytes.size(), "deep_chain.onnx");
}

}  // namespace

TEST(SessionLimits, ThreadCountsPastTheCeilingAreRefusedBeforeAnyThreadStarts) {
  auto model = upsampler(2);
  for (int bad : {max_threads() + 1, 100000, -1}) {
    try {
      Session s(model, {.device = Device::kCpu, .threads = bad});
      FAIL() << bad << " threads were accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_THAT(e.what(), AllOf(HasSubstr("threads is " + std::to_string(bad)), HasSubstr("usable cores")));
    }
  }
  Session ok(model, {.device = Device::kCpu, .threads = max_threads()});
  EXPECT_EQ(ok.threads(), max_threads());
  Session all(model, {.device = Device::kCpu});
  EXPECT_EQ(all.threads(), usable_cores());
  try {
    Session s(model, {.device = Device::kCpu, .run_timeout_seconds = -1});
    FAIL() << "a negative time limit was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("run_timeout_seconds"));
  }
}

TEST(SessionLimits, AnArenaBeyondTheMachineIsRefusedWithThePoolsSentenceAndTheSessionRunsASmallInput) {
  const size_t room = memory_room().available();
  ASSERT_GT(room, 0u);
  // The input is 16 x 256 x 256 floats (4 MiB); the upsampled tensor, which
  // lives in the arena, is scale^2 times that: at least twice the room.
  const double input_bytes = 16.0 * 256 * 256 * 4;
  const float scale = std::ceil(static_cast<float>(std::sqrt(2.0 * static_cast<double>(room) / input_bytes)));
  auto model = upsampler(scale);
  Session s(model, {.device = Device::kCpu, .threads = 1, .tuning = TuningMode::kHeuristic});
  try {
    s.run({{"x", testing::noise({1, 16, 256, 256}, 7)}});
    FAIL() << "a plan needing " << scale * scale * input_bytes << " bytes ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfMemory);
    EXPECT_THAT(e.what(),
                AllOf(HasSubstr("host memory pool: cannot allocate"), HasSubstr("activation arena"),
                      HasSubstr("upsampler.onnx (inputs x 1x16x256x256)"), HasSubstr("this process can get only"),
                      HasSubstr("MemAvailable"), HasSubstr("smaller batch or input shape")));
  }
  EXPECT_EQ(s.memory_stats().reserved_bytes, 0u);
  // The same session, a small input: the mean of relu(x) per channel (nearest
  // upsampling repeats each value scale^2 times).
  Tensor x = testing::noise({1, 16, 2, 2}, 3);
  auto y = s.run({{"x", x}});
  ASSERT_EQ(y[0].shape(), (Shape{1, 16, 1, 1}));
  for (int c = 0; c < 16; ++c) {
    float want = 0;
    for (int i = 0; i < 4; ++i) want += std::max(0.0f, x.data<float>()[c * 4 + i]);
    EXPECT_NEAR(y[0].data<float>()[c], want / 4, 1e-5f) << "channel " << c;
  }
}

TEST(SessionLimits, ARunPastItsTimeLimitStopsAndTheNextRunSucceeds) {
  auto model = deep_chain();
  // 40 convolutions of 1024 x 1024 x 16 channels: several seconds at one
  // thread, so 0.25 s stops it early; 16 x 16 takes well under a millisecond.
  Session s(model,
            {.device = Device::kCpu, .threads = 1, .tuning = TuningMode::kHeuristic, .run_timeout_seconds = 0.25});
  auto t0 = std::chrono::steady_clock::now();
  // Planning counts against the limit too: on a slow build (the sanitizers')
  // under load it can take the 0.25 s, and the run stops before its first
  // step; the plan is kept, so the next run of that shape stops between steps.
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      s.run({{"x", testing::noise({1, 16, 1024, 1024}, 1)}});
      FAIL() << "the run was not stopped";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kDeadlineExceeded);
      const std::string what = e.what();
      if (attempt == 0 && what.find("stopped before its first step (planning took the time)") != std::string::npos)
        continue;
      EXPECT_THAT(what, AllOf(HasSubstr("deep_chain.onnx: the run (inputs x 1x16x1024x1024) stopped after"),
                              HasSubstr("steps"), HasSubstr("past its limit of 0.25 s"),
                              HasSubstr("run_timeout_seconds"), HasSubstr("stays usable")));
      break;
    }
  }
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(took, 20.0) << "the run went on long after its limit";
  Tensor x = testing::noise({1, 16, 16, 16}, 2);
  Session unlimited(model, {.device = Device::kCpu, .threads = 1, .tuning = TuningMode::kHeuristic});
  auto want = unlimited.run({{"x", x}});
  auto got = s.run({{"x", x}});
  ASSERT_EQ(got[0].numel(), want[0].numel());
  for (int64_t i = 0; i < got[0].numel(); ++i) EXPECT_EQ(got[0].data<float>()[i], want[0].data<float>()[i]);
}

}  // namespace minirt
