#include "runtime/gpu/module_provider.h"

#include <minirt/error.h>

#include <new>
#include <stdexcept>

namespace minirt::gpu {

namespace {

using Table = MinirtCudaModuleTable;

[[noreturn]] void rethrow(MinirtCudaStatus status, const std::string& message) {
  if (status == kMinirtCudaBadAlloc) throw std::bad_alloc();
  if (status > 0 && status < kMinirtCudaStdException) throw Error(static_cast<ErrorCode>(status), message);
  throw std::runtime_error(message);
}

void check(MinirtCudaStatus status, const std::string& message) {
  if (status != kMinirtCudaOk) rethrow(status, message);
}

// The module's provider; destroyed through the table with its last user.
struct Instance {
  const Table* t;
  MinirtCudaProvider* p;
  Instance(const Table* table, MinirtCudaProvider* provider) : t(table), p(provider) {}
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;
  ~Instance() { t->destroy(p); }
  template <typename Fn>
  bool has(Fn Table::*entry) const {
    return minirt_cuda_has(t, entry);
  }
};
using InstanceRef = std::shared_ptr<const Instance>;

class ModuleAllocator final : public RawAllocator {
 public:
  explicit ModuleAllocator(InstanceRef i) : i_(std::move(i)) {}
  void* allocate(size_t bytes) override { return i_->t->allocate(i_->p, bytes); }
  void deallocate(void* p, size_t bytes) override { i_->t->deallocate(i_->p, p, bytes); }
  size_t free_memory() const override { return i_->t->free_memory(i_->p); }
  std::string name() const override {
    std::string out;
    i_->t->allocator_name(i_->p, &out);
    return out;
  }
  size_t backed_room(std::string* detail) const override {
    if (!i_->has(&Table::backed_room)) return RawAllocator::backed_room(detail);
    return i_->t->backed_room(i_->p, detail);
  }

 private:
  InstanceRef i_;
};

class ModuleKernel final : public Kernel {
 public:
  ModuleKernel(InstanceRef i, MinirtCudaKernel* k) : i_(std::move(i)), k_(k) {}
  ~ModuleKernel() override { i_->t->kernel_destroy(k_); }
  void run(const KernelArgs& args) override {
    std::string e;
    check(i_->t->kernel_run(k_, &args, &e), e);
  }
  size_t workspace_bytes() const override {
    return i_->has(&Table::kernel_workspace_bytes) ? i_->t->kernel_workspace_bytes(k_) : Kernel::workspace_bytes();
  }
  std::string describe() const override {
    if (!i_->has(&Table::kernel_describe)) return Kernel::describe();
    std::string out;
    i_->t->kernel_describe(k_, &out);
    return out;
  }
  size_t own_constant_bytes() const override {
    return i_->has(&Table::kernel_own_constant_bytes) ? i_->t->kernel_own_constant_bytes(k_)
                                                      : Kernel::own_constant_bytes();
  }
  const char* precision() const override {
    const char* p = i_->has(&Table::kernel_precision) ? i_->t->kernel_precision(k_) : nullptr;
    return p ? p : Kernel::precision();
  }

 private:
  InstanceRef i_;
  MinirtCudaKernel* k_;
};

std::unique_ptr<Kernel> wrap_kernel(const InstanceRef& i, MinirtCudaKernel* k) {
  if (!k) return nullptr;
  return std::make_unique<ModuleKernel>(i, k);
}

class ModuleDevice final : public ComputeDevice {
 public:
  explicit ModuleDevice(const InstanceRef& i) : i_(i), allocator_(std::make_shared<ModuleAllocator>(i)) {}
  bool is_device() const override { return i_->t->is_device(i_->p) != 0; }
  std::shared_ptr<RawAllocator> allocator() const override { return allocator_; }
  void copy_to_device(void* dst, const void* src, size_t bytes, void* stream) const override {
    std::string e;
    check(i_->t->copy_to_device(i_->p, dst, src, bytes, stream, &e), e);
  }
  void copy_to_host(void* dst, const void* src, size_t bytes, void* stream) const override {
    std::string e;
    check(i_->t->copy_to_host(i_->p, dst, src, bytes, stream, &e), e);
  }
  void* create_stream() const override {
    std::string e;
    void* s = nullptr;
    check(i_->t->create_stream(i_->p, &s, &e), e);
    return s;
  }
  void destroy_stream(void* stream) const override { i_->t->destroy_stream(i_->p, stream); }
  void synchronize(void* stream) const override {
    std::string e;
    check(i_->t->synchronize(i_->p, stream, &e), e);
  }
  std::shared_ptr<void> upload(const Tensor& t) const override {
    std::string e;
    void* data = nullptr;
    void* handle = nullptr;
    check(i_->t->upload(i_->p, &t, &data, &handle, &e), e);
    InstanceRef i = i_;
    return std::shared_ptr<void>(data, [i, handle](void*) { i->t->release_upload(i->p, handle); });
  }
  void begin_run(void* stream) const override {
    std::string e;
    check(i_->t->begin_run(i_->p, stream, &e), e);
  }
  void end_run(void* stream) const override {
    std::string e;
    check(i_->t->end_run(i_->p, stream, &e), e);
  }
  DeviceRunTimes run_times(void* stream) const override {
    std::string e;
    DeviceRunTimes out;
    check(i_->t->run_times(i_->p, stream, &out, &e), e);
    return out;
  }
  void step_begun(void* stream, size_t step) const override {
    if (!i_->has(&Table::step_begun)) return ComputeDevice::step_begun(stream, step);
    std::string e;
    check(i_->t->step_begun(i_->p, stream, step, &e), e);
  }
  void step_ended(void* stream, size_t step) const override {
    if (!i_->has(&Table::step_ended)) return ComputeDevice::step_ended(stream, step);
    std::string e;
    check(i_->t->step_ended(i_->p, stream, step, &e), e);
  }
  std::vector<DeviceStepTime> step_times(void* stream) const override {
    if (!i_->has(&Table::step_times)) return ComputeDevice::step_times(stream);
    std::string e;
    std::vector<DeviceStepTime> out;
    check(i_->t->step_times(i_->p, stream, &out, &e), e);
    return out;
  }

