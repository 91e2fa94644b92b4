// The CPU backend: every op minirt knows, in C++ with AVX2 and AVX-512
// kernels chosen at run time (Eigen only for ConvTranspose's product). It is the
// reference every other backend is compared against, and it must support
// every node a schema accepts.
//
//   std::unique_ptr<Backend> cpu = make_cpu_backend(pool.size());
#pragma once

#include "runtime/backend.h"

#include <memory>

namespace minirt {

// `threads`: the size of the pool its kernels will run on.
std::unique_ptr<Backend> make_cpu_backend(int threads);

}  // namespace minirt
