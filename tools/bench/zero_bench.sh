#!/usr/bin/env bash
# Sharded optimizer state (ZeRO stage 1, issue 26) beside PyTorch's
# ZeroRedundancyOptimizer in one run: optimizer memory per process and step
# time, unsharded and sharded, N processes on TCP loopback.
#
#   tools/bench/zero_bench.sh [--nprocs N] [--hidden H] [--iters K] [--out FILE]
#
# Target: sharded / unsharded optimizer memory per process about 1/N;
# PyTorch time / ours >= 1x.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

case "${1:-}" in
  -h|--help) sed -n '2,9s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
esac

source tools/deps.sh
DOPPIO_DEBIAN_PACKAGES+=(python3-torch)
doppio_install_deps

echo "zero_bench $(date -Iseconds): $(/usr/bin/python3 tools/bench/machine.py)"
exec tools/python tools/bench/zero_bench.py "$@"
