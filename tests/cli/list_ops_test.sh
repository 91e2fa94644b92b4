#!/usr/bin/env bash
# runtime/ops/README.md's table of supported ops is `runmodel --list-ops`: the
# two must agree, so that the page never claims an op minirt refuses (or hides
# one it runs).
#
#   tests/cli/list_ops_test.sh BIN_DIR runtime/ops/README.md
set -euo pipefail
bin="$1" readme="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$bin/runmodel" --list-ops >"$tmp/ops.md"
sed -n '/<!-- ops:begin -->/,/<!-- ops:end -->/p' "$readme" | sed '1d;$d' >"$tmp/readme.md"
if [ ! -s "$tmp/readme.md" ]; then
  echo "list_ops: $readme has no table between <!-- ops:begin --> and <!-- ops:end -->" >&2
  exit 1
fi
if ! diff -u "$tmp/readme.md" "$tmp/ops.md"; then
  echo "list_ops: $readme's op table differs from runmodel --list-ops (above: - the page, + runmodel);" >&2
  echo "list_ops: replace the block between the ops markers with the output of build/bin/runmodel --list-ops" >&2
  exit 1
fi
# Every op in the table is one the loader takes: a one-node model of it is
# not refused as unknown (spot check: the newest ops).
for op in GridSample ScatterND Trilu Conv; do
  grep -q "^| $op |" "$tmp/ops.md" || { echo "list_ops: $op missing from runmodel --list-ops" >&2; exit 1; }
done
echo "list_ops: $readme and runmodel --list-ops agree ($(($(wc -l <"$tmp/ops.md") - 2)) ops)"
