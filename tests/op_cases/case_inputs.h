// The inputs of an op case (an ONNX backend-test folder: model.onnx and
// test_data_set_0/input_K.pb), named as the model declares them, for the
// test-side tools that run the cases (support_matrix.cpp, op_harness.cpp).
//
//   auto model = Model::load((dir / "model.onnx").string());
//   NamedTensors in = case_inputs(dir, *model);  // throws when the folder has no data set
#pragma once

#include <minirt/minirt.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "loaders/onnx/onnx_loader.h"
#include "tools/cli_util.h"

namespace minirt::testing {

inline NamedTensors case_inputs(const std::filesystem::path& dir, const Model& model) {
  std::vector<std::string> sets = tools::numbered_entries(dir.string(), "test_data_set_");
  if (sets.empty()) throw std::runtime_error("no test_data_set_* folder");
  std::vector<std::string> files = tools::numbered_entries(sets[0], "input_");
  const auto& declared = model.inputs();
  NamedTensors inputs;
  for (size_t i = 0; i < files.size() && i < declared.size(); ++i) {
    std::string name;
    Tensor t = onnx::load_tensor_file(files[i], &name);
    bool known = std::any_of(declared.begin(), declared.end(), [&](const ValueDesc& d) { return d.name == name; });
    inputs.emplace_back(known ? name : declared[i].name, std::move(t));
  }
  return inputs;
}

}  // namespace minirt::testing
