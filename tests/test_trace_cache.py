"""Snakemake's between-workflow cache for the trace batches of released TileLang versions (config trace_cache):
a second checkout fetches a batch it traced in the first; an edited kernel file or tracing code misses."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import REPO, checkout_copy, checkout_environ, make_workdir, require_tilelang, snakemake
from tilelang_churn.core import passes_table as pt

# one user kernel (a copy of the shipped RMSNorm) on one target in two modes: one trace batch of two jobs
CONFIG = {
    "shapes": [],
    "targets": ["cuda-sm90"],
    "modes": ["trace-env", "instrument"],
    "kernels": [{"name": "my_rmsnorm", "file": "my_kernels/my_rmsnorm.py", "params": [{}]}],
    "trace_cache": True,
    "job_figures": False,
    "job_files": "tables",
}


def checkout(root: Path) -> Path:
    project = checkout_copy(root)
    (project / "my_kernels").mkdir()
    shutil.copy(REPO / "workflow" / "kernels" / "rmsnorm.py", project / "my_kernels" / "my_rmsnorm.py")
    (project / "config" / "cached.yaml").write_text(json.dumps(CONFIG))  # JSON is YAML
    return project


def run(project: Path, cache: Path) -> subprocess.CompletedProcess:
    env = {**checkout_environ(project), "SNAKEMAKE_OUTPUT_CACHE": str(cache)}
    # targets first: --configfile and --cache take every word after them
    args = ("results/churn.csv", "--cores", "2", "--configfile", "config/cached.yaml", "--cache")
    proc = snakemake(project, *args, env=env, timeout=900, own_snakefile=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def job_files(project: Path) -> dict[str, bytes]:
    runs = project / "results" / "runs"
    return {str(p.relative_to(runs)): p.read_bytes() for p in sorted(runs.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def two_checkouts(tmp_path_factory):
    require_tilelang()
    root = tmp_path_factory.mktemp("trace_cache")
    cache = root / "cache"
    cache.mkdir()
    first, second = checkout(root / "first"), checkout(root / "second")
    traced = run(first, cache)
    fetched = run(second, cache)
    return first, second, cache, traced, fetched


@pytest.mark.slow
def test_a_second_checkout_fetches_the_batch_the_first_traced(two_checkouts):
    first, second, cache, traced, fetched = two_checkouts
    stored, fetched_ = "Moving output file", "from cache"  # Snakemake's words (a stored one is linked back too)
    assert stored in traced.stderr and len(list(cache.iterdir())) == 1  # the batch's one archive
    assert stored not in fetched.stderr and fetched_ in fetched.stderr
    batch_logs = [list((project / "logs" / "trace").glob("*/*.log")) for project in (first, second)]
    # traced in the first checkout only: the second's batch log is the empty file Snakemake made for the rule
    assert len(batch_logs[0]) == 1 and "trace_batch.py" in batch_logs[0][0].read_text()
    assert [log.stat().st_size for log in batch_logs[1]] in ([], [0])
    # the same files, byte for byte, the jobs' logs too: what the readers get is what the first checkout traced
    assert job_files(second) == job_files(first) and len(job_files(first)) >= 4
    job_logs = [
        sorted(p.read_bytes() for p in (project / "logs" / "trace").glob("*/*/*/*.log")) for project in (first, second)
    ]
    assert len(job_logs[0]) == 2 and job_logs[0] == job_logs[1]
    rows = pt.read_rows(next((second / "results" / "runs").rglob("instrument/passes.csv")))
    assert len(rows) > 10 and rows[0]["kernel"] == "my_rmsnorm"
    # run.json says where the record was traced: the first checkout
    info = json.loads(next((second / "results" / "runs").rglob("instrument/run.json")).read_text())
    assert info["cwd"] == str(first)
    assert (second / "results" / "churn.csv").read_bytes() == (first / "results" / "churn.csv").read_bytes()


@pytest.mark.slow
@pytest.mark.parametrize("edit", ["my_kernels/my_rmsnorm.py", "scripts/tilelang_churn/trace/pass_instrument.py"])
def test_an_edited_kernel_file_or_tracing_code_is_traced_again(two_checkouts, edit, tmp_path):
    _, second, cache, _, _ = two_checkouts
    third = checkout(tmp_path / "third")
    with open(third / edit, "a", encoding="utf-8") as handle:
        handle.write("\n# an edit\n")
    proc = run(third, cache)
    assert "Moving output file" in proc.stderr  # traced, then stored under a key of its own
    assert (third / "results" / "trace_cache").exists() and len(list(cache.iterdir())) >= 2
    rows = pt.read_rows(next((third / "results" / "runs").rglob("instrument/passes.csv")))
    info = json.loads(next((third / "results" / "runs").rglob("instrument/run.json")).read_text())
    assert info["cwd"] == str(third) and len(rows) > 10


def test_an_archive_holds_the_folders_and_files_given_and_unpacks_in_place(tmp_path, monkeypatch):
    from tilelang_churn.trace import trace_archive

    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs" / "job" / "lower_trace").mkdir(parents=True)
    (tmp_path / "runs" / "job" / "passes.csv").write_text("step\n0\n")
    (tmp_path / "runs" / "job" / "lower_trace" / "report.html").write_text("<html>")
    (tmp_path / "job.log").write_text("pass=x\n")
    assert trace_archive.pack("batch.tar", ["runs/job", "job.log", "runs/missing"]) == 3
    again = tmp_path / "again"
    unpacked = trace_archive.unpack("batch.tar", again)
    assert sorted(unpacked) == ["job.log", "runs/job/lower_trace/report.html", "runs/job/passes.csv"]
    assert (again / "runs" / "job" / "passes.csv").read_text() == "step\n0\n"
    for outside in ("/etc", "../up"):
        with pytest.raises(ValueError, match="not a path inside the working directory"):
            trace_archive.pack("bad.tar", [outside])
    assert not (tmp_path / "bad.tar").exists()  # nothing half-written


@pytest.mark.integration
def test_cache_without_its_folder_stops_before_any_job_naming_the_variable(tmp_path):
    """Round four: `--cache` with trace_cache and no SNAKEMAKE_OUTPUT_CACHE ended in Snakemake's traceback ("Cache
    backend unavailable") when the first cached batch asked its cache; now the config check says what to set."""
    workdir = make_workdir(tmp_path / "wf")
    env = {key: value for key, value in os.environ.items() if key != "SNAKEMAKE_OUTPUT_CACHE"}
    args = ("-n", "--configfile", "config/test_config.yaml", "--config", "trace_cache=true")
    proc = snakemake(workdir, *args, "--cache", env=env)
    said = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in said and "Cache backend unavailable" not in said
    assert "config trace_cache: true with --cache, but SNAKEMAKE_OUTPUT_CACHE is not set" in said
    assert snakemake(workdir, *args, "--cache", env={**env, "SNAKEMAKE_OUTPUT_CACHE": str(tmp_path)}).returncode == 0
    assert snakemake(workdir, *args, env=env).returncode == 0  # no --cache: nothing to ask
