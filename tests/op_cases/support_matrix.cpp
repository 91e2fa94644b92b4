// minirt-support-matrix: which backend runs what, over the op cases
// (tests/op_cases/make_op_cases.py's ONNX backend-test folders), on any
// machine: the CPU column runs each case on the CPU; the CUDA column asks the
// CUDA backend's support table (kernels/cuda/support.cpp, no CUDA call)
// about each node as the planner would place it, through a device that
// records the answer and declines, so the CPU runs everything.
//
//   minirt-support-matrix DIR...          # one markdown row per op
//   minirt-support-matrix --cases DIR...  # one markdown row per case and node
//
// Row per op: | op | cases | cpu | cuda | cuda input ranks | why not on cuda |:
// cpu and cuda count the cases (all, none or k of n); "input ranks" are
// the ranks of the first input of the nodes cuda takes; a node the planner
// removes or folds before placement (Identity, Dropout, Shape of a fixed
// shape) is never asked and counts as "not placed". kernels/cuda/README.md's GPU table
// is checked against this (tests/op_cases/check_gpu_table.py, ctest
// conformance.gpu_support_matrix). It is a test-side tool, not an installed
// one: it needs the session's internal device hook and the support table's
// source. Exit status: 0, or 2 on bad usage or no cases.
#include <minirt/minirt.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kernels/cuda/support.h"
#include "loaders/onnx/onnx_loader.h"
#include "loaders/onnx/onnx_subset.pb.h"
#include "runtime/api/session_internal.h"
#include "runtime/op_registry.h"
#include "tests/op_cases/case_inputs.h"
#include "tests/unit/declining_device.h"
#include "tools/cli_util.h"

namespace fs = std::filesystem;
using namespace minirt;

namespace {

struct Answer {
  std::string op;
  bool ok = false;
  std::string why;
  size_t rank = 0;  // of the first input
};

// A device that asks cuda_supports about every node it is offered, records
// the answer and declines: the plan stays on the CPU.
class SupportProbe final : public minirt::testing::DecliningDevice {
 public:
  bool supports(const Graph& g, const Node& n, std::string* why) const override {
    Answer a;
    a.op = n.op;
    a.ok = cuda::cuda_supports(g, n, &a.why);
    if (!n.inputs.empty() && n.inputs[0] >= 0) a.rank = g.values[n.inputs[0]].shape.size();
    // Placement asks each node once per plan; cpu_alone may ask before it.
    std::string key = n.name + "\x1f" + n.op + "\x1f" + std::to_string(&n - g.nodes.data());
    if (seen.insert(key).second) answers.push_back(a);
    if (why) *why = a.why;
    return false;
  }
  mutable std::vector<Answer> answers;
  mutable std::set<std::string> seen;
};

struct CaseResult {
  std::string name;
  std::vector<std::string> ops;  // of model.onnx's nodes, in order
  bool cpu_ok = false;
  std::string cpu_why;
  std::vector<Answer> answers;
};

std::string first_line(std::string s) {
  size_t at = s.find("model.onnx: ");
  if (at != std::string::npos) s = s.substr(at + 12);
  s = s.substr(0, s.find('\n'));
  std::replace(s.begin(), s.end(), '|', '/');
  return s;
}

CaseResult run_case(const fs::path& dir) {
  CaseResult r;
  r.name = dir.filename().string();
  onnx::ModelProto mp;
  if (mp.ParseFromString(onnx::read_file_bytes((dir / "model.onnx").string())))
    for (const auto& n : mp.graph().node()) r.ops.push_back(n.op_type());
  try {
    auto model = Model::load((dir / "model.onnx").string());
    Session s(model, {.device = Device::kCpu, .threads = 1, .optimize = false});
    auto probe = std::make_shared<SupportProbe>();
    SessionInternals::add_device(s, probe);
    NamedTensors inputs = minirt::testing::case_inputs(dir, *model);
    try {
      s.run(inputs);
      r.cpu_ok = true;
    } catch (const std::exception& e) {
      r.cpu_why = first_line(e.what());
    }
    r.answers = probe->answers;
  } catch (const std::exception& e) {
    r.cpu_why = first_line(e.what());
  }
  return r;
}

std::string count_cell(int k, int n) {
  if (n == 0) return "-";
  if (k == n) return "all " + std::to_string(n);
  if (k == 0) return "none";
  return std::to_string(k) + " of " + std::to_string(n);
}

void usage(std::FILE* f) {
  std::fprintf(f,
               "usage: minirt-support-matrix [--cases] DIR...\n"
               "  DIR is an op case (model.onnx + test_data_set_*) or a folder of them\n"
               "  (tests/op_cases/make_op_cases.py --out DIR makes them).\n"
               "  Prints the CPU/CUDA support matrix as markdown: one row per op, or with\n"
               "  --cases one row per case and node. Needs no GPU.\n");
}

}  // namespace

