#!/bin/bash
# Detectron's exporter against Doppio's caffe2 package, then run_net on its
# output (see tools/detectron_export.py):
#   tools/detectron_export.sh DETECTRON_CHECKOUT --cfg CONFIG.yaml --out_dir DIR [KEY VALUE...]
# Not part of tools/test.sh: CI has no Detectron checkout.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ $# -lt 1 || ! -d "$1/detectron" ]]; then
  echo "usage: tools/detectron_export.sh DETECTRON_CHECKOUT --cfg CONFIG --out_dir DIR [KEY VALUE...]" >&2
  echo "DETECTRON_CHECKOUT: git clone https://github.com/facebookresearch/Detectron outside this" >&2
  echo "repository, then 'python3 setup.py build_ext --inplace' in it (needs cython3, python3-opencv)" >&2
  exit 2
fi
(cd "$repo_root" && bazel build --jobs="${DOPPIO_JOBS:-2}" //tools:run_net >&2)
exec "$repo_root/tools/python" "$repo_root/tools/detectron_export.py" "$@"
