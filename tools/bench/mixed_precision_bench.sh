#!/usr/bin/env bash
# Mixed precision on the CPU (issue 27) beside PyTorch's CPU autocast in one
# run: the reference CNN and a CIFAR ResNet trained in float32, bfloat16 and
# float16 by fmnist_train.py, and timed in PyTorch (float32, bfloat16
# autocast).
#
#   tools/bench/mixed_precision_bench.sh [--models cnn,resnet] [--epochs 3]
#       [--train_limit N] [--torch_train_limit 6400] [--out FILE]
#
# Target: bf16 and fp16 test accuracy within 0.5 points of float32's.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

case "${1:-}" in
  -h|--help) sed -n '2,10s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
esac

source tools/deps.sh
DOPPIO_DEBIAN_PACKAGES+=(python3-torch)
doppio_install_deps

echo "mixed_precision_bench $(date -Iseconds): $(/usr/bin/python3 tools/bench/machine.py)"
exec tools/python tools/bench/mixed_precision_bench.py "$@"
