#!/usr/bin/env bash
# Cross-process Allreduce benchmark (issue 7): 25 MiB of float32 between 2
# processes on TCP loopback, Doppio's Gloo Allreduce op (ring, ring_chunked,
# halving_doubling; ranks started by tools/launch.py) beside PyTorch's Gloo
# all_reduce (tools/bench/peers/torch_ddp.py 2 ITERS allreduce), alternating
# rounds of one run; prints the table and writes the results as JSON.
#
#   tools/bench/gloo_allreduce_bench.sh [--nprocs N] [--iters R] [--warmup W]
#       [--rounds K] [--store URL | --start_redis] [--out FILE] [--skip_torch]
#
# Target: ours / PyTorch >= 1x (GB/s, same transport).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

case "${1:-}" in
  -h|--help) sed -n '2,12s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
esac

# The build and test dependencies (Gloo, redis-server) plus the peer's
# python3-torch.
source tools/deps.sh
DOPPIO_DEBIAN_PACKAGES+=(python3-torch)
doppio_install_deps

echo "gloo_allreduce_bench $(date -Iseconds): $(/usr/bin/python3 tools/bench/machine.py)"
exec tools/python tools/bench/gloo_allreduce_bench.py "$@"