 private:
  InstanceRef i_;
  std::shared_ptr<ModuleAllocator> allocator_;
};

class ModuleProvider final : public KernelProvider {
 public:
  explicit ModuleProvider(const InstanceRef& i) : i_(i), device_(i) {}

  const char* name() const override { return i_->t->name(i_->p); }
  const ComputeDevice& device() const override { return device_; }
  bool supports(const Graph& g, const Node& n, std::string* why) const override {
    std::string e;
    int32_t out = 0;
    check(i_->t->supports(i_->p, &g, &n, why, &out, &e), e);
    return out != 0;
  }
  std::unique_ptr<Kernel> make_kernel(const Graph& g, const Node& n) const override {
    std::string e;
    MinirtCudaKernel* k = nullptr;
    check(i_->t->make_kernel(i_->p, &g, &n, &k, &e), e);
    return wrap_kernel(i_, k);
  }
  bool reads_uploaded_constant(const Graph& g, const Node& n, size_t input) const override {
    if (!i_->has(&Table::reads_uploaded_constant)) return KernelProvider::reads_uploaded_constant(g, n, input);
    std::string e;
    int32_t out = 0;
    check(i_->t->reads_uploaded_constant(i_->p, &g, &n, input, &out, &e), e);
    return out != 0;
  }
  int channel_block() const override {
    if (!i_->has(&Table::channel_block)) return KernelProvider::channel_block();
    return i_->t->channel_block(i_->p);
  }
  bool blocked_inputs(const Graph& g, const Node& n, std::vector<LayoutNeed>* needs) const override {
    if (!i_->has(&Table::blocked_inputs)) return KernelProvider::blocked_inputs(g, n, needs);
    std::string e;
    int32_t out = 0;
    check(i_->t->blocked_inputs(i_->p, &g, &n, needs, &out, &e), e);
    return out != 0;
  }
  std::vector<AlgorithmOption> algorithms(const Graph& g, const Node& n) const override {
    if (!i_->has(&Table::algorithms)) return KernelProvider::algorithms(g, n);
    std::string e;
    std::vector<AlgorithmOption> out;
    check(i_->t->algorithms(i_->p, &g, &n, &out, &e), e);
    return out;
  }
  std::string heuristic_algorithm(const Graph& g, const Node& n) const override {
    if (!i_->has(&Table::heuristic_algorithm)) return KernelProvider::heuristic_algorithm(g, n);
    std::string e;
    std::string out;
    check(i_->t->heuristic_algorithm(i_->p, &g, &n, &out, &e), e);
    return out;
  }
  std::unique_ptr<Kernel> make_kernel_with(const Graph& g, const Node& n, const std::string& algorithm) const override {
    if (!i_->has(&Table::make_kernel_with)) return KernelProvider::make_kernel_with(g, n, algorithm);
    std::string e;
    MinirtCudaKernel* k = nullptr;
    check(i_->t->make_kernel_with(i_->p, &g, &n, &algorithm, &k, &e), e);
    return wrap_kernel(i_, k);
  }
  std::unique_ptr<Kernel> make_tuning_kernel(const Graph& g, const Node& n,
                                             const std::string& algorithm) const override {
    if (!i_->has(&Table::make_tuning_kernel)) return KernelProvider::make_tuning_kernel(g, n, algorithm);
    std::string e;
    MinirtCudaKernel* k = nullptr;
    check(i_->t->make_tuning_kernel(i_->p, &g, &n, &algorithm, &k, &e), e);
    return wrap_kernel(i_, k);
  }
  double keep_heuristic_within(const Graph& g, const Node& n, double usual) const override {
    if (!i_->has(&Table::keep_heuristic_within)) return KernelProvider::keep_heuristic_within(g, n, usual);
    std::string e;
    double out = usual;
    check(i_->t->keep_heuristic_within(i_->p, &g, &n, usual, &out, &e), e);
    return out;
  }
  std::string tuning_context() const override {
    if (!i_->has(&Table::tuning_context)) return KernelProvider::tuning_context();
    std::string e;
    std::string out;
    check(i_->t->tuning_context(i_->p, &out, &e), e);
    return out;
  }
  std::string math_note() const override {
    if (!i_->has(&Table::math_note)) return KernelProvider::math_note();
    std::string e;
    std::string out;
    check(i_->t->math_note(i_->p, &out, &e), e);
    return out;
  }
  int narrow_values(Graph& g, const std::map<int, std::string>& algorithm) const override {
    if (!i_->has(&Table::narrow_values)) return KernelProvider::narrow_values(g, algorithm);
    std::string e;
    int32_t out = 0;
    check(i_->t->narrow_values(i_->p, &g, &algorithm, &out, &e), e);
    return out;
  }
  int fuse_chosen(Graph& g, const std::map<int, std::string>& algorithm, const std::vector<int>& order) const override {
    if (!i_->has(&Table::fuse_chosen)) return KernelProvider::fuse_chosen(g, algorithm, order);
    std::string e;
    int32_t out = 0;
    check(i_->t->fuse_chosen(i_->p, &g, &algorithm, &order, &out, &e), e);
    return out;
  }
  std::vector<double> measure_algorithms(const Graph& g, const Node& n, const std::vector<AlgorithmOption>& candidates,
                                         size_t workspace_limit) const override {
    if (!i_->has(&Table::measure_algorithms))
      return KernelProvider::measure_algorithms(g, n, candidates, workspace_limit);
    std::string e;
    std::vector<double> out;
    check(i_->t->measure_algorithms(i_->p, &g, &n, &candidates, workspace_limit, &out, &e), e);
    return out;
  }

