"""One lowering, two records (config share_lowering): a trace-env job and the instrument job of its configuration
lowered once in one child of a trace batch, each record what the job alone writes, apart from the timings."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import SCRIPTS, require_tilelang
from tilelang_churn.core import passes_table as pt
from tilelang_churn.trace import trace_batch

pytestmark = pytest.mark.slow  # tier: tests/conftest.py checks it against what the tests use

BATCH_SCRIPT = SCRIPTS / "trace_batch.py"
KERNEL = ("--shape", "256,256,256", "--block", "64,64,32")


def run_batch(jobs: list[dict], *options: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(BATCH_SCRIPT), "--jobs", "-", "--tolerate=1", *options],
        input=json.dumps(jobs),
        capture_output=True,
        text=True,
        timeout=600,
    )


def job(root: Path, name: str, *args: str) -> dict:
    return {"args": [*args, "--out", str(root / name)], "log": str(root / "logs" / f"{name}.log")}


def pairs_and_alone(root: Path, cases: dict[str, tuple[str, ...]]) -> dict[str, dict[str, dict]]:
    """Per case (name -> ARGS), the trace-env and instrument jobs of ARGS: both in one batch (one lowering), and
    each in a batch without the other. Three batches in all (each imports TileLang once): the pairs of every case,
    the trace-env jobs alone, the instrument jobs alone; cases differ in their configuration, so only a pair shares."""
    jobs = {
        name: {
            "env": job(root, f"{name}/pair_env", "--mode", "trace-env", "--keep", "tables", *args),
            "instrument": job(root, f"{name}/pair_instrument", "--mode", "instrument", "--keep-ir", *args),
            "env_alone": job(root, f"{name}/env_alone", "--mode", "trace-env", "--keep", "tables", *args),
            "instrument_alone": job(root, f"{name}/instrument_alone", "--mode", "instrument", "--keep-ir", *args),
        }
        for name, args in cases.items()
    }
    pairs = run_batch([case[mode] for case in jobs.values() for mode in ("env", "instrument")])
    assert pairs.returncode == 0, pairs.stdout + pairs.stderr
    assert f"{2 * len(cases)} job(s), 1 at a time, TL_LOWER_TRACE=1" in pairs.stdout
    for alone in ("env_alone", "instrument_alone"):
        proc = run_batch([case[alone] for case in jobs.values()])
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return jobs


def out(job_: dict) -> Path:
    return Path(job_["args"][-1])


def rows_without_timing(job_: dict) -> list[dict]:
    return [{k: v for k, v in row.items() if k != "seconds"} for row in pt.read_rows(out(job_) / "passes.csv")]


def run_info(job_: dict) -> dict:
    return json.loads((out(job_) / "run.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def shared_lowerings(tmp_path_factory):
    require_tilelang()
    root = tmp_path_factory.mktemp("shared")
    broken = root / "broken.py"
    broken.write_text("def build(N=64):\n    raise ValueError(f'no tile fits N={N}')\n")
    cases = {
        "cuda": KERNEL,
        # a CPU target: a pass fails (no layout for a T.gemm fragment), a row of both records
        "llvm": (*KERNEL, "--target", "llvm"),
        # the kernel's build raises: nothing to share; the instrument job then runs on its own in the same child
        "broken": ("--kernel-file", str(broken)),
    }
    return pairs_and_alone(root, cases)


@pytest.mark.parametrize("case", ["cuda", "llvm", "broken"])
def test_each_record_of_one_lowering_is_what_the_job_alone_writes_apart_from_the_timings(shared_lowerings, case):
    jobs = shared_lowerings[case]
    for mode in ("env", "instrument"):
        assert rows_without_timing(jobs[mode]) == rows_without_timing(jobs[f"{mode}_alone"])
        assert run_info(jobs[mode])["exit_status"] == run_info(jobs[f"{mode}_alone"])["exit_status"]
    rows = pt.read_rows(out(jobs["instrument"]) / "passes.csv")
    if case == "broken":
        assert [(row["pass"], row["status"]) for row in rows] == [("setup", pt.STATUS_FAILED)]
        assert "no tile fits N=64" in rows[0]["error"]
        return
    archives = [out(jobs[name]) / "ir.json.gz" for name in ("instrument", "instrument_alone")]
    assert gzip.decompress(archives[0].read_bytes()) == gzip.decompress(archives[1].read_bytes())
    assert any(row["status"] == pt.STATUS_FAILED for row in rows) == (case == "llvm")
    assert len(rows) > 10 and run_info(jobs["env"])["run_record"]  # TileLang's own record was read
    # trace-env keeps TileLang's names in pass and has each step's identity from an instrument of its own lowering
    # (alone) or of the shared one: the instrument job's, step by step, never a bare pass_fn
    env_rows = pt.read_rows(out(jobs["env_alone"]) / "passes.csv")
    identity = {(row["step"], row["pass"]): row["pass_id"] for row in rows}
    runs = [row for row in env_rows if row["status"] in (pt.STATUS_CHANGED, pt.STATUS_NOOP)]
    assert runs and [row["pass_id"] for row in runs] == [identity[row["step"], row["pass"]] for row in runs]
    assert run_info(jobs["env_alone"])["pass_id_disagreed"] == run_info(jobs["env"])["pass_id_disagreed"] == 0
    assert "pass_fn" in {row["pass"] for row in runs} and "pass_fn" not in {row["pass_id"] for row in runs}


@pytest.mark.parametrize("case", ["cuda", "llvm"])
def test_each_run_json_names_the_job_whose_lowering_served_it(shared_lowerings, case):
    jobs = shared_lowerings[case]
    env, instrument = str(out(jobs["env"])), str(out(jobs["instrument"]))
    lowering = {"by": env, "records": [env, instrument]}
    assert run_info(jobs["env"])["lowering"] == lowering and run_info(jobs["instrument"])["lowering"] == lowering
    alone = str(out(jobs["instrument_alone"]))
    assert run_info(jobs["instrument_alone"])["lowering"] == {"by": alone, "records": [alone]}
    # the served job's own command and folder, as the job alone would record them
    info = run_info(jobs["instrument"])
    assert info["command"][1:] == [str(SCRIPTS / "gemm_lower_trace.py"), *jobs["instrument"]["args"]]
    assert info["out_dir"] == instrument and info["spec"]["mode"] == "instrument"
    log = Path(jobs["instrument"]["log"]).read_text(encoding="utf-8")
    assert f"recorded from the lowering of {env}, which wrote both records" in log
    # its own step lines in its own log, as the job alone prints them
    alone_log = Path(jobs["instrument_alone"]["log"]).read_text(encoding="utf-8")
    steps = [line for line in log.splitlines() if line.startswith("pass=")]
    assert len(steps) > 3 and steps == [line for line in alone_log.splitlines() if line.startswith("pass=")]


def test_a_kernel_that_fails_to_build_gives_the_instrument_job_a_lowering_of_its_own(shared_lowerings):
    jobs = shared_lowerings["broken"]
    instrument = str(out(jobs["instrument"]))
    assert run_info(jobs["instrument"])["lowering"] == {"by": instrument, "records": [instrument]}
    log = Path(jobs["instrument"]["log"]).read_text(encoding="utf-8")
    assert f"lowered on its own in the process of {out(jobs['env'])}, which did not lower" in log


def test_a_kernel_that_ends_the_process_leaves_both_jobs_recorded_by_the_batch(tmp_path):
    require_tilelang()
    kernel = tmp_path / "osexit.py"
    kernel.write_text("import os\n\ndef build(N=64):\n    os._exit(0)\n")
    jobs = [job(tmp_path, m, "--mode", m, "--kernel-file", str(kernel)) for m in ("trace-env", "instrument")]
    proc = run_batch(jobs)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # both recorded failures, 1 tolerated
    for job_ in jobs:
        (row,) = pt.read_rows(out(job_) / "passes.csv")
        assert (row["pass"], row["status"]) == ("setup", pt.STATUS_FAILED) and "os._exit" in row["error"]
        assert "exit 1: gemm_lower_trace.py --mode" in proc.stdout


def test_pairs_are_made_by_configuration_and_an_unpaired_instrument_job_is_refused(tmp_path):
    env = job(tmp_path, "e", "--mode", "trace-env", *KERNEL)
    instrument = job(tmp_path, "i", "--mode", "instrument", "--keep-ir", *KERNEL)
    other = job(tmp_path, "o", "--mode", "instrument", "--shape", "512,512,512")
    assert trace_batch.pair_jobs([env, other, instrument]) == [[0, 2], [1]]
    assert trace_batch.pair_jobs([instrument, env]) == [[1, 0]]  # the trace-env job's child lowers
    assert trace_batch.check_jobs([env, instrument]) is True
    proc = run_batch([env, instrument, other])
    assert proc.returncode == 2 and "with only the instrument jobs of their configurations" in proc.stderr
    assert not out(env).exists()


def test_the_other_tracer_is_timed_apart_and_the_classes_restored():
    """lower_trace_timed_apart hands TileLang's tracer time to the recorder (each pass's seconds stay its own); of
    run_codegen, less the codegen it wraps; the patched methods are the classes' own again afterwards."""
    require_tilelang()
    from tilelang_churn.trace import tilelang_trace

    class Tracer:
        def run_before_pass(self, mod, info):
            time.sleep(0.05)

        def run_codegen(self, event, next_call):
            time.sleep(0.05)
            return next_call()

    originals = dict(Tracer.__dict__)
    handed = []
    callbacks = [(Tracer, "run_before_pass"), (Tracer, "run_codegen")]
    real = tilelang_trace._lower_trace_callbacks
    tilelang_trace._lower_trace_callbacks = lambda: callbacks
    try:
        with tilelang_trace.lower_trace_timed_apart(handed.append):
            Tracer().run_before_pass(None, None)
            assert Tracer().run_codegen(None, lambda: time.sleep(0.2) or "source") == "source"
    finally:
        tilelang_trace._lower_trace_callbacks = real
    assert 0.05 <= handed[0] < 0.15 and 0.05 <= handed[1] < 0.15  # the 0.2 s of codegen is not the tracer's
    assert all(Tracer.__dict__[name] is originals[name] for _, name in callbacks)
    # the real release's callbacks are found (0.1.14 on: the stacked instrument's and the session's)
    assert {name for _, name in real()} >= {"run_before_pass", "run_after_pass"}
