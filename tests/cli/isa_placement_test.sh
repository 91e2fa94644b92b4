#!/usr/bin/env bash
# Intrinsics and target attributes live in ISA files (ARCHITECTURE.md, "ISA
# files"): a file named for its instruction set (*_avx2.cpp, *_avx512.cpp,
# *_avx512bf16.cpp, *_avx512vnni.cpp, *_amx.cpp), compiled with that set's
# flags, or a header only such files include (the one-body *_ukr.h headers,
# amx_tiles.h, and the register forms vmath_avx512.h and vmath_avx2.h).
# Every other source file under kernels/, runtime/, loaders/ and tools/ has
# none: no AVX/AVX-512/AMX intrinsic or vector type, no
# __attribute__((target)), no MINIRT_TARGET_* macro. (Baseline x86-64
# hints such as _mm_pause and _mm_prefetch are not instruction sets.)
#
#   isa_placement_test.sh SOURCE_ROOT
set -euo pipefail
root=${1:?usage: $0 SOURCE_ROOT}
cd "$root"

pattern='\b_mm(256|512)_[a-z0-9_]+|\b__m(256|512)[dih]?\b|\b__mmask(8|16|32|64)\b|\b_tile_[a-z]+\(|__attribute__\(\(target\(|\bMINIRT_TARGET_AVX'

is_isa_file() {
  case $1 in
    *_avx2.cpp | *_avx512.cpp | *_avx512bf16.cpp | *_avx512vnni.cpp | *_amx.cpp) return 0 ;;
    *_avx2.h | *_avx512.h | *_ukr.h | kernels/cpu/amx_tiles.h) return 0 ;;
  esac
  return 1
}

status=0
while IFS= read -r f; do
  is_isa_file "$f" && continue
  if grep -qE "$pattern" "$f"; then
    echo "FAIL: $f holds intrinsics or target attributes outside an ISA file; move them into a *_<isa>.cpp file:"
    grep -nE "$pattern" "$f" | head -5
    status=1
  fi
done < <(
  # The tracked sources (a git checkout), else every source under the folders.
  { git ls-files 'kernels/*' 'runtime/*' 'loaders/*' 'tools/*' 2>/dev/null ||
    find kernels runtime loaders tools -type f; } | grep -E '\.(cpp|cc|h|hpp|cu|cuh)$'
)
[ $status -eq 0 ] && echo "ISA placement: intrinsics only in ISA files"
exit $status
