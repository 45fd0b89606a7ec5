#!/usr/bin/env bash
# Runs the in-process Allreduce benchmark (parallelize issue): Doppio's
# Allreduce over 2 and 4 per-device buffers of 25 MiB beside memcpy of the
# same size, measured in the same process, alternating rounds so that load
# from other processes hits both alike. Prints the table and writes the
# JSON line to the results file.
#
#   tools/bench/allreduce_bench.sh [--mib M] [--devices 2,4] [--rounds K]
#                                  [--iters R] [--out FILE]
#
# Target: Allreduce GB/s (n * size / time) >= 50% of memcpy GB/s.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

mib=25
devices="2,4"
rounds=5
iters=20
out="tools/bench/results/allreduce_bench.json"

usage() { sed -n '2,11s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }

while (($#)); do
  case "$1" in
    --mib) mib="$2"; shift 2 ;;
    --devices) devices="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --iters) iters="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "allreduce_bench.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
for value in "$rounds" "$iters"; do
  if ! [[ "$value" =~ ^[1-9][0-9]*$ ]]; then
    echo "allreduce_bench.sh: --rounds and --iters take a positive integer, got '$value'" >&2
    exit 2
  fi
done

source tools/deps.sh
doppio_install_deps

# An optimized build in its own output tree; no convenience symlinks, so the
# bazel-bin of concurrent fastbuild users keeps pointing where they expect.
bazel build -c opt --symlink_prefix=/ //tools/bench:allreduce_bench
binary="$(bazel info -c opt bazel-bin 2>/dev/null)/tools/bench/allreduce_bench"

scratch="$(mktemp)"
trap 'rm -f "$scratch"' EXIT
echo "allreduce_bench $(date -Iseconds): $(/usr/bin/python3 tools/bench/machine.py), load average $(cut -d' ' -f1-3 /proc/loadavg)"
"$binary" --mib="$mib" --devices="$devices" --rounds="$rounds" --iters="$iters" | tee "$scratch"

mkdir -p "$(dirname "$out")"
sed -n 's/^json: //p' "$scratch" >"$out"
echo
echo "results: $out"
