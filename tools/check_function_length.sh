#!/usr/bin/env bash
# The size rule of docs/DESIGN.md, measured with Universal Ctags: no function
# in parallel/ (the pass and its phases) over 80 lines, and none outside the
# tests over 120. Prints every function over its limit and exits 1 if any;
# `--top N` lists the N longest instead.
#
#   tools/check_function_length.sh
#   tools/check_function_length.sh --top 20
set -euo pipefail

cd "$(dirname "$0")/.."
readonly PASS_LIMIT=80 CODE_LIMIT=120
top=0
case "${1:-}" in
  --top) top=${2:?usage: tools/check_function_length.sh [--top N]} ;;
  "") ;;
  *) echo "usage: tools/check_function_length.sh [--top N]" >&2; exit 2 ;;
esac
command -v ctags >/dev/null || { echo "check_function_length.sh: ctags not found" >&2; exit 2; }

# One "lines<TAB>file<TAB>function" row per C++ or Python function (and
# method) of the tracked sources outside tests/ and third_party/.
lengths() {
  git ls-files -- '*.cc' '*.h' '*.cu' '*.py' ':!tests/' ':!third_party/' |
    ctags --languages=C++,Python --langmap=C++:+.cu --c++-kinds=f --python-kinds=fm \
          --fields=+ne -L - -f - 2>/dev/null |
    awk -F'\t' '{
      start = ""; end = ""
      for (i = 4; i <= NF; ++i) {
        if ($i ~ /^line:/) start = substr($i, 6)
        if ($i ~ /^end:/) end = substr($i, 5)
      }
      if (start != "" && end != "") print end - start + 1 "\t" $2 ":" start "\t" $1
    }' | sort -rn
}

if ((top > 0)); then
  lengths | head -n "$top"
  exit 0
fi
over=$(lengths | awk -F'\t' -v pass="$PASS_LIMIT" -v code="$CODE_LIMIT" '
  ($2 ~ /^parallel\// && $1 > pass) || $1 > code')
if [[ -n "$over" ]]; then
  echo "check_function_length.sh: functions over ${PASS_LIMIT} lines in parallel/ or" \
       "${CODE_LIMIT} elsewhere (split them into named steps):" >&2
  echo "$over" >&2
  exit 1
fi
echo "function length: none over ${PASS_LIMIT} lines in parallel/, none over ${CODE_LIMIT} elsewhere"
