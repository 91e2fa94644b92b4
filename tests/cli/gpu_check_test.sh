#!/usr/bin/env bash
# tools/gpu-check.sh without a GPU (every CI machine): it lists at most 8
# output files (a GPU machine of the device tool returns no more), rejects a
# bad command line, and a dry run starts, judges the stack, writes only files
# of that list and exits 2 ("no usable GPU") within seconds. Where
# nvidia-smi answers, the dry run would be the real check: it is left to
# tools/gpu-check.sh itself there.
#   gpu_check_test.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$1
src=$2
check=$src/tools/gpu-check.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/expect.sh"

mapfile -t outputs < <("$check" --outputs)
if [ ${#outputs[@]} -lt 1 ] || [ ${#outputs[@]} -gt 8 ]; then
  echo "FAIL: --outputs lists ${#outputs[@]} files (1 to 8 wanted): ${outputs[*]}"
  failures=$((failures + 1))
else
  echo "ok: --outputs lists ${#outputs[@]} files: ${outputs[*]}"
fi
expect 1 "usage: tools/gpu-check.sh OUTDIR" -- "$check"
expect 1 "usage" -- "$check" --bogus

if command -v nvidia-smi >/dev/null && nvidia-smi >/dev/null 2>&1; then
  echo "note: nvidia-smi answers here; the dry run would be the whole GPU check, not run by this test"
else
  t0=$(date +%s)
  expect 2 "no usable GPU here" -- env MINIRT_CHECK_BUILD="$build" MINIRT_CHECK_PYTHON=/nonexistent/python \
    timeout 120 "$check" "$work/out"
  took=$(($(date +%s) - t0))
  if [ "$took" -gt 60 ]; then
    echo "FAIL: the dry run took $took s (a few seconds wanted)"
    failures=$((failures + 1))
  fi
  n=0
  for f in "$work"/out/*; do
    [ -e "$f" ] || continue
    n=$((n + 1))
    name=$(basename "$f")
    if ! printf '%s\n' "${outputs[@]}" | grep -qxF "$name"; then
      echo "FAIL: the dry run wrote $name, which --outputs does not list"
      failures=$((failures + 1))
    fi
  done
  for want in results.md logs.tar.gz; do
    [ -f "$work/out/$want" ] || { echo "FAIL: the dry run wrote no $want"; failures=$((failures + 1)); }
  done
  grep -q "Exit status 2" "$work/out/results.md" 2>/dev/null ||
    { echo "FAIL: results.md does not carry the doctor's exit status 2"; failures=$((failures + 1)); }
  grep -q "^## Op cases on the GPU" "$work/out/results.md" 2>/dev/null ||
    { echo "FAIL: results.md has no section for the op cases on the GPU"; failures=$((failures + 1)); }
  # Every GPU test ran in the dry run (skipping), the model parity last.
  mkdir -p "$work/logs" && tar xzf "$work/out/logs.tar.gz" -C "$work/logs" 2>/dev/null
  last=$(tail -1 "$work/logs/logs/gpu-test-times.txt" 2>/dev/null)
  case "$last" in
    *GpuModels.*) ;;
    *) echo "FAIL: the model parity tests are not run last (last: ${last:-nothing})"; failures=$((failures + 1)) ;;
  esac
  echo "ok: dry run in $took s, $n files"
fi

[ "$failures" -eq 0 ] && echo "all gpu-check tests passed"
exit "$failures"
