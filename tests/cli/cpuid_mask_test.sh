#!/usr/bin/env bash
# bench/cpuid_mask.cpp (side_by_side.py --isa avx2): with the library
# preloaded, a program that picks its kernels from CPUID (minirt-fma-peak)
# must choose AVX2 on a host with AVX-512, a real segmentation fault must
# still kill the process with SIGSEGV, and where the CPU or kernel cannot make
# CPUID fault the library must say so and change nothing.
#   cpuid_mask_test.sh BIN_DIR MASK_LIBRARY
set -u
bin=$1 mask=$2
. "$(dirname "$0")/expect.sh"

isa_of() { sed -n 's/.*"isa": "\([a-z0-9]*\)".*/\1/p'; }
native=$("$bin/minirt-fma-peak" --threads 1 --seconds 0.02 | isa_of)
masked_out=$(LD_PRELOAD=$mask "$bin/minirt-fma-peak" --threads 1 --seconds 0.02 2>/tmp/cpuid_mask_err.$$)
masked=$(isa_of <<<"$masked_out")
err=$(cat /tmp/cpuid_mask_err.$$)
rm -f /tmp/cpuid_mask_err.$$
echo "native ISA: $native, with the mask: $masked ($err)"

if grep -qw cpuid_fault /proc/cpuinfo; then
  if [ "$native" = avx512 ] || [ "$native" = avx2 ]; then
    [ "$masked" = avx2 ] || { echo "FAIL: with the mask the ISA is '$masked', want avx2"; failures=$((failures + 1)); }
  fi
  grep -q 'hidden from CPUID' <<<"$err" || { echo "FAIL: no notice on stderr"; failures=$((failures + 1)); }
  # A fault that is not CPUID goes on to the default action: the process dies of SIGSEGV (128 + 11).
  expect 139 '' -- env LD_PRELOAD="$mask" MINIRT_CPUID_MASK_QUIET=1 bash -c 'kill -SEGV $$'
  expect 139 '' -- env LD_PRELOAD="$mask" MINIRT_CPUID_MASK_QUIET=1 python3 -c 'import ctypes; ctypes.string_at(0)'
  # The bf16 modes: what minirt-doctor says --math bf16 runs on, with AMX hidden, then AVX512_BF16 too.
  if grep -qw amx_bf16 /proc/cpuinfo && grep -qw avx512_bf16 /proc/cpuinfo; then
    bf16_of() { env LD_PRELOAD="$mask" MINIRT_CPUID_MASK_QUIET=1 MINIRT_CPUID_MASK=$1 "$bin/minirt-doctor" --json |
      sed -n 's/.*"bf16":"\([a-z0-9_]*\)".*/\1/p'; }
    got=$(bf16_of amx)
    [ "$got" = avx512_bf16 ] || { echo "FAIL: MINIRT_CPUID_MASK=amx: bf16 runs on '$got', want avx512_bf16"; failures=$((failures + 1)); }
    got=$(bf16_of bf16)
    [ "$got" = none ] || { echo "FAIL: MINIRT_CPUID_MASK=bf16: bf16 runs on '$got', want none"; failures=$((failures + 1)); }
    echo "bf16 masks: amx -> $(bf16_of amx), bf16 -> $(bf16_of bf16)"
  fi
else
  [ "$masked" = "$native" ] || { echo "FAIL: no CPUID faulting here, yet the ISA changed to '$masked'"; failures=$((failures + 1)); }
  grep -q 'cannot make CPUID fault' <<<"$err" || { echo "FAIL: the library did not say it could not mask"; failures=$((failures + 1)); }
fi
[ "$failures" -eq 0 ] && echo "cpuid mask: all checks passed"
exit "$failures"
