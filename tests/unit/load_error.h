// load_error(bytes, name): loads ONNX bytes as `name` and returns the Error
// it throws (its code and sentence, for the test to check); the test fails
// if the model loads.
#pragma once

#include <minirt/minirt.h>

#include <gtest/gtest.h>

#include <string>

namespace minirt::testing {

inline Error load_error(const std::string& bytes, const std::string& name = "bad.onnx") {
  try {
    Model::load_from_memory(bytes.data(), bytes.size(), name);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "loading " << name << " succeeded";
  return Error(ErrorCode::kInternal, "");
}

}  // namespace minirt::testing
