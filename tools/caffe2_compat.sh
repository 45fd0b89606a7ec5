#!/bin/bash
# Caffe2's own Python tests against Doppio's caffe2 package (see
# tools/caffe2_compat.py): tools/caffe2_compat.sh CAFFE2_CHECKOUT [TEST...]
# Not part of tools/test.sh: CI has no Caffe2 checkout.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ $# -lt 1 || ! -d "$1/caffe2/python" ]]; then
  echo "usage: tools/caffe2_compat.sh CAFFE2_CHECKOUT [TEST_FILE...] [--json OUT]" >&2
  echo "CAFFE2_CHECKOUT: a Caffe2 source tree (git clone https://github.com/facebookarchive/caffe2," >&2
  echo "then check out the commit before 'Remove all but redirect'), outside this repository" >&2
  exit 2
fi
exec "$repo_root/tools/python" "$repo_root/tools/caffe2_compat.py" "$@"
