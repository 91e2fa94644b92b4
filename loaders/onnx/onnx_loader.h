// The ONNX loader: reads an ONNX file (a subset of the IR, parsed with our own
// onnx_subset.proto), converts it to minirt's Graph and validates it.
//
//   Graph g = onnx::load_file("model.onnx");   // throws minirt::Error
//   Tensor t = onnx::load_tensor_file("input_0.pb");
//
// Every error names the file, and the node and op where there is one.
#pragma once

#include "runtime/graph.h"

#include <string>

namespace minirt::onnx {

Graph load_file(const std::string& path);
Graph load_bytes(const void* data, size_t size, const std::string& name);

// A serialized TensorProto (the ONNX test-data format: input_0.pb, output_0.pb).
// `name`, when not null, receives the tensor's name.
Tensor load_tensor_file(const std::string& path, std::string* name = nullptr);
Tensor parse_tensor_bytes(const void* data, size_t size, const std::string& context, std::string* name = nullptr);
// Serializes a tensor as a TensorProto with raw_data.
std::string serialize_tensor(const Tensor& t, const std::string& name);

// Reads a whole file; kNotFound with the reason when it cannot.
std::string read_file_bytes(const std::string& path);

}  // namespace minirt::onnx
