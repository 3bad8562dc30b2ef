# make test: create .venv with the pinned requirements when missing, then run the tests.
# make run:  the same set-up, then the whole workflow (snakemake --cores 4).
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.requirements-installed
CORES ?= 4

.PHONY: test run bench static clean-results

$(STAMP): requirements.txt
	test -x $(PY) || python3 -m venv $(VENV)
	# torch is pinned in the same install as tilelang: an unpinned torch pulls a multi-GB CUDA build
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

test: $(STAMP)
	$(PY) -m pytest

run: $(STAMP)
	$(VENV)/bin/snakemake --cores $(CORES)

static: $(STAMP)
	$(VENV)/bin/snakemake --cores $(CORES) static

bench: $(STAMP)
	$(PY) -m pytest -q benchmarks

clean-results:
	rm -rf results .snakemake/log
