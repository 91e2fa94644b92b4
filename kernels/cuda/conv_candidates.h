// The names of the CUDA backend's convolution candidates: cuDNN's forward
// algorithms under the math types a math mode allows, "cudnn_<algo>" for
// FMA math and "cudnn_<algo>+tensor_op" for TF32 tensor cores, and back.
// Header-only over cuDNN's enums (no cuDNN call), so that the GPU tests
// check the naming on machines without a GPU.
#pragma once

#include <cudnn.h>

#include <cctype>
#include <string>
#include <vector>

namespace minirt::cuda {

inline const char* algo_name(cudnnConvolutionFwdAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM:
      return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
      return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM:
      return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT:
      return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT:
      return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING:
      return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD:
      return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED:
      return "WINOGRAD_NONFUSED";
    default:
      return "?";
  }
}

inline const char* math_name(cudnnMathType_t m) {
  switch (m) {
    case CUDNN_DEFAULT_MATH:
      return "default math";
    case CUDNN_TENSOR_OP_MATH:
      return "tensor cores";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION:
      return "tensor cores (conversions allowed)";
    case CUDNN_FMA_MATH:
      return "FMA (no tensor cores)";
  }
  return "?";
}

inline constexpr cudnnConvolutionFwdAlgo_t kAllFwdAlgos[] = {
    CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
    CUDNN_CONVOLUTION_FWD_ALGO_GEMM,          CUDNN_CONVOLUTION_FWD_ALGO_DIRECT,
    CUDNN_CONVOLUTION_FWD_ALGO_FFT,           CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING,
    CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD,      CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED};

// The math types that ask for tensor cores explicitly.
inline bool is_tensor_op(cudnnMathType_t m) {
  return m == CUDNN_TENSOR_OP_MATH || m == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}
// Whether a result cuDNN reports may have run on tensor cores. For float32
// data (TF32): every math type but CUDNN_FMA_MATH. cuDNN documents
// CUDNN_DEFAULT_MATH as permitting TF32 tensor-core operation on Ampere and
// newer, so under TF32 its heuristics and Find report such kernels as
// DEFAULT_MATH as well as TENSOR_OP_MATH; both become "+tensor_op"
// candidates, run under CUDNN_TENSOR_OP_MATH (for float32 data, the same
// permission), so that a name from the cache runs what was chosen. For
// float16 data (--math fp16) the TF32 permission means nothing: a
// DEFAULT_MATH kernel there is an FMA one, and only the tensor-op types
// count.
inline bool may_use_tensor_cores(cudnnMathType_t m, bool half_data) {
  return half_data ? is_tensor_op(m) : m != CUDNN_FMA_MATH;
}

// The math types a candidate may use: FMA always; tensor cores only when
// the session asked for them (--math tf32: TF32 on float32 data; --math
// fp16: float16 data), DeviceContext::tensor_cores().
inline std::vector<cudnnMathType_t> allowed_math(bool tensor_cores) {
  if (tensor_cores) return {CUDNN_FMA_MATH, CUDNN_TENSOR_OP_MATH};
  return {CUDNN_FMA_MATH};
}

// "cudnn_implicit_precomp_gemm", "+tensor_op" when it runs on tensor cores
// (TF32 on float32 data, float16 tensor cores under --math fp16).
inline std::string candidate_name(cudnnConvolutionFwdAlgo_t a, cudnnMathType_t m) {
  std::string s = "cudnn_";
  for (const char* p = algo_name(a); *p; ++p) s += static_cast<char>(std::tolower(static_cast<unsigned char>(*p)));
  if (is_tensor_op(m)) s += "+tensor_op";
  return s;
}

inline bool parse_candidate(bool tensor_cores, const std::string& name, cudnnConvolutionFwdAlgo_t* a,
                            cudnnMathType_t* m) {
  for (cudnnMathType_t math : allowed_math(tensor_cores))
    for (cudnnConvolutionFwdAlgo_t algo : kAllFwdAlgos)
      if (candidate_name(algo, math) == name) {
        *a = algo;
        *m = math;
        return true;
      }
  return false;
}

}  // namespace minirt::cuda
