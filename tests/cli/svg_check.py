#!/usr/bin/env python3
"""Checks a chart the tools drew (tools/charts.h): it parses as SVG, it is at
most MAX_WIDTH pixels wide, and every text, rectangle and line lies inside
the canvas, texts measured by the writer's own estimate (`minirt-chart
measure`, tools/svg.h). With --label, each TEXT must be part of some text.

  svg_check.py CHART_BIN FILE.svg [--max-width 1280] [--min-width 0] [--label TEXT]...

As a module: check(path, chart_bin, max_width) returns the canvas size and
every text as (class, content), in document order; it raises AssertionError.
"""
import subprocess
import sys
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"


def _number(v, what):
    try:
        return float(v)
    except (TypeError, ValueError):
        raise AssertionError(f"{what}: not a number: {v!r}")


def _inherited(el, parents, name, default):
    while el is not None:
        if el.get(name) is not None:
            return el.get(name)
        el = parents.get(el)
    return default


def check(path, chart_bin, max_width=1280, min_width=0):
    root = ET.parse(path).getroot()
    assert root.tag == NS + "svg", f"{path}: the root is {root.tag}, not svg"
    width = _number(root.get("width"), f"{path}: width")
    height = _number(root.get("height"), f"{path}: height")
    assert min_width <= width <= max_width, f"{path}: {width} px wide, not within [{min_width}, {max_width}]"
    view = [_number(v, f"{path}: viewBox") for v in (root.get("viewBox") or "").split()]
    assert view == [0, 0, width, height], f"{path}: viewBox {view} is not the canvas {width} x {height}"
    parents = {c: p for p in root.iter() for c in p}

    texts = []
    for t in root.iter(NS + "text"):
        assert t.get("transform") is None, f"{path}: a turned text: {ET.tostring(t)[:120]}"
        # The text itself: what is not its <title> (the tooltip).
        content = (t.text or "") + "".join(c.tail or "" for c in t)
        size = _number(_inherited(t, parents, "font-size", "16"), f"{path}: font-size")
        bold = _inherited(t, parents, "font-weight", "normal") == "bold"
        anchor = _inherited(t, parents, "text-anchor", "start")
        texts.append((t, content, size, bold, anchor))
    widths = []
    if texts:
        lines = "".join(f"{size:g}\t{int(bold)}\t{content}\n" for _, content, size, bold, _ in texts)
        out = subprocess.run([f"{chart_bin}/minirt-chart", "measure"], input=lines, capture_output=True, text=True,
                             check=True).stdout.split()
        assert len(out) == len(texts), (len(out), len(texts))
        widths = [float(w) for w in out]
    for (t, content, size, bold, anchor), w in zip(texts, widths):
        x = _number(t.get("x"), f"{path}: text x")
        y = _number(t.get("y"), f"{path}: text y")
        left = x if anchor == "start" else x - w / 2 if anchor == "middle" else x - w
        assert left >= -0.5 and left + w <= width + 0.5, \
            f"{path}: '{content}' spans x {left:.1f} to {left + w:.1f}, outside 0 to {width}"
        assert y - size >= -0.5 and y + 0.3 * size <= height + 0.5, \
            f"{path}: '{content}' at y {y:.1f} (size {size:g}) is outside 0 to {height}"
    for r in root.iter(NS + "rect"):
        if r.get("x") is None:  # the background, 100% of the canvas
            continue
        x, y = _number(r.get("x"), "rect x"), _number(r.get("y"), "rect y")
        w, h = _number(r.get("width"), "rect width"), _number(r.get("height"), "rect height")
        assert x >= -0.5 and y >= -0.5 and x + w <= width + 0.5 and y + h <= height + 0.5, \
            f"{path}: a rectangle {x},{y} {w}x{h} outside {width} x {height}"
    for ln in root.iter(NS + "line"):
        if parents.get(ln) is not None and parents[ln].tag == NS + "pattern":
            continue
        xs = [_number(ln.get(k), "line") for k in ("x1", "x2")]
        ys = [_number(ln.get(k), "line") for k in ("y1", "y2")]
        assert min(xs) >= -0.5 and max(xs) <= width + 0.5 and min(ys) >= -0.5 and max(ys) <= height + 0.5, \
            f"{path}: a line {xs} {ys} outside {width} x {height}"
    return {"width": width, "height": height,
            "texts": [(t.get("class") or "", content) for t, content, _, _, _ in texts]}


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    chart_bin, path = argv[1], argv[2]
    max_width, min_width, labels = 1280.0, 0.0, []
    i = 3
    while i < len(argv):
        if argv[i] == "--max-width":
            max_width = float(argv[i + 1])
        elif argv[i] == "--min-width":
            min_width = float(argv[i + 1])
        elif argv[i] == "--label":
            labels.append(argv[i + 1])
        else:
            print(f"svg_check.py: unknown option {argv[i]}", file=sys.stderr)
            return 2
        i += 2
    try:
        info = check(path, chart_bin, max_width, min_width)
        for label in labels:
            assert any(label in c for _, c in info["texts"]), f"{path}: no text holds '{label}'"
    except (AssertionError, ET.ParseError) as e:
        print(f"FAIL: {e}")
        return 1
    print(f"ok: {path}: {info['width']:g} x {info['height']:g}, {len(info['texts'])} texts inside")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
