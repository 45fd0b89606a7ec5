#!/usr/bin/env bash
# The main job: trains the reference CNN on Fashion-MNIST for 3 epochs with
# python_api/examples/fmnist_train.py, data-parallel on CPU devices
# (Parallelize_CPU; progress bars, test accuracy per epoch) with the split
# of the cores it measures fastest (--devices auto, which says what it
# picked; pass --devices N to choose), saves device
# 0's minidb checkpoint and a loss curve, exports a predict net +
# init net, scores them with run_net on the test set, and fails unless the
# test accuracy reaches the target (0.91). Outputs go to ./fmnist_run unless
# --workdir says otherwise; other arguments pass through to the example.
set -euo pipefail

repo_root="$(cd "$(dirname "$0")/.." && pwd)"
source "$repo_root/tools/deps.sh"
doppio_install_deps

workdir="$PWD/fmnist_run"
devices=(--devices auto)
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  if [[ "${args[i]}" == --workdir ]]; then workdir="${args[i + 1]}"; fi
  if [[ "${args[i]}" == --workdir=* ]]; then workdir="${args[i]#--workdir=}"; fi
  if [[ "${args[i]}" == --devices || "${args[i]}" == --devices=* ]]; then devices=(); fi
done

# tools/python builds the doppio package with make_db and run_net.
"$repo_root/tools/python" "$repo_root/python_api/examples/fmnist_train.py" \
  --workdir "$workdir" "${devices[@]}" "$@"

/usr/bin/python3 - "$workdir/summary.json" <<'PY'
import json, sys
summary = json.load(open(sys.argv[1]))
target = 0.91
accuracy = summary["final_test_accuracy"]
served = summary["run_net_test_accuracy"]
print("test accuracy {:.4f} (target {:.2f}), run_net on the exported nets {:.4f}: {}".format(
    accuracy, target, served, "OK" if accuracy >= target else "BELOW TARGET"))
sys.exit(0 if accuracy >= target and abs(served - accuracy) <= 1e-3 else 1)
PY
