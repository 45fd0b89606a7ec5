#!/usr/bin/env bash
# Inference benchmark of issue 13: the reference CNN's predict + init nets
# (fixed random weights and BatchNorm statistics, no training) through
# run_net -- as given, then with the --optimize passes added one by one --
# beside PyTorch eager (eval, no_grad, same weights and threads) at batch 1
# and batch 64, alternating for a few rounds; prints one table (best round
# of each, images/s, ratio to PyTorch) and writes the results as JSON.
#
#   tools/bench/inference_bench.sh [--threads N] [--rounds K] [--warmup W]
#                                  [--batches 1,64] [--seconds S] [--out FILE]
#
# It fails when run_net and PyTorch predict different classes.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

case "${1:-}" in
  -h|--help) sed -n '2,13s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
esac

# The build and test dependencies plus the peer's python3-torch.
source tools/deps.sh
DOPPIO_DEBIAN_PACKAGES+=(python3-torch)
doppio_install_deps

# An optimized build in its own output tree; no convenience symlinks, so the
# bazel-bin of concurrent fastbuild users keeps pointing where they expect.
bazel build -c opt --symlink_prefix=/ //tools:run_net
binary="$(bazel info -c opt bazel-bin 2>/dev/null)/tools/run_net"

threads="$(nproc)"
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  if [[ "${args[i]}" == --threads ]]; then threads="${args[i + 1]:-$threads}"; fi
  if [[ "${args[i]}" == --threads=* ]]; then threads="${args[i]#--threads=}"; fi
done
# Both sides' OpenMP (oneDNN, torch) and OpenBLAS pools get the same size.
export OPENBLAS_NUM_THREADS="$threads" OMP_NUM_THREADS="$threads"

exec /usr/bin/python3 tools/bench/inference_bench.py --run_net "$binary" "$@"
