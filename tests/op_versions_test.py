"""runtime/ops/op_versions.cpp and the op table's versions (runtime/ops/op_table.h)
against the onnx package of the tooling venv.

Every op minirt implements must list exactly the versions ONNX defines for
it, and kMaxOpset must be the newest opset ONNX defines: a release that gives
a supported op a new version (or adds an opset) fails here, in CI, and says
what to check, instead of reaching a user as a refused model.

  python tests/op_versions_test.py SOURCE_DIR
"""
import re
import sys
from collections import defaultdict

import onnx
import onnx.defs

src = sys.argv[1]
table_text = open(f"{src}/runtime/ops/op_versions.cpp").read()
# onnxruntime's com.microsoft ops (between the markers) are not ONNX's.
contrib_text = table_text[table_text.index("com.microsoft:begin"):table_text.index("com.microsoft:end")]
table_text = table_text.replace(contrib_text, "")
table = {m.group(1): [int(x) for x in m.group(2).split(",")]
         for m in re.finditer(r'\{"(\w+)", \{([\d, ]+)\}\}', table_text)}
# The activation and unary math ops' versions are their rows in the op table:
# X(Kind, "Name", "Op", (versions), ...) and X(Kind, "Op", (versions), ...).
op_table_text = open(f"{src}/runtime/ops/op_table.h").read()
for m in re.finditer(r'X\(\w+,\s*(?:"[^"]*",\s*)?"(\w+)",\s*\(([\d, ]+)\)', op_table_text):
    table[m.group(1)] = [int(x) for x in m.group(2).split(",")]
max_opset = int(re.search(r"kMaxOpset = (\d+);", open(f"{src}/runtime/op_registry.h").read()).group(1))

onnx_versions = defaultdict(set)
for s in onnx.defs.get_all_schemas_with_history():
    if s.domain in ("", "ai.onnx"):
        onnx_versions[s.name].add(s.since_version)

problems = []
if len(table) < 90:
    problems.append(f"only {len(table)} ops read from op_versions.cpp: has its format changed?")
for op, mine in sorted(table.items()):
    theirs = sorted(onnx_versions.get(op, []))
    if not theirs:
        problems.append(f"{op}: onnx {onnx.__version__} defines no such default-domain op")
        continue
    new = [v for v in theirs if v not in mine]
    gone = [v for v in mine if v not in theirs]
    if new:
        problems.append(f"{op}: onnx {onnx.__version__} defines version(s) {new}, which op_versions.cpp lacks; "
                        f"read what changed (onnx's Changelog.md), make the schema implement it or refuse it with "
                        f"a sentence, then add the version")
    if gone:
        problems.append(f"{op}: op_versions.cpp lists version(s) {gone}, which onnx {onnx.__version__} does not define")
newest = onnx.defs.onnx_opset_version()
if newest != max_opset:
    problems.append(f"onnx {onnx.__version__} defines opsets up to {newest}, runtime/op_registry.h's kMaxOpset is "
                    f"{max_opset}: check the ops' new versions above, then set kMaxOpset to {newest}")

for p in problems:
    print("FAIL:", p)
print(f"{len(table)} ops, opsets up to {max_opset}, against onnx {onnx.__version__} (opset {newest}): "
      f"{'ok' if not problems else str(len(problems)) + ' problem(s)'}")
sys.exit(1 if problems else 0)
