#!/usr/bin/env bash
# Runs the operator benchmark of issue 3: Doppio's op_bench and its PyTorch
# peer (op_bench_torch.py) with the same thread count, alternating for a few
# rounds so that load from other processes hits both alike, then prints one
# table (best time of each op over all rounds) and writes the results as JSON.
#
#   tools/bench/op_bench.sh [--threads N] [--rounds K] [--reps R] [--warmup W]
#                           [--out FILE]
#
# Ratio is torch / ours: above 1 Doppio is faster. "% peak" compares the
# op's GFLOP/s with OpenBLAS's sgemm measured by op_bench in the same run.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

threads="$(nproc)"
rounds=3
reps=20
warmup=3
out="tools/bench/results/op_bench.json"

usage() { sed -n '2,11s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }

while (($#)); do
  case "$1" in
    --threads) threads="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --warmup) warmup="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "op_bench.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
for value in "$threads" "$rounds" "$reps"; do
  if ! [[ "$value" =~ ^[1-9][0-9]*$ ]]; then
    echo "op_bench.sh: --threads, --rounds and --reps take a positive integer, got '$value'" >&2
    exit 2
  fi
done

# The build and test dependencies plus the peer's python3-torch.
source tools/deps.sh
DOPPIO_DEBIAN_PACKAGES+=(python3-torch)
doppio_install_deps

# An optimized build in its own output tree; no convenience symlinks, so the
# bazel-bin of concurrent fastbuild users keeps pointing where they expect.
bazel build -c opt --symlink_prefix=/ //tools/bench:op_bench
binary="$(bazel info -c opt bazel-bin 2>/dev/null)/tools/bench/op_bench"

# Both sides' OpenBLAS and OpenMP pools get the same size; torch's generic
# BLAS cannot be told at run time, so the environment tells both.
export OPENBLAS_NUM_THREADS="$threads" OMP_NUM_THREADS="$threads"

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
for ((round = 1; round <= rounds; round++)); do
  echo "round $round/$rounds: doppio" >&2
  "$binary" --threads="$threads" --reps="$reps" --warmup="$warmup" \
    --json_out="$scratch/doppio_$round.json" >/dev/null
  echo "round $round/$rounds: pytorch" >&2
  /usr/bin/python3 tools/bench/op_bench_torch.py --threads="$threads" --reps="$reps" \
    --warmup="$warmup" >"$scratch/torch_$round.json"
done

mkdir -p "$(dirname "$out")"
/usr/bin/python3 - "$scratch" "$rounds" "$out" <<'EOF'
import datetime, json, os, statistics, sys
sys.path.insert(0, "tools/bench")
import machine

scratch, rounds, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
load = lambda path: json.load(open(os.path.join(scratch, path)))
ours = [load("doppio_%d.json" % r) for r in range(1, rounds + 1)]
theirs = [load("torch_%d.json" % r) for r in range(1, rounds + 1)]

def combine(runs):
    """Per (case, pass): best of the rounds' best times, median of their medians."""
    rows = {}
    for run in runs:
        for row in run["results"]:
            rows.setdefault((row["name"], row["pass"]), []).append(row)
    return {key: dict(found[0], ms_best=min(r["ms_best"] for r in found),
                      ms_median=statistics.median(r["ms_median"] for r in found))
            for key, found in rows.items()}

doppio, torch = combine(ours), combine(theirs)
peak = max(run["sgemm_peak"]["gflops"] for run in ours)
rows = []
for (name, pass_), mine in doppio.items():
    row = {"name": name, "pass": pass_, "op": mine["op"], "shape": mine["shape"],
           "doppio_ms": mine["ms_best"], "doppio_ms_median": mine["ms_median"]}
    peer = torch.get((name, pass_))
    if peer:
        row["torch_ms"] = peer["ms_best"]
        row["torch_ms_median"] = peer["ms_median"]
        row["ratio_torch_over_doppio"] = peer["ms_best"] / mine["ms_best"]
    if "gflop" in mine:
        row["gflops"] = mine["gflop"] / (mine["ms_best"] / 1e3)
        row["pct_of_sgemm_peak"] = 100 * row["gflops"] / peak
    if "gbyte" in mine:
        row["gbytes_per_s"] = mine["gbyte"] / (mine["ms_best"] / 1e3)
    rows.append(row)

result = {
    "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
    "machine": dict(machine.machine(), openblas_core=ours[0]["openblas_core"],
                    OPENBLAS_CORETYPE=os.environ.get("OPENBLAS_CORETYPE")),
    "threads": ours[0]["threads"], "rounds": rounds, "reps": ours[0]["reps"],
    "torch_version": theirs[0]["torch_version"],
    "sgemm_peak_gflops": peak, "sgemm_peak_n": ours[0]["sgemm_peak"]["n"],
    "rows": rows, "doppio_runs": ours, "torch_runs": theirs,
}
with open(out, "w") as f:
    json.dump(result, f, indent=1)

print("op_bench %s: %s, %d thread(s), OpenBLAS %s, torch %s"
      % (result["date"], machine.describe(), result["threads"],
         result["machine"]["openblas_core"], result["torch_version"]))
print("sgemm peak (%d^3): %.1f GFLOP/s; best of %d rounds x %d reps"
      % (result["sgemm_peak_n"], peak, rounds, result["reps"]))
print()
print("| op | pass | doppio ms | torch ms | torch/doppio | GFLOP/s | % sgemm peak |")
print("|---|---|---:|---:|---:|---:|---:|")
for r in rows:
    gflops = "%.1f" % r["gflops"] if "gflops" in r else "%.1f GB/s" % r["gbytes_per_s"]
    pct = "%.0f%%" % r["pct_of_sgemm_peak"] if "pct_of_sgemm_peak" in r else "-"
    torch_ms = "%.3f" % r["torch_ms"] if "torch_ms" in r else "-"
    ratio = "%.2f" % r["ratio_torch_over_doppio"] if "torch_ms" in r else "-"
    print("| %s (%s) | %s | %.3f | %s | %s | %s | %s |"
          % (r["name"], r["shape"], r["pass"], r["doppio_ms"], torch_ms, ratio, gflops, pct))
print()
print("results: %s" % out)
EOF
