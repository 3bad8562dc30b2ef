#!/bin/bash
# Editing one user kernel on the lent machine (issue 28; docs/performance.md), from the repository root there:
#   bash benchmarks/edit_kernel_device.sh TREE[:LABEL] ... -- CORES ...
# Each TREE (a checkout: its Snakefile, workflow/, scripts/) runs the default config plus one single-configuration
# user kernel (a copy of the shipped RMSNorm, as benchmarks/test_rerun_speed.py) from an empty folder at each
# --cores, then again after a comment is added to the kernel's file; Snakemake and TileLang from
# benchmarks/device_site.sh. One JSON line per rerun to $OUT/edit_kernel.jsonl: the first run's and the rerun's
# wall seconds, the rules the rerun ran and the threads of each trace batch it ran (from its Snakemake log).
set -u
source benchmarks/device_site.sh
trees=(); while [ "$1" != -- ]; do trees+=("$1"); shift; done; shift
timed() {  # LOG TREE CORES: seconds of one Snakemake run of $work, its output to LOG
  local start=$(date +%s%N)
  PYTHONPATH=$PYTHONPATH:$repo/$2/scripts \
    python3 -m snakemake -s "$repo/$2/Snakefile" --directory "$work" --cores "$3" --configfile "$work/config/with_kernel.yaml" \
    > "$1" 2>&1 || echo "snakemake failed: $1" >&2
  echo $(( ($(date +%s%N) - start) / 1000000 ))
}
for cores in "$@"; do
  for entry in "${trees[@]}"; do
    tree=${entry%%:*}; label=${entry#*:}
    work=$(mktemp -d); cp -r "$repo/config" "$work/"; mkdir "$work/my_kernels"
    cp "$repo/workflow/kernels/rmsnorm.py" "$work/my_kernels/my_rmsnorm.py"
    python3 - "$work" <<'PY'
import json, sys, yaml
config = yaml.safe_load(open(f"{sys.argv[1]}/config/config.yaml"))
config["kernels"] = [*config.get("kernels", []), {"name": "my_rmsnorm", "file": "my_kernels/my_rmsnorm.py", "params": [{}]}]
open(f"{sys.argv[1]}/config/with_kernel.yaml", "w").write(json.dumps(config))
PY
    first=$(timed "$out/edit_${label}_${cores}_first.log" "$tree" "$cores")
    printf '\n# an edit: this comment\n' >> "$work/my_kernels/my_rmsnorm.py"
    rerun=$(timed "$out/edit_${label}_${cores}_rerun.log" "$tree" "$cores")
    python3 - "$label" "$cores" "$first" "$rerun" "$out/edit_${label}_${cores}_rerun.log" >> "$out/edit_kernel.jsonl" <<'PY'
import json, re, sys
label, cores, first, rerun, log = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) / 1000, int(sys.argv[4]) / 1000, sys.argv[5]
text = open(log).read()
rules = re.findall(r"^(?:local)?rule (\w+):", text, re.M)
threads = dict(re.findall(r"^(?:local)?rule (trace\w+):\n(?:    .*\n)*?    threads: (\d+)$", text, re.M))
threads = {rule: int(threads.get(rule, 1)) for rule in rules if rule.startswith("trace")}  # no line: one
print(json.dumps({"tree": label, "cores": cores, "first_wall_s": round(first, 1), "rerun_wall_s": round(rerun, 1),
                  "rules": rules, "batch_threads": threads}))
PY
    rm -rf "$work"
  done
done
cat "$out/edit_kernel.jsonl"
