#!/usr/bin/env bash
# Scaling across processes (issue 26) beside PyTorch's gloo in one run:
# allreduce bus bandwidth at 64 KiB, 1 MiB, 25 MiB, MLP training throughput
# and scaling efficiency, and the time to detect a dead peer.
#
#   tools/bench/scale_bench.sh [--nprocs 1,2,4,8] [--iters K] [--out FILE]
#
# Target: PyTorch time / ours >= 1x for each.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

case "${1:-}" in
  -h|--help) sed -n '2,9s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
esac

source tools/deps.sh
DOPPIO_DEBIAN_PACKAGES+=(python3-torch)
doppio_install_deps

echo "scale_bench $(date -Iseconds): $(/usr/bin/python3 tools/bench/machine.py)"
exec tools/python tools/bench/scale_bench.py "$@"
