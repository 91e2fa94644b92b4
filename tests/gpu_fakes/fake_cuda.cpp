// A fake NVIDIA driver library (built as libcuda.so.1) for the probe's tests.
//   MINIRT_FAKE_CUINIT        what cuInit returns (default 0; 34 stub, 35, 100, 46, 803 ...)
//   MINIRT_FAKE_CUDA_VERSION  what cuDriverGetVersion reports (default 13000, CUDA 13.0)
//   MINIRT_FAKE_DEVICES       how many GPUs (default 1)
//   MINIRT_FAKE_CC            every GPU's compute capability as major*10+minor (default 90)
//   MINIRT_FAKE_CONTEXT       what cuDevicePrimaryCtxRetain returns (default 0; 46 busy)
#include <cstddef>
#include <cstdio>

#include "fake_env.h"

namespace {
int g_retained = 0;
}

FAKE_API int cuInit(unsigned) { return static_cast<int>(fake::env_int("MINIRT_FAKE_CUINIT", 0)); }

FAKE_API int cuDriverGetVersion(int* v) {
  *v = static_cast<int>(fake::env_int("MINIRT_FAKE_CUDA_VERSION", 13000));
  return 0;
}

FAKE_API int cuDeviceGetCount(int* n) {
  *n = static_cast<int>(fake::env_int("MINIRT_FAKE_DEVICES", 1));
  return 0;
}

FAKE_API int cuDeviceGet(int* dev, int ordinal) {
  if (ordinal < 0 || ordinal >= fake::env_int("MINIRT_FAKE_DEVICES", 1)) return 101;
  *dev = ordinal;
  return 0;
}

FAKE_API int cuDeviceGetName(char* name, int len, int dev) {
  std::snprintf(name, static_cast<size_t>(len), "Fake GPU %d", dev);
  return 0;
}

FAKE_API int cuDeviceGetAttribute(int* value, int attribute, int) {
  long cc = fake::env_int("MINIRT_FAKE_CC", 90);
  if (attribute == 75)
    *value = static_cast<int>(cc / 10);
  else if (attribute == 76)
    *value = static_cast<int>(cc % 10);
  else
    return 1;
  return 0;
}

FAKE_API int cuDeviceTotalMem_v2(size_t* bytes, int) {
  *bytes = static_cast<size_t>(16) << 30;
  return 0;
}

FAKE_API int cuDevicePrimaryCtxRetain(void** ctx, int) {
  int r = static_cast<int>(fake::env_int("MINIRT_FAKE_CONTEXT", 0));
  if (r == 0) {
    ++g_retained;
    *ctx = &g_retained;
  }
  return r;
}

FAKE_API int cuDevicePrimaryCtxRelease_v2(int) {
  --g_retained;
  return 0;
}
