#!/usr/bin/env python3
"""Checks the GPU page (kernels/cuda/README.md) against the CPU/CUDA support
matrix (minirt-support-matrix over the op cases):

    check_gpu_table.py MATRIX.md kernels/cuda/README.md runtime/ops/README.md

1. The block between <!-- gpu-matrix:begin --> and <!-- gpu-matrix:end -->
   is the matrix itself (paste `minirt-support-matrix DIR` there).
2. The hand-written table between <!-- gpu-ops:begin --> and
   <!-- gpu-ops:end --> claims, in its first column, only what the matrix
   shows the CUDA support table taking: every op named there (an op of
   the supported-ops table of runtime/ops/README.md) must be taken in at
   least one op case, or be removed by the planner before placement in one
   (Identity, Dropout without its mask); a
   "k-D" there claims that every op of that cell is taken for an input of
   rank k + 2 in some case. A cell may name ops by their rows of the op
   table (runtime/ops/op_table.h, beside runtime/ops/README.md):
   `[op table: dnn]` and `[op table: module]` are the activation ops whose
   row says Dnn or Module, `[op table: unary]` every unary math op, so that
   a new activation needs no line here. An op no case covers fails too (add cases to
   make_op_cases.py).
3. Every op the matrix shows cuda taking is named in that first column.

Exit status 0 when all hold, 1 with one line per problem otherwise.
"""

import re
import sys

REMOVED = "not placed: removed or folded before placement"


def block(text, name):
    m = re.search(r"<!-- %s:begin -->\n(.*?)<!-- %s:end -->" % (name, name), text, re.S)
    return m.group(1) if m else None


def rows(table):
    out = []
    for line in table.splitlines():
        if not line.startswith("|") or line.startswith("| ---"):
            continue
        out.append([c.strip() for c in line.strip().strip("|").split("|")])
    return out[1:]  # without the header


def op_table_groups(path):
    """{"dnn": [...], "module": [...], "unary": [...]}: the ops of the op table's rows."""
    text = open(path).read()
    groups = {"dnn": [], "module": [], "unary": []}
    acts = text[text.index("#define MINIRT_ACTIVATIONS"):text.index("#define MINIRT_UNARY_KINDS")]
    for m in re.finditer(r'X\(\s*\w+,\s*"[^"]*",\s*"(\w+)",\s*\([^)]*\),.*?,\s*(Dnn|Module|FusedOnly),\s*\w+,',
                         acts, re.S):
        if m.group(2) != "FusedOnly":
            groups[m.group(2).lower()].append(m.group(1))
    unary = text[text.index("#define MINIRT_UNARY_KINDS"):]
    unary = unary[:unary.index("\n\n")]
    groups["unary"] = re.findall(r'X\(\s*\w+,\s*"(\w+)",', unary)
    return groups


def main():
    if len(sys.argv) != 4:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    matrix_text = open(sys.argv[1]).read()
    readme = open(sys.argv[2]).read()
    gpu_doc, ops_doc = sys.argv[2], sys.argv[3]
    ops_text = open(ops_doc).read()
    problems = []

    generated = block(readme, "gpu-matrix")
    if generated is None:
        problems.append(f"{gpu_doc} has no <!-- gpu-matrix:begin --> ... <!-- gpu-matrix:end --> block")
    elif generated != matrix_text:
        problems.append(f"{gpu_doc}'s generated support matrix differs from minirt-support-matrix's output: "
                        "paste `build/bin/minirt-support-matrix OPCASES` between the gpu-matrix markers")

    ops_table = block(ops_text, "ops")
    all_ops = {r[0] for r in rows(ops_table)} if ops_table else set()
    if not all_ops:
        problems.append(f"{ops_doc} has no <!-- ops:begin --> table to take op names from")

    matrix = {}
    for r in rows(matrix_text):
        op, cases, cpu, cuda, ranks, why = r
        matrix[op] = {
            "taken": cuda not in ("none", "-"),
            "ranks": {int(k) for k in ranks.split(",") if k.strip()},
            "removed": REMOVED in why,
        }

    import os
    groups = op_table_groups(os.path.join(os.path.dirname(os.path.abspath(ops_doc)), "op_table.h"))
    hand = block(readme, "gpu-ops")
    claimed = set()
    if hand is None:
        problems.append(f"{gpu_doc} has no <!-- gpu-ops:begin --> ... <!-- gpu-ops:end --> table")
    else:
        for r in rows(hand):
            cell = r[0]
            ops = [w for w in re.findall(r"[A-Za-z][A-Za-z0-9]*", cell) if w in all_ops]
            for g in re.findall(r"\[op table: (\w+)\]", cell):
                ops += groups.get(g, [])
            dims = [int(k) for k in re.findall(r"\b(\d)-D\b", cell)]
            for op in ops:
                claimed.add(op)
                m = matrix.get(op)
                if m is None:
                    problems.append(f"{gpu_doc}'s GPU table names {op}, but no op case covers it (add cases to "
                                    "tests/op_cases/make_op_cases.py)")
                    continue
                if not m["taken"] and not m["removed"]:
                    problems.append(f"{gpu_doc}'s GPU table names {op}, but the CUDA support table takes it in no op case "
                                    "(and the planner removes it in none)")
                for k in dims:
                    if k + 2 not in m["ranks"]:
                        problems.append(f"{gpu_doc}'s GPU table claims {k}-D {op}, but the CUDA support table takes "
                                        f"no {op} with an input of rank {k + 2} in the op cases")
    for op, m in sorted(matrix.items()):
        if m["taken"] and op not in claimed:
            problems.append(f"the CUDA support table takes {op} in op cases, but {gpu_doc}'s GPU table does not name it")

    for p in problems:
        print("check_gpu_table: " + p)
    if not problems:
        print(f"check_gpu_table: {gpu_doc}'s GPU table agrees with the support matrix ({len(claimed)} ops claimed, "
              f"{sum(m['taken'] for m in matrix.values())} taken by cuda in the op cases)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
