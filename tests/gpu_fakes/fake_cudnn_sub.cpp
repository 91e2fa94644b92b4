// A fake cuDNN sub-library (libcudnn_graph/ops/cnn/adv.so.9), compiled once
// per FAKE_SUB_GRAPH / _OPS / _CNN / _ADV.
//   MINIRT_FAKE_CUDNN_GRAPH_VERSION  what the graph library's cudnnGetVersion returns
//                                    (default MINIRT_FAKE_CUDNN_VERSION, else 91900)
//   MINIRT_FAKE_CUDNN_<SUB>_CHECK     what its version check returns (default 0; 1002 mismatch)
#include <cstddef>

#include "fake_env.h"

#if defined(FAKE_SUB_GRAPH)
FAKE_API size_t cudnnGetVersion() {
  return static_cast<size_t>(
      fake::env_int("MINIRT_FAKE_CUDNN_GRAPH_VERSION", fake::env_int("MINIRT_FAKE_CUDNN_VERSION", 91900)));
}
FAKE_API int cudnnGraphVersionCheck() { return static_cast<int>(fake::env_int("MINIRT_FAKE_CUDNN_GRAPH_CHECK", 0)); }
#elif defined(FAKE_SUB_OPS)
FAKE_API int cudnnOpsVersionCheck() { return static_cast<int>(fake::env_int("MINIRT_FAKE_CUDNN_OPS_CHECK", 0)); }
#elif defined(FAKE_SUB_CNN)
FAKE_API int cudnnCnnVersionCheck() { return static_cast<int>(fake::env_int("MINIRT_FAKE_CUDNN_CNN_CHECK", 0)); }
#elif defined(FAKE_SUB_ADV)
FAKE_API int cudnnAdvVersionCheck() { return static_cast<int>(fake::env_int("MINIRT_FAKE_CUDNN_ADV_CHECK", 0)); }
#else
#error "define one of FAKE_SUB_GRAPH, FAKE_SUB_OPS, FAKE_SUB_CNN, FAKE_SUB_ADV"
#endif
