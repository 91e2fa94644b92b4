// A shared library that exports none of the functions the probe asks for:
// copied under a CUDA library's name, it plays a damaged or foreign file, and
// it stands in for cuDNN's large engine libraries, which the probe only looks for.
#include "fake_env.h"

FAKE_API int minirt_fake_empty() { return 0; }
