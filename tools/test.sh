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
bazel test --jobs=2 -- "${targets[@]}"
