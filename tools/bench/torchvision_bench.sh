#!/usr/bin/env bash
# Inference of torchvision architectures (ResNet-18/50, MobileNetV2/V3,
# DenseNet-121, EfficientNet-B0, SqueezeNet, GoogLeNet, ShuffleNetV2, RegNet,
# ConvNeXt-T, VGG-11) exported to ONNX and run by doppio.onnx.backend beside
# PyTorch eager at 224x224, batch 1 and 8; one table of ms per batch and
# ratios, the geometric mean per batch, and the results as JSON.
#
#   tools/bench/torchvision_bench.sh [--models a,b] [--batches 1,8] [--rounds K]
#                                    [--seconds S] [--threads N] [--out FILE]
#
# It fails when a model does not import or the two sides disagree.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

case "${1:-}" in
  -h|--help) sed -n '2,12s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
esac

source tools/deps.sh
DOPPIO_DEBIAN_PACKAGES+=(python3-torch python3-torchvision)
doppio_install_deps

threads="$(nproc)"
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  if [[ "${args[i]}" == --threads ]]; then threads="${args[i + 1]:-$threads}"; fi
  if [[ "${args[i]}" == --threads=* ]]; then threads="${args[i]#--threads=}"; fi
done
export OPENBLAS_NUM_THREADS="$threads" OMP_NUM_THREADS="$threads"

exec tools/python tools/bench/torchvision_bench.py "$@"
