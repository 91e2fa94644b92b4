// minirt-chart: draws the tools' charts (tools/charts.h) from files, for
// the scripts and for charts of runs made elsewhere:
//   minirt-chart fallback ROWS.tsv OUT.svg   tools/fallback-demo.sh's chart
//   minirt-chart profile TRACE.json OUT.svg  runmodel --profile's trace as runmodel --profile-svg draws it
//   minirt-chart measure                     the width estimate the charts are laid out by, for the tests
// See --help for the formats and exit codes.
#include "tools/charts.h"
#include "tools/svg.h"
#include "tools/triton/json.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace minirt;

namespace {

enum Exit {
  kOk = 0,
  kUsage = 1,        // bad command line
  kInputError = 2,   // the input file is missing or malformed
  kOutputError = 5,  // the SVG file could not be written
};

const char* kHelp = R"(usage: minirt-chart fallback ROWS.tsv OUT.svg [--title TEXT]
       minirt-chart profile TRACE.json OUT.svg [--title TEXT]
       minirt-chart measure

fallback  the fallback demo's chart (tools/fallback-demo.sh writes ROWS.tsv):
          a scenario a line, tab-separated: id, what the machine has, the
          device the run went to (cpu, cuda, none), latency median in ms (or -),
          the speed-up text ("1.80x", "same device"), the outputs against the
          CPU's, the gate's sentence. Lines starting with '#' are skipped.
profile   the chart of runmodel --profile-svg from a Chrome trace written by
          runmodel --profile FILE.json (its events' args: op, shapes, device,
          clock, iteration).
measure   reads lines "SIZE<tab>BOLD<tab>TEXT" (BOLD 0 or 1) and prints the
          width in pixels each text is laid out with, one a line.

exit status
  0  success
  1  bad command line
  2  the input file is missing or malformed
  5  the SVG file could not be written
)";

struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InputError(path + ": cannot read it");
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::string field;
  std::istringstream ss(line);
  while (std::getline(ss, field, sep)) out.push_back(field);
  if (!line.empty() && line.back() == sep) out.emplace_back();
  return out;
}

double number_or(const std::string& s, double fallback) {
  char* end = nullptr;
  double x = std::strtod(s.c_str(), &end);
  return s.empty() || *end ? fallback : x;
}

std::vector<tools::FallbackRow> read_rows(const std::string& path) {
  std::istringstream in(read_file(path));
  std::vector<tools::FallbackRow> rows;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f = split(line, '\t');
    if (f.size() != 7)
      throw InputError(path + ":" + std::to_string(n) + ": expected 7 tab-separated fields, found " +
                       std::to_string(f.size()));
    tools::FallbackRow r;
    r.id = f[0];
    r.broke = f[1];
    r.device = f[2];
    r.latency_ms = number_or(f[3], -1);
    r.speedup = f[4];
    r.outputs = f[5];
    r.sentence = f[6];
    rows.push_back(std::move(r));
  }
  return rows;
}

std::vector<std::vector<StepTiming>> read_trace(const std::string& path) {
  json::Value doc;
  try {
    doc = json::parse(read_file(path));
  } catch (const json::ParseError& e) {
    throw InputError(path + ": " + e.what());
  }
  const json::Value* events = doc.is_object() ? doc.find("traceEvents") : nullptr;
  if (!events || !events->is_array()) throw InputError(path + ": no traceEvents array (not a Chrome trace)");
  std::map<long long, std::vector<StepTiming>> runs;
  auto str = [](const json::Value* v) { return v && v->is_string() ? v->text() : std::string(); };
  auto num = [](const json::Value* v) { return v && v->is_number() ? std::stod(v->text()) : 0.0; };
  for (const json::Value& e : events->items()) {
    if (!e.is_object() || str(e.find("ph")) != "X") continue;
    const json::Value* args = e.find("args");
    auto arg = [&](const char* key) { return args && args->is_object() ? args->find(key) : nullptr; };
    StepTiming s;
    s.name = str(e.find("name"));
    s.op = str(arg("op"));
    if (s.op.empty()) s.op = str(e.find("cat"));
    s.shapes = str(arg("shapes"));
    s.device = str(arg("device"));
    s.device_clock = str(arg("clock")) == "device";
    s.start_us = num(e.find("ts"));
    s.duration_us = num(e.find("dur"));
    runs[static_cast<long long>(num(arg("iteration")))].push_back(std::move(s));
  }
  std::vector<std::vector<StepTiming>> out;
  for (auto& [it, steps] : runs) out.push_back(std::move(steps));
  return out;
}

int measure() {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::vector<std::string> f = split(line, '\t');
    if (f.size() < 3) {
      std::fprintf(stderr, "minirt-chart: measure: expected SIZE<tab>BOLD<tab>TEXT, got '%s'\n", line.c_str());
      return kUsage;
    }
    std::string text = line.substr(f[0].size() + f[1].size() + 2);
    std::printf("%.3f\n", tools::svg::text_width(text, number_or(f[0], 12), f[1] == "1"));
  }
  return kOk;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::fputs(kHelp, stdout);
    return kOk;
  }
  auto usage = [](const std::string& what) {
    std::fprintf(stderr, "minirt-chart: %s\n(see minirt-chart --help)\n", what.c_str());
    return kUsage;
  };
  if (args.empty()) return usage("no command given (fallback, profile or measure)");
  const std::string cmd = args[0];
  if (cmd == "measure") return args.size() == 1 ? measure() : usage("measure takes no arguments");
  if (cmd != "fallback" && cmd != "profile") return usage("unknown command '" + cmd + "'");
  std::string title;
  std::vector<std::string> files;
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--title") {
      if (i + 1 >= args.size()) return usage("--title needs a value");
      title = args[++i];
    } else if (!args[i].empty() && args[i][0] == '-')
      return usage("unknown option " + args[i]);
    else
      files.push_back(args[i]);
  }
  if (files.size() != 2) return usage(cmd + " expects an input file and an output file");
  std::string doc;
  try {
    if (cmd == "fallback")
      doc = tools::fallback_chart(read_rows(files[0]), title.empty() ? "the fallback demo" : title);
    else
      doc = tools::profile_chart(read_trace(files[0]), title.empty() ? "per-op profile: " + files[0] : title);
  } catch (const InputError& e) {
    std::fprintf(stderr, "minirt-chart: %s\n", e.what());
    return kInputError;
  }
  std::ofstream f(files[1]);
  f << doc;
  f.close();
  if (!f) {
    std::fprintf(stderr, "minirt-chart: cannot write %s\n", files[1].c_str());
    return kOutputError;
  }
  return kOk;
}
