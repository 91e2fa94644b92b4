#!/usr/bin/env bash
# No source file over 900 lines (issue 27): a file that long is several
# ideas, and splitting it along them is cheaper the earlier it is done
# (ctest cli.file_sizes). Counts the C++, CUDA, Python and shell files git
# tracks or would add (not ignored ones: no build output, no venv).
#
#   tests/cli/file_sizes_test.sh SOURCE_DIR [LIMIT]
set -euo pipefail
src="$1" limit="${2:-900}"
cd "$src"
files() {
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files --cached --others --exclude-standard -- '*.cpp' '*.h' '*.cu' '*.cuh' '*.py' '*.sh' '*.in'
  else  # a source tree without git: every such file outside build folders and venvs
    find . \( -name 'build*' -o -name '.venv*' -o -name '.git' \) -prune -o -type f \( -name '*.cpp' -o -name '*.h' \
      -o -name '*.cu' -o -name '*.cuh' -o -name '*.py' -o -name '*.sh' -o -name '*.in' \) -print | sed 's|^\./||'
  fi
}
over=0
while IFS= read -r f; do
  [ -f "$f" ] || continue
  n=$(wc -l <"$f")
  if [ "$n" -gt "$limit" ]; then
    echo "FAIL: $f has $n lines (at most $limit): split it along its ideas" >&2
    over=1
  fi
done < <(files)
count=$(files | wc -l)
[ "$over" -eq 0 ] || exit 1
echo "file_sizes: $count source files, none over $limit lines"
