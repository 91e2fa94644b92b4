// The opset versions at which ONNX defined or changed each op minirt
// implements: facts from onnx.defs (ONNX's operator changelog), one line per
// op. A model importing opset N uses, for each op, the newest version at or
// below N (op_version_at). tests/op_versions_test.py compares this table with
// the onnx package of the tooling venv, so an ONNX release that gives a
// supported op a new version fails CI until the table (and, where the new
// version changes what the op computes, its schema) follows.
//
// Versions that only add element types minirt does not run (float8, float4,
// int4, int2, bfloat16 for some ops) take the same code path as the version
// before; where a version changes behaviour, the op's parse or infer function
// checks ctx.opset() (e.g. SpaceToDepth's mode from 28, Mod of floats with
// fmod=0 from 28) and says what it does not implement.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace minirt {

// The op's versions in ascending order; null for an op minirt does not know.
const std::vector<int>* op_versions(const std::string& op);
// The version of `op` a model importing default-domain opset `opset` uses;
// 0 when the op did not exist yet at that opset.
int op_version_at(const std::string& op, int64_t opset);
// Every op of the table, for tests.
std::vector<std::string> op_version_table_ops();

}  // namespace minirt
