#!/bin/bash
# The pass knockout with gpu=true on the lent H200 (tests/data/gpu/PROVENANCE.md), from the repository root there:
#   bash benchmarks/knockout_device.sh CONFIG [PYTEST_ARGS...]
# needs tmp/site15.tar.xz (TileLang 0.1.15, its pins and Snakemake's packages the image lacks, cp312) carried along.
set -u
config=$1; shift
out=${OUT:-/tmp/out}; mkdir -p "$out"
if [ ! -d /tmp/site15/tilelang ]; then mkdir -p /tmp/site15 && tar -xJf tmp/site15.tar.xz -C /tmp/site15; fi
export PYTHONPATH=/tmp/site15
name=$(basename "$config" .yaml)
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import sys, torch, tilelang, snakemake; print(sys.version.split()[0], torch.__version__, tilelang.__version__, snakemake.__version__)"
  nproc
} > "$out/$name.machine.txt" 2>&1
start=$(date +%s)
timeout "${SNAKEMAKE_TIMEOUT:-480}" python3 -m snakemake --cores "$(nproc)" --scheduler greedy --keep-going \
  --rerun-incomplete --configfile "$config" --config gpu=true ${SNAKEMAKE_ARGS:-} > "$out/$name.snakemake.log" 2>&1
echo "snakemake exit $? in $(( $(date +%s) - start )) s" >> "$out/$name.machine.txt"
tar -czf "$out/$name.results.tgz" results/knockout results/gpu/kernel_speed.csv results/gpu/device.json logs/knockout \
  results/benchmarks/knockout 2>/dev/null
if [ $# -gt 0 ]; then
  python3 -m pytest -p no:cacheprovider -o addopts="" "$@" > "$out/$name.pytest.log" 2>&1
  echo "pytest exit $?" >> "$out/$name.machine.txt"
fi
cat "$out/$name.machine.txt"; tail -5 "$out/$name.snakemake.log"
