// The names of the CUDA backend's convolution candidates: cuDNN's forward
// algorithms under the math types a math mode allows, "cudnn_<algo>" for
// FMA math and "cudnn_<algo>+tensor_op" for tensor cores, and back; and
// which candidate each of cuDNN's Find results times.
// Header-only over cuDNN's enums (no cuDNN call), so that the GPU tests
// check the naming on machines without a GPU.
#pragma once

#include <cudnn.h>

#include <algorithm>
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
// newer, so under TF32 a heuristic pick reported as DEFAULT_MATH becomes
// the "+tensor_op" candidate, run under CUDNN_TENSOR_OP_MATH (for float32
// data, the same permission), so that a name from the cache runs what was
// chosen, and never the strict FP32 one. (Find's timings are another
// matter: each is the variant cuDNN ran, kept apart, timed_candidate.) For
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

// The name of one (algorithm, math type) variant: "cudnn_implicit_precomp_gemm"
// under FMA math, "+tensor_op" under CUDNN_TENSOR_OP_MATH (TF32 on float32
// data, float16 or bfloat16 tensor cores under --math fp16 and bf16). The
// other two math types get names of their own, "+default_math" and
// "+tensor_op_conversions", so that no timing of theirs is ever taken for a
// candidate's: they are variants cuDNN may report, never candidates
// (allowed_math), since running a name sets its math type and cuDNN then
// runs that variant, not another (PyTorch's note "behavior of cudnnFind and
// cudnnGet" in Conv_v7.cpp).
inline std::string candidate_name(cudnnConvolutionFwdAlgo_t a, cudnnMathType_t m) {
  std::string s = "cudnn_";
  for (const char* p = algo_name(a); *p; ++p) s += static_cast<char>(std::tolower(static_cast<unsigned char>(*p)));
  if (m == CUDNN_TENSOR_OP_MATH)
    s += "+tensor_op";
  else if (m == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)
    s += "+tensor_op_conversions";
  else if (m == CUDNN_DEFAULT_MATH)
    s += "+default_math";
  return s;
}

// One result of cudnnFindConvolutionForwardAlgorithmEx: the algorithm and
// math type cuDNN reports it ran, in the pass whose descriptor had `pass`
// math set, and its time.
struct FindResult {
  cudnnMathType_t pass;
  cudnnConvolutionFwdAlgo_t algo;
  cudnnMathType_t math;
  double ms;
};

// The candidate a Find result times, or empty when none: its own
// (algorithm, math type) variant, counted only in the pass of that math
// type. With a math type set, Find returns tensor-core and other variants of
// one algorithm side by side; a DEFAULT_MATH variant (which may run TF32 on
// float32 data) is thus neither the FMA pass's strict float32 kernel nor the
// tensor-op pass's, and an FMA one reported in the tensor-op pass is not
// timed twice.
inline std::string timed_candidate(const FindResult& r) {
  if (r.math != r.pass) return {};
  return candidate_name(r.algo, r.math);
}

// Each candidate's time: the median of the Find results that time it
// (timed_candidate), -1 where none does.
inline std::vector<double> candidate_medians(const std::vector<std::string>& names,
                                             const std::vector<FindResult>& results) {
  std::vector<double> ms(names.size(), -1.0);
  for (size_t c = 0; c < names.size(); ++c) {
    std::vector<double> t;
    for (const FindResult& r : results)
      if (timed_candidate(r) == names[c]) t.push_back(r.ms);
    if (t.empty()) continue;
    std::sort(t.begin(), t.end());
    ms[c] = t[t.size() / 2];
  }
  return ms;
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
