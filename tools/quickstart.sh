#!/usr/bin/env bash
# The main job until training lands: builds the runner and runs a small
# serialized net (tools/examples/scale_shift_*.pbtxt) on an input made with
# numpy, then prints the output next to numpy's answer.
set -euo pipefail

cd "$(dirname "$0")/.."
source tools/deps.sh
doppio_install_deps

bazel build --jobs=2 //tools:run_net
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

/usr/bin/python3 - "$work/x.npy" <<'PY'
import sys
import numpy as np
np.save(sys.argv[1], np.arange(6, dtype=np.float32).reshape(2, 3))
PY

bazel-bin/tools/run_net \
  --init_net tools/examples/scale_shift_init.pbtxt \
  --net tools/examples/scale_shift_predict.pbtxt \
  --input "x=$work/x.npy" --output "y=$work/y.npy" \
  --iters 10 --report_per_op

/usr/bin/python3 - "$work/x.npy" "$work/y.npy" <<'PY'
import sys
import numpy as np
x, y = np.load(sys.argv[1]), np.load(sys.argv[2])
w = np.array([[1, -1, 0.5], [2, 0, -0.25]], dtype=np.float32)
expected = 2 * (x + w) + 0.5
print("y =\n", y)
print("matches numpy:", bool(np.array_equal(y, expected)))
sys.exit(0 if np.array_equal(y, expected) else 1)
PY