int main(int argc, char** argv) {
  bool per_case = false;
  std::vector<std::string> dirs;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      usage(stdout);
      return 0;
    }
    if (a == "--cases") {
      per_case = true;
      continue;
    }
    if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "minirt-support-matrix: unknown option %s\n", a.c_str());
      usage(stderr);
      return 2;
    }
    dirs.push_back(a);
  }
  std::string bad;
  std::optional<std::vector<std::string>> found = tools::case_folders(dirs, &bad);
  if (!found) {
    std::fprintf(stderr, "minirt-support-matrix: %s\n", bad.c_str());
    return 2;
  }
  std::vector<fs::path> cases(found->begin(), found->end());
  if (cases.empty()) {
    usage(stderr);
    return 2;
  }

  std::vector<CaseResult> results;
  for (const auto& c : cases) results.push_back(run_case(c));

  if (per_case) {
    std::printf("| case | op | cpu | cuda | why not |\n| --- | --- | --- | --- | --- |\n");
    for (const auto& r : results) {
      std::string cpu = r.cpu_ok ? "yes" : "no";
      if (r.answers.empty())
        std::printf("| %s | %s | %s | not placed | %s |\n", r.name.c_str(), r.ops.empty() ? "?" : r.ops[0].c_str(),
                    cpu.c_str(),
                    !r.cpu_ok ? r.cpu_why.c_str()
                    : r.ops.size() == 1 && find_schema(r.ops[0]) && find_schema(r.ops[0])->value_sized
                        ? "runs on the host between plan stages"
                        : "removed or folded before placement");
      for (const auto& a : r.answers)
        std::printf("| %s | %s | %s | %s | %s |\n", r.name.c_str(), a.op.c_str(), cpu.c_str(), a.ok ? "yes" : "no",
                    !r.cpu_ok ? ("cpu: " + r.cpu_why).c_str()
                    : a.ok    ? ""
                              : first_line(a.why).c_str());
    }
    return 0;
  }

  struct Row {
    int cases = 0, cpu = 0, cuda = 0, not_placed = 0;
    std::set<size_t> ranks;
    std::map<std::string, int> why;  // reason -> cases
  };
  std::map<std::string, Row> rows;
  for (const auto& r : results) {
    std::set<std::string> ops(r.ops.begin(), r.ops.end());
    for (const auto& op : ops) {
      Row& row = rows[op];
      ++row.cases;
      if (r.cpu_ok) ++row.cpu;
      bool asked = false, all_ok = true;
      std::string why;
      for (const auto& a : r.answers) {
        if (a.op != op) continue;
        asked = true;
        if (a.ok)
          row.ranks.insert(a.rank);
        else if (all_ok) {
          all_ok = false;
          why = first_line(a.why);
        }
      }
      if (!asked) {
        ++row.not_placed;
        const OpSchema* schema = find_schema(op);
        row.why[!r.cpu_ok                       ? "not placed: the CPU refuses it"
                : schema && schema->value_sized ? "not placed: runs on the host between plan stages"
                                                : "not placed: removed or folded before placement"]++;
      } else if (all_ok) {
        ++row.cuda;
      } else {
        row.why[why]++;
      }
    }
  }
  std::printf(
      "| op | cases | cpu | cuda | cuda input ranks | why not on cuda |\n| --- | --- | --- | --- | --- | --- |\n");
  for (const auto& [op, row] : rows) {
    std::string ranks, why;
    for (size_t k : row.ranks) ranks += (ranks.empty() ? "" : ", ") + std::to_string(k);
    for (const auto& [w, n] : row.why) why += (why.empty() ? "" : "; ") + w + " (" + std::to_string(n) + ")";
    std::printf("| %s | %d | %s | %s | %s | %s |\n", op.c_str(), row.cases, count_cell(row.cpu, row.cases).c_str(),
                count_cell(row.cuda, row.cases).c_str(), ranks.c_str(), why.c_str());
  }
  return 0;
}
