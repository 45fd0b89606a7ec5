#!/usr/bin/env bash
# The project's test command: installs what is missing, builds everything,
# runs every test. Exits non-zero on any failure.
#
#   tools/test.sh            # bazel test //...
#   tools/test.sh //tests/core/...   # a subset
set -euo pipefail

cd "$(dirname "$0")/.."
source tools/deps.sh
doppio_install_deps

targets=("$@")
if ((${#targets[@]} == 0)); then targets=(//...); fi

# Two cores: let Bazel use both, and keep test output to failures.
bazel build --jobs=2 -- "${targets[@]}"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
bazel test --jobs=2 -- "${targets[@]}" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
# One closing line CI can read: test targets passed and failed.
passed=$(grep -cE '^//[^ ]+ +(\(cached\) )?PASSED' "$log" || true)
failed=$(grep -cE '^//[^ ]+ +(FAILED|TIMEOUT|NO STATUS|FAILED TO BUILD)' "$log" || true)
echo "tests: ${passed} passed, ${failed} failed"
exit "$status"
