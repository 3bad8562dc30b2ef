#!/bin/bash
# A grid traced again in the same folder, its batches ordered by the model (TREE_A) or by what the first run's
# run.json recorded (TREE_B), alternated, on the lent machine (issue 28; docs/performance.md), from the repository
# root there:
#   [SNAKEMAKE_ARGS=...] bash benchmarks/rerun_order_device.sh TREE_A:LABEL TREE_B:LABEL CORES ROUNDS
# One run of the default config from an empty folder (TREE_B), then ROUNDS x (A, B), each with --forceall; Snakemake
# and TileLang from benchmarks/device_site.sh. One JSON line per run to $OUT/rerun_order.jsonl: wall, floor, ratio
# and each trace batch's start and end (seconds after the run's first job, from its Snakemake log).
set -u
source benchmarks/device_site.sh
first=$1; second=$2; cores=$3; rounds=$4
work=$(mktemp -d); cp -r "$repo/config" "$work/"
run() {  # TREE:LABEL [snakemake args]
  local tree=${1%%:*} label=${1#*:}; shift
  local start=$(date +%s%N)
  PYTHONPATH=$PYTHONPATH:$repo/$tree/scripts \
    python3 -m snakemake -s "$repo/$tree/Snakefile" --directory "$work" --cores "$cores" ${SNAKEMAKE_ARGS:-} "$@" \
    > "$out/rerun_${label}_$(date +%s).log" 2>&1
  local status=$? wall=$(( ($(date +%s%N) - start) / 1000000 ))
  python3 - "$work" "$cores" "$label" "$wall" "$status" "$*" >> "$out/rerun_order.jsonl" <<'PY'
import glob, json, sys
from pathlib import Path
work, cores, label, wall, status, args = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]) / 1000, int(sys.argv[5]), sys.argv[6]
sys.path.insert(0, "benchmarks")
import compare_bench
report = compare_bench.floor_report(Path(work), wall, cores)
floor = (report["lower_cpu_seconds"] + report["import_cpu_seconds"]) / cores
_, spans = compare_bench.rule_spans(Path(sorted(glob.glob(f"{work}/.snakemake/log/*.log"))[-1]))
zero = min(begin for begin, _ in spans.values())
batches = {k: [(b - zero).seconds, (e - zero).seconds] for k, (b, e) in spans.items() if k.startswith("trace")}
print(json.dumps({"tree": label, "cores": cores, "args": args, "status": status, "wall_s": round(wall, 1),
                  "floor_s": round(floor, 1), "ratio": round(wall / floor, 2), "batches": batches}))
PY
}
run "$second"
for round in $(seq "$rounds"); do run "$first" --forceall; run "$second" --forceall; done
rm -rf "$work"
cat "$out/rerun_order.jsonl"
