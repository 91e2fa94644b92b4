// A fake cuBLAS (built as libcublas.so.13) for the probe's tests.
//   MINIRT_FAKE_CUBLAS_VERSION  "major.minor.patch" from cublasGetProperty (default 13.1.0)
//   MINIRT_FAKE_CUBLAS_CUDART   what cublasGetCudartVersion returns (default 13000)
#include <cstddef>
#include <cstdio>

#include "fake_env.h"

FAKE_API int cublasGetProperty(int type, int* value) {
  int v[3] = {13, 1, 0};
  std::sscanf(fake::env_str("MINIRT_FAKE_CUBLAS_VERSION", "13.1.0"), "%d.%d.%d", &v[0], &v[1], &v[2]);
  if (type < 0 || type > 2) return 7;  // CUBLAS_STATUS_INVALID_VALUE
  *value = v[type];
  return 0;
}

FAKE_API size_t cublasGetCudartVersion() {
  return static_cast<size_t>(fake::env_int("MINIRT_FAKE_CUBLAS_CUDART", 13000));
}
