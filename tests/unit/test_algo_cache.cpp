// The algorithm cache file: round trip, version changes, damaged, truncated
// and foreign files, hostile content, and two processes writing at once.
#include "runtime/algo_cache.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace minirt {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const char* kCtx = "cpu | Test CPU | avx2 fma | minirt 0.1.0 | eigen 3.4.0 | fp32 | float32";
const char* kCtxNew = "cpu | Test CPU | avx2 fma | minirt 0.2.0 | eigen 3.4.0 | fp32 | float32";
const char* kConv = "conv n=1 c=64 h=56 w=56 k=64 r=3 s=3 pad=1,1,1,1 stride=1,1 dil=1,1 g=1";

class AlgoCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("minirt_cache_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "sub" / "algo_cache.txt").string();
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string read() {
    std::ifstream f(path_);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }
  void write(const std::string& text) {
    fs::create_directories(fs::path(path_).parent_path());
    std::ofstream(path_) << text;
  }
  fs::path dir_;
  std::string path_;
};

TEST_F(AlgoCacheTest, RoundTrip) {
  {
    AlgoCache c(path_);
    EXPECT_FALSE(c.find(kCtx, kConv));
    c.put(kCtx, kConv, {"winograd_f4x4", 1234, 0.41, "2026-12-02T10:00:00Z"});
    EXPECT_TRUE(c.save()) << ::testing::PrintToString(c.warnings());
  }
  AlgoCache c(path_);
  auto hit = c.find(kCtx, kConv);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->algorithm, "winograd_f4x4");
  EXPECT_EQ(hit->workspace, 1234u);
  EXPECT_NEAR(hit->time_ms, 0.41, 1e-9);
  EXPECT_EQ(hit->measured_at, "2026-12-02T10:00:00Z");
  EXPECT_TRUE(c.warnings().empty());
  EXPECT_THAT(read(), HasSubstr("minirt-algo-cache 1"));  // human-readable, versioned
  EXPECT_THAT(read(), HasSubstr(std::string(kConv) + " -> winograd_f4x4 ws=1234"));
}

// Another session's (or process's) save becomes visible on refresh();
// nothing is read again while the file is unchanged, and what was put but
// not saved stays.
TEST_F(AlgoCacheTest, RefreshSeesWhatOthersSaved) {
  const std::string conv2 = std::string(kConv) + " act=Relu";
  AlgoCache a(path_), b(path_);
  EXPECT_FALSE(b.refresh());  // no file, and none before
  b.put(kCtx, conv2, {"nchwc_direct", 0, 0.2, "2026-12-07T10:00:00Z"});
  a.put(kCtx, kConv, {"winograd_f4x4", 1234, 0.41, "2026-12-07T10:00:00Z"});
  ASSERT_TRUE(a.save());
  EXPECT_FALSE(b.find(kCtx, kConv));
  EXPECT_TRUE(b.refresh());
  ASSERT_TRUE(b.find(kCtx, kConv));
  EXPECT_EQ(b.find(kCtx, kConv)->algorithm, "winograd_f4x4");
  ASSERT_TRUE(b.find(kCtx, conv2));  // put, not saved: kept
  EXPECT_FALSE(b.refresh());         // unchanged since
  ASSERT_TRUE(b.save());             // both now in the file
  EXPECT_FALSE(b.refresh());         // its own write is not news
  EXPECT_TRUE(a.refresh());
  EXPECT_EQ(a.find(kCtx, conv2)->algorithm, "nchwc_direct");
  // A damaged file read again is not trusted: the entries read before stay.
  write("minirt-algo-cache 1\n[" + std::string(kCtx) + "]\ngarbage\n");
  EXPECT_FALSE(a.refresh());
  ASSERT_TRUE(a.find(kCtx, kConv));
}

TEST_F(AlgoCacheTest, NamesTheFileCannotHoldAreRefusedNotWritten) {
  AlgoCache c(path_);
  c.put(kCtx, kConv, {"cudnn_winograd_nonfused+tensor_op", 0, 0.2, utc_now()});  // cuDNN's TF32 names have '+'
  c.put(kCtx, "n=1 -> sneaky", {"im2col_gemm", 0, 0.2, utc_now()});
  c.put(kCtx, "conv2", {"two words", 0, 0.2, utc_now()});
  c.put("cpu ] injected [", "conv3", {"im2col_gemm", 0, 0.2, utc_now()});
  EXPECT_EQ(c.warnings().size(), 3u);
  ASSERT_TRUE(c.save());
  AlgoCache again(path_);
  EXPECT_TRUE(again.warnings().empty());  // what was written reads back undamaged
  EXPECT_EQ(again.find(kCtx, kConv)->algorithm, "cudnn_winograd_nonfused+tensor_op");
  EXPECT_EQ(again.size(), 1u);
}

TEST_F(AlgoCacheTest, OtherVersionsAreKeptButNotUsed) {
  {
    AlgoCache c(path_);
    c.put(kCtx, kConv, {"im2col_gemm", 0, 1.0, utc_now()});
    ASSERT_TRUE(c.save());
  }
  AlgoCache c(path_);
  EXPECT_FALSE(c.find(kCtxNew, kConv));               // the upgrade retunes
  EXPECT_EQ(c.other_versions(kCtxNew, kConv), kCtx);  // and can say why
  c.put(kCtxNew, kConv, {"winograd_f2x2", 0, 0.5, utc_now()});
  ASSERT_TRUE(c.save());
  AlgoCache again(path_);
  EXPECT_EQ(again.find(kCtx, kConv)->algorithm, "im2col_gemm");
  EXPECT_EQ(again.find(kCtxNew, kConv)->algorithm, "winograd_f2x2");
  // Another device is not "another version".
  EXPECT_EQ(again.other_versions("cpu | Other CPU | avx2 | minirt 0.1.0 | eigen 3.4.0 | fp32 | float32", kConv), "");
}

