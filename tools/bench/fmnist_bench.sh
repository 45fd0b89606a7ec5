#!/usr/bin/env bash
# Training benchmark of the reference CNN and MLP on Fashion-MNIST: Doppio
# on 1 device x 2 threads, 2 devices x 1 thread (Parallelize_CPU), 2
# processes and --devices auto, beside PyTorch with 2 threads (and 1 thread
# for the MLP) and PyTorch DDP with 2 processes (CNN), one run each, then one
# table (images/s, test accuracy, ours / PyTorch's best) and the results as
# JSON.
#
#   tools/bench/fmnist_bench.sh [--epochs N] [--train_limit N] [--models cnn,mlp]
#                               [--out FILE] [--skip_torch]
#
# The runs take turns on the machine, so load from other processes hits them
# one at a time: the table shows the load average around each.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

case "${1:-}" in
  -h|--help) sed -n '2,13s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
esac

# The build and test dependencies plus the peer's python3-torch.
source tools/deps.sh
DOPPIO_DEBIAN_PACKAGES+=(python3-torch)
doppio_install_deps

# tools/python builds the doppio package with make_db and run_net, which
# the example runs.
exec tools/python tools/bench/fmnist_bench.py "$@"
