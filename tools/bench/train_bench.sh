#!/usr/bin/env bash
# Training throughput beside PyTorch (issue 24): CIFAR ResNet-20 (brew +
# ResNetBuilder) against the same model in PyTorch eager, the same fed
# batch, momentum SGD; images/s, the ratio, and each side's conv + FC FLOP
# rate as a share of the machine's measured sgemm rate.
#
#   tools/bench/train_bench.sh [--models resnet20] [--rounds K]
#                              [--iterations N] [--warmup W] [--out FILE]
#                              [--doppio_orders NCHW,NHWC]
#                              [--torch_layouts contiguous,channels_last]
#
# It fails when one step from the same weights gives another loss on each side.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

case "${1:-}" in
  -h|--help) sed -n '2,12s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
esac

source tools/deps.sh
DOPPIO_DEBIAN_PACKAGES+=(python3-torch)
doppio_install_deps

export OPENBLAS_NUM_THREADS="$(nproc)" OMP_NUM_THREADS="$(nproc)"
exec tools/python tools/bench/train_bench.py "$@"
