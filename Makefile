# make test:  install the system packages the tests need (tests/system_packages.py, as root), create .venv with
#             the pinned requirements and the project (editable) when missing, then run every test.
# make check: the daily loop (at most a minute on 2 cores): the base tier of the tests (tables, pages, figures,
#             config checks, lint), and one real TileLang lowering (tests/README.md: the tiers).
# make run:   the .venv set-up, then the whole workflow (snakemake --cores 4).
VENV ?= .venv
PY := $(VENV)/bin/python
UV := $(VENV)/bin/uv
STAMP := $(VENV)/.requirements-installed
CORES ?= 4
# uv does not read pip's configuration: hand it pip's find-links (here the folder with the CPU torch wheel),
# or it resolves torch from the index and pulls the multi-GB CUDA build.
FIND_LINKS := $(shell python3 -m pip config get global.find-links 2>/dev/null || echo "$$PIP_FIND_LINKS")
UV_FIND_LINKS_ARGS := $(foreach dir,$(FIND_LINKS),--find-links $(dir))

# Bytecode is cached by every process the targets start, whatever the caller's PYTHONDONTWRITEBYTECODE: where it is
# set (as on this machine) every process compiled the modules it imports again (snakemake -n: 5.0 s against 2.3 s);
# compiling the whole venv at install instead costs 27 s, most of it modules nothing imports
WRITE_BYTECODE := env -u PYTHONDONTWRITEBYTECODE

.PHONY: test check system-packages run bench static clean-results

$(STAMP): requirements.txt pyproject.toml
	# no ensurepip (3 s): uv itself comes from the pins through the system's pip (22.3 or later: --python), else through
	# the venv's own pip; then uv installs the rest, pip included, in seconds from its cache
	test -x $(PY) || python3 -m venv --without-pip $(VENV)
	python3 -m pip --python $(PY) install --quiet --disable-pip-version-check "$$(grep -E '^uv==' requirements.txt)" \
	  || { $(PY) -m ensurepip --default-pip && $(PY) -m pip install --quiet "$$(grep -E '^uv==' requirements.txt)"; }
	$(UV) pip install --quiet --python $(PY) $(UV_FIND_LINKS_ARGS) -r requirements.txt
	# the project itself (pyproject.toml), editable: the package tilelang_churn importable from anywhere, the pins kept
	$(UV) pip install --quiet --python $(PY) --no-deps -e .
	$(WRITE_BYTECODE) $(PY) -c "import torch, sys; sys.exit(0 if torch.__version__.endswith('+cpu') or not torch.version.cuda else 'torch is a CUDA build: ' + torch.__version__)"
	touch $@

test: $(STAMP) system-packages
	$(WRITE_BYTECODE) $(PY) -m pytest

# the base tier waits on nothing (no Slurm, no timers): two workers for two cores, one collection fewer than make
# test's three (from a fresh clone 48.6 s against 53.3 s)
check: $(STAMP)
	$(WRITE_BYTECODE) $(PY) -m pytest -n 2 -m "smoke or not (slow or integration)"

# root with apt-get: installs what is missing; otherwise says what the tests will skip
system-packages:
	python3 tests/system_packages.py install

run: $(STAMP)
	$(WRITE_BYTECODE) $(VENV)/bin/snakemake --cores $(CORES)

static: $(STAMP)
	$(WRITE_BYTECODE) $(VENV)/bin/snakemake --cores $(CORES) static

# make bench: the performance goals (minutes); numbers to results/bench/*.csv and docs/performance.md's table
bench: $(STAMP)
	$(WRITE_BYTECODE) $(PY) -m pytest -q -n 0 -p no:cacheprovider benchmarks
	$(PY) benchmarks/bench_table.py docs/performance.md

clean-results:
	rm -rf results .snakemake/log
