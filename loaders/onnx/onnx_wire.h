// Where the initializers' raw bytes lie in a serialized ModelProto, found by
// a walk over the protobuf wire format of the three levels that hold them
// (ModelProto.graph -> GraphProto.initializer -> TensorProto.raw_data), so
// that the loader can read the weights in place, from the mapped file, and
// give protobuf only the rest of the model to parse:
//
//   RawDataSplit s;
//   if (split_raw_data(data, size, &s)) {
//     mp.ParseFromString(s.skeleton);     // each initializer's raw_data empty
//     RawSpan w = s.spans[i];             // initializer i's bytes: data + w.offset, w.size
//   }
//
// Every other field is copied as it is, so the skeleton parses to the same
// model but for the raw_data bytes. Internal to loaders/onnx/.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace minirt::onnx {

struct RawSpan {
  size_t offset = 0;
  size_t size = 0;
  bool present = false;  // false: the initializer has no raw_data field
};

struct RawDataSplit {
  std::string skeleton;        // the ModelProto with every initializer's raw_data emptied
  std::vector<RawSpan> spans;  // per initializer, in the order protobuf lists them
  size_t raw_bytes = 0;        // of all spans
};

// False when the bytes are not well-formed at the wire level where it looks
// (a truncated file, a length past the end, a group or an unknown wire
// type): the caller then gives protobuf the whole file, for its verdict.
bool split_raw_data(const unsigned char* data, size_t size, RawDataSplit* out);

}  // namespace minirt::onnx
