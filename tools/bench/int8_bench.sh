#!/usr/bin/env bash
# Quantized inference benchmark of issue 25: Caffe2's Int8Conv / Int8FC in
# run_net beside PyTorch's quantized Conv2d / Linear (onednn and qnnpack
# engines), layer by layer (ResNet, MobileNetV2, a classifier) at batch 1
# and 8; prints each layer's best time and the ratio to PyTorch's best
# engine, and writes tools/bench/results/int8_bench.json.
#
#   tools/bench/int8_bench.sh [--threads N] [--rounds K] [--batches 1,8]
#                             [--engines onednn,qnnpack] [--out FILE]
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

case "${1:-}" in
  -h|--help) sed -n '2,9s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
esac

source tools/deps.sh
DOPPIO_DEBIAN_PACKAGES+=(python3-torch)
doppio_install_deps

bazel build -c opt --symlink_prefix=/ //tools:run_net
binary="$(bazel info -c opt bazel-bin 2>/dev/null)/tools/run_net"

threads="$(nproc)"
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  if [[ "${args[i]}" == --threads ]]; then threads="${args[i + 1]:-$threads}"; fi
  if [[ "${args[i]}" == --threads=* ]]; then threads="${args[i]#--threads=}"; fi
done
export OPENBLAS_NUM_THREADS="$threads" OMP_NUM_THREADS="$threads"

exec /usr/bin/python3 tools/bench/int8_bench.py --run_net "$binary" "$@"
