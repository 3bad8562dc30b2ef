"""The workflow under bad input, broken environments and interrupted runs: nothing lost, nothing invented.

Each test here is a row of the tables in docs/failure-modes*.md. Runs use the session's finished test grid, or a
copy of it when they change its files.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import (
    copy_of_finished_run,
    make_workdir,
    require_tilelang,
    rule_counts,
    snakemake,
    snakemake_command,
    trace_batch_counts,
    version_of,
)
from test_broken_runs import tilelang_blocked_env
from tilelang_churn.core import passes_table

pytestmark = pytest.mark.slow  # tier: tests/conftest.py checks it against what the tests use

TEST_CONFIG = ("--configfile", "config/test_config.yaml")


def grid_file(workdir: Path, text: str) -> tuple[str, str]:
    """--configfile arguments for a small grid of GEMM jobs written into the working directory (YAML keeps the
    types; the default config's other kernels are left out)."""
    path = workdir / "config" / "grid.yaml"
    path.write_text(text + "kernels: []\n")
    return ("--configfile", str(path.relative_to(workdir)))


def logs_and_output(workdir: Path, proc) -> str:
    return proc.stdout + proc.stderr + "".join(path.read_text() for path in workdir.glob("logs/**/*.log"))


@pytest.mark.parametrize("cut", ["issue_bytes", "row_boundary"])
def test_a_passes_csv_cut_short_is_refused_and_rebuilt_once_removed(finished_run, tmp_path, cut):
    workdir = copy_of_finished_run(finished_run, tmp_path / "wf")
    churn = (workdir / "results" / "churn.csv").read_bytes()
    # a job of the smaller of the grid's two batches (trace-env's: 4 jobs), which the rebuild traces again
    victim = workdir / "results" / "runs" / version_of(workdir) / "hip/256x256x256_b64x64x32/trace-env/passes.csv"
    text = victim.read_text()
    # the reproduction (truncate -s 356), and a cut exactly after a row, which parses as a shorter table
    os.truncate(victim, 356 if cut == "issue_bytes" else text.index("\n", len(text) // 2) + 1)
    proc = snakemake(workdir, "--cores", "1", "--keep-going", *TEST_CONFIG)
    output = logs_and_output(workdir, proc)
    assert proc.returncode != 0
    refused = r"(, line \d+|: the last line is cut off|: \d+ rows where the run wrote \d+)"
    assert re.search(re.escape(str(victim.relative_to(workdir))) + refused, output), output[-3000:]
    assert not (workdir / "results" / "churn.csv").exists() or (workdir / "results" / "churn.csv").read_bytes() == churn

    if cut == "row_boundary":
        return  # the rebuild is the same for both cuts: checked once
    victim.unlink()  # the job's output is a target itself: the next run traces it again
    proc = snakemake(workdir, "--cores", "2", "results/churn.csv", *TEST_CONFIG)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (workdir / "results" / "churn.csv").read_bytes() == churn


def test_a_deleted_job_folder_is_traced_again(finished_run):
    proc = snakemake(finished_run, "-n", *TEST_CONFIG)
    assert proc.returncode == 0 and "Nothing to be done" in proc.stdout + proc.stderr
    hip = finished_run / "results" / "runs" / version_of(finished_run) / "hip"
    hidden = hip.with_name("hip.hidden")
    hip.rename(hidden)
    try:
        proc = snakemake(finished_run, "-n", "--quiet", "rules", *TEST_CONFIG)
        release = version_of(finished_run).replace(".", "_")
        # both batches hold hip jobs (hip x 2 shapes x 3 modes): each is traced again, as a whole
        expected = {f"trace_{release}_gemm": 1, f"trace_env_{release}_gemm": 1}
        assert trace_batch_counts(proc.stdout) == expected, proc.stdout
        assert rule_counts(proc.stdout).get("churn_table") == 1
    finally:
        hidden.rename(hip)


def test_an_interrupted_run_resumes_to_the_same_churn_table(finished_run, tmp_path):
    """Stop a run by SIGINT once some trace jobs are done, resume it and stop it again by SIGTERM, resume it to the
    end: its rows equal those of an uninterrupted run."""
    workdir = make_workdir(tmp_path / "wf")
    # the table is what must come out the same: the figures and the book are not asked for. Four jobs, each its
    # own batch process (its import of TileLang takes seconds), on one core: they end one after another, so each
    # signal comes with some jobs done and some not
    grid = (
        "--config",
        "targets=[cuda-sm90]",
        "modes=[trace-api,pass-diff]",
        "trace_batch_size=1",
        "--",
        "results/churn.csv",
    )
    command = snakemake_command(workdir, "--cores", "1", "--rerun-incomplete")
    # Snakemake started with SIGINT at its default: a SIGINT the test runner's process ignores is ignored by what it
    # starts, and the signal would then stop nothing
    default_sigint = (
        "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(*sys.argv[1:2], sys.argv[1:])"
    )
    for signal_name, done in (("SIGINT", 2), ("SIGTERM", 3)):
        proc = subprocess.Popen([sys.executable, "-c", default_sigint, *command, *TEST_CONFIG, *grid], cwd=workdir,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
        deadline = time.monotonic() + 300
        # DONE jobs finished and the next one's batch started (its log opened): Snakemake waits on that batch, not
        # finishing the one before, when the signal comes (CI once saw a SIGINT sent as the second finished end in a
        # run of exit 0)
        while (
            len(list(workdir.glob("results/runs/*/*/*/*/passes.csv"))) < done
            or len(list(workdir.glob("logs/trace/*/trace_*.log"))) < done + 1
        ) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        proc.send_signal(getattr(signal, signal_name))
        _, stderr = proc.communicate(timeout=300)
        assert proc.returncode != 0, (
            f"the run finished before {signal_name}; the test needs it interrupted (this process's SIGINT handler: "
            f"{signal.getsignal(signal.SIGINT)}): {stderr[-2000:]}"
        )
        assert not (workdir / "results" / "churn.csv").exists()

    resumed = snakemake(workdir, "--cores", "2", "--rerun-incomplete", *TEST_CONFIG, *grid)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    interrupted = passes_table.read_rows(workdir / "results" / "churn.csv")
    reference = [row for row in passes_table.read_rows(finished_run / "results" / "churn.csv")
                 if row["target_name"] == "cuda-sm90" and row["mode"] in ("trace-api", "pass-diff")]  # fmt: skip
    assert len({(row["params"], row["mode"]) for row in reference}) == 4
    assert interrupted == reference


def test_parallel_trace_env_jobs_keep_their_own_report_and_codegen(tmp_path):
    require_tilelang()
    workdir = make_workdir(tmp_path / "wf")
    sizes = [64 * (i + 1) for i in range(4)]  # as many as the cores: all four at once
    shapes = "".join(f"  - {{M: {m}, N: 128, K: 64}}\n" for m in sizes)
    grid = grid_file(workdir, f"shapes:\n{shapes}targets: [cuda-sm90]\nmodes: [trace-env]\n")
    proc = snakemake(workdir, "--cores", "4", "results/churn.csv", *grid)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for m in sizes:
        job = next(workdir.glob(f"results/runs/*/cuda-sm90/{m}x128x64/trace-env"))
        trace = job / "lower_trace" / "gemm_lower_trace"
        records = list((trace / ".run_records").iterdir())
        assert len(records) == 1, records  # one run record per job folder: no other job wrote here
        befores = records[0].glob("*/*_before.tir")
        first_input = min(befores, key=lambda path: int(path.name.split("_")[0])).read_text()  # step 0
        assert f"A = T.match_buffer(A_handle, ({m}, 64)" in first_input, m  # A is M x K: this job's own kernel
        codegen = next(records[0].glob("codegen/*_after.cpp")).read_text()
        assert (trace / "codegen.cpp").read_text() == codegen
        assert (trace / "report.html").resolve() == (records[0] / "report.html").resolve()


def test_a_broken_environment_fails_the_job_instead_of_reporting_success(tmp_path):
    workdir = make_workdir(tmp_path / "wf")
    env = tilelang_blocked_env(tmp_path / "block")
    grid = grid_file(workdir, "shapes: [{M: 64, N: 64, K: 64}]\ntargets: [hip]\nmodes: [trace-env]\n")
    proc = snakemake(workdir, "--cores", "1", "results/churn.csv", *grid, env=env)
    assert proc.returncode != 0
    assert "TileLang cannot be imported here" in "".join(p.read_text() for p in workdir.glob("logs/trace/**/*.log"))
    assert not list(workdir.glob("results/churn.csv"))


@pytest.mark.parametrize("fatal", [False, True])
def test_a_failed_pass_is_data_unless_pass_failures_are_made_fatal(tmp_path, fatal):
    require_tilelang()
    workdir = make_workdir(tmp_path / "wf")
    grid = [*grid_file(workdir, "shapes: [{M: 64, N: 64, K: 64}]\ntargets: [llvm]\nmodes: [trace-env]\n")]
    if fatal:
        grid += ["--config", "fail_on_pass_error=True"]  # Snakemake reads True, not true, as a boolean
    proc = snakemake(workdir, "--cores", "1", "results/churn.csv", *grid)
    assert (proc.returncode != 0) == fatal, proc.stderr[-2000:]
    if not fatal:
        rows = passes_table.read_rows(workdir / "results" / "churn.csv")
        assert rows[-1]["status"] == passes_table.STATUS_FAILED and rows[-1]["pass"] == "LayoutInference"


def _processes_under(folder: Path) -> list[str]:
    """The command lines of the processes that run in FOLDER (the run's working directory: Snakemake, its jobs,
    their children)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            if Path(os.readlink(proc / "cwd")) != folder:
                continue
            line = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if line.strip():  # a zombie has none
            found.append(f"{proc.name}: {line[:200]}")
    return found


@pytest.mark.parametrize("knockout", [False, True])
def test_no_batch_outlives_a_snakemake_killed_by_sigkill(tmp_path, knockout):
    """After `kill -9` of Snakemake, a knockout batch and its children kept running (issue 43). Each batch, and
    the rule's wrapper that started it, stops once its parent is gone: within seconds nothing of the run is left.
    The kernel's build never returns, so the batch is mid-job when Snakemake dies."""
    require_tilelang()
    workdir = make_workdir(tmp_path)
    kernel = workdir / "hang.py"
    kernel.write_text("import time\n\n\ndef build(N=8):\n    while True:\n        time.sleep(0.05)\n")
    config = {
        "shapes": [],
        "kernels": [{"name": "hang", "file": str(kernel), "params": [{}]}],
        "targets": ["cuda-sm90"],
        "modes": ["instrument"],
        "job_figures": False,
        "knockout": knockout,
    }
    (workdir / "config" / "hang.yaml").write_text(json.dumps(config))
    command = snakemake_command(workdir, "--cores", "2")
    command += ["--configfile", "config/hang.yaml"]
    if knockout:
        command += ["--until", "knockout_table"]
    run = subprocess.Popen(command, cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    batch = "knockout_batch.py" if knockout else "trace_batch.py"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not any(batch in line for line in _processes_under(workdir)):
        time.sleep(0.2)
    assert any(batch in line for line in _processes_under(workdir)), "no batch started"
    time.sleep(4)  # the batch has forked the job that hangs
    run.send_signal(signal.SIGKILL)
    run.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _processes_under(workdir):
        time.sleep(0.5)
    assert not _processes_under(workdir), _processes_under(workdir)
