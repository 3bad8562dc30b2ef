#!/bin/bash
# The pass knockout with gpu=true on the lent H200 (tests/data/gpu/PROVENANCE.md), from the repository root there:
#   [SITES="tmp/site14 tmp/site15"] [WORKDIR=tmp/w14] [SNAKEMAKE_ARGS=...] bash benchmarks/knockout_device.sh CONFIG [PYTEST_ARGS...]
# SITES: folders put on PYTHONPATH in that order (the first one's TileLang is the workflow's release), each unpacked
# from DIR.tar.xz carried along (cp312 wheels: TileLang and its pins; tmp/site15 also Snakemake's packages the image
# lacks) unless a call before, on the same warm machine, left it there; then scripts/ (the package tilelang_churn,
# which nothing installs there). WORKDIR: the run's folder (its config/ a copy).
set -u
config=$1; shift
out=${OUT:-/tmp/out}; mkdir -p "$out"
repo=$(pwd)
path=""
for site in ${SITES:-tmp/site15}; do
  if [ ! -d "$site/tilelang" ]; then mkdir -p "$site" && tar -xJf "$site.tar.xz" -C "$site"; fi
  path="$path${path:+:}$repo/$site"
done
export PYTHONPATH=$path:$repo/scripts
workdir=${WORKDIR:-.}
if [ "$workdir" != . ]; then mkdir -p "$workdir" && cp -r config "$workdir/"; fi
name=$(basename "$config" .yaml)${WORKDIR:+_$(basename "$workdir")}
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import sys, torch, tilelang, snakemake; print(sys.version.split()[0], torch.__version__, tilelang.__version__, snakemake.__version__)"
  nproc
} > "$out/$name.machine.txt" 2>&1
start=$(date +%s)
timeout "${SNAKEMAKE_TIMEOUT:-480}" python3 -m snakemake -s "$repo/Snakefile" --directory "$workdir" --cores "$(nproc)" \
  --scheduler greedy --keep-going --rerun-incomplete --configfile "$repo/$config" --config gpu=true ${SNAKEMAKE_ARGS:-} \
  > "$out/$name.snakemake.log" 2>&1
echo "snakemake exit $? in $(( $(date +%s) - start )) s" >> "$out/$name.machine.txt"
(cd "$workdir" && tar -czf "$out/$name.results.tgz" results/knockout results/gpu results/churn_summary.csv logs/knockout \
  logs/gpu 2>/dev/null)
if [ $# -gt 0 ]; then
  python3 -m pytest -p no:cacheprovider -o addopts="" "$@" > "$out/$name.pytest.log" 2>&1
  echo "pytest exit $?" >> "$out/$name.machine.txt"
fi
cat "$out/$name.machine.txt"; tail -5 "$out/$name.snakemake.log"
