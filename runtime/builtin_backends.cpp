// The backends minirt ships with, registered in the process's registry on
// first use: the CPU (the host), and the GPU module's loader (which starts
// nothing until a session asks for a GPU). This file is the one place that
// names them; a backend added to minirt adds a line here, a backend a program
// or a test brings calls backend_registry().add() itself.
#include "runtime/backend_registry.h"

#include "kernels/cpu/cpu_backend.h"
#include "runtime/gpu/module.h"

namespace minirt {

BackendRegistry& backend_registry() {
  static BackendRegistry* registry = [] {
    auto* r = new BackendRegistry;  // never destroyed: sessions may outlive static destruction order
    r->add(cpu_backend_factory());
    r->add(gpu::cuda_backend_factory());
    return r;
  }();
  return *registry;
}

}  // namespace minirt
