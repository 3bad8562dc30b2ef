#!/bin/bash
# Issue 47 on the lent H200 in one command (tests/data/gpu/PROVENANCE.md), from the repository root there. Carried:
# tmp/site13.tar.xz (benchmarks/build_device_site.sh 0.1.13) and tmp/examples13.tar.xz (TileLang's examples/ at its
# 0.1.13 release commit, exported as benchmarks/tilelang_examples/README.md says, packed under tilelang-v0.1.13/).
#   bash benchmarks/examples_device.sh
# In order, each part's files written to $OUT as soon as it ends (a later part may run out of the command's time):
# 1. the 16-core question: lscpu (cpu.txt), one lowering's CPU seconds at 1/4/8/16 copies (copies.jsonl);
# 2. the corpus v0.1.13.yaml with gpu=true, mode instrument (kernel_speed.csv, examples.results.tgz);
# 3. TileLang's own do_bench, three backends, beside the stage's timing of the same kernels (own_timing.jsonl), the
#    GPU's clocks meanwhile (clocks.csv);
# 4. knockout_v0.1.13.yaml: three examples, passes changed, gpu (knockout.results.tgz);
# With tmp/sites.tar.xz carried instead (site13/ and site14/, tests/data/gpu/PROVENANCE.md), 0.1.14 runs beside
# 0.1.13 as an environment entry in parts 2 and 5, and its rows are checked against 0.1.13's outputs.
# 0. (issue 57) the GPU tests first (gpu_tests.txt); 5. part 2's GPU jobs again on the same machine, their compiled
#    kernels cached (kernel_speed_again.csv): two timings of the stage by its own method.
# Each part's limit in seconds: COPIES_S, EXAMPLES_S, OWN_TIMING_S (its timing alone: OWN_TIMING_BUDGET_S), KNOCKOUT_S,
# TESTS_S, AGAIN_S. PARTS: which parts
# (default "1 2 3 4"); SPEED: the kernel_speed.csv, or folder of speed.json, part 3 takes its kernels from (default
# part 2's).
set -u
out=${OUT:-/tmp/out}; mkdir -p "$out"
repo=$(pwd)
examples=$repo/benchmarks/tilelang_examples
site=tmp/site13
# tmp/sites.tar.xz, where carried, holds site13/ and site14/ (0.1.14's tilelang/ alone, its other needs from site13)
if [ ! -d "$site/tilelang" ] && [ -f tmp/sites.tar.xz ]; then tar -xJf tmp/sites.tar.xz -C tmp; fi
if [ ! -d "$site/tilelang" ]; then mkdir -p "$site" && tar -xJf "$site.tar.xz" -C "$site"; fi
# scripts/: the package tilelang_churn, which nothing installs there
export PYTHONPATH=$repo/$site:$repo/scripts PYTHONUNBUFFERED=1
log=$out/examples.txt
stamp() { echo "[$(date +%T)] $*" >> "$log"; }
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import sys, torch, tilelang, snakemake; print(sys.version.split()[0], torch.__version__, tilelang.__version__, tilelang.__file__, snakemake.__version__)"
  nvcc --version | tail -1
} > "$log" 2>&1
snakemake_in() {  # WORKDIR SECONDS CONFIG [--config ...]: the examples unpacked into WORKDIR, Snakemake run there
  local work=$1 seconds=$2 config=$3; shift 3
  mkdir -p "$work" && tar -xJf tmp/examples13.tar.xz -C "$work"
  local start=$(date +%s)
  (cd "$work" && timeout -k 10 "$seconds" python3 -m snakemake -s "$repo/Snakefile" --cores "$(nproc)" \
    --scheduler greedy --keep-going --rerun-incomplete --configfile "$config" "$@" > snakemake.log 2>&1)
  stamp "snakemake in $work: exit $? in $(( $(date +%s) - start )) s; $(grep -c 'Finished jobid' "$work/snakemake.log") jobs"
}

