"""trace_batch.py: many jobs, one import of TileLang, a forked child per job; each job's files as if run alone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import SCRIPTS
from tilelang_churn.core import passes_table as pt

BATCH_SCRIPT = SCRIPTS / "trace_batch.py"
KERNEL = ("--shape", "256,256,256", "--block", "64,64,32")


def run_batch(jobs: list[dict], *options: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(BATCH_SCRIPT), "--jobs", "-", *options],
        input=json.dumps(jobs),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def job(tmp_path: Path, name: str, *args: str) -> dict:
    return {"args": [*args, "--out", str(tmp_path / name)], "log": str(tmp_path / "logs" / f"{name}.log")}


def without_timing(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in row.items() if k != "seconds"} for row in rows]


def test_mixing_trace_env_with_other_modes_is_refused_before_any_import(tmp_path):
    jobs = [job(tmp_path, "a", "--mode", "trace-env", *KERNEL), job(tmp_path, "b", "--mode", "trace-api", *KERNEL)]
    proc = run_batch(jobs)
    assert proc.returncode == 2
    assert "trace-env jobs need TL_LOWER_TRACE set when tilelang is imported" in proc.stderr
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


@pytest.mark.parametrize(
    ("jobs", "message"),
    [
        ([], "no jobs given"),
        ([{"args": ["--mode", "trace-api"], "log": "x.log"}], "job 1 is not {'args': [... --mode MODE ... --out DIR]"),
        ([{"args": ["--mode", "trace-all", "--out", "o"], "log": "x.log"}], "job 1: unknown --mode in"),
        (["--mode trace-env"], "job 1 is not {'args'"),
    ],
)
def test_a_bad_job_list_exits_2_naming_the_job(jobs, message):
    proc = run_batch(jobs)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr


def test_each_job_writes_what_the_script_alone_writes(tmp_path, trace_runs):
    pytest.importorskip("tilelang")
    kinds = [("instrument", "cuda-sm90"), ("trace-api", "hip"), ("pass-diff", "cuda-sm90")]
    jobs = [job(tmp_path, f"{mode}-{target}", "--mode", mode, "--target", target, *KERNEL) for mode, target in kinds]
    proc = run_batch(jobs, "--workers", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    pids = set()
    for (mode, target), batch_job in zip(kinds, jobs):
        alone_proc, alone = trace_runs.get("--mode", mode, "--target", target, *KERNEL)
        assert alone_proc.returncode == 0, alone_proc.stderr
        out = Path(batch_job["args"][-1])
        assert without_timing(pt.read_rows(out / "passes.csv")) == without_timing(pt.read_rows(alone / "passes.csv"))
        # the job's stdout and stderr are its log, as `gemm_lower_trace.py ARGS > LOG 2>&1` would give
        log = Path(batch_job["log"]).read_text()
        assert log.count("pass=") == len(pt.read_rows(out / "passes.csv"))
        run = json.loads((out / "run.json").read_text())
        assert run["exit_status"] == 0 and run["process"]["jobs_in_process"] == 3
        assert run["command"][1:] == [str(SCRIPTS / "gemm_lower_trace.py"), *batch_job["args"]]
        pids.add(run["process"]["pid"])
    assert len(pids) == 1  # one process imported TileLang for the three jobs


def test_a_recorded_pass_failure_fails_the_batch_unless_tolerated(tmp_path):
    pytest.importorskip("tilelang")
    jobs = [job(tmp_path, "llvm", "--mode", "pass-diff", "--target", "llvm", *KERNEL)]
    strict = run_batch(jobs)
    assert strict.returncode == 1
    assert f"job exited 1; see {jobs[0]['log']}" in strict.stderr
    assert "pass LayoutInference failed" in Path(jobs[0]["log"]).read_text()
    tolerant = run_batch(jobs, "--tolerate=1")
    assert tolerant.returncode == 0, tolerant.stderr
    assert pt.read_rows(Path(jobs[0]["args"][-1]) / "passes.csv")[-1]["status"] == pt.STATUS_FAILED


def test_each_trace_env_job_keeps_its_own_run_record(tmp_path):
    pytest.importorskip("tilelang")
    jobs = [job(tmp_path, t, "--mode", "trace-env", "--target", t, *KERNEL) for t in ("cuda-sm90", "hip")]
    proc = subprocess.run(
        [sys.executable, str(BATCH_SCRIPT), "--jobs", "-", "--workers", "2"],
        input=json.dumps(jobs),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for batch_job in jobs:
        out = Path(batch_job["args"][-1])
        run_record = Path(json.loads((out / "run.json").read_text())["run_record"])
        assert run_record.is_relative_to(out / "lower_trace") and (run_record / "report.html").is_file()
    assert not (tmp_path / "tmp").exists()  # nothing in TileLang's default trace folder


def test_sigterm_stops_the_batch_and_its_children(tmp_path):
    pytest.importorskip("tilelang")
    jobs = [job(tmp_path, f"j{i}", "--mode", "instrument", "--target", "cuda-sm80", *KERNEL) for i in range(6)]
    batch = subprocess.Popen(
        [sys.executable, str(BATCH_SCRIPT), "--jobs", "-", "--workers", "2"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    batch.stdin.write(json.dumps(jobs))
    batch.stdin.close()
    children_file = Path(f"/proc/{batch.pid}/task/{batch.pid}/children")
    deadline = time.monotonic() + 120
    children: list[int] = []
    while time.monotonic() < deadline and not children:
        children = [int(pid) for pid in children_file.read_text().split()]
        time.sleep(0.05)
    assert children, "the batch forked no child"
    batch.send_signal(signal.SIGTERM)
    assert batch.wait(timeout=60) == 128 + signal.SIGTERM
    for pid in children:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_keep_tables_leaves_only_what_the_readers_need_with_the_same_rows(tmp_path, trace_runs):
    pytest.importorskip("tilelang")
    jobs = [
        job(tmp_path, "env", "--mode", "trace-env", "--target", "cuda-sm90", *KERNEL, "--keep", "tables"),
        job(tmp_path, "llvm", "--mode", "trace-env", "--target", "llvm", *KERNEL, "--keep", "tables"),
    ]
    proc = run_batch(jobs, "--tolerate=1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    _, alone = trace_runs.get("--mode", "trace-env", "--target", "cuda-sm90", *KERNEL)
    assert {p.name for p in (tmp_path / "env").iterdir()} == {"passes.csv", "run.json"}
    assert pt.read_rows(tmp_path / "env" / "passes.csv") == pt.read_rows(alone / "passes.csv")
    run = json.loads((tmp_path / "env" / "run.json").read_text())
    assert run["removed_after_run"] == [str(tmp_path / "env" / "lower_trace"), str(tmp_path / "env" / "tilelang.log")]
    # a failed run keeps TileLang's log, where its diagnostics are
    assert {p.name for p in (tmp_path / "llvm").iterdir()} == {"passes.csv", "run.json", "tilelang.log"}
    kept_ir = tmp_path / "ir"
    proc = subprocess.run(
        [sys.executable, str(SCRIPTS / "gemm_lower_trace.py"), "--mode", "instrument", *KERNEL, "--keep-ir"]
        + ["--keep", "tables", "--out", str(kept_ir)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert {p.name for p in kept_ir.iterdir()} == {"passes.csv", "run.json", "ir.json.gz"}