 private:
  InstanceRef i_;
  ModuleDevice device_;
};

}  // namespace

std::string module_abi_text(const MinirtCudaModuleTable* t) {
  return std::to_string(t->abi_major) + "." + std::to_string(t->abi_minor);
}

std::string check_module_table(const MinirtCudaModuleTable* t, const std::string& path) {
  const std::string ours = std::to_string(MINIRT_CUDA_ABI_MAJOR) + "." + std::to_string(MINIRT_CUDA_ABI_MINOR);
  const std::string what_to_do = "; use the libminirt_cuda.so built with this minirt";
  if (!t) return path + " is not a minirt GPU module (its " + kMinirtCudaModuleSymbol + " returned no table)";
  if (t->abi_major != MINIRT_CUDA_ABI_MAJOR)
    return "the GPU module " + path + " speaks module interface " + module_abi_text(t) + ", this minirt speaks " +
           ours + " (another major version: the entries mean other things)" + what_to_do;
  if (t->size < kMinirtCudaTableRequiredSize)
    return "the GPU module " + path + " speaks module interface " + module_abi_text(t) +
           " but its function table has " + std::to_string(t->size) + " bytes, fewer than the " +
           std::to_string(kMinirtCudaTableRequiredSize) + " of the entries this minirt (" + ours + ") requires" +
           what_to_do;
  const char* missing = nullptr;
#define MINIRT_REQUIRED_ENTRY(e) \
  if (!missing && !t->e) missing = #e;
  MINIRT_REQUIRED_ENTRY(create)
  MINIRT_REQUIRED_ENTRY(destroy)
  MINIRT_REQUIRED_ENTRY(name)
  MINIRT_REQUIRED_ENTRY(supports)
  MINIRT_REQUIRED_ENTRY(make_kernel)
  MINIRT_REQUIRED_ENTRY(is_device)
  MINIRT_REQUIRED_ENTRY(allocate)
  MINIRT_REQUIRED_ENTRY(deallocate)
  MINIRT_REQUIRED_ENTRY(free_memory)
  MINIRT_REQUIRED_ENTRY(allocator_name)
  MINIRT_REQUIRED_ENTRY(copy_to_device)
  MINIRT_REQUIRED_ENTRY(copy_to_host)
  MINIRT_REQUIRED_ENTRY(create_stream)
  MINIRT_REQUIRED_ENTRY(destroy_stream)
  MINIRT_REQUIRED_ENTRY(synchronize)
  MINIRT_REQUIRED_ENTRY(upload)
  MINIRT_REQUIRED_ENTRY(release_upload)
  MINIRT_REQUIRED_ENTRY(begin_run)
  MINIRT_REQUIRED_ENTRY(end_run)
  MINIRT_REQUIRED_ENTRY(run_times)
  MINIRT_REQUIRED_ENTRY(kernel_destroy)
  MINIRT_REQUIRED_ENTRY(kernel_run)
#undef MINIRT_REQUIRED_ENTRY
  if (missing)
    return "the GPU module " + path + " speaks module interface " + module_abi_text(t) +
           " but leaves its required entry " + missing + " empty" + what_to_do;
  return {};
}

std::shared_ptr<KernelProvider> wrap_module_provider(const MinirtCudaModuleTable* table, MinirtCudaProvider* p) {
  auto instance = std::make_shared<const Instance>(table, p);
  return std::make_shared<ModuleProvider>(instance);
}

}  // namespace minirt::gpu
