// The SVG the tools draw (convprof --svg, runmodel --profile-svg, the
// fallback demo's chart through minirt-chart): one estimate of how wide a
// text is, one XML escape, and a small canvas that remembers how far its
// texts reach, so that a chart can keep every text inside itself.
//
//   minirt::tools::svg::Canvas c;
//   c.text(16, 24, "a title", svg::style(15, "", svg::Anchor::kStart, true));
//   c.rect(16, 40, 200, 12, "#4e79a7");
//   std::string doc = c.document(1200, 80);   // wider when a text reaches further
#pragma once

#include <sstream>
#include <string>
#include <string_view>
#include <utility>

namespace minirt::tools::svg {

// The font every chart asks for. text_width's table is Helvetica's (Arial
// and Liberation Sans share its widths), scaled up by 15% so that it also
// covers DejaVu Sans, the usual sans-serif where none of those is installed.
inline constexpr const char* kFontFamily = "Arial, Helvetica, 'Liberation Sans', sans-serif";

// The width in pixels of UTF-8 `text` at `size` pixels: an upper estimate,
// the same one the charts are laid out by and the tests check them with.
double text_width(std::string_view text, double size, bool bold = false);

// `text` itself where it fits `max_width`, else its longest beginning that
// fits with "..." (U+2026) after it.
std::string fit(std::string_view text, double max_width, double size, bool bold = false);

// `text` with &, <, > and " written as entities, and control characters
// (which XML 1.0 forbids) as spaces.
std::string escape(std::string_view text);

// A coordinate: one decimal.
std::string num(double x);

enum class Anchor { kStart, kMiddle, kEnd };

struct TextStyle {
  double size = 12;
  bool bold = false;
  Anchor anchor = Anchor::kStart;
  std::string fill;     // empty: black
  std::string css;      // class attribute, for the tests to find a kind of label
  std::string tooltip;  // a <title> child: the whole text where the shown one was cut
};
inline TextStyle style(double size, std::string fill = {}, Anchor anchor = Anchor::kStart, bool bold = false) {
  TextStyle s;
  s.size = size;
  s.fill = std::move(fill);
  s.anchor = anchor;
  s.bold = bold;
  return s;
}

class Canvas {
 public:
  // A text at baseline y; its extent is remembered.
  void text(double x, double y, std::string_view s, const TextStyle& style = {});
  // `extra`: more attributes, written as given (e.g. stroke="black").
  void rect(double x, double y, double w, double h, std::string_view fill, std::string_view extra = {},
            std::string_view tooltip = {});
  void line(double x1, double y1, double x2, double y2, std::string_view stroke, std::string_view extra = {});
  // Anything else, written as given (a <polygon>, a <defs> block).
  void raw(std::string_view element);

  // The rightmost and lowest point a text reaches (0 before any).
  double text_right() const { return right_; }
  double text_bottom() const { return bottom_; }

  // The whole document, at least width x height and wide and high enough for
  // every text plus `margin`.
  std::string document(double width, double height, double margin = 12) const;

 private:
  std::ostringstream body_;
  double right_ = 0, bottom_ = 0;
};

}  // namespace minirt::tools::svg
