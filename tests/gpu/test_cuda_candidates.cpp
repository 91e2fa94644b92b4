// The CUDA backend's convolution candidate names, on every machine where the
// module is built (cuDNN's headers only; nothing runs on a GPU): names and
// parsing round-trip under each math mode, TF32 names exist only under
// --math tf32, and a choice cuDNN reports under DEFAULT_MATH (which permits
// TF32 tensor cores) is a "+tensor_op" one, so a heuristic pick or a cached
// name keeps TF32 rather than running strict FP32; and Find's timings count
// for the (algorithm, math type) variant cuDNN ran, in its own pass.
#include <gtest/gtest.h>

#if MINIRT_CUDA_MODULE_BUILT

#include <set>

#include "kernels/cuda/conv_candidates.h"

namespace minirt::cuda {
namespace {

TEST(CudaCandidates, NamesRoundTripUnderEachMathMode) {
  for (bool tf32 : {false, true}) {
    std::vector<cudnnMathType_t> maths = allowed_math(tf32);
    ASSERT_EQ(maths.size(), tf32 ? 2u : 1u);
    for (cudnnMathType_t m : maths)
      for (cudnnConvolutionFwdAlgo_t a : kAllFwdAlgos) {
        std::string name = candidate_name(a, m);
        cudnnConvolutionFwdAlgo_t a2{};
        cudnnMathType_t m2{};
        ASSERT_TRUE(parse_candidate(tf32, name, &a2, &m2)) << name;
        EXPECT_EQ(a2, a) << name;
        EXPECT_EQ(m2, m) << name;
      }
  }
  EXPECT_EQ(candidate_name(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, CUDNN_FMA_MATH),
            "cudnn_implicit_precomp_gemm");
  EXPECT_EQ(candidate_name(CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED, CUDNN_TENSOR_OP_MATH),
            "cudnn_winograd_nonfused+tensor_op");
}

TEST(CudaCandidates, TensorOpNamesOnlyUnderTf32) {
  cudnnConvolutionFwdAlgo_t a{};
  cudnnMathType_t m{};
  EXPECT_FALSE(parse_candidate(false, "cudnn_gemm+tensor_op", &a, &m));
  ASSERT_TRUE(parse_candidate(true, "cudnn_gemm+tensor_op", &a, &m));
  EXPECT_EQ(m, CUDNN_TENSOR_OP_MATH);
  ASSERT_TRUE(parse_candidate(true, "cudnn_gemm", &a, &m));
  EXPECT_EQ(m, CUDNN_FMA_MATH);
  EXPECT_FALSE(parse_candidate(true, "winograd_f4x4", &a, &m));
}

TEST(CudaCandidates, DefaultMathCountsAsTensorCoresForFloat32DataOnly) {
  // DEFAULT_MATH permits TF32 on Ampere and newer: a float32 result reported
  // so is a +tensor_op candidate; only FMA_MATH is strict FP32.
  EXPECT_TRUE(may_use_tensor_cores(CUDNN_DEFAULT_MATH, false));
  EXPECT_TRUE(may_use_tensor_cores(CUDNN_TENSOR_OP_MATH, false));
  EXPECT_TRUE(may_use_tensor_cores(CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION, false));
  EXPECT_FALSE(may_use_tensor_cores(CUDNN_FMA_MATH, false));
  // On float16 data (--math fp16) TF32 does not apply: a DEFAULT_MATH kernel
  // is an FMA one, so it is never timed or named as +tensor_op.
  EXPECT_FALSE(may_use_tensor_cores(CUDNN_DEFAULT_MATH, true));
  EXPECT_TRUE(may_use_tensor_cores(CUDNN_TENSOR_OP_MATH, true));
  EXPECT_TRUE(may_use_tensor_cores(CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION, true));
  EXPECT_FALSE(may_use_tensor_cores(CUDNN_FMA_MATH, true));
  EXPECT_FALSE(is_tensor_op(CUDNN_DEFAULT_MATH));  // but not an explicit tensor-op request
}

// The DEFAULT_MATH variant of an algorithm has a name of its own, neither
// the FMA candidate's nor the tensor-op one's, and is no candidate.
TEST(CudaCandidates, DefaultMathVariantHasANameOfItsOwn) {
  const auto gemm = CUDNN_CONVOLUTION_FWD_ALGO_GEMM;
  EXPECT_EQ(candidate_name(gemm, CUDNN_DEFAULT_MATH), "cudnn_gemm+default_math");
  EXPECT_EQ(candidate_name(gemm, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION), "cudnn_gemm+tensor_op_conversions");
  std::set<std::string> names;
  for (cudnnMathType_t m :
       {CUDNN_DEFAULT_MATH, CUDNN_TENSOR_OP_MATH, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION, CUDNN_FMA_MATH})
    names.insert(candidate_name(gemm, m));
  EXPECT_EQ(names.size(), 4u);
  cudnnConvolutionFwdAlgo_t a{};
  cudnnMathType_t m{};
  for (bool tensor_cores : {false, true}) {
    EXPECT_FALSE(parse_candidate(tensor_cores, "cudnn_gemm+default_math", &a, &m));
    EXPECT_FALSE(parse_candidate(tensor_cores, "cudnn_gemm+tensor_op_conversions", &a, &m));
  }
}

// Find's results under TF32, as cuDNN gives them with a math type set:
// tensor-op and DEFAULT_MATH variants of one algorithm side by side (issue
// 29, item 3). Each candidate's time is its own variant's, from its own pass.
TEST(CudaCandidates, FindTimingsAreKeptApartByAlgorithmAndMathType) {
  const auto gemm = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, wino = CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
  const auto fma = CUDNN_FMA_MATH, op = CUDNN_TENSOR_OP_MATH, def = CUDNN_DEFAULT_MATH;
  std::vector<FindResult> r;
  for (int rep = 0; rep < 3; ++rep) {
    // The FMA pass: the strict FP32 kernel (2 ms) and a DEFAULT_MATH one
    // that may run TF32 (0.5 ms), which is not the FMA candidate's.
    r.push_back({fma, gemm, fma, 2.0 + 0.1 * rep});
    r.push_back({fma, gemm, def, 0.5});
    // The tensor-op pass: the tensor-op kernel (1 ms), its DEFAULT_MATH
    // sibling (5 ms, the slower), and the FMA kernel again (9 ms here: not
    // counted twice).
    r.push_back({op, gemm, op, 1.0 + 0.1 * rep});
    r.push_back({op, gemm, def, 5.0});
    r.push_back({op, gemm, fma, 9.0});
    // An algorithm cuDNN reports only as DEFAULT_MATH: no time for its candidates.
    r.push_back({op, wino, def, 0.2});
  }
  const std::vector<std::string> names = {"cudnn_implicit_gemm", "cudnn_implicit_gemm+tensor_op",
                                          "cudnn_winograd_nonfused", "cudnn_winograd_nonfused+tensor_op"};
  const std::vector<double> ms = candidate_medians(names, r);
  ASSERT_EQ(ms.size(), 4u);
  // Mixed, the tensor-op candidate's six values would have a median of 5
  // (the slower kernel's), and the FMA one's 0.5 (a TF32 kernel's).
  EXPECT_DOUBLE_EQ(ms[0], 2.1);
  EXPECT_DOUBLE_EQ(ms[1], 1.1);
  EXPECT_EQ(ms[2], -1.0);
  EXPECT_EQ(ms[3], -1.0);
  EXPECT_EQ(timed_candidate({fma, gemm, def, 0.5}), "");
  EXPECT_EQ(timed_candidate({op, gemm, def, 5.0}), "");
  EXPECT_EQ(timed_candidate({op, gemm, fma, 9.0}), "");
  EXPECT_EQ(timed_candidate({op, gemm, op, 1.0}), "cudnn_implicit_gemm+tensor_op");
  EXPECT_EQ(timed_candidate({fma, gemm, fma, 2.0}), "cudnn_implicit_gemm");
}

}  // namespace
}  // namespace minirt::cuda

#endif  // MINIRT_CUDA_MODULE_BUILT
