#!/usr/bin/env bash
# Every Python test file under tests/ must run its cases when executed as a
# program: Bazel's py_test runs the file as main, and a file without a
# __main__ block (pytest.main, unittest.main, op_harness.run_main) runs
# nothing and exits 0, a test that passes without checking anything.
#   tools/check_test_entry_points.sh [ROOT]   (default: the repository)
set -uo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
missing=()
while IFS= read -r -d '' file; do
  grep -qE "^if __name__ == ['\"]__main__['\"]:" "$file" || missing+=("${file#"$root"/}")
done < <(find "$root/tests" -name '*_test.py' -print0)
if ((${#missing[@]})); then
  printf 'test entry points: %s runs no test cases as a program (add an\n  if __name__ == "__main__": block calling pytest.main)\n' "${missing[@]}" >&2
  exit 1
fi
echo "test entry points: every tests/**/*_test.py runs its cases"
