// Builds small ONNX models in memory for tests, through the project's own
// proto classes.
//
//   ModelBuilder m(13);
//   m.input("x", DType::kFloat32, {1, 3, 8, 8});
//   m.initializer("w", weights_tensor);
//   m.node("Conv", {"x", "w"}, {"y"}, "conv0").ints("pads", {1, 1, 1, 1});
//   m.output("y");
//   std::string bytes = m.bytes();
#pragma once

#include <minirt/tensor.h>

#include "loaders/onnx/onnx_subset.pb.h"

#include <initializer_list>
#include <string>
#include <vector>

namespace minirt::testing {

class NodeRef {
 public:
  explicit NodeRef(onnx::NodeProto* n) : n_(n) {}
  NodeRef& i(const std::string& name, int64_t v) {
    auto* a = add(name, onnx::AttributeProto::INT);
    a->set_i(v);
    return *this;
  }
  NodeRef& f(const std::string& name, float v) {
    auto* a = add(name, onnx::AttributeProto::FLOAT);
    a->set_f(v);
    return *this;
  }
  NodeRef& s(const std::string& name, const std::string& v) {
    auto* a = add(name, onnx::AttributeProto::STRING);
    a->set_s(v);
    return *this;
  }
  NodeRef& ints(const std::string& name, std::initializer_list<int64_t> v) {
    auto* a = add(name, onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
    return *this;
  }
  NodeRef& tensor(const std::string& name, const Tensor& t);

 private:
  onnx::AttributeProto* add(const std::string& name, onnx::AttributeProto::AttributeType type) {
    auto* a = n_->add_attribute();
    a->set_name(name);
    a->set_type(type);
    return a;
  }
  onnx::NodeProto* n_;
};

inline void fill_tensor_proto(onnx::TensorProto* tp, const std::string& name, const Tensor& t) {
  tp->set_name(name);
  tp->set_data_type(static_cast<int32_t>(t.dtype()));
  for (int64_t d : t.shape()) tp->add_dims(d);
  tp->set_raw_data(t.raw(), t.nbytes());
}

inline NodeRef& NodeRef::tensor(const std::string& name, const Tensor& t) {
  auto* a = add(name, onnx::AttributeProto::TENSOR);
  fill_tensor_proto(a->mutable_t(), name, t);
  return *this;
}

class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 13, int64_t ir_version = 8) {
    m_.set_ir_version(ir_version);
    m_.set_producer_name("minirt-tests");
    auto* os = m_.add_opset_import();
    os->set_domain("");
    os->set_version(opset);
    m_.mutable_graph()->set_name("test");
  }
  // dims: -1 for a symbolic dimension named by `params` (same index) or unnamed.
  ModelBuilder& input(const std::string& name, DType dtype, std::vector<int64_t> dims,
                      std::vector<std::string> params = {}) {
    value_info(m_.mutable_graph()->add_input(), name, dtype, dims, params);
    return *this;
  }
  ModelBuilder& output(const std::string& name, DType dtype = DType::kFloat32) {
    auto* vi = m_.mutable_graph()->add_output();
    vi->set_name(name);
    vi->mutable_type()->mutable_tensor_type()->set_elem_type(static_cast<int32_t>(dtype));
    return *this;
  }
  // An output with a declared shape (dims as for input()).
  ModelBuilder& output(const std::string& name, DType dtype, std::vector<int64_t> dims,
                       std::vector<std::string> params = {}) {
    value_info(m_.mutable_graph()->add_output(), name, dtype, dims, params);
    return *this;
  }
  ModelBuilder& initializer(const std::string& name, const Tensor& t) {
    fill_tensor_proto(m_.mutable_graph()->add_initializer(), name, t);
    return *this;
  }
  NodeRef node(const std::string& op, std::vector<std::string> inputs, std::vector<std::string> outputs,
               const std::string& name = "") {
    auto* n = m_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (auto& s : inputs) n->add_input(s);
    for (auto& s : outputs) n->add_output(s);
    return NodeRef(n);
  }
  onnx::ModelProto& proto() { return m_; }
  std::string bytes() const { return m_.SerializeAsString(); }

 private:
  static void value_info(onnx::ValueInfoProto* vi, const std::string& name, DType dtype,
                         const std::vector<int64_t>& dims, const std::vector<std::string>& params) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(static_cast<int32_t>(dtype));
    auto* shape = tt->mutable_shape();
    for (size_t i = 0; i < dims.size(); ++i) {
      auto* d = shape->add_dim();
      if (dims[i] >= 0)
        d->set_dim_value(dims[i]);
      else if (i < params.size() && !params[i].empty())
        d->set_dim_param(params[i]);
    }
  }
  onnx::ModelProto m_;
};

// A float tensor with values start, start+step, ...
inline Tensor iota(Shape shape, float start = 0.0f, float step = 1.0f) {
  Tensor t = Tensor::zeros(DType::kFloat32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = start + step * static_cast<float>(i);
  return t;
}

// Deterministic values in [-1, 1) of a shape (a linear congruential
// sequence from `seed`), for inputs and weights of small test graphs.
inline Tensor noise(Shape shape, uint32_t seed) {
  Tensor t = Tensor::zeros(DType::kFloat32, std::move(shape));
  uint32_t x = seed * 2654435761u + 7;
  for (int64_t i = 0; i < t.numel(); ++i) {
    x = x * 1664525u + 1013904223u;
    t.data<float>()[i] = static_cast<float>(x >> 8) / 8388608.0f - 1.0f;
  }
  return t;
}

inline Tensor ints64(std::vector<int64_t> v) {
  Tensor t = Tensor::zeros(DType::kInt64, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
  return t;
}

}  // namespace minirt::testing
