# Sourced by the lent machine's grid benchmarks (balance_device.sh, rerun_order_device.sh), from the repository
# root there: $out (from $OUT) and $repo; Snakemake and TileLang from tmp/site15 (unpacked from tmp/site15.tar.xz,
# as knockout_device.sh), after SITE_FIRST where set (a folder of packages that go before it, e.g. the pinned
# matplotlib), on PYTHONPATH; a run adds its tree's scripts/ after them (the package tilelang_churn, which nothing
# installs there: each tree its own).
out=${OUT:-/tmp/out}; mkdir -p "$out"
repo=$(pwd)
site=tmp/site15
if [ ! -d "$site/tilelang" ]; then mkdir -p "$site" && tar -xJf "$site.tar.xz" -C "$site"; fi
export PYTHONPATH=${SITE_FIRST:+$repo/$SITE_FIRST:}$repo/$site
# bytecode compiled before the runs, as pip compiles what it installs: otherwise the first run's processes compile
# the unpacked site's modules as they import them (seconds of the first run's start, on the lent machine)
python3 -m compileall -q -j 0 "$repo/$site" ${SITE_FIRST:+"$repo/$SITE_FIRST"} "$repo/scripts" > /dev/null
