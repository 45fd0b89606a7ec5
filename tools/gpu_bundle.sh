#!/usr/bin/env bash
# Packs the GPU tests with everything they need into two tarballs that run
# on a GPU machine which has neither Bazel nor Debian's packages (a lent GPU
# machine that only receives files; tools/gpu_selftest.sh is the command for
# a GPU machine that can build).
#
#   tools/gpu_bundle.sh DIR
#     DIR/cpp.tgz + DIR/run_cpp.sh        the C++ GPU test binaries
#     DIR/python.tgz + DIR/run_python.sh  Debian's Python 3.11, numpy, pytest
#                                         and the built doppio extension
#   on the GPU machine, from a checkout of the same tree:
#     DIR/run_cpp.sh
#     DIR/run_python.sh tests/operators/cudnn_ops_device_test.py ...
#
# What travels: test binaries, Bazel's _solib libraries, the Debian libraries
# they link (protobuf, oneDNN, OpenBLAS, Gloo, ...), and for Python the
# interpreter, its standard library and the test dependencies. What does
# not: glibc, libstdc++ and the CUDA libraries (cudart, cuBLAS, cuDNN, NCCL),
# which the GPU machine has; the run scripts look for them in /usr/local/cuda
# and in the nvidia-* wheels of the machine's own python3. Each tarball stays
# under 64 MiB, so one run can carry it. Both run scripts set
# DOPPIO_REQUIRE_GPU=1: a GPU test that skips fails.
set -euo pipefail

cd "$(dirname "$0")/.."
out=${1:?usage: tools/gpu_bundle.sh DIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

mapfile -t targets < <(bazel query 'kind(cc_test, tests(//tests/...))' 2>/dev/null |
                       grep -Ei 'gpu|cuda|nccl' | sort)
((${#targets[@]})) || { echo "gpu_bundle.sh: no C++ GPU test targets found" >&2; exit 1; }
bazel build --jobs="$(nproc)" -- "${targets[@]}" //python_api:doppio >&2
# Not the bazel-bin link: it follows whichever config built last (asan, tsan).
bin_dir=$(bazel info bazel-bin 2>/dev/null)

# Copies the libraries `file` links, but the C/C++ runtime and CUDA.
copy_libraries() {
  local file=$1 destination=$2 library
  ldd "$file" | awk '$3 ~ /^\// {print $3}' | while read -r library; do
    case "$(basename "$library")" in
      libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libstdc++.so*|libgcc_s.so*) ;;
      libcuda.so*|libcudart.so*|libcublas*.so*|libcudnn*.so*|libnccl.so*|libnvrtc*.so*) ;;
      *) cp -L -n "$library" "$destination/" ;;
    esac
  done
}

# The CUDA libraries of the GPU machine: toolkit first, then pip's nvidia-*.
cuda_library_path='wheels=$(python3 -c '"'"'import glob, site; print(":".join(sorted(set(
    p for s in site.getsitepackages() for p in glob.glob(s + "/nvidia/*/lib")))))'"'"' 2>/dev/null)'

# --- C++ tests
mkdir -p "$stage/cpp/bin" "$stage/cpp/lib"
for target in "${targets[@]}"; do
  package=${target#//}; package=${package%%:*}
  binary="${bin_dir}/${package}/${target##*:}"
  cp "$binary" "$stage/cpp/bin/"
  copy_libraries "$binary" "$stage/cpp/lib"
done
tar czf "$out/cpp.tgz" -C "$stage/cpp" .
cat >"$out/run_cpp.sh" <<EOF
#!/usr/bin/env bash
# Runs every bundled C++ GPU test; prints one line per test.
here=\$(cd "\$(dirname "\$0")" && pwd)
rm -rf /tmp/doppio_cpp && mkdir -p /tmp/doppio_cpp && tar xzf "\$here/cpp.tgz" -C /tmp/doppio_cpp
${cuda_library_path}
export LD_LIBRARY_PATH="/tmp/doppio_cpp/lib:\${wheels}:/usr/local/cuda/lib64"
export DOPPIO_REQUIRE_GPU=1
status=0
summary=()
for test in /tmp/doppio_cpp/bin/*; do
  echo "=== \$(basename "\$test")"
  if "\$test" --gtest_brief=1; then
    summary+=("PASS  \$(basename "\$test")")
  else
    summary+=("FAIL  \$(basename "\$test")")
    status=1
  fi
done
printf '%s\n' "=== summary" "\${summary[@]}"
exit \$status
EOF

# --- Python: the interpreter the extension was built for, and the package
python=$(readlink -f /usr/bin/python3)
version=$(basename "$python")  # python3.11
py="$stage/python/py"
mkdir -p "$py/bin" "$py/lib/python3/dist-packages" "$py/solib" "$stage/python/pkg/doppio/proto"
cp "$python" "$py/bin/"
cp -a "/usr/lib/${version}" "$py/lib/"
(cd "$py/lib/${version}" && rm -rf test idlelib tkinter ensurepip lib2to3 config-3.* unittest/test)
for package in numpy google _pytest pytest pluggy iniconfig packaging hypothesis attr \
               sortedcontainers py.py; do
  cp -a "/usr/lib/python3/dist-packages/${package}" "$py/lib/python3/dist-packages/"
done
find "$stage/python" -name __pycache__ -prune -exec rm -rf {} +
find "$py/lib/python3/dist-packages/numpy" -name tests -prune -exec rm -rf {} +
cp "${bin_dir}/python_api/doppio/_C.so" "$stage/python/pkg/doppio/"
cp "${bin_dir}/python_api/doppio/proto/doppio_pb2.py" "$stage/python/pkg/doppio/proto/"
while read -r file; do copy_libraries "$file" "$py/solib"; done < <(
  printf '%s\n' "$python" "$stage/python/pkg/doppio/_C.so"
  find "$py/lib/python3/dist-packages/numpy" "$py/lib/${version}/lib-dynload" -name '*.so')
tar czf "$out/python.tgz" -C "$stage/python" .
cat >"$out/run_python.sh" <<EOF
#!/usr/bin/env bash
# Runs the given Python test files (paths in the checkout, which must be the
# tree the bundle was built from) with the bundled interpreter.
here=\$(cd "\$(dirname "\$0")" && pwd)
repo=\$(pwd)
root=/tmp/doppio_python
rm -rf \$root && mkdir -p \$root && tar xzf "\$here/python.tgz" -C \$root
cp -r python_api/doppio/. \$root/pkg/doppio/
${cuda_library_path}
export PYTHONHOME=\$root/py
export LD_LIBRARY_PATH=\$root/py/solib:\${wheels}:/usr/local/cuda/lib64
export PYTHONPATH=\$root/pkg:\$repo/python_api:\$repo:\$root/py/lib/python3/dist-packages
export DOPPIO_REQUIRE_GPU=1 HOME=/tmp PYTHONUNBUFFERED=1
status=0
for test in "\$@"; do
  echo "=== \$test"
  timeout 300 \$root/py/bin/${version} "\$test" > /tmp/doppio_test_log.txt 2>&1
  rc=\$?
  grep -E "^(FAILED|ERROR)|passed|failed" /tmp/doppio_test_log.txt | tail -15
  [ "\$rc" = 0 ] || { tail -60 /tmp/doppio_test_log.txt; status=1; }
  echo "=== rc \$rc \$test"
done
exit \$status
EOF
chmod +x "$out/run_cpp.sh" "$out/run_python.sh"
ls -la "$out" >&2
