# Shared by the command-line tests (sourced): `expect` and the failure count.
#
# expect CODE PATTERN -- command...: the exit status must be CODE and the
# combined output must match the extended regex PATTERN; a mismatch prints
# the output and counts one failure.
failures=0
expect() {
  local code=$1 pattern=$2
  shift 3
  local out status
  out=$("$@" 2>&1)
  status=$?
  if [ "$status" -ne "$code" ] || ! grep -Eq -- "$pattern" <<<"$out"; then
    echo "FAIL: $* -> exit $status (want $code), output:"
    echo "$out" | tail -25
    echo "  (wanted output matching: $pattern)"
    failures=$((failures + 1))
  else
    echo "ok: $(basename "$1") ${*:2:3} -> $status"
  fi
}
