#include "tools/charts.h"

#include "tools/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>

namespace minirt::tools {

namespace {

using svg::Anchor;
using svg::Canvas;
using svg::num;
using svg::style;
using svg::TextStyle;

constexpr double kMargin = 16;
constexpr const char* kGrey = "#555";
constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

std::string fmt(const char* f, double x) {
  char b[64];
  std::snprintf(b, sizeof b, f, x);
  return b;
}

std::string ms_text(double ms) { return fmt(ms < 0.1 ? "%.4f ms" : ms < 100 ? "%.3f ms" : "%.1f ms", ms); }
std::string pct(double part, double whole) { return whole > 0 ? fmt("%.1f%%", 100.0 * part / whole) : "-"; }
std::string ratio(double x) { return fmt(x < 10 ? "%.2fx" : "%.1fx", x); }

// A text cut to fit between x and the canvas's right margin (the whole text
// in its tooltip where cut).
void text_to(Canvas& c, double x, double y, const std::string& s, TextStyle st, double right = kChartWidth - kMargin) {
  std::string shown = svg::fit(s, right - x, st.size, st.bold);
  if (shown != s && st.tooltip.empty()) st.tooltip = s;
  c.text(x, y, shown, st);
}

TextStyle css(TextStyle st, const char* cls) {
  st.css = cls;
  return st;
}

// A time axis from lo to hi (ms) over [x0, x0 + w]: decades on a log axis
// (with 2 and 5 where it spans less than two), a 1-2-5 step on a linear one.
struct TimeAxis {
  bool linear;
  double lo, hi, x0, w;
  std::vector<double> ticks;
  TimeAxis(double min_ms, double max_ms, bool lin, double x, double width) : linear(lin), x0(x), w(width) {
    if (max_ms <= 0) min_ms = 0.001, max_ms = 1;
    if (linear) {
      lo = 0;
      double raw = max_ms / 5, p = std::pow(10.0, std::floor(std::log10(raw))), step = 10 * p;
      for (double m : {1.0, 2.0, 5.0})
        if (m * p >= raw) {
          step = m * p;
          break;
        }
      hi = std::ceil(max_ms / step) * step;
      for (double t = 0; t <= hi * 1.0001; t += step) ticks.push_back(t);
    } else {
      lo = std::pow(10.0, std::floor(std::log10(min_ms)));
      hi = std::pow(10.0, std::ceil(std::log10(max_ms)));
      if (hi <= lo) hi = lo * 10;
      const bool fine = hi / lo <= 100;
      for (double t = lo; t <= hi * 1.0001; t *= 10) {
        ticks.push_back(t);
        if (fine && t * 10 <= hi * 1.0001) ticks.insert(ticks.end(), {2 * t, 5 * t});
      }
    }
  }
  double x(double ms) const {
    double f = linear ? ms / hi : (std::log10(std::max(ms, lo)) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
    return x0 + w * std::clamp(f, 0.0, 1.0);
  }
  // Tick labels above y, grid lines from y to y_end.
  void draw(Canvas& c, double y, double y_end) const {
    for (double t : ticks) {
      c.line(x(t), y + 4, x(t), y_end, "#e3e3e3");
      c.text(x(t), y, fmt("%g", t), style(10, kGrey, Anchor::kMiddle));
    }
  }
};

// A legend entry: a swatch (or nothing) and a label, flowing left to right
// and onto a new line where the row is full. Returns the new x.
struct Flow {
  double x, y, left, right;
  void item(Canvas& c, const std::string& swatch_svg_fill, const std::string& label, const std::string& extra = {}) {
    const double w = (swatch_svg_fill.empty() ? 0 : 18) + svg::text_width(label, 11) + 18;
    if (x + w > right && x > left) {
      x = left;
      y += 18;
    }
    if (!swatch_svg_fill.empty()) {
      c.rect(x, y - 9, 12, 10, swatch_svg_fill, extra);
      x += 18;
    }
    c.text(x, y, label, style(11));
    x += svg::text_width(label, 11) + 18;
  }
};

// A fused step's name is its nodes' names joined by '+': the first, and how
// many more.
std::string short_name(const std::string& name) {
  const size_t plus = name.find('+');
  if (plus == std::string::npos || plus == 0) return name;
  const auto more = std::count(name.begin() + static_cast<std::ptrdiff_t>(plus), name.end(), '+');
  return name.substr(0, plus) + " (+" + std::to_string(more) + " fused)";
}

}  // namespace

// ---- convprof --svg ----

std::string convprof_chart(const std::vector<TuningChoice>& layers, const ConvChartOptions& o) {
  struct Group {
    const TuningChoice* c = nullptr;
    std::vector<const TuningCandidate*> ok;  // ran, in the backend's order
    double pick = -1, heuristic = -1, slowest = -1;
    std::string slowest_algo;
  };
  std::vector<Group> groups;
  double total = 0, heuristic_total = 0;
  bool heuristic_timed = true;
  for (const auto& l : layers) {
    Group g;
    g.c = &l;
    for (const auto& t : l.candidates) {
      if (t.status != CandidateStatus::kOk || t.time_ms <= 0) continue;
      g.ok.push_back(&t);
      if (t.algorithm == l.algorithm) g.pick = t.time_ms;
      if (t.algorithm == l.heuristic) g.heuristic = t.time_ms;
      if (t.time_ms > g.slowest) g.slowest = t.time_ms, g.slowest_algo = t.algorithm;
    }
    if (g.pick > 0) total += g.pick;
    if (g.pick > 0 && g.heuristic > 0)
      heuristic_total += g.heuristic;
    else
      heuristic_timed = false;
    groups.push_back(std::move(g));
  }
  // The costliest first (untimed ones last, in plan order).
  std::vector<size_t> by_cost(groups.size());
  std::iota(by_cost.begin(), by_cost.end(), size_t{0});
  std::stable_sort(by_cost.begin(), by_cost.end(), [&](size_t a, size_t b) { return groups[a].pick > groups[b].pick; });
  const size_t n = groups.size();
  const size_t shown = o.max_layers && n > o.max_layers ? o.max_layers : n;
  std::vector<size_t> rows(by_cost.begin(), by_cost.begin() + static_cast<std::ptrdiff_t>(shown));
  if (o.model_order) std::sort(rows.begin(), rows.end());

  // The algorithms that ran in the groups shown, each its colour.
  std::vector<std::string> algos;
  double lo = 1e300, hi = 0;
  for (size_t r : rows)
    for (const TuningCandidate* t : groups[r].ok) {
      if (std::find(algos.begin(), algos.end(), t->algorithm) == algos.end()) algos.push_back(t->algorithm);
      lo = std::min(lo, t->time_ms);
      hi = std::max(hi, t->time_ms);
    }
  auto colour = [&](const std::string& a) {
    return kPalette[static_cast<size_t>(std::find(algos.begin(), algos.end(), a) - algos.begin()) % 10];
  };

  const double right = kChartWidth - kMargin;
  const double label_w = 200, note_w = 360;
  const double plot_x = kMargin + label_w + 10, note_x = right - note_w, plot_w = note_x - 14 - plot_x;
  Canvas c;
  double y = 26;
  text_to(c, kMargin, y, o.title, style(15, "", Anchor::kStart, true));
  y += 18;
  text_to(c, kMargin, y,
          std::string("median time per run of every algorithm that ran (ms, ") + (o.linear ? "linear" : "log") +
              " scale), one group per convolution, " + (o.model_order ? "in model order" : "the costliest first") +
              "; declined, failed and over-limit candidates have no bar",
          style(11, kGrey));

  // The summary strip: the total and where it goes.
  y += 12;
  c.rect(kMargin, y, right - kMargin, 62, "#f3f5f8", "rx=\"4\"");
  std::string head = std::to_string(n) + (n == 1 ? " convolution" : " convolutions") + ": " +
                     (total > 0 ? ms_text(total) : std::string("nothing timed")) + " in all with the picks";
  if (heuristic_timed && total > 0 && n > 0)
    head += ", " + ms_text(heuristic_total) + " with the heuristic's choices (" + ratio(heuristic_total / total) + ")";
  text_to(c, kMargin + 10, y + 19, head, css(style(13, "", Anchor::kStart, true), "summary"), right - 10);
  const size_t top = std::min<size_t>(5, n);
  double top_ms = 0;
  std::string names;
  for (size_t i = 0; i < top; ++i) {
    const Group& g = groups[by_cost[i]];
    if (g.pick <= 0) continue;
    top_ms += g.pick;
    names += (names.empty() ? "" : ", ") + g.c->node + " " + pct(g.pick, total);
  }
  text_to(c, kMargin + 10, y + 37,
          (top == n ? "the " + std::to_string(top) + (top == 1 ? " layer" : " layers")
                    : "the top " + std::to_string(top) + " layers") +
              " take " + pct(top_ms, total) + " of it: " + names,
          css(style(12), "summary"), right - 10);
  // The same as a stacked bar: the top five, then the rest.
  {
    const double bx = kMargin + 10, bw = right - 10 - bx, by = y + 45;
    double x = bx;
    for (size_t i = 0; i < top && total > 0; ++i) {
      const Group& g = groups[by_cost[i]];
      if (g.pick <= 0) continue;
      const double w = bw * g.pick / total;
      c.rect(x, by, w, 9, i % 2 ? "#c85a1c" : "#e8803a", "", g.c->node + ": " + ms_text(g.pick));
      x += w;
    }
    c.rect(x, by, bx + bw - x, 9, "#cfd5dc", "", "the other layers");
  }
  y += 62;
  if (shown < n) {
    double rest = 0;
    for (size_t i = shown; i < n; ++i) rest += std::max(groups[by_cost[i]].pick, 0.0);
    y += 20;
    text_to(c, kMargin, y,
            "showing the " + std::to_string(shown) + " costliest of " + std::to_string(n) +
                " convolutions; the other " + std::to_string(n - shown) + " take " + ms_text(rest) + " (" +
                pct(rest, total) + "); convprof --svg-layers 0 draws them all",
            css(style(12, "#b03a2e", Anchor::kStart, true), "truncated"));
  }

  // The legend: the algorithms that appear, then the marks.
  y += 22;
  Flow legend{kMargin, y, kMargin, right};
  for (const auto& a : algos) legend.item(c, colour(a), a);
  legend.item(c, "white", "pick (the fastest): outlined, with a black arrowhead",
              "stroke=\"black\" stroke-width=\"1.5\"");
  legend.item(c, "white", "the heuristic's choice where it differs: dashed, with a circle",
              "stroke=\"black\" stroke-dasharray=\"3,2\"");
  y = legend.y + 26;

  // The axis, then a group per convolution.
  const TimeAxis axis(lo, hi, o.linear, plot_x, plot_w);
  const double bar = 5, step = 6;
  std::vector<double> heights;
  double rows_h = 0;
  for (size_t r : rows) {
    heights.push_back(std::max(34.0, step * static_cast<double>(std::max<size_t>(groups[r].ok.size(), 1)) + 10));
    rows_h += heights.back();
  }
  c.text(plot_x, y - 14, "ms", style(10, kGrey));
  axis.draw(c, y, y + rows_h);
  text_to(c, note_x, y - 14, "the pick: time, share; the slowest and the heuristic against it", style(10, kGrey));
  for (size_t k = 0; k < rows.size(); ++k) {
    const Group& g = groups[rows[k]];
    const double h = heights[k], y0 = y + 6;
    if (k % 2 == 0) c.rect(kMargin, y0, right - kMargin, h, "#f7f7f7");
    TextStyle node = css(style(12, "", Anchor::kStart, true), "layer");
    node.tooltip = g.c->node + " (" + g.c->summary + ")";
    text_to(c, kMargin + 4, y0 + 15, g.c->node, node, kMargin + label_w);
    text_to(c, kMargin + 4, y0 + 29, g.c->summary, style(10.5, kGrey), kMargin + label_w);
    double by = y0 + 5;
    for (const TuningCandidate* t : g.ok) {
      const bool pick = t->algorithm == g.c->algorithm;
      const bool heur = t->algorithm == g.c->heuristic && !pick;
      const double x1 = std::max(axis.x(t->time_ms), plot_x + 2);
      std::string extra = pick   ? "stroke=\"black\" stroke-width=\"1.2\""
                          : heur ? "stroke=\"black\" stroke-width=\"1\" stroke-dasharray=\"3,2\""
                                 : "";
      c.rect(plot_x, by, x1 - plot_x, bar, colour(t->algorithm), extra,
             g.c->node + ": " + t->algorithm + " " + ms_text(t->time_ms) + (pick ? " (pick)" : "") +
                 (t->algorithm == g.c->heuristic ? " (the heuristic's choice)" : ""));
      const double mid = by + bar / 2;
      if (pick)
        c.raw("<polygon points=\"" + num(x1 + 1) + "," + num(mid) + " " + num(x1 + 8) + "," + num(mid - 4) + " " +
              num(x1 + 8) + "," + num(mid + 4) + "\" fill=\"black\"/>");
      if (heur)
        c.raw("<circle cx=\"" + num(x1 + 5) + "\" cy=\"" + num(mid) +
              "\" r=\"3\" fill=\"white\" stroke=\"black\" stroke-width=\"1\"/>");
      by += step;
    }
    // The notes: the pick, its time and share; the slowest's ratio and the heuristic's choice.
    std::string l1 = g.c->algorithm.empty() ? std::string("no pick") : "pick " + g.c->algorithm;
    if (g.pick > 0) l1 += " " + ms_text(g.pick) + " (" + pct(g.pick, total) + ")";
    text_to(c, note_x, y0 + 15, l1, css(style(11.5), "pick"));
    std::string slow = g.ok.size() > 1 && g.pick > 0 ? "slowest " + ratio(g.slowest / g.pick)
                       : g.ok.size() == 1            ? std::string("the only one that ran")
                                                     : std::string("nothing timed");
    TextStyle slow_style = css(style(11, kGrey), "slowest");
    if (!g.slowest_algo.empty()) slow_style.tooltip = slow + " (" + g.slowest_algo + ")";
    text_to(c, note_x, y0 + 29, slow, slow_style);
    const double hx = note_x + svg::text_width(slow, 11) + 8;
    const bool differs = !g.c->heuristic.empty() && g.c->heuristic != g.c->algorithm;
    std::string l2 = !differs ? std::string("heuristic: the same")
                     : g.heuristic > 0 && g.pick > 0
                         ? "heuristic " + g.c->heuristic + " " + ratio(g.heuristic / g.pick) + " slower"
                         : "heuristic " + g.c->heuristic + " (not timed)";
    text_to(c, hx, y0 + 29, l2,
            css(style(11, differs ? "#8a3b00" : kGrey, Anchor::kStart, differs), differs ? "heuristic" : "same"));
    y += h;
  }
  if (rows.empty()) text_to(c, kMargin, y + 24, "no convolution here has a choice of algorithm", style(12, kGrey));
  return c.document(kChartWidth, y + 24);
}

// ---- runmodel --profile-svg ----

std::string profile_chart(const std::vector<std::vector<StepTiming>>& runs, const std::string& title) {
  const double n_runs = static_cast<double>(std::max<size_t>(runs.size(), 1));
  struct Step {
    std::string name, op, shapes;
    double ms = 0;
    bool device_clock = false;
  };
  struct DeviceGroup {
    std::vector<Step> steps;              // in order of first appearance
    std::map<std::string, size_t> where;  // name -> index in steps
    std::map<std::string, double> by_op;  // mean ms per run
    double ms = 0;
    bool host_clock = false, device_clock = false;
  };
  std::map<std::string, DeviceGroup> devices;  // "cpu" first: see order below
  double total = 0;
  for (const auto& run : runs)
    for (const StepTiming& s : run) {
      const std::string dev = s.device.empty() ? "cpu" : s.device;
      DeviceGroup& d = devices[dev];
      const double ms = s.duration_us / 1000.0 / n_runs;
      auto [it, fresh] = d.where.emplace(s.name + "\x1f" + s.op, d.steps.size());
      if (fresh) d.steps.push_back({s.name, s.op, s.shapes, 0, s.device_clock});
      d.steps[it->second].ms += ms;
      d.by_op[s.op] += ms;
      d.ms += ms;
      (s.device_clock ? d.device_clock : d.host_clock) = true;
      total += ms;
    }
  std::vector<std::string> order;
  if (devices.count("cpu")) order.push_back("cpu");
  for (const auto& [dev, d] : devices)
    if (dev != "cpu") order.push_back(dev);
  auto clock_of = [](const DeviceGroup& d) {
    return d.device_clock && d.host_clock ? std::string("host and device clocks")
           : d.device_clock               ? std::string("the device's own clock (events around each step)")
                                          : std::string("the host clock");
  };

  const double right = kChartWidth - kMargin;
  const double label_w = 290, value_w = 330;
  const double bar_x = kMargin + label_w + 10, value_x = right - value_w, bar_w = value_x - 10 - bar_x;
  Canvas c;
  c.raw(
      "<defs><pattern id=\"devclock\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
      "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#59a14f\"/>"
      "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#1d5c1a\" stroke-width=\"2.5\"/></pattern></defs>");
  double y = 26;
  text_to(c, kMargin, y, title, style(15, "", Anchor::kStart, true));
  y += 18;
  text_to(c, kMargin, y,
          "mean time per run over " + std::to_string(runs.size()) + " timed run" + (runs.size() == 1 ? "" : "s") +
              "; steps on the CPU in blue (host clock), on a GPU in green, hatched where the GPU timed them itself",
          style(11, kGrey));
  y += 12;
  c.rect(kMargin, y, right - kMargin, 30, "#f3f5f8", "rx=\"4\"");
  std::string head = ms_text(total) + " of steps per run";
  for (const auto& dev : order)
    head += (dev == order.front() ? ": " : ", ") + dev + " " + ms_text(devices[dev].ms) + " (" +
            pct(devices[dev].ms, total) + ", " + clock_of(devices[dev]) + ")";
  text_to(c, kMargin + 10, y + 20, head, css(style(12.5, "", Anchor::kStart, true), "summary"), right - 10);
  y += 30;

  auto fill_of = [](const std::string& dev, bool device_clock) {
    return dev == "cpu"   ? std::string("#4e79a7")
           : device_clock ? std::string("url(#devclock)")
                          : std::string("#59a14f");
  };
  auto section = [&](const std::string& heading, auto&& items_of) {
    y += 30;
    c.text(kMargin, y, heading, style(14, "", Anchor::kStart, true));
    double max_ms = 0;
    for (const auto& dev : order)
      for (const auto& it : items_of(devices[dev])) max_ms = std::max(max_ms, it.ms);
    for (const auto& dev : order) {
      const DeviceGroup& d = devices[dev];
      auto items = items_of(d);
      y += 22;
      text_to(c, kMargin, y, "on " + dev + ": " + ms_text(d.ms) + " per run, timed by " + clock_of(d),
              css(style(12, dev == "cpu" ? "#2f4f78" : "#2e6b2a", Anchor::kStart, true), "device"));
      y += 6;
      for (const auto& it : items) {
        TextStyle lab = css(style(11.5), "label");
        lab.tooltip = it.tooltip;
        text_to(c, kMargin + 4, y + 13, it.label, lab, kMargin + label_w);
        const double w = max_ms > 0 ? std::max(bar_w * it.ms / max_ms, 1.0) : 1.0;
        c.rect(bar_x, y + 3, w, 13, fill_of(dev, it.device_clock), "", it.tooltip);
        text_to(c, value_x, y + 13, it.value, css(style(11.5), "value"));
        y += 19;
      }
    }
  };
  struct Item {
    std::string label, value, tooltip;
    double ms;
    bool device_clock;
  };
  const size_t kOps = 20, kSteps = 20;
  section("Time per op type", [&](const DeviceGroup& d) {
    std::vector<Item> items;
    for (const auto& [op, ms] : d.by_op)
      items.push_back(
          {op, ms_text(ms) + ", " + pct(ms, total), op + ": " + ms_text(ms), ms, d.device_clock && !d.host_clock});
    std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.ms > b.ms; });
    if (items.size() > kOps) {
      double rest = 0;
      for (size_t i = kOps - 1; i < items.size(); ++i) rest += items[i].ms;
      const size_t more = items.size() - (kOps - 1);
      items.resize(kOps - 1);
      items.push_back(
          {std::to_string(more) + " more op types", ms_text(rest) + ", " + pct(rest, total), "", rest, false});
    }
    return items;
  });
  section("The " + std::to_string(kSteps) + " costliest steps", [&](const DeviceGroup& d) {
    std::vector<Item> items;
    for (const Step& s : d.steps)
      items.push_back({short_name(s.name), ms_text(s.ms) + ", " + pct(s.ms, total) + ", " + s.op,
                       s.name + ": " + s.op + ", " + s.shapes + ", " + ms_text(s.ms) +
                           (s.device_clock ? " (device clock)" : " (host clock)"),
                       s.ms, s.device_clock});
    std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.ms > b.ms; });
    if (items.size() > kSteps) items.resize(kSteps);
    return items;
  });
  // The legend of the fills.
  y += 30;
  Flow legend{kMargin, y, kMargin, right};
  bool gpu_host = false, gpu_device = false;
  for (const auto& [dev, d] : devices)
    if (dev != "cpu") gpu_host |= d.host_clock, gpu_device |= d.device_clock;
  if (devices.count("cpu")) legend.item(c, "#4e79a7", "CPU step (host clock)");
  if (gpu_host) legend.item(c, "#59a14f", "GPU step timed by the host clock (its enqueue)");
  if (gpu_device) legend.item(c, "url(#devclock)", "GPU step timed by the device's own clock");
  if (runs.empty() || total <= 0) text_to(c, kMargin, legend.y + 24, "no step was timed", style(12, kGrey));
  return c.document(kChartWidth, legend.y + 16);
}

