#!/usr/bin/env bash
# Memory benchmark of the memonger issue: peak bytes of one training
# iteration (forward, backward, SGD) of the ResNet-style net of
# python_api/examples/memonger_models.py, batch 32 of 3x32x32, Doppio
# without and with memonger beside PyTorch, each in a fresh process; one
# table (allocator and RSS peaks, activation+gradient bytes saved) and the
# results as JSON.
#
#   tools/bench/memory_bench.sh [--batch N] [--blocks N] [--channels N]
#                               [--threads N] [--out FILE] [--skip_torch]
#   tools/bench/memory_bench.sh --report_allocations [--devices N] ...
#     instead: CPU allocator calls per steady-state training iteration
#     of the reference CNN and MLP (issue 13's target: 0).
# Memory does not depend on load; each run measures only itself.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

case "${1:-}" in
  -h|--help) sed -n '2,16s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
esac

# The build and test dependencies plus the peer's python3-torch.
source tools/deps.sh
DOPPIO_DEBIAN_PACKAGES+=(python3-torch)
doppio_install_deps

exec tools/python tools/bench/memory_bench.py "$@"
