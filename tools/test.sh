#!/usr/bin/env bash
# The project's test command: installs what is missing, builds everything,
# runs every test. Exits non-zero on any failure.
#
#   tools/test.sh                    # bazel test //...
#   tools/test.sh //tests/core/...   # a subset
#   tools/test.sh --sanitizers       # the C++ tests under ASan + UBSan + LSan,
#                                    # the executor and collectives tests
#                                    # under TSan (docs/reliability.md)
set -euo pipefail

cd "$(dirname "$0")/.."
source tools/deps.sh
doppio_install_deps

sanitizers=0
if [[ "${1:-}" == "--sanitizers" ]]; then
  sanitizers=1
  shift
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT

# Runs `bazel test ARGS...`, teeing into $log; returns bazel's status.
run_bazel_test() {
  set +e
  bazel test --jobs=2 "$@" 2>&1 | tee "$log"
  local status=${PIPESTATUS[0]}
  set -e
  return "$status"
}

# "N passed, M failed" for the bazel test output in $log.
count_results() {
  local passed failed
  passed=$(grep -cE '^//[^ ]+ +(\(cached\) )?PASSED' "$log" || true)
  failed=$(grep -cE '^//[^ ]+ +(FAILED|TIMEOUT|NO STATUS|FAILED TO BUILD)' "$log" || true)
  echo "${passed} passed, ${failed} failed"
}

if ((sanitizers)); then
  suppressions="$PWD/tools/sanitizers"
  folders='//tests/core/... + //tests/proto/... + //tests/operators/... +
           //tests/parallel/... + //tests/python/... + //tests/tools/... +
           //tests/transforms/...'
  # Every C++ test there that does not link the CUDA runtime (which ASan
  # cannot run beside), leak checking on.
  asan_cc_targets=$(bazel query --noshow_progress \
    "kind(cc_test, $folders) except rdeps(//tests/..., //third_party/cuda:cudart)")
  # The Python tests load the instrumented _C.so into an uninstrumented
  # interpreter: the ASan runtime must be loaded first, and libstdc++ with it
  # so that ASan finds the C++ runtime it intercepts. Leak checking is off
  # (the interpreter keeps memory until exit); pytest's capture is off so a
  # report reaches the test log before the process ends.
  asan_py_targets=$(bazel query --noshow_progress "kind(py_test, $folders)")
  preload="$(realpath "$(gcc -print-file-name=libasan.so)")"
  preload+=":$(realpath "$(gcc -print-file-name=libstdc++.so.6)")"
  # The thread-heavy parts: dag executor, workspace, thread pool, the
  # in-process collectives, plans with concurrent steps, data-parallel nets
  # and the db readers shared by input ops.
  tsan_targets=(
    //tests/core:net_dag_test
    //tests/core:workspace_test
    //tests/core:thread_pool_test
    //tests/core:plan_test
    //tests/core:db_test
    //tests/parallel:collectives_op_test
    //tests/parallel:allreduce_order_test
    //tests/parallel:data_parallel_test
    //tests/operators:tensor_protos_db_input_op_test
  )
  status=0
  start=$SECONDS
  # shellcheck disable=SC2086  # one target per word
  run_bazel_test --config=asan \
    "--test_env=LSAN_OPTIONS=suppressions=$suppressions/lsan.supp:print_suppressions=0" \
    -- $asan_cc_targets || status=$?
  asan_cc="$(count_results)"
  # shellcheck disable=SC2086
  run_bazel_test --config=asan "--test_env=LD_PRELOAD=$preload" \
    "--test_env=ASAN_OPTIONS=halt_on_error=1:detect_leaks=0:print_stacktrace=1" \
    "--test_env=PYTEST_ADDOPTS=-s -rs" \
    -- $asan_py_targets || status=$?
  asan_summary="asan+ubsan: C++ ${asan_cc} (lsan on), Python $(count_results)"
  asan_summary+=" ($((SECONDS - start)) s)"
  start=$SECONDS
  tsan_options="halt_on_error=1:second_deadlock_stack=1:suppressions=$suppressions/tsan.supp"
  run_bazel_test --config=tsan "--test_env=TSAN_OPTIONS=$tsan_options" \
    -- "${tsan_targets[@]}" || status=$?
  tsan_summary="tsan: $(count_results) ($((SECONDS - start)) s)"
  echo "sanitizers: ${asan_summary}; ${tsan_summary}"
  exit "$status"
fi

targets=("$@")
if ((${#targets[@]} == 0)); then targets=(//...); fi

# Two cores: let Bazel use both, and keep test output to failures.
bazel build --jobs=2 -- "${targets[@]}"
status=0
failed_checks=()
# The layering is a build rule: dependencies pointing down it must fail.
tools/check_layering.sh || { status=$?; failed_checks+=(layering); }
# The size rule: short functions, measured with ctags.
tools/check_function_length.sh || { status=$?; failed_checks+=(function-length); }
# Python test files must run their cases when Bazel runs them as main.
tools/check_test_entry_points.sh || { status=$?; failed_checks+=(test-entry-points); }
run_bazel_test -- "${targets[@]}" || status=$?
# Bazel says PASSED for a target whose cases passed or were skipped: list
# the skipped cases (no GPU here, ...) with their reasons, so a check that
# could not run never reads as one that passed.
mapfile -t ran < <(grep -oE '^//[^ ]+' "$log" | sort -u)
if ((${#ran[@]})); then
  /usr/bin/python3 tools/skipped_tests.py "$(bazel info bazel-testlogs 2>/dev/null)" "${ran[@]}"
fi
# One closing line CI can read: test targets passed and failed, and any
# failed check (which fails the run although every test passed).
echo "tests: $(count_results)${failed_checks[*]:+; FAILED checks: ${failed_checks[*]}}"
exit "$status"