// ---- the fallback demo ----

std::string first_clause(const std::string& sentence) {
  std::string s = sentence.substr(0, sentence.find("; "));
  // Advice after a colon ("..., which comes with CUDA 13: pip install ..."), where a clause comes before it.
  if (size_t colon = s.find(": "); colon != std::string::npos && colon >= 12) s.resize(colon);
  std::string out;
  int depth = 0;
  for (char ch : s) {
    if (ch == '(')
      ++depth;
    else if (ch == ')' && depth > 0)
      --depth;
    else if (depth == 0)
      out += ch;
  }
  // The spaces an aside leaves ("driver (x) is" -> "driver  is"; "driver (x)," -> "driver ,").
  std::string tidy;
  for (char ch : out) {
    if (ch == ' ' && (tidy.empty() || tidy.back() == ' ')) continue;
    if ((ch == ',' || ch == '.' || ch == ':') && !tidy.empty() && tidy.back() == ' ') tidy.pop_back();
    tidy += ch;
  }
  while (!tidy.empty() && (tidy.back() == ' ' || tidy.back() == ',' || tidy.back() == '.')) tidy.pop_back();
  return tidy;
}

std::string fallback_chart(const std::vector<FallbackRow>& rows, const std::string& title) {
  double max_ms = 0;
  for (const auto& r : rows) max_ms = std::max(max_ms, r.latency_ms);
  // The first column as wide as its longest label (within reason).
  double col = 120;
  for (const auto& r : rows) col = std::max({col, svg::text_width(r.id, 13, true), svg::text_width(r.broke, 11)});
  col = std::min(col, 380.0);
  const double badge_x = kMargin + col + 14, bar_x = badge_x + 52, bar_w = 240, note_x = bar_x + bar_w + 10;
  auto note_of = [](const FallbackRow& r) {
    return (r.latency_ms > 0 ? ms_text(r.latency_ms) : std::string("did not run")) + ", " +
           (r.speedup.empty() ? std::string("-") : r.speedup) + ", outputs " +
           (r.outputs.empty() ? std::string("-") : r.outputs);
  };
  const std::string sub1 =
      "one row per scenario: what broke, where runmodel --device auto ran (CPU or GPU), and the first clause of "
      "the gate's sentence (the whole sentence as its tooltip, and in fallback.md)";
  const std::string sub2 =
      "the bar is the latency median; the speed-up over the CPU alone is shown only where the run went to another "
      "device";
  // The canvas as wide as its longest text, within the 1,240 px a screen shows whole.
  double need = std::max({svg::text_width(title, 15, true), svg::text_width(sub1, 11), svg::text_width(sub2, 11)});
  for (const auto& r : rows)
    need = std::max({need, note_x - kMargin + svg::text_width(note_of(r), 11.5),
                     badge_x - kMargin + svg::text_width(first_clause(r.sentence), 11.5)});
  const double width = std::clamp(need + 2 * kMargin, 760.0, kChartMaxWidth), right = width - kMargin;

  Canvas c;
  double y = 26;
  text_to(c, kMargin, y, title, style(15, "", Anchor::kStart, true), right);
  y += 18;
  text_to(c, kMargin, y, sub1, style(11, kGrey), right);
  y += 15;
  text_to(c, kMargin, y, sub2, style(11, kGrey), right);
  y += 8;
  for (size_t i = 0; i < rows.size(); ++i) {
    const FallbackRow& r = rows[i];
    const double y0 = y + 8, h = 44;
    if (i % 2 == 0) c.rect(kMargin - 6, y0, width - 2 * kMargin + 12, h, "#f7f7f7");
    text_to(c, kMargin, y0 + 17, r.id, css(style(13, "", Anchor::kStart, true), "scenario"), kMargin + col);
    text_to(c, kMargin, y0 + 34, r.broke, css(style(11, kGrey), "broke"), kMargin + col);
    const bool gpu = r.device != "cpu" && r.device != "none";
    const std::string badge = r.device == "none" ? "none" : gpu ? "GPU" : "CPU";
    c.rect(badge_x, y0 + 6, 42, 17,
           r.device == "none" ? "#999"
           : gpu              ? "#3aa655"
                              : "#4a7bd0",
           "rx=\"3\"", "ran on " + r.device);
    c.text(badge_x + 21, y0 + 19, badge, css(style(11.5, "white", Anchor::kMiddle, true), "decision"));
    const double w = r.latency_ms > 0 && max_ms > 0 ? std::max(bar_w * r.latency_ms / max_ms, 2.0) : 0;
    if (w > 0) c.rect(bar_x, y0 + 7, w, 15, gpu ? "#a9d8b1" : "#b9cbe9", "", "latency median");
    text_to(c, note_x, y0 + 19, note_of(r), css(style(11.5), "speedup"), right);
    TextStyle gate = css(style(11.5, "#222"), "gate");
    gate.tooltip = r.sentence;
    text_to(c, badge_x, y0 + 37, first_clause(r.sentence), gate, right);
    y += h;
  }
  y += 30;
  Flow legend{kMargin, y, kMargin, right};
  legend.item(c, "#4a7bd0", "CPU (fell back, or the CPU was the choice)");
  legend.item(c, "#3aa655", "GPU");
  legend.item(c, "#999", "did not run");
  return c.document(width, legend.y + 16);
}

}  // namespace minirt::tools
