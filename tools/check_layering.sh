#!/usr/bin/env bash
# Shows that the layering is a build rule (docs/DESIGN.md section 2): every
# probe in core/layering_probes and operators/layering_probes that points
# down the layer list must fail Bazel's analysis with a visibility error,
# and the allowed probe must pass it. Exits non-zero otherwise. Analysis
# only (--nobuild): a few seconds once the packages are loaded.
set -euo pipefail
cd "$(dirname "$0")/.."

forbidden=(
  //core/layering_probes:core_on_operators
  //core/layering_probes:core_on_parallel
  //core/layering_probes:core_on_transforms
  //core/layering_probes:core_on_python_api
  //operators/layering_probes:operators_on_parallel
  //operators/layering_probes:operators_on_python_api
)
allowed=(//operators/layering_probes:operators_on_core)

status=0
for probe in "${forbidden[@]}"; do
  if output=$(bazel build --nobuild --noshow_progress "$probe" 2>&1); then
    echo "layering: $probe builds, but its dependency should be invisible to it" >&2
    status=1
  elif ! grep -q "is not visible from target '$probe'" <<<"$output"; then
    echo "layering: $probe failed for another reason than visibility:" >&2
    echo "$output" >&2
    status=1
  fi
done
for probe in "${allowed[@]}"; do
  if ! output=$(bazel build --nobuild --noshow_progress "$probe" 2>&1); then
    echo "layering: the allowed $probe does not build:" >&2
    echo "$output" >&2
    status=1
  fi
done
if ((status == 0)); then
  echo "layering: ${#forbidden[@]} forbidden dependencies refused by visibility," \
       "${#allowed[@]} allowed one accepted"
fi
exit "$status"
