// A GPU module without CUDA, for the loader's tests (tests/gpu/test_module_table.cpp):
// it exports minirt_cuda_module() with a function table (runtime/gpu/module_api.h)
// whose version and extent MINIRT_FAKE_MODULE picks at call time:
//   old      this major, only the required entries (a module of an older minor)
//   newer    this major, a later minor with more bytes than this minirt knows
//   major    the next major version
//   small    a table that ends before its required entries
//   hole     every entry, but kernel_run is null
// Its "device" is host memory; its kernel writes 42 into its first output
// (float), and a node named "fail" is refused with kUnsupported (4).
#include <cstdlib>
#include <cstring>
#include <new>

#include "fake_env.h"
#include "runtime/gpu/module_api.h"

namespace {

struct FakeProvider {
  int streams = 0;
};
struct FakeKernel {
  int runs = 0;
};

FakeProvider* fp(MinirtCudaProvider* p) { return reinterpret_cast<FakeProvider*>(p); }
FakeKernel* fk(MinirtCudaKernel* k) { return reinterpret_cast<FakeKernel*>(k); }

void put(char* dst, size_t size, const char* s) {
  if (!dst || !size) return;
  std::strncpy(dst, s, size - 1);
  dst[size - 1] = 0;
}

// The table as a module of a later minor would have it: this minirt's
// entries, then one it does not know.
struct NewerTable {
  MinirtCudaModuleTable known;
  void (*appended)(void);
};

MinirtCudaModuleTable required_entries() {
  MinirtCudaModuleTable t{};
  t.size = static_cast<uint32_t>(kMinirtCudaTableRequiredSize);
  t.abi_major = MINIRT_CUDA_ABI_MAJOR;
  t.abi_minor = 0;
  t.create = [](const MinirtCudaOptions* o, char* error, size_t error_size, char* description,
                size_t description_size) -> MinirtCudaProvider* {
    if (!o || o->abi_major != MINIRT_CUDA_ABI_MAJOR) {
      put(error, error_size, "fake: options of another interface");
      return nullptr;
    }
    put(description, description_size, "fake GPU (host memory)");
    return reinterpret_cast<MinirtCudaProvider*>(new FakeProvider);
  };
  t.destroy = [](MinirtCudaProvider* p) { delete fp(p); };
  t.name = [](MinirtCudaProvider*) { return "fakegpu"; };
  t.supports = [](MinirtCudaProvider*, const minirt::Graph*, const minirt::Node*, std::string*, int32_t* out,
                  std::string*) {
    *out = 1;
    return MinirtCudaStatus{kMinirtCudaOk};
  };
  t.make_kernel = [](MinirtCudaProvider*, const minirt::Graph*, const minirt::Node* n, MinirtCudaKernel** out,
                     std::string* error) {
    if (n->name == "fail") {
      *error = "fake: no kernel for node fail";
      return MinirtCudaStatus{4};
    }
    *out = reinterpret_cast<MinirtCudaKernel*>(new FakeKernel);
    return MinirtCudaStatus{kMinirtCudaOk};
  };
  t.is_device = [](MinirtCudaProvider*) { return int32_t{1}; };
  t.allocate = [](MinirtCudaProvider*, size_t bytes) { return std::malloc(bytes); };
  t.deallocate = [](MinirtCudaProvider*, void* ptr, size_t) { std::free(ptr); };
  t.free_memory = [](MinirtCudaProvider*) { return size_t{1} << 20; };
  t.allocator_name = [](MinirtCudaProvider*, std::string* out) { *out = "fake memory"; };
  t.copy_to_device = [](MinirtCudaProvider*, void* dst, const void* src, size_t bytes, void*, std::string*) {
    std::memcpy(dst, src, bytes);
    return MinirtCudaStatus{kMinirtCudaOk};
  };
  t.copy_to_host = t.copy_to_device;
  t.create_stream = [](MinirtCudaProvider* p, void** out, std::string*) {
    ++fp(p)->streams;
    *out = new int(0);
    return MinirtCudaStatus{kMinirtCudaOk};
  };
  t.destroy_stream = [](MinirtCudaProvider* p, void* stream) {
    --fp(p)->streams;
    delete static_cast<int*>(stream);
  };
  t.synchronize = [](MinirtCudaProvider*, void*, std::string*) { return MinirtCudaStatus{kMinirtCudaOk}; };
  t.upload = [](MinirtCudaProvider*, const minirt::Tensor*, void** data, void** handle, std::string*) {
    *data = *handle = std::malloc(16);
    return MinirtCudaStatus{kMinirtCudaOk};
  };
  t.release_upload = [](MinirtCudaProvider*, void* handle) { std::free(handle); };
  t.begin_run = [](MinirtCudaProvider*, void*, std::string*) { return MinirtCudaStatus{kMinirtCudaOk}; };
  t.end_run = t.begin_run;
  t.run_times = [](MinirtCudaProvider*, void*, minirt::DeviceRunTimes* out, std::string*) {
    *out = minirt::DeviceRunTimes{};
    return MinirtCudaStatus{kMinirtCudaOk};
  };
  t.kernel_destroy = [](MinirtCudaKernel* k) { delete fk(k); };
  t.kernel_run = [](MinirtCudaKernel* k, const minirt::KernelArgs* args, std::string*) {
    ++fk(k)->runs;
    *static_cast<float*>(args->outputs[0]) = 42.0f;
    return MinirtCudaStatus{kMinirtCudaOk};
  };
  return t;
}

MinirtCudaModuleTable every_entry() {
  MinirtCudaModuleTable t = required_entries();
  t.size = sizeof(MinirtCudaModuleTable);
  t.abi_minor = MINIRT_CUDA_ABI_MINOR;
  t.kernel_describe = [](MinirtCudaKernel* k, std::string* out) {
    *out = "fake kernel, " + std::to_string(fk(k)->runs) + " runs";
  };
  t.kernel_precision = [](MinirtCudaKernel*) { return "tf32"; };
  t.tuning_context = [](MinirtCudaProvider*, std::string* out, std::string*) {
    *out = "fakegpu | newer";
    return MinirtCudaStatus{kMinirtCudaOk};
  };
  t.channel_block = [](MinirtCudaProvider*) { return int32_t{0}; };
  return t;
}

}  // namespace

FAKE_API const MinirtCudaModuleTable* minirt_cuda_module(void) {
  const char* kind = fake::env_str("MINIRT_FAKE_MODULE", "old");
  if (!std::strcmp(kind, "newer")) {
    static NewerTable newer = [] {
      NewerTable n{every_entry(), [] {}};
      n.known.size = sizeof(NewerTable);
      n.known.abi_minor = MINIRT_CUDA_ABI_MINOR + 1;
      return n;
    }();
    return &newer.known;
  }
  static MinirtCudaModuleTable table;
  table = required_entries();
  if (!std::strcmp(kind, "major")) {
    table = every_entry();
    table.abi_major = MINIRT_CUDA_ABI_MAJOR + 1;
    table.abi_minor = 0;
  } else if (!std::strcmp(kind, "small")) {
    table.size = static_cast<uint32_t>(offsetof(MinirtCudaModuleTable, kernel_destroy));
  } else if (!std::strcmp(kind, "hole")) {
    table = every_entry();
    table.kernel_run = nullptr;
  }
  return &table;
}
