// The module's function table (runtime/gpu/module_api.h): each entry casts
// its handle back to the module's own object and calls the C++ method, and
// turns an exception into a status and a message, so none crosses the
// boundary. The kernels themselves know nothing of it.
#include "kernels/cuda/module_table.h"

#include <minirt/error.h>

#include <exception>
#include <memory>
#include <new>
#include <utility>

namespace minirt::cuda {

namespace {

KernelProvider& P(MinirtCudaProvider* p) { return *reinterpret_cast<KernelProvider*>(p); }
const ComputeDevice& D(MinirtCudaProvider* p) { return P(p).device(); }
Kernel& K(MinirtCudaKernel* k) { return *reinterpret_cast<Kernel*>(k); }
MinirtCudaKernel* handle(std::unique_ptr<Kernel> k) { return reinterpret_cast<MinirtCudaKernel*>(k.release()); }

// Runs f; an exception becomes its status, with its message in `error`.
template <typename F>
MinirtCudaStatus guard(std::string* error, F&& f) {
  try {
    f();
    return kMinirtCudaOk;
  } catch (const Error& e) {
    if (error) *error = e.what();
    return static_cast<MinirtCudaStatus>(e.code());
  } catch (const std::bad_alloc&) {
    if (error) *error = "out of memory";
    return kMinirtCudaBadAlloc;
  } catch (const std::exception& e) {
    if (error) *error = e.what();
    return kMinirtCudaStdException;
  } catch (...) {
    if (error) *error = "an unknown exception in the GPU module";
    return kMinirtCudaStdException;
  }
}

// For the entries that return nothing and must not throw.
template <typename F>
void quietly(F&& f) {
  std::string ignored;
  (void)guard(&ignored, std::forward<F>(f));
}

MinirtCudaModuleTable make_table() {
  MinirtCudaModuleTable t{};
  t.size = sizeof(MinirtCudaModuleTable);
  t.abi_major = MINIRT_CUDA_ABI_MAJOR;
  t.abi_minor = MINIRT_CUDA_ABI_MINOR;
  t.create = [](const MinirtCudaOptions* o, char* error, size_t error_size, char* description,
                size_t description_size) {
    return reinterpret_cast<MinirtCudaProvider*>(create_backend(o, error, error_size, description, description_size));
  };
  t.destroy = [](MinirtCudaProvider* p) { quietly([&] { delete &P(p); }); };
  t.name = [](MinirtCudaProvider* p) { return P(p).name(); };
  t.supports = [](MinirtCudaProvider* p, const Graph* g, const Node* n, std::string* why, int32_t* out,
                  std::string* e) { return guard(e, [&] { *out = P(p).supports(*g, *n, why); }); };
  t.make_kernel = [](MinirtCudaProvider* p, const Graph* g, const Node* n, MinirtCudaKernel** out, std::string* e) {
    return guard(e, [&] { *out = handle(P(p).make_kernel(*g, *n)); });
  };
  t.is_device = [](MinirtCudaProvider* p) { return static_cast<int32_t>(D(p).is_device()); };
  t.allocate = [](MinirtCudaProvider* p, size_t bytes) {
    void* r = nullptr;
    quietly([&] { r = D(p).allocator()->allocate(bytes); });
    return r;
  };
  t.deallocate = [](MinirtCudaProvider* p, void* ptr, size_t bytes) {
    quietly([&] { D(p).allocator()->deallocate(ptr, bytes); });
  };
  t.free_memory = [](MinirtCudaProvider* p) {
    size_t r = 0;
    quietly([&] { r = D(p).allocator()->free_memory(); });
    return r;
  };
  t.allocator_name = [](MinirtCudaProvider* p, std::string* out) { quietly([&] { *out = D(p).allocator()->name(); }); };
  t.copy_to_device = [](MinirtCudaProvider* p, void* dst, const void* src, size_t bytes, void* stream, std::string* e) {
    return guard(e, [&] { D(p).copy_to_device(dst, src, bytes, stream); });
  };
  t.copy_to_host = [](MinirtCudaProvider* p, void* dst, const void* src, size_t bytes, void* stream, std::string* e) {
    return guard(e, [&] { D(p).copy_to_host(dst, src, bytes, stream); });
  };
  t.create_stream = [](MinirtCudaProvider* p, void** out, std::string* e) {
    return guard(e, [&] { *out = D(p).create_stream(); });
  };
  t.destroy_stream = [](MinirtCudaProvider* p, void* stream) { quietly([&] { D(p).destroy_stream(stream); }); };
  t.synchronize = [](MinirtCudaProvider* p, void* stream, std::string* e) {
    return guard(e, [&] { D(p).synchronize(stream); });
  };
  // The upload's shared_ptr travels as a heap copy of itself: release_upload deletes it.
  t.upload = [](MinirtCudaProvider* p, const Tensor* tensor, void** data, void** handle, std::string* e) {
    return guard(e, [&] {
      auto owned = std::make_unique<std::shared_ptr<void>>(D(p).upload(*tensor));
      *data = owned->get();
      *handle = owned.release();
    });
  };
  t.release_upload = [](MinirtCudaProvider*, void* handle) {
    quietly([&] { delete static_cast<std::shared_ptr<void>*>(handle); });
  };
  t.begin_run = [](MinirtCudaProvider* p, void* stream, std::string* e) {
    return guard(e, [&] { D(p).begin_run(stream); });
  };
  t.end_run = [](MinirtCudaProvider* p, void* stream, std::string* e) {
    return guard(e, [&] { D(p).end_run(stream); });
  };
  t.run_times = [](MinirtCudaProvider* p, void* stream, DeviceRunTimes* out, std::string* e) {
    return guard(e, [&] { *out = D(p).run_times(stream); });
  };
  t.kernel_destroy = [](MinirtCudaKernel* k) { quietly([&] { delete &K(k); }); };
  t.kernel_run = [](MinirtCudaKernel* k, const KernelArgs* args, std::string* e) {
    return guard(e, [&] { K(k).run(*args); });
  };

  t.kernel_workspace_bytes = [](MinirtCudaKernel* k) {
    size_t r = 0;
    quietly([&] { r = K(k).workspace_bytes(); });
    return r;
  };
  t.kernel_describe = [](MinirtCudaKernel* k, std::string* out) { quietly([&] { *out = K(k).describe(); }); };
  t.kernel_own_constant_bytes = [](MinirtCudaKernel* k) {
    size_t r = 0;
    quietly([&] { r = K(k).own_constant_bytes(); });
    return r;
  };
  t.kernel_precision = [](MinirtCudaKernel* k) { return K(k).precision(); };
  t.backed_room = [](MinirtCudaProvider* p, std::string* detail) {
    size_t r = 0;
    quietly([&] { r = D(p).allocator()->backed_room(detail); });
    return r;
  };
  t.step_begun = [](MinirtCudaProvider* p, void* stream, size_t step, std::string* e) {
    return guard(e, [&] { D(p).step_begun(stream, step); });
  };
  t.step_ended = [](MinirtCudaProvider* p, void* stream, size_t step, std::string* e) {
    return guard(e, [&] { D(p).step_ended(stream, step); });
  };
  t.step_times = [](MinirtCudaProvider* p, void* stream, std::vector<DeviceStepTime>* out, std::string* e) {
    return guard(e, [&] { *out = D(p).step_times(stream); });
  };
  t.reads_uploaded_constant = [](MinirtCudaProvider* p, const Graph* g, const Node* n, size_t input, int32_t* out,
                                 std::string* e) {
    return guard(e, [&] { *out = P(p).reads_uploaded_constant(*g, *n, input); });
  };
  t.channel_block = [](MinirtCudaProvider* p) { return static_cast<int32_t>(P(p).channel_block()); };
  t.blocked_inputs = [](MinirtCudaProvider* p, const Graph* g, const Node* n, std::vector<LayoutNeed>* needs,
                        int32_t* out,
                        std::string* e) { return guard(e, [&] { *out = P(p).blocked_inputs(*g, *n, needs); }); };
  t.algorithms = [](MinirtCudaProvider* p, const Graph* g, const Node* n, std::vector<AlgorithmOption>* out,
                    std::string* e) { return guard(e, [&] { *out = P(p).algorithms(*g, *n); }); };
  t.heuristic_algorithm = [](MinirtCudaProvider* p, const Graph* g, const Node* n, std::string* out, std::string* e) {
    return guard(e, [&] { *out = P(p).heuristic_algorithm(*g, *n); });
  };
  t.make_kernel_with = [](MinirtCudaProvider* p, const Graph* g, const Node* n, const std::string* algorithm,
                          MinirtCudaKernel** out, std::string* e) {
    return guard(e, [&] { *out = handle(P(p).make_kernel_with(*g, *n, *algorithm)); });
  };
  t.make_tuning_kernel = [](MinirtCudaProvider* p, const Graph* g, const Node* n, const std::string* algorithm,
                            MinirtCudaKernel** out, std::string* e) {
    return guard(e, [&] { *out = handle(P(p).make_tuning_kernel(*g, *n, *algorithm)); });
  };
  t.keep_heuristic_within = [](MinirtCudaProvider* p, const Graph* g, const Node* n, double usual, double* out,
                               std::string* e) {
    return guard(e, [&] { *out = P(p).keep_heuristic_within(*g, *n, usual); });
  };
  t.tuning_context = [](MinirtCudaProvider* p, std::string* out, std::string* e) {
    return guard(e, [&] { *out = P(p).tuning_context(); });
  };
  t.math_note = [](MinirtCudaProvider* p, std::string* out, std::string* e) {
    return guard(e, [&] { *out = P(p).math_note(); });
  };
  t.narrow_values = [](MinirtCudaProvider* p, Graph* g, const std::map<int, std::string>* algorithm, int32_t* out,
                       std::string* e) { return guard(e, [&] { *out = P(p).narrow_values(*g, *algorithm); }); };
  t.fuse_chosen = [](MinirtCudaProvider* p, Graph* g, const std::map<int, std::string>* algorithm,
                     const std::vector<int>* order, int32_t* out,
                     std::string* e) { return guard(e, [&] { *out = P(p).fuse_chosen(*g, *algorithm, *order); }); };
  t.measure_algorithms = [](MinirtCudaProvider* p, const Graph* g, const Node* n,
                            const std::vector<AlgorithmOption>* candidates, size_t workspace_limit,
                            std::vector<double>* out, std::string* e) {
    return guard(e, [&] { *out = P(p).measure_algorithms(*g, *n, *candidates, workspace_limit); });
  };
  return t;
}

}  // namespace

}  // namespace minirt::cuda

extern "C" __attribute__((visibility("default"))) const MinirtCudaModuleTable* minirt_cuda_module(void) {
  static const MinirtCudaModuleTable table = minirt::cuda::make_table();
  return &table;
}
