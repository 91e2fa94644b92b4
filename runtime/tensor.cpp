#include <minirt/error.h>
#include <minirt/tensor.h>

#include "runtime/host_memory.h"
#include "runtime/host_resources.h"

#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

namespace minirt {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "invalid argument";
    case ErrorCode::kNotFound:
      return "not found";
    case ErrorCode::kInvalidModel:
      return "invalid model";
    case ErrorCode::kUnsupported:
      return "unsupported";
    case ErrorCode::kOutOfMemory:
      return "out of memory";
    case ErrorCode::kDeviceUnavailable:
      return "device unavailable";
    case ErrorCode::kInternal:
      return "internal error";
    case ErrorCode::kResourceExhausted:
      return "resource exhausted";
    case ErrorCode::kDeadlineExceeded:
      return "deadline exceeded";
  }
  return "error";
}

size_t dtype_size(DType t) {
  switch (t) {
    case DType::kFloat32:
      return 4;
    case DType::kUInt8:
      return 1;
    case DType::kInt8:
      return 1;
    case DType::kUInt16:
      return 2;
    case DType::kInt16:
      return 2;
    case DType::kInt32:
      return 4;
    case DType::kInt64:
      return 8;
    case DType::kBool:
      return 1;
    case DType::kFloat16:
      return 2;
    case DType::kFloat64:
      return 8;
    case DType::kUInt32:
      return 4;
    case DType::kUInt64:
      return 8;
    case DType::kBFloat16:
      return 2;
    default:
      return 0;
  }
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kUndefined:
      return "undefined";
    case DType::kFloat32:
      return "float32";
    case DType::kUInt8:
      return "uint8";
    case DType::kInt8:
      return "int8";
    case DType::kUInt16:
      return "uint16";
    case DType::kInt16:
      return "int16";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
    case DType::kString:
      return "string";
    case DType::kBool:
      return "bool";
    case DType::kFloat16:
      return "float16";
    case DType::kFloat64:
      return "float64";
    case DType::kUInt32:
      return "uint32";
    case DType::kUInt64:
      return "uint64";
    case DType::kBFloat16:
      return "bfloat16";
  }
  // ONNX element types minirt has no DType for (TensorProto.DataType's
  // numbers), named so that a refusal says which one.
  switch (static_cast<int>(t)) {
    case 14:
      return "complex64";
    case 15:
      return "complex128";
    case 17:
      return "float8e4m3fn";
    case 18:
      return "float8e4m3fnuz";
    case 19:
      return "float8e5m2";
    case 20:
      return "float8e5m2fnuz";
    case 21:
      return "uint4";
    case 22:
      return "int4";
    case 23:
      return "float4e2m1";
    case 24:
      return "float8e8m0";
    case 25:
      return "uint2";
    case 26:
      return "int2";
    case 27:
      return "float6e2m3";
    case 28:
      return "float6e3m2";
    default:
      return "unknown";
  }
}

bool dtype_supported(DType t) {
  switch (t) {
    case DType::kFloat32:
    case DType::kInt64:
    case DType::kInt32:
    case DType::kBool:
    case DType::kUInt8:
    case DType::kInt8:
      return true;
    default:
      return false;
  }
}

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string shape_str(const Shape& s) {
  if (s.empty()) return "scalar";
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += 'x';
    out += std::to_string(s[i]);
  }
  return out;
}

namespace {
// Refuses sizes that cannot be real before asking the allocator.
size_t checked_bytes(DType dtype, const Shape& shape) {
  size_t es = dtype_size(dtype);
  if (es == 0)
    throw Error(ErrorCode::kUnsupported, std::string("tensors of dtype ") + dtype_name(dtype) + " are not supported");
  unsigned __int128 n = es;
  for (int64_t d : shape) {
    if (d < 0) throw Error(ErrorCode::kInvalidArgument, "negative dimension in shape " + shape_str(shape));
    n *= static_cast<unsigned __int128>(d);
    if (n > (static_cast<unsigned __int128>(1) << 46))
      throw Error(ErrorCode::kOutOfMemory, "tensor of shape " + shape_str(shape) + " is too large to allocate");
  }
  return static_cast<size_t>(n);
}
}  // namespace

Tensor Tensor::zeros(DType dtype, Shape shape) {
  size_t bytes = checked_bytes(dtype, shape);
  size_t alloc = ((bytes + 63) / 64) * 64;
  if (alloc == 0) alloc = 64;
  if (alloc >= kHostRoomCheckBytes) check_host_room(alloc, "a tensor of shape " + shape_str(shape));
  bool zeroed = false;
  void* p = host_alloc(alloc, &zeroed);
  if (!p)
    throw Error(ErrorCode::kOutOfMemory,
                "could not allocate " + std::to_string(bytes) + " bytes for a tensor of shape " + shape_str(shape));
  if (!zeroed) std::memset(p, 0, alloc);
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.owner_ = std::shared_ptr<void>(p, [alloc](void* q) { host_free(q, alloc); });
  t.data_ = p;
  return t;
}

Tensor Tensor::wrap(DType dtype, Shape shape, void* data) {
  checked_bytes(dtype, shape);
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.data_ = data;
  return t;
}

Tensor Tensor::share(DType dtype, Shape shape, std::shared_ptr<const void> owner, const void* data) {
  checked_bytes(dtype, shape);
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.owner_ = std::move(owner);
  t.data_ = const_cast<void*>(data);
  return t;
}

Tensor Tensor::clone() const {
  Tensor t = zeros(dtype_, shape_);
  if (nbytes()) std::memcpy(t.data_, data_, nbytes());
  return t;
}

Tensor Tensor::reshaped(Shape shape) const {
  if (shape_numel(shape) != numel())
    throw Error(ErrorCode::kInvalidArgument, "cannot view " + shape_str(shape_) + " as " + shape_str(shape));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

}  // namespace minirt
