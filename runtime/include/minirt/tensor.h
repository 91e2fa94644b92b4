// minirt/tensor.h: a dense, row-major tensor that owns its memory or wraps
// memory the caller owns.
//
//   minirt::Tensor x = minirt::Tensor::zeros(minirt::DType::kFloat32, {1, 3, 224, 224});
//   float* p = x.data<float>();
//   std::vector<float> mine(10);
//   auto view = minirt::Tensor::wrap(minirt::DType::kFloat32, {10}, mine.data());  // no copy
#pragma once

#include <minirt/export.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace minirt {

// Values are ONNX's TensorProto.DataType numbers.
enum class DType : int32_t {
  kUndefined = 0,
  kFloat32 = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kFloat64 = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kBFloat16 = 16,
};

// Size in bytes of one element; 0 for types minirt cannot hold in a Tensor.
MINIRT_API size_t dtype_size(DType t);
// ONNX-style name: "float32", "int64", ...
MINIRT_API const char* dtype_name(DType t);
// True for the element types minirt computes with.
MINIRT_API bool dtype_supported(DType t);

using Shape = std::vector<int64_t>;

MINIRT_API int64_t shape_numel(const Shape& s);
MINIRT_API std::string shape_str(const Shape& s);  // "1x3x224x224"; "scalar" for rank 0

class MINIRT_API Tensor {
 public:
  Tensor() = default;

  // A new tensor owning zero-initialized memory (64-byte aligned).
  static Tensor zeros(DType dtype, Shape shape);
  // A view of caller-owned memory; the caller keeps it alive while in use.
  static Tensor wrap(DType dtype, Shape shape, void* data);
  // A tensor that keeps `owner` alive and reads from `data`.
  static Tensor share(DType dtype, Shape shape, std::shared_ptr<const void> owner, const void* data);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t numel() const { return shape_numel(shape_); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  bool empty() const { return dtype_ == DType::kUndefined; }

  void* raw() const { return data_; }
  template <typename T>
  T* data() const {
    return static_cast<T*>(data_);
  }

  // A deep copy that owns its memory.
  Tensor clone() const;
  // Same memory, another shape with the same element count.
  Tensor reshaped(Shape shape) const;

 private:
  DType dtype_ = DType::kUndefined;
  Shape shape_;
  std::shared_ptr<const void> owner_;
  void* data_ = nullptr;
};

}  // namespace minirt
