// The tools' side of error sentences: the library names SessionOptions'
// fields, never a tool's flags (test_memory_pool.cpp, test_session.cpp,
// test_host_limits.cpp check that); a tool puts its flag before each field
// (tools/cli_util.h, with_flag_names).
#include "tools/cli_util.h"

#include <gtest/gtest.h>

#include <string>

namespace minirt::tools {
namespace {

TEST(CliFlagNames, EachFieldGetsTheToolsFlagInFront) {
  const std::string lib =
      "host memory pool: cannot allocate 8.0 KiB; use a smaller batch, raise the memory limit "
      "(SessionOptions::memory_limit), or the grow policy (SessionOptions::memory_policy = MemoryPolicy::kGrow)";
  EXPECT_EQ(with_flag_names(lib, session_flag_names()),
            "host memory pool: cannot allocate 8.0 KiB; use a smaller batch, raise the memory limit "
            "(--memory-limit, SessionOptions::memory_limit), or the grow policy (--memory-policy grow, "
            "SessionOptions::memory_policy = MemoryPolicy::kGrow)");
}

TEST(CliFlagNames, TheLongestFieldWinsAndTheRestIsUntouched) {
  const std::vector<FlagName> flags = {{"SessionOptions::memory_policy", "--memory-policy"},
                                       {"SessionOptions::memory_policy = MemoryPolicy::kGrow", "--memory-policy grow"}};
  EXPECT_EQ(with_flag_names("(SessionOptions::memory_policy = MemoryPolicy::kGrow)", flags),
            "(--memory-policy grow, SessionOptions::memory_policy = MemoryPolicy::kGrow)");
  EXPECT_EQ(with_flag_names("see SessionOptions::memory_policy and SessionOptions::memory_policy", flags),
            "see --memory-policy, SessionOptions::memory_policy and --memory-policy, SessionOptions::memory_policy");
  EXPECT_EQ(with_flag_names("nothing to name here", flags), "nothing to name here");
  EXPECT_EQ(with_flag_names("", flags), "");
  // A field the tool has no flag for stays as the library wrote it.
  EXPECT_EQ(with_flag_names("(SessionOptions::threads)", flags), "(SessionOptions::threads)");
}

}  // namespace
}  // namespace minirt::tools
