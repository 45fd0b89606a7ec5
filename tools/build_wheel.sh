#!/bin/bash
# Builds the doppio wheel (the doppio and caffe2 packages, the _C extension
# and the shared libraries it needs beyond the base system and the CUDA
# toolkit; tools/build_wheel.py says which and why):
#   tools/build_wheel.sh [OUT_DIR]          (default OUT_DIR: dist)
#   /usr/bin/python3 -m venv --system-site-packages ENV
#   ENV/bin/pip install --no-index OUT_DIR/doppio-*-cp311-cp311-linux_x86_64.whl
# Bazel builds the packages first (//tools:python_env, whose runfiles tree is
# the importable package). --package-root DIR packs an already built tree
# (DIR/doppio, DIR/caffe2) without running Bazel, as the install test does.
set -euo pipefail

usage() {
  echo "usage: tools/build_wheel.sh [--package-root DIR] [OUT_DIR]" >&2
  exit 2
}

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
package_root=""
out_dir=""
while (($# > 0)); do
  case "$1" in
    --package-root)
      (($# >= 2)) || usage
      package_root="$2"
      shift 2
      ;;
    -*) usage ;;
    *)
      [[ -z "$out_dir" ]] || usage
      out_dir="$1"
      shift
      ;;
  esac
done
out_dir="${out_dir:-$repo_root/dist}"

version="$(cat "$repo_root/tools/VERSION" 2>/dev/null || true)"
if [[ -z "$version" ]]; then
  echo "tools/build_wheel.sh: cannot read the version from $repo_root/tools/VERSION" >&2
  exit 1
fi

if [[ -z "$package_root" ]]; then
  if ! (cd "$repo_root" && bazel build --noshow_progress --show_result=0 \
          --ui_event_filters=-info,-progress //tools:python_env >&2); then
    echo "tools/build_wheel.sh: building //tools:python_env failed (see above)" >&2
    exit 1
  fi
  package_root="$repo_root/bazel-bin/tools/python_env.runfiles/doppio/python_api"
fi

# Debian's interpreter: the extension is built against its headers, and the
# wheel's tag is taken from it.
exec /usr/bin/python3 "$repo_root/tools/build_wheel.py" \
  --package-root "$package_root" --out "$out_dir" --version "$version"
