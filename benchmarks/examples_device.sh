#!/bin/bash
# Issue 47 on the lent H200 (tests/data/gpu/PROVENANCE.md), from the repository root there. Carried: tmp/site13.tar.xz
# (benchmarks/build_device_site.sh 0.1.13) and tmp/examples13.tar.xz (TileLang's examples/ at its 0.1.13 release
# commit, as benchmarks/tilelang_examples/README.md exports them, packed under tilelang-v0.1.13/).
#   bash benchmarks/examples_device.sh examples   # the corpus with gpu=true, TileLang's own timing beside it, the
#                                                 # 16-core question (lscpu, one lowering at 1/4/8/16 copies)
#   bash benchmarks/examples_device.sh knockout   # knockout_v0.1.13.yaml (three examples, passes changed, gpu)
#   bash benchmarks/examples_device.sh mains N    # the first N examples' own main(), unchanged
set -u
what=$1
out=${OUT:-/tmp/out}; mkdir -p "$out"
repo=$(pwd)
examples=$repo/benchmarks/tilelang_examples
site=tmp/site13
if [ ! -d "$site/tilelang" ]; then
  mkdir -p "$site" && tar -xJf "$site.tar.xz" -C "$site" && python3 -m compileall -q -j 0 "$site" scripts > /dev/null
fi
export PYTHONPATH=$repo/$site PYTHONUNBUFFERED=1
work=tmp/wex
if [ ! -d "$work/tilelang-v0.1.13" ]; then mkdir -p "$work" && tar -xJf tmp/examples13.tar.xz -C "$work"; fi
log=$out/$what.txt
snakemake_run() {  # CONFIG SECONDS [--config ...]
  local config=$1 seconds=$2; shift 2
  local start=$(date +%s)
  (cd "$work" && timeout "$seconds" python3 -m snakemake -s "$repo/Snakefile" --cores "$(nproc)" --scheduler greedy \
    --keep-going --rerun-incomplete --configfile "$config" "$@" > "$out/$what.snakemake.log" 2>&1)
  echo "snakemake exit $? in $(( $(date +%s) - start )) s" >> "$log"
}
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import sys, torch, tilelang, snakemake; print(sys.version.split()[0], torch.__version__, tilelang.__version__, tilelang.__file__, snakemake.__version__)"
  nvcc --version | tail -2
} > "$log" 2>&1
case $what in
  examples)
    snakemake_run "$examples/v0.1.13.yaml" 300 --config gpu=true 'modes=[instrument]'
    cp "$work/results/gpu/kernel_speed.csv" "$out/" 2>> "$log"
    (cd "$work" && tar -czf "$out/examples.results.tgz" results/gpu results/churn_summary.csv logs/gpu 2>/dev/null)
    start=$(date +%s)
    (cd "$work" && timeout 150 python3 "$examples/own_timing.py" --speed results/gpu/kernel_speed.csv \
      --configfile "$examples/v0.1.13.yaml" --jobs "$(nproc)" --budget-s 80 > "$out/own_timing.jsonl" 2>> "$log")
    echo "own_timing exit $? in $(( $(date +%s) - start )) s" >> "$log"
    { lscpu; echo; cat /sys/devices/system/cpu/cpu0/topology/thread_siblings_list; } > "$out/cpu.txt" 2>&1
    timeout 60 python3 benchmarks/lowering_copies.py --copies 1 4 8 16 --repeats 4 > "$out/copies.jsonl" 2>> "$log"
    echo "lowering_copies exit $?" >> "$log"
    ;;
  knockout)
    snakemake_run "$examples/knockout_v0.1.13.yaml" "${SECONDS_LIMIT:-450}"
    (cd "$work" && tar -czf "$out/knockout.results.tgz" results/knockout results/gpu logs/knockout logs/gpu 2>/dev/null)
    ;;
  mains)
    count=0
    for file in gemm/example_gemm.py gemm/example_gemm_intrinsics.py dequantize_gemm/example_dequant_gemm_w4a8.py \
      topk/example_topk.py grouped_gemm/example_grouped_gemm_fwd.py deepseek_mla/example_mla_decode.py; do
      count=$((count + 1)) && [ "$count" -le "${2:-6}" ] || break
      echo "== $file" >> "$log"
      (cd "$work/tilelang-v0.1.13/examples/$(dirname "$file")" && timeout 120 python3 "$(basename "$file")" 2>&1 |
        grep -v -E "INFO|WARNING|Warning" | tail -12) >> "$log"
    done
    ;;
esac
tail -3 "$out/$what.snakemake.log" >> "$log" 2>/dev/null
cat "$log"
