#include "tools/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

namespace minirt::tools::svg {

namespace {

// Helvetica's advance widths of ASCII 32..126, in thousandths of the font
// size (its published metrics; Arial and Liberation Sans are the same).
constexpr uint16_t kAscii[95] = {
    278,  278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278,  //  !"#$%&'()*+,-./
    556,  556, 556, 556, 556, 556, 556, 556, 556, 556, 278, 278, 584, 584, 584, 556,  // 0-9 :;<=>?
    1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722, 778,  // @A-O
    667,  778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469, 556,  // P-Z [\]^_
    333,  556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556, 556,  // `a-o
    556,  556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584,       // p-z {|}~
};

// Wider than Helvetica: DejaVu Sans runs up to about 14% wider; bold about 8%.
constexpr double kMargin = 1.15, kBold = 1.08;

// The next code point of UTF-8 `s` from `i` (advanced past it); a stray
// byte counts as one character.
uint32_t next_code_point(std::string_view s, size_t& i) {
  const auto b = static_cast<unsigned char>(s[i]);
  int extra = b >= 0xF0 ? 3 : b >= 0xE0 ? 2 : b >= 0xC0 ? 1 : 0;
  uint32_t cp = extra == 3 ? b & 0x07u : extra == 2 ? b & 0x0Fu : extra == 1 ? b & 0x1Fu : b;
  ++i;
  for (; extra > 0 && i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80; --extra, ++i)
    cp = (cp << 6) | (static_cast<unsigned char>(s[i]) & 0x3Fu);
  return cp;
}

// Thousandths of the size, before the margin.
double advance(uint32_t cp) {
  if (cp >= 32 && cp < 127) return kAscii[cp - 32];
  if (cp < 32 || cp == 127) return 0;
  // Anything else (accented letters, Greek, arrows, the ellipsis, CJK, emoji): a full em, at least as wide as
  // any of them.
  return 1000;
}

}  // namespace

double text_width(std::string_view text, double size, bool bold) {
  double units = 0;
  for (size_t i = 0; i < text.size();) units += advance(next_code_point(text, i));
  return units / 1000.0 * size * kMargin * (bold ? kBold : 1.0);
}

std::string fit(std::string_view text, double max_width, double size, bool bold) {
  if (text_width(text, size, bold) <= max_width) return std::string(text);
  static constexpr std::string_view kEllipsis = "\xE2\x80\xA6";
  const double room = max_width - text_width(kEllipsis, size, bold);
  double used = 0;
  size_t end = 0;
  for (size_t i = 0; i < text.size();) {
    double w = advance(next_code_point(text, i)) / 1000.0 * size * kMargin * (bold ? kBold : 1.0);
    if (used + w > room) break;
    used += w;
    end = i;
  }
  std::string out(text.substr(0, end));
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out + std::string(kEllipsis);
}

std::string escape(std::string_view text) {
  std::string o;
  o.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      default:
        o += static_cast<unsigned char>(c) < 32 ? ' ' : c;
    }
  }
  return o;
}

std::string num(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", x);
  return b;
}

void Canvas::text(double x, double y, std::string_view s, const TextStyle& st) {
  const double w = text_width(s, st.size, st.bold);
  const double left = st.anchor == Anchor::kStart ? x : st.anchor == Anchor::kMiddle ? x - w / 2 : x - w;
  right_ = std::max(right_, left + w);
  bottom_ = std::max(bottom_, y + st.size * 0.3);  // descenders
  body_ << "<text x=\"" << num(x) << "\" y=\"" << num(y) << "\" font-size=\"" << num(st.size) << "\"";
  if (st.anchor != Anchor::kStart)
    body_ << " text-anchor=\"" << (st.anchor == Anchor::kMiddle ? "middle" : "end") << "\"";
  if (st.bold) body_ << " font-weight=\"bold\"";
  if (!st.fill.empty()) body_ << " fill=\"" << st.fill << "\"";
  if (!st.css.empty()) body_ << " class=\"" << st.css << "\"";
  body_ << ">";
  if (!st.tooltip.empty()) body_ << "<title>" << escape(st.tooltip) << "</title>";
  body_ << escape(s) << "</text>\n";
}

void Canvas::rect(double x, double y, double w, double h, std::string_view fill, std::string_view extra,
                  std::string_view tooltip) {
  body_ << "<rect x=\"" << num(x) << "\" y=\"" << num(y) << "\" width=\"" << num(std::max(w, 0.0)) << "\" height=\""
        << num(std::max(h, 0.0)) << "\" fill=\"" << fill << "\"" << (extra.empty() ? "" : " ") << extra;
  if (tooltip.empty())
    body_ << "/>\n";
  else
    body_ << "><title>" << escape(tooltip) << "</title></rect>\n";
}

void Canvas::line(double x1, double y1, double x2, double y2, std::string_view stroke, std::string_view extra) {
  body_ << "<line x1=\"" << num(x1) << "\" y1=\"" << num(y1) << "\" x2=\"" << num(x2) << "\" y2=\"" << num(y2)
        << "\" stroke=\"" << stroke << "\"" << (extra.empty() ? "" : " ") << extra << "/>\n";
}

void Canvas::raw(std::string_view element) { body_ << element << "\n"; }

std::string Canvas::document(double width, double height, double margin) const {
  const double w = std::ceil(std::max(width, right_ + margin)), h = std::ceil(std::max(height, bottom_ + margin));
  std::ostringstream o;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    << "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" << num(w) << "\" height=\"" << num(h)
    << "\" viewBox=\"0 0 " << num(w) << " " << num(h) << "\" font-family=\"" << kFontFamily << "\">\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << body_.str() << "</svg>\n";
  return o.str();
}

}  // namespace minirt::tools::svg
