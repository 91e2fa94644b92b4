#!/usr/bin/env bash
# The ISA files' objects define nothing the linker could take for another
# object's code: no weak (W, V) or unique (u) global symbol, and no global
# symbol but their declared entry points (ARCHITECTURE.md, "ISA files").
# A weak symbol in an object compiled with -mavx512f (an inline function or
# template instantiation: std::min, Activation::apply, ...) may be the copy
# the linker keeps for every caller, which then dies with SIGILL on a CPU
# without AVX-512; a global name we did not declare is where that starts.
#
#   isa_objects_test.sh 'OBJ;OBJ;...' SOURCE=ENTRY[,ENTRY...] ...
#
# OBJ: the objects of minirt_cpu ($<TARGET_OBJECTS:minirt_cpu>); SOURCE: an
# ISA file's name (sgemm_avx512.cpp), ENTRY: the unqualified names of the
# functions it declares for the rest of minirt (in namespace minirt::cpu).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 'OBJ;OBJ;...' SOURCE=ENTRY[,ENTRY...] ..." >&2; exit 2; }
IFS=';' read -r -a objects <<< "$1"
shift
nm_tool=${NM:-nm}

# Weak data the sanitizer builds of tools/run-sanitizers.sh add by
# themselves, not code, and the same bytes in every object (so whichever copy
# the linker keeps, no instruction of it runs):
#  - clang's -fsanitize=function (in "undefined", the ASan+UBSan build)
#    emits the RTTI of each function's type, "typeinfo [name] for void (...)";
#  - exception-unwinding personality pointers, DW.ref.__gcc_personality_v0
#    (TSan's function-exit cleanups) or DW.ref.__gxx_personality_v0.
# Only as data (V): a weak function of those names would still fail.
instrumentation_data='^(typeinfo for .*|typeinfo name for .*|DW\.ref\.__g(cc|xx)_personality_v0)$'

status=0
for spec in "$@"; do
  source=${spec%%=*}
  IFS=',' read -r -a entries <<< "${spec#*=}"
  object=
  for o in "${objects[@]}"; do
    case $o in */"$source".o | */"$source".obj) object=$o ;; esac
  done
  if [ -z "$object" ] || [ ! -f "$object" ]; then
    echo "FAIL: no object for $source among minirt_cpu's objects"
    status=1
    continue
  fi
  found=0
  bad=()
  # "TYPE NAME" of every defined symbol, names demangled.
  while read -r type name; do
    case $type in
      [a-tx-z]) continue ;;  # local (but u: unique global, v, w: weak)
    esac
    if [ "$type" = V ] && [[ $name =~ $instrumentation_data ]]; then continue; fi
    case $type in
      W | V | u | w | v)
        bad+=("weak or unique symbol ($type): $name")
        continue
        ;;
    esac
    is_entry=0
    for e in "${entries[@]}"; do
      if [[ $name == "minirt::cpu::$e("* ]]; then is_entry=1; fi
    done
    if [ "$is_entry" = 1 ] && [ "$type" = T ]; then
      found=$((found + 1))
    else
      bad+=("global symbol that is not a declared entry point ($type): $name")
    fi
  done < <("$nm_tool" -C --defined-only "$object" | sed -E 's/^[0-9a-fA-F]* *//')
  if [ "${#bad[@]}" -gt 0 ]; then
    echo "FAIL: $source ($object):"
    printf '  %s\n' "${bad[@]}"
    status=1
  elif [ "$found" -ne "${#entries[@]}" ]; then
    echo "FAIL: $source defines $found of its ${#entries[@]} entry points (${entries[*]})"
    status=1
  else
    echo "ok: $source: ${entries[*]}, nothing weak, nothing else global"
  fi
done
exit $status
