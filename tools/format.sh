#!/usr/bin/env bash
# Formats minirt's C, C++ and CUDA sources with clang-format and the
# repository's .clang-format (Google style, 120 columns).
#
#   tools/format.sh            rewrite every tracked source in place
#   tools/format.sh --check    change nothing; list the files that would
#                              change and exit 1 if there are any
#   tools/format.sh FILE...    rewrite only these files
#
# The tree is formatted with Debian 12's clang-format 14 (apt-get install
# clang-format; tools/setup.sh installs it). Other major versions lay out
# some constructs differently, so --check with another version says so and
# checks nothing (exit 0) rather than fail on its own differences; set
# CLANG_FORMAT to pick a binary.
set -euo pipefail
cd "$(dirname "$0")/.."

want_major=14
cf="${CLANG_FORMAT:-}"
if [ -z "$cf" ]; then
  for c in clang-format-$want_major clang-format; do
    if command -v "$c" >/dev/null 2>&1; then
      cf="$c"
      break
    fi
  done
fi
if [ -z "$cf" ] || ! command -v "$cf" >/dev/null 2>&1; then
  echo "format: clang-format not found; install it (apt-get install clang-format, or tools/setup.sh)" >&2
  exit 2
fi
version=$("$cf" --version | sed -n 's/.*version \([0-9][0-9]*\)\..*/\1/p' | head -n1)

check=0
files=()
for a in "$@"; do
  case "$a" in
    --check) check=1 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    -*) echo "format: unknown option $a" >&2; exit 2 ;;
    *) files+=("$a") ;;
  esac
done
if [ ${#files[@]} -eq 0 ]; then
  # Every tracked source, the generated ones are not tracked.
  mapfile -t files < <(git ls-files '*.c' '*.cc' '*.cpp' '*.h' '*.cu' '*.cuh')
fi

if [ "$check" = 1 ]; then
  if [ "$version" != "$want_major" ]; then
    echo "format: $cf is version ${version:-unknown}; the tree is laid out by clang-format $want_major," \
         "so the check is skipped here (nothing was checked)"
    exit 0
  fi
  bad=()
  for f in "${files[@]}"; do
    if ! "$cf" --style=file --dry-run --Werror "$f" >/dev/null 2>&1; then bad+=("$f"); fi
  done
  if [ ${#bad[@]} -gt 0 ]; then
    echo "format: ${#bad[@]} of ${#files[@]} files are not formatted (run tools/format.sh, or tools/format.sh FILE):" >&2
    printf '  %s\n' "${bad[@]}" >&2
    exit 1
  fi
  echo "format: ${#files[@]} files formatted as clang-format $want_major lays them out"
  exit 0
fi

if [ "$version" != "$want_major" ]; then
  echo "format: warning: $cf is version ${version:-unknown}, not $want_major; the result may differ from CI's check" >&2
fi
"$cf" --style=file -i "${files[@]}"
echo "format: formatted ${#files[@]} files"
