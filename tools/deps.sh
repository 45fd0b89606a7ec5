#!/usr/bin/env bash
# Installs the Debian packages Doppio builds and tests with. Idempotent and
# quiet when everything is present; sourced by tools/test.sh and the
# quickstart so a fresh machine needs no manual step.
set -euo pipefail

DOPPIO_DEBIAN_PACKAGES=(
  g++
  bazel-bootstrap bazel-platforms bazel-rules-java
  protobuf-compiler libprotobuf-dev
  libgoogle-glog-dev libgflags-dev
  libgtest-dev libgmock-dev
  liblmdb-dev
  # ImageInput decodes JPEG records with libjpeg-turbo; python3-lmdb and
  # python3-pil write and check LMDBs of JPEG images in tests, as Caffe2's
  # lmdb_create_example.py does
  libjpeg62-turbo-dev python3-lmdb python3-pil
  libopenblas-dev libdnnl-dev
  pybind11-dev python3-dev
  python3-protobuf python3-numpy python3-pytest python3-hypothesis
  zlib1g-dev
  libgloo-dev libhiredis-dev redis-server
  iproute2
  dataset-fashion-mnist
  python3-tqdm python3-matplotlib graphviz
  # memonger.compute_interference_graph returns a networkx graph, as Caffe2's
  python3-networkx
  python3-onnx libonnx-testdata
  # PyTorch is an independent reference in tests (tests/examples,
  # tests/onnx) and the peer of every benchmark (tools/bench/peers)
  python3-torch
  # torchvision's architectures: tools/bench/torchvision_bench and its test
  python3-torchvision
  # Shapely's polygon intersections: the independent reference for rotated
  # boxes' IoU in the detection ops' tests
  python3-shapely
  clang libclang-rt-dev lld
  # tools/build_wheel.sh, tools/install.sh and their tests (tests/install)
  python3-venv python3-pip patchelf pkgconf
  # tools/check_function_length.sh (run by tools/test.sh)
  universal-ctags git
)

doppio_install_deps() {
  local missing=()
  local package
  for package in "${DOPPIO_DEBIAN_PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$package")
    fi
  done
  if ((${#missing[@]} == 0)); then
    return 0
  fi
  echo "installing Debian packages: ${missing[*]}" >&2
  local sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  doppio_install_deps
fi
