#!/usr/bin/env bash
# Runs the executor benchmark of issue 5 beside its PyTorch peer: Doppio's
# net_overhead (per-op overhead of the simple and dag nets; dag speed-up of
# two Conv chains on cpu_0 and cpu_1) and tools/bench/peers/torch_overhead.py,
# alternating for a few rounds so that load from other processes hits both
# alike. Prints one table (best of all rounds) and writes the results as JSON.
#
#   tools/bench/net_overhead.sh [--ops N] [--rounds K] [--reps R] [--out FILE]
#
# Targets: <= 0.1 us/op simple, <= 0.5 us/op dag, dag >= 1.8x simple on 2 cores.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

ops=10000
rounds=3
reps=15
out="tools/bench/results/net_overhead.json"
peer="tools/bench/peers/torch_overhead.py"

usage() { sed -n '2,10s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }

while (($#)); do
  case "$1" in
    --ops) ops="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "net_overhead.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
for value in "$ops" "$rounds" "$reps"; do
  if ! [[ "$value" =~ ^[1-9][0-9]*$ ]]; then
    echo "net_overhead.sh: --ops, --rounds and --reps take a positive integer, got '$value'" >&2
    exit 2
  fi
done
if [ ! -f "$peer" ]; then
  echo "net_overhead.sh: the PyTorch peer $peer is missing" >&2
  exit 1
fi

# The build and test dependencies plus the peer's python3-torch.
source tools/deps.sh
DOPPIO_DEBIAN_PACKAGES+=(python3-torch)
doppio_install_deps

# An optimized build in its own output tree; no convenience symlinks, so the
# bazel-bin of concurrent fastbuild users keeps pointing where they expect.
bazel build -c opt --symlink_prefix=/ //tools/bench:net_overhead
binary="$(bazel info -c opt bazel-bin 2>/dev/null)/tools/bench/net_overhead"

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
for ((round = 1; round <= rounds; round++)); do
  echo "round $round/$rounds: doppio" >&2
  "$binary" --ops="$ops" --reps="$reps" >"$scratch/doppio_$round.jsonl"
  echo "round $round/$rounds: pytorch" >&2
  /usr/bin/python3 "$peer" "$ops" >"$scratch/torch_$round.json"
done

mkdir -p "$(dirname "$out")"
/usr/bin/python3 - "$scratch" "$rounds" "$out" "$reps" <<'EOF'
import datetime, json, os, sys
sys.path.insert(0, "tools/bench")
import machine

scratch, rounds, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ours = []
for r in range(1, rounds + 1):
    with open(os.path.join(scratch, "doppio_%d.jsonl" % r)) as f:
        ours += [json.loads(line) for line in f if line.strip()]
theirs = [json.load(open(os.path.join(scratch, "torch_%d.json" % r)))
          for r in range(1, rounds + 1)]

overhead = {}
for row in ours:
    if row["bench"] == "overhead":
        key = (row["executor"], row["op"])
        overhead[key] = min(overhead.get(key, 1e30), row["us_per_op"])
conv = {}
for row in ours:
    if row["bench"] == "parallel":
        conv[row["executor"]] = min(conv.get(row["executor"], 1e30), row["ms_per_run"])
torch_us = min(t["us_per_op"] for t in theirs)
parallel = next(row for row in ours if row["bench"] == "parallel")
result = {
    "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
    "machine": machine.machine(),
    "rounds": rounds, "reps": int(sys.argv[4]), "ops": ours[0]["ops"],
    "torch_peer": theirs[0]["peer"],
    "us_per_op": {"%s %s" % key: value for key, value in overhead.items()},
    "torch_us_per_op": torch_us,
    "conv_ms_per_run": conv,
    "conv_input": parallel["input"],
    "conv_layers_per_device": parallel["conv_layers_per_device"],
    "dag_speedup": conv["simple"] / conv["dag"],
    "doppio_runs": ours, "torch_runs": theirs,
}
with open(out, "w") as f:
    json.dump(result, f, indent=1)

print("net_overhead %s: %s, load average %.2f %.2f %.2f, %s"
      % (result["date"], machine.describe(), *result["machine"]["load_average"],
         result["torch_peer"]))
print("best of %d rounds x %d runs; %d ops per net" % (rounds, result["reps"], result["ops"]))
print()
print("| net of %d ops on 1-element tensors | us/op | target |" % result["ops"])
print("|---|---:|---:|")
targets = {"simple": "<= 0.1", "dag": "<= 0.5"}
for executor in ("simple", "dag"):
    print("| Add, %s executor | %.3f | %s |"
          % (executor, overhead[(executor, "Add")], targets[executor]))
for executor in ("simple", "dag"):
    print("| no-op op, %s executor (executor alone) | %.4f | |"
          % (executor, overhead[(executor, "NetOverheadNoOp")]))
print("| PyTorch eager x.add_(one) | %.3f | |" % torch_us)
print()
print("| two Conv chains, input %s, %d layers each, cpu_0 + cpu_1 | ms/run | dag speed-up |"
      % ("x".join(str(d) for d in result["conv_input"]), result["conv_layers_per_device"]))
print("|---|---:|---:|")
for executor in ("dag", "simple", "simple_all_cores"):
    print("| %s | %.3f | %.2fx |" % (executor, conv[executor], conv[executor] / conv["dag"]))
print()
print("results: %s" % out)
EOF