TEST_F(AlgoCacheTest, ForeignFileIsReportedIgnoredAndNeverOverwritten) {
  write("my precious notes\nline two\n");
  AlgoCache c(path_);
  ASSERT_EQ(c.warnings().size(), 1u);
  EXPECT_THAT(c.warnings()[0], HasSubstr("not a minirt algorithm cache"));
  EXPECT_EQ(c.size(), 0u);
  c.put(kCtx, kConv, {"im2col_gemm", 0, 1.0, utc_now()});
  EXPECT_FALSE(c.save());
  EXPECT_EQ(read(), "my precious notes\nline two\n");
}

TEST_F(AlgoCacheTest, DamagedFileIsIgnoredEntirelyAndRewritten) {
  {
    AlgoCache c(path_);
    c.put(kCtx, kConv, {"im2col_gemm", 0, 1.0, utc_now()});
    c.put(kCtx, "conv other", {"gemm_1x1", 0, 1.0, utc_now()});
    ASSERT_TRUE(c.save());
  }
  std::string good = read();
  for (const std::string& bad : {
           good + "conv third -> ??? ws=x ms=1 at=now\n",           // garbage entry
           good + "conv fourth -> im2col_gemm ws=1 ms=nan at=t\n",  // not a number
           good.substr(0, good.size() - 9),                         // truncated mid-entry
           good + std::string(5000, 'x') + "\n",                    // absurd line
       }) {
    write(bad);
    AlgoCache c(path_);
    EXPECT_EQ(c.size(), 0u) << bad;
    ASSERT_FALSE(c.warnings().empty());
    EXPECT_THAT(c.warnings()[0], HasSubstr("damaged"));
    c.put(kCtx, kConv, {"depthwise", 0, 2.0, utc_now()});
    EXPECT_TRUE(c.save());
    AlgoCache fresh(path_);
    EXPECT_TRUE(fresh.warnings().empty());
    EXPECT_EQ(fresh.find(kCtx, kConv)->algorithm, "depthwise");
  }
}

TEST_F(AlgoCacheTest, WrongFormatVersionIsIgnored) {
  write("minirt-algo-cache 99\n[x | y]\na -> b ws=0 ms=1 at=2026-01-01T00:00:00Z\n");
  AlgoCache c(path_);
  EXPECT_EQ(c.size(), 0u);
  EXPECT_THAT(c.warnings().at(0), HasSubstr("format version 99"));
}

TEST_F(AlgoCacheTest, HostileContentCannotRedirectWrites) {
  // Names inside the file never become paths: the write goes beside the cache.
  write("minirt-algo-cache 1\n[../../etc | /tmp/evil]\nconv x -> im2col_gemm ws=0 ms=1 at=2026-01-01T00:00:00Z\n");
  AlgoCache c(path_);
  c.put(kCtx, kConv, {"im2col_gemm", 0, 1.0, utc_now()});
  ASSERT_TRUE(c.save());
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir_)) files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"algo_cache.txt", "algo_cache.txt.lock", "sub"}));
  // Absurd workspace sizes are refused, not trusted.
  write("minirt-algo-cache 1\n[a | b]\nconv x -> im2col_gemm ws=99999999999999999 ms=1 at=2026-01-01T00:00:00Z\n");
  EXPECT_EQ(AlgoCache(path_).size(), 0u);
}

TEST_F(AlgoCacheTest, OversizedFileIsNotRead) {
  write("minirt-algo-cache 1\n" + std::string(AlgoCache::kMaxFileBytes + 10, '#'));
  AlgoCache c(path_);
  EXPECT_EQ(c.size(), 0u);
  EXPECT_THAT(c.warnings().at(0), HasSubstr("larger than"));
}

TEST_F(AlgoCacheTest, TwoProcessesWritingAtOnceLoseNothing) {
  constexpr int kPerProcess = 60;
  pid_t kids[2];
  for (int k = 0; k < 2; ++k) {
    kids[k] = fork();
    ASSERT_GE(kids[k], 0);
    if (kids[k] == 0) {
      // Each child saves after every entry, racing the other.
      for (int i = 0; i < kPerProcess; ++i) {
        AlgoCache c(path_);
        c.put(kCtx, "conv p" + std::to_string(k) + "_" + std::to_string(i), {"im2col_gemm", 0, 1.0, utc_now()});
        if (!c.save()) _exit(1);
      }
      _exit(0);
    }
  }
  for (pid_t kid : kids) {
    int status = 0;
    waitpid(kid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  AlgoCache c(path_);
  EXPECT_TRUE(c.warnings().empty());
  EXPECT_EQ(c.size(), 2u * kPerProcess);
}

TEST(AlgoCachePath, EnvironmentDecidesTheDefault) {
  const char* old = std::getenv("MINIRT_ALGO_CACHE");
  std::string saved = old ? old : "";
  setenv("MINIRT_ALGO_CACHE", "/somewhere/cache.txt", 1);
  EXPECT_EQ(AlgoCache::default_path(), "/somewhere/cache.txt");
  unsetenv("MINIRT_ALGO_CACHE");
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  EXPECT_EQ(AlgoCache::default_path(), "/xdg/minirt/algo_cache.txt");
  unsetenv("XDG_CACHE_HOME");
  if (!saved.empty()) setenv("MINIRT_ALGO_CACHE", saved.c_str(), 1);
}

}  // namespace
}  // namespace minirt
