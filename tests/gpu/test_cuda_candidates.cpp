// The CUDA backend's convolution candidate names, on every machine where the
// module is built (cuDNN's headers only; nothing runs on a GPU): names and
// parsing round-trip under each math mode, TF32 names exist only under
// --math tf32, and a choice cuDNN reports under DEFAULT_MATH (which permits
// TF32 tensor cores) is a "+tensor_op" one, so a heuristic pick or a cached
// name keeps TF32 rather than running strict FP32.
#include <gtest/gtest.h>

#if MINIRT_CUDA_MODULE_BUILT

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
  EXPECT_EQ(candidate_name(CUDNN_CONVOLUTION_FWD_ALGO_GEMM, CUDNN_DEFAULT_MATH), "cudnn_gemm");
}

}  // namespace
}  // namespace minirt::cuda

#endif  // MINIRT_CUDA_MODULE_BUILT
