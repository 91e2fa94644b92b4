#!/usr/bin/env bash
# A new activation is a row of runtime/ops/op_table.h plus its math in five
# places, and forgetting any of them fails (ctest cli.op_table_places):
# this test adds a row, PlacesProbe, to a copy of the table, writes none of
# its math, and checks that each place says so:
#
#   1. Activation::apply (runtime/ops/activation.h): -Werror=switch;
#   2. act_kind_avx512 and 3. act_kind_avx2 (kernels/cpu/vmath_avx512.h and
#      vmath_avx2.h, compiled as kernels/cpu/vmath_avx512.cpp and
#      vmath_avx2.cpp): a static_assert;
#   4. act_form (kernels/cuda/elementwise.cu): a static_assert, where nvcc is;
#   5. its op case (tests/op_cases/cases_*.py): ops.coverage's check.
#
# Everything else (enum, name, schema, versions, defaults, CPU and GPU
# registrations, support rules, GPU tolerance, vector dispatch) follows from
# the row: tests/unit/test_op_table.cpp. And no switch over an op kind has a
# default: (tests/cli/kind_switches.py), so -Wswitch reaches every switch.
#
#   tests/cli/op_table_places_test.sh SOURCE_DIR BUILD_DIR PYTHON
set -euo pipefail
src="$1" build="$2" python="${3:-python3}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail=0

"$python" "$src/tests/cli/kind_switches.py" "$src" || fail=1

# The table with one more row, shadowing the real one (-I tmp first).
mkdir -p "$tmp/runtime/ops"
"$python" - "$src/runtime/ops/op_table.h" "$tmp/runtime/ops/op_table.h" <<'EOF'
import sys
text = open(sys.argv[1]).read()
last = '  X(QuantGrid,'
i = text.index(last)
j = text.index("\n", i)
row = ('  X(PlacesProbe, "PlacesProbe", "PlacesProbe", (1), nullptr, 0.0f, nullptr, 0.0f, Module, Ulps, 0, 0)')
open(sys.argv[2], "w").write(text[:j] + " \\\n" + row + text[j:])
EOF
grep -q PlacesProbe "$tmp/runtime/ops/op_table.h" || { echo "op_table_places: could not add the probe row" >&2; exit 1; }

# expect NAME MESSAGE COMMAND...: the command must fail and print MESSAGE.
expect() {
  local name="$1" message="$2"
  shift 2
  if "$@" >"$tmp/out.txt" 2>&1; then
    echo "FAIL: $name: compiled without PlacesProbe's form" >&2
    fail=1
  elif ! grep -q -- "$message" "$tmp/out.txt"; then
    echo "FAIL: $name: failed, but not with '$message':" >&2
    head -20 "$tmp/out.txt" >&2
    fail=1
  else
    echo "ok: $name: $(grep -m1 -- "$message" "$tmp/out.txt" | cut -c1-160)"
  fi
}

# The compile command CMake uses for a source file, made a syntax check
# against the probe table.
compile_of() {
  "$python" - "$build/compile_commands.json" "$1" "$tmp" <<'EOF'
import json, shlex, sys
db, file, tmp = sys.argv[1:]
for e in json.load(open(db)):
    if e["file"].endswith(file):
        args = shlex.split(e["command"])
        out, skip = [args[0], "-I" + tmp], False
        for a in args[1:]:
            if skip:
                skip = False
                continue
            if a in ("-o", "-c"):
                skip = a == "-o"
                continue
            if a == e["file"]:
                continue
            out.append(a)
        print(shlex.join(out + ["-fsyntax-only", e["file"]]))
        break
EOF
}

printf '#include "runtime/ops/activation.h"\nfloat probe(const minirt::Activation& a) { return a.apply(1.0f); }\n' >"$tmp/apply.cpp"
expect "Activation::apply" "kPlacesProbe" \
  ${CXX:-c++} -std=c++20 -Wall -Werror -I"$tmp" -I"$src" -fsyntax-only "$tmp/apply.cpp"

for isa in avx512 avx2; do
  cmd="$(compile_of "kernels/cpu/vmath_$isa.cpp")"
  if [ -z "$cmd" ]; then
    echo "FAIL: kernels/cpu/vmath_$isa.cpp is not in $build/compile_commands.json" >&2
    fail=1
    continue
  fi
  label=$([ "$isa" = avx512 ] && echo "AVX-512" || echo "AVX2")
  expect "act_kind_$isa" "an ActKind without an $label form" bash -c "$cmd"
done

nvcc="${CUDACXX:-/usr/local/cuda/bin/nvcc}"
if [ -x "$nvcc" ]; then
  expect "act_form (CUDA)" "an ActKind without a CUDA form" \
    "$nvcc" -std=c++17 -I"$tmp" -I"$src" -I"$src/runtime/include" -c "$src/kernels/cuda/elementwise.cu" \
    -o "$tmp/elementwise.o"
else
  echo "note: no nvcc at $nvcc: the CUDA form's check is left to a machine with the toolkit"
fi

# The op case: ops.coverage over an op list with the probe's op in it.
if [ -x "$build/bin/runmodel" ] && [ -d "$build/op_cases" ]; then
  "$build/bin/runmodel" --list-ops >"$tmp/ops.md"
  echo "| PlacesProbe | 1 |  |" >>"$tmp/ops.md"
  expect "op case" "PlacesProbe has no op case" \
    "$python" "$src/tests/op_cases/coverage.py" --ops "$tmp/ops.md" --cases "$build/op_cases"
else
  echo "FAIL: op case: needs $build/bin/runmodel and the op cases in $build/op_cases" >&2
  fail=1
fi

if [ "$fail" -ne 0 ]; then
  echo "op_table_places: a place a new activation must write did not fail without it (above)" >&2
  exit 1
fi
echo "op_table_places: each of the places a new activation writes fails without it"
