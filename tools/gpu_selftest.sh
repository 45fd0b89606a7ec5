#!/usr/bin/env bash
# The one command to run the day a GPU is attached: builds everything with
# CUDA, runs every GPU test (CUDA core, CUDA kernels, the CPU-vs-CUDA
# harness, the NCCL ops), then the whole test suite, then the GPU
# benchmarks, and prints one summary. Exits non-zero if any step failed.
#
#   tools/gpu_selftest.sh             # everything
#   tools/gpu_selftest.sh --no-bench  # skip the benchmarks
#
# For a GPU machine that cannot build (no Bazel, no Debian packages), build
# here and carry the tests there: tools/gpu_bundle.sh.
#
# The DOPPIO_REQUIRE_GPU convention: on a machine without a GPU, GPU tests
# skip (GTEST_SKIP / pytest.skip with the reason), which keeps CI green. This
# script sets DOPPIO_REQUIRE_GPU=1 for every test, and a GPU test that finds
# no usable device must then FAIL instead of skipping, so a broken driver or
# an invisible device cannot pass as green. Any value but "", "0", "false"
# or "off" turns it on (C++: doppio::GpuRequiredByEnvironment() in
# parallel/nccl/nccl_util.h; Python: os.environ.get('DOPPIO_REQUIRE_GPU')).
# Tests needing more GPUs than attached (e.g. 2 for the two-rank NCCL test)
# still skip: the requirement is "a GPU", not "enough GPUs".
#
# GPU tests are found by name: test targets under //tests matching
# gpu|cuda|nccl; the CPU-vs-CUDA harness is those matching
# cpu_vs_cuda|functors_gpu; benchmarks are tools/bench/*{gpu,cuda,nccl}*.sh.
set -uo pipefail

cd "$(dirname "$0")/.."
run_bench=1
for arg in "$@"; do
  case "$arg" in
    --no-bench) run_bench=0 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "gpu_selftest.sh: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done

if [[ -f tools/deps.sh ]]; then
  # shellcheck source=/dev/null
  source tools/deps.sh
  doppio_install_deps || true
fi

export DOPPIO_REQUIRE_GPU=1
declare -a summary=()
overall=0
step() {  # step NAME COMMAND... : runs it, records PASS/FAIL
  local name=$1; shift
  echo "=== ${name}: $*"
  if "$@"; then
    summary+=("PASS  ${name}")
  else
    summary+=("FAIL  ${name}")
    overall=1
  fi
}

echo "=== devices"
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv || true
else
  echo "nvidia-smi not found: no driver? GPU tests will fail (DOPPIO_REQUIRE_GPU=1)"
fi

test_flags=(--jobs="$(nproc)" --test_env=DOPPIO_REQUIRE_GPU=1 --test_output=errors
            --cache_test_results=no)

step "build //... (CUDA kernels, nvcc)" bazel build --jobs="$(nproc)" //...

mapfile -t gpu_tests < <(bazel query 'tests(//tests/...)' 2>/dev/null |
                         grep -Ei 'gpu|cuda|nccl' | sort)
mapfile -t harness < <(printf '%s\n' "${gpu_tests[@]}" | grep -Ei 'cpu_vs_cuda|functors_gpu')
mapfile -t nccl_tests < <(printf '%s\n' "${gpu_tests[@]}" | grep -i nccl)

if ((${#harness[@]})); then
  step "CPU-vs-CUDA harness (${#harness[@]} targets)" bazel test "${test_flags[@]}" -- "${harness[@]}"
else
  summary+=("MISSING  CPU-vs-CUDA harness: no test target matches cpu_vs_cuda|functors_gpu")
  overall=1
fi
if ((${#nccl_tests[@]})); then
  step "NCCL tests (${#nccl_tests[@]} targets)" bazel test "${test_flags[@]}" -- "${nccl_tests[@]}"
fi
if ((${#gpu_tests[@]})); then
  step "all GPU tests (${#gpu_tests[@]} targets)" bazel test "${test_flags[@]}" -- "${gpu_tests[@]}"
fi
# Everything else also runs with the GPU present (CPU ops linked with CUDA
# kernels, the Parallelize pass's GPU nets ...).
step "whole suite //..." bazel test "${test_flags[@]}" -- //...

if ((run_bench)); then
  shopt -s nullglob
  benches=(tools/bench/*gpu*.sh tools/bench/*cuda*.sh tools/bench/*nccl*.sh)
  shopt -u nullglob
  if ((${#benches[@]} == 0)); then
    summary+=("NONE  GPU benchmarks: no tools/bench/*{gpu,cuda,nccl}*.sh yet")
  fi
  for bench in "${benches[@]}"; do
    step "benchmark ${bench}" bash "$bench"
  done
fi

echo
echo "=== gpu_selftest summary (DOPPIO_REQUIRE_GPU=1)"
printf '%s\n' "${summary[@]}"
echo "GPU test targets run: ${#gpu_tests[@]}"
if ((overall)); then echo "gpu_selftest: FAILED"; else echo "gpu_selftest: all passed"; fi
exit "$overall"
