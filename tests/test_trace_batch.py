"""trace_batch.py: many jobs, one import of TileLang, a forked child per job; each job's files as if run alone."""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import SCRIPTS, require_tilelang, run_script
from test_batch_signals import start_time
from tilelang_churn.core import passes_table as pt

pytestmark = pytest.mark.slow  # tier: tests/conftest.py checks it against what the tests use

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
    require_tilelang()
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
    require_tilelang()
    jobs = [job(tmp_path, "llvm", "--mode", "pass-diff", "--target", "llvm", *KERNEL)]
    strict = run_batch(jobs)
    assert strict.returncode == 1
    assert f"job exited 1; see {jobs[0]['log']}" in strict.stderr
    assert "pass LayoutInference failed" in Path(jobs[0]["log"]).read_text()
    tolerant = run_batch(jobs, "--tolerate=1")
    assert tolerant.returncode == 0, tolerant.stderr
    assert pt.read_rows(Path(jobs[0]["args"][-1]) / "passes.csv")[-1]["status"] == pt.STATUS_FAILED


def test_each_trace_env_job_keeps_its_own_run_record(tmp_path):
    require_tilelang()
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
    require_tilelang()
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
    # gone, or a zombie: nothing reaps an orphan in this container, and a zombie runs nothing
    deadline = time.monotonic() + 10
    while any(start_time(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in children if start_time(pid)]


def test_keep_tables_leaves_only_what_the_readers_need_with_the_same_rows(tmp_path, trace_runs):
    require_tilelang()
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


# ------------------------------------------------------------------- a kernel's code that misbehaves in a job

GOOD_KERNEL = """
import tilelang.language as T
from helper import BLOCK  # a sibling module: the file's folder is on sys.path, as for a script


def build(M=64, N=128, dtype="float16"):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(M, T.ceildiv(N, BLOCK), threads=128) as (bx, by):
            for j in T.Parallel(BLOCK):
                C[bx, by * BLOCK + j] = A[bx, by * BLOCK + j]

    return main
"""
# a copy that outlives the job (0.5 s after it ended: the batch kills the job's group within milliseconds), says
# so in a file, then returns into the job's code, to lower and write the job's files again
FORKING_KERNEL = """
import os, time
from pathlib import Path
from good import build as good


def build():
    job = os.getpid()
    if os.fork() == 0:
        while os.getppid() == job:
            time.sleep(0.02)
        time.sleep(0.5)
        Path(__file__).with_suffix(".alive").write_text("outlived its job")
    return good()
"""
ODD_KERNELS = {
    "exit0": "import sys\ndef build(N=8):\n    sys.exit(0)\n",
    "exitnone": "def build(N=8):\n    exit()\n",
    "exitmsg": "import sys\ndef build(N=8):\n    sys.exit('no tile fits N=8')\n",
    "osexit": "import os\ndef build(N=8):\n    os._exit(0)\n",
    "fake": "class PrimFunc:\n    pass\n\ndef build(N=8):\n    return PrimFunc()\n",
    "jit": "import tilelang\ncompiled = tilelang.jit\n\n@compiled\ndef build(N=8):\n    pass\n",
    "missing": "import no_such_module_of_the_kernel\ndef build(N=8):\n    pass\n",
    "hang": "import time\ndef build(N=8):\n    while True:\n        time.sleep(0.05)\n",
    "forks": FORKING_KERNEL,
    "good": GOOD_KERNEL,
}
JOB_TIMEOUT = 4


@pytest.fixture(scope="module")
def odd_batch(tmp_path_factory):
    """One batch of a job per kernel of ODD_KERNELS (their folder on no path), pass failures tolerated."""
    require_tilelang()
    root = tmp_path_factory.mktemp("odd")
    kernels_dir = root / "my kernels"
    kernels_dir.mkdir()
    (kernels_dir / "helper.py").write_text("BLOCK = 64\n")
    for name, text in ODD_KERNELS.items():
        (kernels_dir / f"{name}.py").write_text(text)
    jobs = {
        name: job(root, name, "--mode", "instrument", "--kernel-file", str(kernels_dir / f"{name}.py"))
        for name in ODD_KERNELS
    }
    proc = run_batch(list(jobs.values()), "--workers", "2", "--tolerate=1", f"--job-timeout={JOB_TIMEOUT}")
    return proc, jobs, {name: Path(j["args"][-1]) for name, j in jobs.items()}


def setup_row(out: Path) -> dict:
    (row,) = pt.read_rows(out / "passes.csv")
    assert (row["pass"], row["status"]) == ("setup", pt.STATUS_FAILED)
    return row


def test_a_build_that_calls_sys_exit_is_a_failed_row_with_its_message(odd_batch):
    proc, jobs, outs = odd_batch
    for name, said in [("exit0", "status 0)"), ("exitnone", "status 0)"), ("exitmsg", "status 1: no tile fits N=8)")]:
        row = setup_row(outs[name])
        assert f"the code of build() in {jobs[name]['args'][3]} ended the process (SystemExit, {said}" in row["error"]
        assert json.loads((outs[name] / "run.json").read_text())["exit_status"] == 1
        assert f"warning: job {list(jobs).index(name) + 1} of {len(jobs)}, kernel {name!r}" in proc.stderr


def test_a_build_that_ends_the_process_is_recorded_by_the_batch_as_a_failed_row(odd_batch):
    proc, jobs, outs = odd_batch
    assert proc.returncode == 0, proc.stdout + proc.stderr  # every failure recorded, 1 tolerated
    number, file = list(jobs).index("osexit") + 1, jobs["osexit"]["args"][3]
    line = (
        f"trace_batch.py: error: job {number} of {len(jobs)}, kernel 'osexit' ({file}): the kernel's code ended the "
        "process (exit status 0: os._exit or the like) before the job recorded its run; a failed setup row in "
        f"{outs['osexit'] / 'passes.csv'} (log: {jobs['osexit']['log']})"
    )
    assert line in proc.stderr.splitlines(), proc.stderr
    assert "the kernel's code ended the process" in setup_row(outs["osexit"])["error"]
    run = json.loads((outs["osexit"] / "run.json").read_text())
    assert run["exit_status"] == 1 and run["spec"]["kernel"] == "osexit"
    assert pt.fingerprint(outs["osexit"] / "passes.csv") == run["passes_csv"]
    assert f"trace_batch.py: exit 1: gemm_lower_trace.py {shlex.join(jobs['osexit']['args'])}" in proc.stdout


def test_a_build_past_the_job_timeout_is_killed_and_recorded_naming_the_key(odd_batch):
    proc, jobs, outs = odd_batch
    said = f"timed out after {JOB_TIMEOUT} s (config job_timeout_s) and was killed"
    assert said in setup_row(outs["hang"])["error"]
    assert f"kernel 'hang' ({jobs['hang']['args'][3]}): {said}" in proc.stderr
    assert said in Path(jobs["hang"]["log"]).read_text()
    assert json.loads((outs["hang"] / "run.json").read_text())["exit_status"] == 1


def test_no_process_forked_by_a_build_outlives_or_writes_after_its_job(odd_batch, tmp_path):
    _, jobs, outs = odd_batch
    kernel = Path(jobs["forks"]["args"][3])
    rows = pt.read_rows(outs["forks"] / "passes.csv")
    assert len(rows) > 5 and Path(jobs["forks"]["log"]).read_text().count("pass=") == len(rows)
    time.sleep(1)
    assert not kernel.with_suffix(".alive").exists()  # killed with its job's process group
    # the script alone (no batch to kill it): the copy lives on, but stops before writing the job's files
    proc = run_script("--mode", "instrument", "--kernel-file", str(kernel), "--out", str(tmp_path / "alone"))
    assert proc.returncode == 0, proc.stderr
    assert kernel.with_suffix(".alive").exists()
    assert "a process forked by the kernel's code (pid " in proc.stderr and proc.stdout.count("pass=") == len(rows)
    assert len(pt.read_rows(tmp_path / "alone" / "passes.csv")) == len(rows)


def test_an_unimportable_kernel_is_said_on_the_console_and_a_sibling_module_imports(odd_batch):
    proc, jobs, outs = odd_batch
    file = jobs["missing"]["args"][3]
    said = (
        f"{file}: importing missing.py needs the package 'no_such_module_of_the_kernel', which is not installed here "
        "(missing.py, line 1: ModuleNotFoundError: No module named 'no_such_module_of_the_kernel'); give its config "
        "entry requirements: [no_such_module_of_the_kernel]"
    )
    assert said in setup_row(outs["missing"])["error"]
    number = list(jobs).index("missing") + 1
    assert (
        f"trace_batch.py: warning: job {number} of {len(jobs)}, kernel 'missing' ({file}): failed before any pass: "
        f"KernelError: {said}"
    ) in proc.stderr
    assert json.loads((outs["good"] / "run.json").read_text())["exit_status"] == 0  # `from helper import BLOCK`


def test_a_fake_primfunc_is_named_by_its_real_type_and_a_renamed_jit_is_traced_as_tilelang_gets_it(odd_batch):
    _, jobs, outs = odd_batch
    fake = setup_row(outs["fake"])["error"]
    assert (
        f"build() in {jobs['fake']['args'][3]} returned PrimFunc (tlchurn_kernel_fake.PrimFunc), not a T.prim_func"
        in fake
    )
    # `compiled = tilelang.jit` hides the decorator from the source: the real type tells, and get_tir gives what
    # TileLang itself makes of an empty body (an eager kernel of no statement), lowered like any other
    rows = pt.read_rows(outs["jit"] / "passes.csv")
    assert rows and all(row["status"] != pt.STATUS_FAILED for row in rows)
