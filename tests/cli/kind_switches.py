#!/usr/bin/env python3
"""No switch over an op kind has a `default:`.

    kind_switches.py SOURCE_DIR

A switch over ActKind, UnaryKind, BinaryKind, VariadicKind or MathFn names
every kind (kCount included), so that -Wswitch, an error under -Werror,
points at each switch a new kind must decide; a `default:` would hide it.
A few kinds handled apart from the rest are an if-chain, which says so.
Reads the C++ and CUDA sources under kernels/, runtime/, loaders/, tools/
and tests/; prints each offending switch by file and line; exits 1 if any.
"""

import os
import re
import sys

KINDS = ("ActKind", "UnaryKind", "BinaryKind", "VariadicKind", "MathFn")
CASE = re.compile(r"\bcase\s+(?:\w+::)*(%s)::k\w+\s*:" % "|".join(KINDS))


def strip(text):
    """Comments and string literals blanked, line breaks kept."""
    out = re.sub(r"//[^\n]*", "", text)
    out = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), out, flags=re.S)
    return re.sub(r'"(?:\\.|[^"\\\n])*"', '""', out)


def closing_brace(text, i):
    """The index of the brace that closes the one at text[i]."""
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(text)


def switches(text):
    """(offset, body) of each switch statement's braces, nested ones too."""
    for m in re.finditer(r"\bswitch\s*\(", text):
        i = text.find("{", m.end())
        if i >= 0:
            yield m.start(), text[i + 1:closing_brace(text, i)]


def own_level(body):
    """The body without the switches nested in it."""
    res, i = [], 0
    for m in re.finditer(r"\bswitch\s*\(", body):
        if m.start() < i:
            continue
        res.append(body[i:m.start()])
        i = closing_brace(body, body.find("{", m.end())) + 1
    res.append(body[i:])
    return "".join(res)


def main():
    root = sys.argv[1]
    bad = []
    scanned = 0
    for top in ("kernels", "runtime", "loaders", "tools", "tests"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if not f.endswith((".cpp", ".h", ".cu", ".cuh", ".inc")):
                    continue
                path = os.path.join(dirpath, f)
                text = strip(open(path, encoding="utf-8", errors="replace").read())
                for start, body in switches(text):
                    level = own_level(body)
                    if CASE.search(level) and re.search(r"\bdefault\s*:", level):
                        line = text.count("\n", 0, start) + 1
                        kind = CASE.search(level).group(1)
                        bad.append(f"{os.path.relpath(path, root)}:{line}: a switch over {kind} has a default:")
                    scanned += 1
    for b in bad:
        print("FAIL:", b, "(name every kind, or write the few handled apart as an if-chain)")
    print(f"kind_switches: {scanned} switches read, {len(bad)} over an op kind with a default")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
