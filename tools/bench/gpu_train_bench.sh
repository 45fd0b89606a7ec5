#!/usr/bin/env bash
# GPU training benchmark of the reference CNN on Fashion-MNIST (issue 9):
# Doppio's Parallelize_GPU on 1..N GPUs beside PyTorch on CUDA (one GPU, and
# nn.DataParallel on the same N GPUs), one run each, then one table (images/s,
# final loss, ours / PyTorch's on the same GPUs) and the results as JSON.
#
#   tools/bench/gpu_train_bench.sh [--max_gpus N] [--steps S] [--warmup W]
#       [--batch B] [--no_nccl] [--torch_python PATH] [--out FILE]
#
# Without a GPU (no nvidia-smi, or no device listed), or when PyTorch has no
# CUDA, it prints one "gpu_train_bench: SKIP ..." line and exits 0, so
# tools/gpu_selftest.sh can run it anywhere.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

case "${1:-}" in
  -h|--help) sed -n '2,12s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
esac

# Before any install or build: a machine without a GPU has nothing to time.
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  echo "gpu_train_bench: SKIP: no GPU on this machine (nvidia-smi lists none)"
  exit 0
fi

# The build and test dependencies plus the peer's python3-torch (use
# --torch_python for a PyTorch built with CUDA if Debian's is not).
source tools/deps.sh
DOPPIO_DEBIAN_PACKAGES+=(python3-torch)
doppio_install_deps

exec tools/python tools/bench/gpu_train_bench.py "$@"
