#!/bin/bash
# The default grid's wall time against its floor on the lent machine (issue 28; docs/performance.md), from the
# repository root there:
#   [SNAKEMAKE_ARGS=...] bash benchmarks/balance_device.sh TREE[:LABEL] ... -- CORES ...
# Each TREE (a checkout: its Snakefile, workflow/, scripts/) runs the default config from an empty folder at each
# --cores; Snakemake and TileLang come from benchmarks/device_site.sh (tmp/site15, after SITE_FIRST where set).
# Per run: wall seconds, the floor (lower_cpu_seconds of every lowering, a shared one once, + import_cpu_seconds of
# every trace process, over the cores: run.json, compare_bench.floor_report), their ratio and each batch's wall
# time, one JSON line each to $OUT/balance.jsonl.
set -u
source benchmarks/device_site.sh
trees=(); while [ "$1" != -- ]; do trees+=("$1"); shift; done; shift
nproc > "$out/balance.machine.txt"
for cores in "$@"; do
  for entry in "${trees[@]}"; do
    tree=${entry%%:*}; label=${entry#*:}
    work=$(mktemp -d); cp -r "$repo/config" "$work/"
    start=$(date +%s%N)
    PYTHONPATH=$PYTHONPATH:$repo/$tree/scripts \
      python3 -m snakemake -s "$repo/$tree/Snakefile" --directory "$work" --cores "$cores" ${SNAKEMAKE_ARGS:-} \
      > "$out/balance_${label}_$cores.log" 2>&1
    status=$?
    wall=$(( ($(date +%s%N) - start) / 1000000 ))  # ms
    python3 - "$work" "$cores" "$label" "$wall" "$status" >> "$out/balance.jsonl" <<'PY'
import csv, glob, json, sys
work, cores, label, wall, status = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]) / 1000, int(sys.argv[5])
from pathlib import Path
sys.path.insert(0, "benchmarks")
import compare_bench  # the one floor: a shared lowering (config share_lowering) counted once
runs = glob.glob(f"{work}/results/runs/*/*/*/*/run.json")
report = compare_bench.floor_report(Path(work), wall, cores)
cpu = report["lower_cpu_seconds"] + report["import_cpu_seconds"]
batches = {}
for tsv in glob.glob(f"{work}/results/benchmarks/trace/*/*.tsv"):
    row = next(csv.DictReader(open(tsv), delimiter="\t"))
    batches[tsv.rsplit("/", 1)[1][:-4]] = float(row["s"])
print(json.dumps({"tree": label, "cores": cores, "status": status, "jobs": len(runs), "wall_s": round(wall, 1),
                  "served_by_another_lowering": report["served_by_another_lowering"],
                  "floor_s": round(cpu / cores, 1), "ratio": round(wall / (cpu / cores), 2), "batches_s": batches}))
PY
    rm -rf "$work"
  done
done
cat "$out/balance.jsonl"
