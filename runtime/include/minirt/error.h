// minirt/error.h: the one exception type minirt throws across its API.
//
//   try {
//     auto model = minirt::Model::load("resnet18.onnx");
//   } catch (const minirt::Error& e) {
//     std::cerr << e.what() << "\n";          // names file, node and op
//     if (e.code() == minirt::ErrorCode::kUnsupported) { ... }
//   }
#pragma once

#include <minirt/export.h>

#include <stdexcept>
#include <string>

namespace minirt {

enum class ErrorCode {
  kInvalidArgument = 1,  // bad input at the API: names, shapes, dtypes, buffers
  kNotFound = 2,         // a file that is missing or cannot be read
  kInvalidModel = 3,     // a file that is not a well-formed ONNX model
  kUnsupported = 4,      // a well-formed model using something minirt does not implement
  kOutOfMemory = 5,      // an allocation that could not be met
  kDeviceUnavailable = 6,
  kInternal = 7,
  kResourceExhausted = 8,  // the machine refused a resource: threads could not be started
  kDeadlineExceeded = 9,   // a run took longer than SessionOptions::run_timeout_seconds
};

MINIRT_API const char* error_code_name(ErrorCode code);

class MINIRT_API Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace minirt
