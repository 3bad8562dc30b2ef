#!/bin/bash
# Packs what the lent H200 lacks into one tar.xz (tests/data/gpu/PROVENANCE.md): the cp312 wheels of one TileLang
# release and its pins, Snakemake and its closure at this venv's versions, pandas at the project's pin; the image
# already has torch, numpy, matplotlib, jinja2, einops and scipy. Run here, from the repository root:
#   bash benchmarks/build_device_site.sh 0.1.13 tmp/site13.tar.xz
# There: mkdir -p tmp/site13 && tar -xJf tmp/site13.tar.xz -C tmp/site13 && export PYTHONPATH=$PWD/tmp/site13
# `bash benchmarks/build_device_site.sh --freeze` prints the venv's packages as the script reads them, and stops.
set -euo pipefail
venv_python=${VENV_PYTHON:-.venv/bin/python}

# The venv's packages as name==version, the name lower case with dashes. The project's own editable install (`-e
# PATH`, after pip's comment `# Editable install with no version control (...)`, in a venv made by `make`) is no
# package of the site; any other line that is no name==version (`NAME @ URL`) stops the script, naming it.
freeze() {
  "$venv_python" -m pip freeze --disable-pip-version-check --exclude-editable | awk -F'==' '
    /^#/ || /^-e / || /^--editable / || /^[[:space:]]*$/ { next }
    NF != 2 || $1 !~ /^[A-Za-z0-9][A-Za-z0-9._-]*$/ || $2 !~ /^[^[:space:]]+$/ {
      print "build_device_site.sh: not name==version in pip freeze: " $0 > "/dev/stderr"; bad = 1; next
    }
    { gsub("_", "-", $1); print tolower($1) "==" $2 }
    END { exit bad }'
}
if [ "${1:-}" = "--freeze" ]; then
  freeze
  exit
fi
release=$1
archive=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# the image's own packages, this project's developer tools and the Chinese figures' fonts (100 MB) stay behind
image_has='^(torch|numpy|matplotlib|jinja2|markupsafe|pyyaml|pillow|fonttools|kiwisolver|contourpy|cycler|pyparsing|python-dateutil|six|packaging|psutil|tqdm|typing-extensions|cloudpickle|ml-dtypes|requests|urllib3|idna|certifi|charset-normalizer|attrs|pytest|pytest-xdist|execnet|iniconfig|pluggy|pygments|filelock|fsspec|networkx|sympy|mpmath|setuptools|wrapt|click|tabulate|wheel|pip|tilelang|black|ruff|snakefmt|playwright|pyee|shfmt-py|uv|pytokens|mplfonts|fontmeta|nvidia-.*|triton|cuda-.*)=='
freeze > "$work/freeze.txt"
grep -vE "$image_has" "$work/freeze.txt" > "$work/closure.txt"
# pure-Python packages are copied from this venv (some have no wheel on the index); compiled ones and TileLang's
# release with its pins (those measured for every release in config/tilelang_releases.yaml) come as cp312 wheels
"$venv_python" - "$work/closure.txt" "$work/site" > "$work/compiled.txt" <<'PY'
import shutil, sys
from importlib import metadata
from pathlib import Path
names, site = Path(sys.argv[1]).read_text().split(), Path(sys.argv[2])
for line in names:
    name, version = line.split("==")
    dist = metadata.distribution(name)
    files = [f for f in dist.files or [] if not str(f).startswith("..") and f.suffix != ".pyc"]
    if name in ("apache-tvm-ffi", "z3-solver", "torch-c-dlpack-ext") or any(str(f).endswith(".so") for f in files):
        print(line)
        continue
    for f in files:
        target = site / f
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(dist.locate_file(f), target)
PY
printf '%s\n' "tilelang==$release" | cat - "$work/compiled.txt" > "$work/wanted.txt"
platforms=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64 any; do
  platforms+=(--platform "$p")
done
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  "${platforms[@]}" -d "$work/wheels" -r "$work/wanted.txt"
python3 -m pip install -q --no-deps --no-compile --only-binary=:all: --python-version 3.12 --implementation cp \
  "${platforms[@]}" --target "$work/site" "$work"/wheels/*.whl
# z3's command-line program is not used; TileLang links libz3.so.4.15, and the wheel ships a copy as libz3.so
rm -f "$work"/site/bin/z3
# PuLP's bundled solver programs: Snakemake runs there with --scheduler greedy
rm -rf "$work"/site/pulp/solverdir
if [ -f "$work/site/z3/lib/libz3.so.4.15" ]; then ln -sf libz3.so.4.15 "$work/site/z3/lib/libz3.so"; fi
mkdir -p "$(dirname "$archive")"
tar -C "$work/site" -cf - . | xz -T0 -6 > "$archive"
ls -la "$archive"
sha256sum "$archive"
cat "$work/wanted.txt" "$work/closure.txt" | sort -u > "${archive%.tar.xz}.packages.txt"
