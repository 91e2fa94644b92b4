// A fake cuDNN (built as libcudnn.so.9) for the probe's tests.
//   MINIRT_FAKE_CUDNN_VERSION  what cudnnGetVersion returns (default 91900, 9.19.0; 8907 is 8.9.7)
//   MINIRT_FAKE_CUDNN_CUDART   what cudnnGetCudartVersion returns (default 13000, CUDA 13.0)
//   MINIRT_FAKE_CUDNN_MAXDEV   what cudnnGetMaxDeviceVersion returns (default 1210, compute capability 12.1)
#include <cstddef>

#include "fake_env.h"

FAKE_API size_t cudnnGetVersion() { return static_cast<size_t>(fake::env_int("MINIRT_FAKE_CUDNN_VERSION", 91900)); }
FAKE_API size_t cudnnGetCudartVersion() {
  return static_cast<size_t>(fake::env_int("MINIRT_FAKE_CUDNN_CUDART", 13000));
}
FAKE_API size_t cudnnGetMaxDeviceVersion() {
  return static_cast<size_t>(fake::env_int("MINIRT_FAKE_CUDNN_MAXDEV", 1210));
}
