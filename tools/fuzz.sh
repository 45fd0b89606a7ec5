#!/usr/bin/env bash
# Builds the fuzz targets of tests/fuzz/ as libFuzzer binaries (clang, ASan,
# UBSan: .bazelrc's `fuzz` config) and fuzzes each for SECONDS.
#
#   tools/fuzz.sh SECONDS [TARGET...]      e.g. tools/fuzz.sh 300 npy_fuzz
#
# The build uses its own Bazel output base ($DOPPIO_FUZZ_OUTPUT_BASE, by
# default ~/.cache/doppio-fuzz-ob), so it never touches the shared gcc
# build. Each target fuzzes a fresh copy of its seed corpus (new inputs go
# there) with the committed corpus beside it, read-only. After a crash the
# target is restarted until its time is up, so one run can find several.
#
# Prints per target the executions and crashes; leaves crash, leak, timeout
# and out-of-memory inputs in the folder it names (add each, once fixed, to
# tests/fuzz/corpus/TARGET/ so that `bazel test //tests/fuzz/...` replays
# it). Exits non-zero when anything crashed.
set -euo pipefail

cd "$(dirname "$0")/.."

usage() {
  echo "usage: $0 SECONDS [TARGET...]" >&2
  exit 2
}
[[ $# -ge 1 && $1 =~ ^[0-9]+$ && $1 -gt 0 ]] || usage
seconds=$1
shift

all_targets=(netdef_fuzz inference_passes_fuzz plandef_fuzz tensorproto_fuzz blobproto_fuzz minidb_fuzz lmdb_fuzz
             npy_fuzz record_fuzz)
targets=("$@")
if ((${#targets[@]} == 0)); then targets=("${all_targets[@]}"); fi
labels=()
for target in "${targets[@]}"; do
  [[ -d tests/fuzz/corpus/$target ]] || { echo "unknown fuzz target '$target'" >&2; exit 2; }
  labels+=("//tests/fuzz:$target")
done

output_base=${DOPPIO_FUZZ_OUTPUT_BASE:-$HOME/.cache/doppio-fuzz-ob}
# No bazel-* convenience links: they would point the workspace's links at
# this output base, and `bazel test //...` of the main build would then
# descend into it (bazel ignores only links into its own output base).
bazel --output_base="$output_base" build --config=fuzz --symlink_prefix=/ -- "${labels[@]}"
bin=$(bazel --output_base="$output_base" info --config=fuzz bazel-bin 2>/dev/null)
# The clang server is only needed for the build; on a 2-core machine its
# idle JVM would hold ~1 GB while the targets fuzz and after the script.
bazel --output_base="$output_base" shutdown

work=$(mktemp -d "${TMPDIR:-/tmp}/doppio-fuzz.XXXXXX")
crashes=$work/crashes
mkdir -p "$crashes"
# More crashes than this in one target means one bug found over and over.
max_restarts=20

total_crashes=0
summary=()
for target in "${targets[@]}"; do
  corpus=$work/corpus/$target
  scratch=$work/tmp/$target
  mkdir -p "$corpus" "$scratch"
  cp -r "tests/fuzz/corpus/$target/." "$corpus/"
  executions=0
  target_crashes=0
  deadline=$((SECONDS + seconds))
  run=0
  while ((SECONDS < deadline && target_crashes <= max_restarts)); do
    run=$((run + 1))
    log=$work/$target.$run.log
    status=0
    # -timeout: one input running this long is a hang. The scratch TMPDIR
    # holds the files the db and npy targets write.
    TMPDIR=$scratch "$bin/tests/fuzz/$target" \
      -max_total_time=$((deadline - SECONDS)) -rss_limit_mb=2048 -timeout=25 \
      -print_final_stats=1 -artifact_prefix="$crashes/$target-" \
      "$corpus" "tests/fuzz/corpus/$target" >"$log" 2>&1 || status=$?
    units=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -1)
    if [[ -z $units ]]; then
      units=$(sed -n 's/^#\([0-9]*\).*/\1/p' "$log" | tail -1)
    fi
    executions=$((executions + ${units:-0}))
    if ((status != 0)); then
      target_crashes=$((target_crashes + 1))
      echo "$target: crash (exit $status), log $log:" >&2
      pattern='^==[0-9]+==ERROR|SUMMARY|fuzz invariant|terminate called|deadly signal'
      grep -m1 -E "$pattern|timeout|out-of-memory" "$log" >&2 || tail -5 "$log" >&2
    fi
  done
  total_crashes=$((total_crashes + target_crashes))
  summary+=("$(printf '%-18s %12d executions %4d crashes' \
    "$target" "$executions" "$target_crashes")")
done

echo
echo "fuzzed ${#targets[@]} target(s) for ${seconds}s each (logs and grown corpora in $work):"
printf '  %s\n' "${summary[@]}"
if ((total_crashes > 0)); then
  echo "FAILED: $total_crashes crash(es); inputs in $crashes:"
  ls -1 "$crashes" | sed 's/^/  /'
  exit 1
fi
echo "no crashes"
