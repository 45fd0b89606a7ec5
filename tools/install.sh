#!/bin/bash
# Installs Doppio's C++ runtime under a prefix:
#   tools/install.sh PREFIX
#     PREFIX/include/doppio/{core,operators,parallel,proto,transforms}/*.h
#     PREFIX/lib/libdoppio.so.0 (+ libdoppio.so), PREFIX/lib/pkgconfig/doppio.pc
#     PREFIX/bin/run_net
# then:  PKG_CONFIG_PATH=PREFIX/lib/pkgconfig g++ app.cc $(pkg-config --cflags --libs doppio)
#
# Builds //tools:install_files with Bazel first. DOPPIO_INSTALL_FROM=DIR
# installs from DIR instead (a tree holding the built files at their
# repository paths, e.g. a Bazel runfiles tree) without running Bazel: the
# install test does that, since Bazel cannot run inside a Bazel test.
set -euo pipefail

usage() {
  echo "usage: tools/install.sh PREFIX" >&2
  exit 2
}
die() {
  echo "tools/install.sh: $*" >&2
  exit 1
}

(($# == 1)) || usage
[[ "$1" != -* ]] || usage
prefix="$1"
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version="$(cat "$repo_root/tools/VERSION" 2>/dev/null || true)"
[[ -n "$version" ]] || die "cannot read the version from $repo_root/tools/VERSION"

if [[ -n "${DOPPIO_INSTALL_FROM:-}" ]]; then
  roots=("$DOPPIO_INSTALL_FROM")
else
  (cd "$repo_root" && bazel build --noshow_progress --show_result=0 \
      --ui_event_filters=-info,-progress //tools:install_files >&2) ||
    die "building //tools:install_files failed (see above)"
  # Generated files (libdoppio.so, run_net, doppio.pb.h) are under
  # bazel-bin; the other headers are in the source tree.
  roots=("$repo_root/bazel-bin" "$repo_root")
fi

# The first root holding PATH (a repository-relative path).
locate() {
  local root
  for root in "${roots[@]}"; do
    if [[ -e "$root/$1" ]]; then
      echo "$root/$1"
      return 0
    fi
  done
  die "$1 not found under ${roots[*]}"
}

mkdir -p "$prefix" || die "cannot create $prefix"
prefix="$(cd "$prefix" && pwd)"
manifest="$(locate tools/install_headers.txt)"

# A header dropped since the last install must not linger.
rm -rf "$prefix/include/doppio"
header_count=0
while IFS= read -r header; do
  [[ -n "$header" ]] || continue
  install -D -m 644 "$(locate "$header")" "$prefix/include/doppio/$header"
  header_count=$((header_count + 1))
done <"$manifest"
((header_count > 0)) || die "$manifest lists no headers"

install -D -m 755 "$(locate tools/libdoppio.so)" "$prefix/lib/libdoppio.so.0"
ln -sfn libdoppio.so.0 "$prefix/lib/libdoppio.so"
install -D -m 755 "$(locate tools/run_net)" "$prefix/bin/run_net"

# Requires: protobuf, since the headers include doppio.pb.h and callers use
# its message classes directly. The -rpath lets a program built with plain g++
# run without LD_LIBRARY_PATH; libdoppio finds the CUDA toolkit (which it
# links against) through its own RUNPATH. Libs.private lists what libdoppio
# links, for tools that inspect it; only the shared library is installed.
mkdir -p "$prefix/lib/pkgconfig"
cat >"$prefix/lib/pkgconfig/doppio.pc" <<EOF
prefix=$prefix
exec_prefix=\${prefix}
libdir=\${exec_prefix}/lib
includedir=\${prefix}/include

Name: doppio
Description: Caffe2-compatible dataflow runtime: NetDefs of registered operators over a blob Workspace (C++17)
Version: $version
Requires: protobuf
Cflags: -I\${includedir}/doppio
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -ldoppio
Libs.private: -llmdb -lhiredis -ldnnl -lgomp -lopenblas -lgloo -L/usr/local/cuda/lib64 -lcudart -lcublas -lcublasLt -lcudnn -lnccl -lpthread
EOF

echo "installed Doppio $version under $prefix: $header_count headers," \
     "lib/libdoppio.so.0, bin/run_net, lib/pkgconfig/doppio.pc"
