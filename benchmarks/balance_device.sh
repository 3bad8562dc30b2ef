#!/bin/bash
# The default grid's wall time against its floor on the lent machine (issue 28; docs/performance.md), from the
# repository root there:
#   [SNAKEMAKE_ARGS=...] bash benchmarks/balance_device.sh TREE[:LABEL] ... -- CORES ...
# Each TREE (a checkout: its Snakefile, workflow/, scripts/) runs the default config from an empty folder at each
# --cores; Snakemake and TileLang come from benchmarks/device_site.sh (tmp/site15, after SITE_FIRST where set).
# Per run: wall seconds, the floor (lower_cpu_seconds of every lowering, a shared one once, + import_cpu_seconds of
# every trace process, over the cores: run.json, compare_bench.floor_report), their ratio, the longest chain (a
# batch's import and its longest lowering, CPU seconds), each batch's wall time and the tail (Snakemake's log, to
# the second: from the last trace batch's end to the last job's), one JSON line each to $OUT/balance.jsonl.
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
    python3 - "$work" "$cores" "$label" "$wall" "$status" "$out/balance_${label}_$cores.log" >> "$out/balance.jsonl" <<'PY'
import csv, datetime, glob, json, re, sys
work, cores, label, wall, status = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]) / 1000, int(sys.argv[5])
ends, stamp = {}, None  # rule -> the time its last job finished
for line in open(sys.argv[6], encoding="utf-8", errors="replace"):
    if found := re.match(r"\[(\w{3} \w{3} +\d+ [\d:]+ \d{4})\]", line):
        stamp = datetime.datetime.strptime(found.group(1), "%a %b %d %H:%M:%S %Y")
    elif (found := re.match(r"Finished jobid: \d+ \(Rule: (\S+)\)", line)) and stamp:
        ends[found.group(1)] = stamp
traces = [end for rule, end in ends.items() if rule.startswith("trace_")]
tail = (max(ends.values()) - max(traces)).total_seconds() if traces else None
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
                  "floor_s": round(cpu / cores, 1), "ratio": round(wall / (cpu / cores), 2), "tail_s": tail,
                  "chain_s": report["longest_chain_cpu_seconds"],
                  "batches_s": batches}))
PY
    rm -rf "$work"
  done
done
cat "$out/balance.jsonl"