versions=()
if [ -d tmp/site14/tilelang ]; then
  # 0.1.14 as an environment entry: a venv that reads site14, then site13, then the image's venv (torch), whose
  # own .pth files addsitedir runs
  python3 -m venv --without-pip tmp/venv14
  image_purelib=$(python3 -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
  purelib=$(tmp/venv14/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
  printf '%s\n' "$repo/tmp/site14" "$repo/$site" "import site; site.addsitedir('$image_purelib')" \
    > "$purelib/device_sites.pth"
  versions=("versions=[\"0.1.13\", {name: r0.1.14, python: \"$repo/tmp/venv14/bin/python\"}]")
  stamp "second version: $(tmp/venv14/bin/python -I -c 'import tilelang; print(tilelang.__version__, tilelang.__file__)' 2>&1 | tail -1)"
fi

# KERNELS (entry names, space-separated): parts 2 and 5 run those entries of v0.1.13.yaml alone
corpus=$examples/v0.1.13.yaml
if [ -n "${KERNELS:-}" ]; then
  python3 - "$corpus" tmp/examples_subset.yaml $KERNELS <<'PY'
import sys, yaml
config = yaml.safe_load(open(sys.argv[1]))
wanted = set(sys.argv[3:])
config["kernels"] = [entry for entry in config["kernels"] if entry["name"] in wanted]
assert len(config["kernels"]) == len(wanted), sorted(wanted - {entry["name"] for entry in config["kernels"]})
yaml.safe_dump(config, open(sys.argv[2], "w"), sort_keys=False)
PY
  corpus=$repo/tmp/examples_subset.yaml
fi

parts=" ${PARTS:-1 2 3 4} "
wants() { [[ $parts == *" $1 "* ]]; }

if wants 0; then
stamp "0. the GPU tests"
# shellcheck disable=SC2086 # TESTS: the test files, split
timeout -k 5 "${TESTS_S:-150}" python3 -m pytest -p no:cacheprovider -o addopts="" -q -rfE --tb=short -m gpu \
  ${TESTS:-tests/test_gpu_bench.py tests/test_knockout_gpu.py} > "$out/gpu_tests.txt" 2>&1
stamp "GPU tests exit $?: $(tail -1 "$out/gpu_tests.txt")"
fi

if wants 1; then
stamp "1. the 16-core question"
{ lscpu; echo; cat /sys/devices/system/cpu/cpu0/topology/thread_siblings_list; } > "$out/cpu.txt" 2>&1
timeout -k 5 "${COPIES_S:-50}" python3 benchmarks/lowering_copies.py --copies 1 4 8 16 --repeats 3 \
  > "$out/copies.jsonl" 2>> "$log"
stamp "lowering_copies exit $?"
fi

if wants 2; then
stamp "2. the examples on the GPU"
snakemake_in tmp/wex "${EXAMPLES_S:-240}" "$corpus" --config gpu=true gpu_timeout_s=45 'modes=[instrument]' \
  "${versions[@]}"
cp tmp/wex/results/gpu/kernel_speed.csv "$out/" 2>> "$log"
(cd tmp/wex && tar --exclude="*.pt" --exclude="*.so" --exclude="*.cubin" -czf "$out/examples.results.tgz" snakemake.log results/gpu results/churn_summary.csv logs/gpu)
fi

if wants 5; then
stamp "5. the GPU jobs of part 2 again"
(cd tmp/wex && timeout -k 10 "${AGAIN_S:-200}" python3 -m snakemake -s "$repo/Snakefile" --cores "$(nproc)" \
  --scheduler greedy --keep-going --configfile "$corpus" --config gpu=true gpu_timeout_s=45 \
  'modes=[instrument]' "${versions[@]}" --forcerun gpu_bench > snakemake_again.log 2>&1)
stamp "again: exit $?"
cp tmp/wex/results/gpu/kernel_speed.csv "$out/kernel_speed_again.csv" 2>> "$log"
fi

if wants 3; then
stamp "3. TileLang's own timing"
speed=$(realpath "${SPEED:-tmp/wex/results/gpu/runs}")  # every GPU job's speed.json, gathered or not
mkdir -p tmp/wex && [ -d tmp/wex/tilelang-v0.1.13 ] || tar -xJf tmp/examples13.tar.xz -C tmp/wex
# the GPU's clocks, power and throttle reasons every 20 ms, each line after its Unix time: joined with the methods'
# start and end times
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv,noheader,nounits -lms 20 | while IFS= read -r line; do echo "$EPOCHREALTIME, $line"; done \
  > "$out/clocks.csv" 2>> "$log" &
clocks=$!
(cd tmp/wex && timeout -k 5 "${OWN_TIMING_S:-80}" python3 "$examples/own_timing.py" --speed "$speed" \
  --configfile "$examples/v0.1.13.yaml" --jobs "$(nproc)" --budget-s "${OWN_TIMING_BUDGET_S:-40}" \
  > "$out/own_timing.jsonl" 2>> "$log")
stamp "own_timing exit $?"
pkill -P "$clocks" nvidia-smi; kill "$clocks" 2> /dev/null
fi

if wants 4; then
stamp "4. the knockout on the GPU"
snakemake_in tmp/wko "${KNOCKOUT_S:-300}" "$examples/knockout_v0.1.13.yaml" --config gpu_timeout_s=45 \
  'knockout={passes: changed, timeout_s: 45}'
(cd tmp/wko && tar -czf "$out/knockout.results.tgz" snakemake.log results/knockout results/gpu logs/knockout logs/gpu)
fi
stamp "done"
cat "$log"
