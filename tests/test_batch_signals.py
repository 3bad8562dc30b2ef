"""trace_batch.py and real signals: a job or the batch itself killed is named with its signal, job and
environment; children never outlive the batch.

The signals are real: sent from the test to the real batch or child process, found through /proc.
"""

from __future__ import annotations

import json
import os
import resource
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import SCRIPTS, require_tilelang
from tilelang_churn.core import passes_table as pt

BATCH_SCRIPT = SCRIPTS / "trace_batch.py"
PROC = Path("/proc")

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not (PROC / "self" / "task").is_dir(), reason="needs Linux's /proc")]


def no_core_dumps() -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # SIGBUS would dump the core of a 1 GB process


def start(command: list[str], stdin_text: str, preexec_fn=no_core_dumps) -> subprocess.Popen:
    process = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=preexec_fn,
    )
    process.stdin.write(stdin_text)
    process.stdin.close()
    process.stdin = None  # closed: communicate() must not flush it
    return process


def start_batch(jobs: list[dict], *options: str) -> subprocess.Popen:
    return start([sys.executable, str(BATCH_SCRIPT), "--jobs", "-", *options], json.dumps(jobs))


def job(tmp_path: Path, name: str, *args: str) -> dict:
    return {"args": [*args, "--out", str(tmp_path / name)], "log": str(tmp_path / "logs" / f"{name}.log")}


def start_time(pid: int) -> int | None:
    """The start time of a live process (field 22 of /proc/PID/stat), None once it is gone or a zombie."""
    try:
        fields = (PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None if fields[0] in ("Z", "X") else int(fields[19])


def children(pid: int) -> list[int]:
    """The children of PID, whichever of its threads started them."""
    found = []
    for task in (PROC / str(pid) / "task").glob("*/children"):
        try:
            found += [int(child) for child in task.read_text().split()]
        except (FileNotFoundError, ProcessLookupError):
            pass
    return found


def cmdline(pid: int) -> bytes:
    try:
        return (PROC / str(pid) / "cmdline").read_bytes()
    except FileNotFoundError:
        return b""


def forked_children(pid: int) -> list[int]:
    """Children forked without exec, as the batch forks one per job: same command line as the parent (the
    import of TileLang may also run helper programs, which have their own)."""
    own = cmdline(pid)
    return [child for child in children(pid) if cmdline(child) == own]


def wait_for(what, timeout: float = 300, step: float = 0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = what()
        if found:
            return found
        time.sleep(step)
    return None


# A kernel that says it is running (a file named for its process, holding the job's arguments), then waits for the
# test inside a call through TVM's FFI, as a lowering's passes run: the job cannot end before its signal lands, and a
# signal delivered the usual way lands where TVM turns a KeyboardInterrupt into a RuntimeError.
WAITING_KERNEL = """
import json, os, sys, time
from pathlib import Path

import tilelang.language as T
import tvm

HERE = Path(__file__).parent


def wait_for_the_test():
    said = HERE / f".running.{os.getpid()}"
    said.write_text(json.dumps(sys.argv))
    said.rename(HERE / said.name[1:])  # whole when the test sees it
    deadline = time.monotonic() + 120
    while not (HERE / "go").exists() and time.monotonic() < deadline:
        time.sleep(0.005)


def build(M=64, N=64, dtype="float16"):
    tvm.runtime.convert(wait_for_the_test)()

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(M, threads=128) as bx:
            for j in T.Parallel(N):
                C[bx, j] = A[bx, j]

    return main
"""
STOPS = (signal.SIGHUP, signal.SIGINT, signal.SIGTERM)


def _default_stop_signals():
    """The batch with the stop signals at their defaults: a test runner started under nohup ignores SIGHUP (a SIGHUP
    sent to a job was lost: its three jobs exited 0), a pytest-xdist worker may ignore SIGINT, and children inherit
    that."""
    no_core_dumps()
    for number in STOPS:
        signal.signal(number, signal.SIG_DFL)


def test_a_job_stopped_from_outside_is_named_with_signal_job_and_environment_and_not_recorded(tmp_path):
    """SIGHUP, SIGINT or SIGTERM to a job's child: a stop from outside, not the kernel's doing; nothing is recorded, so
    the batch fails (exit 3) and a rerun traces the job again. Each signal lands while its job runs a call through
    TVM's FFI, where a SIGINT became a RuntimeError, recorded as the job's failed row (exit 1, which the rules
    tolerate). The jobs wait for the test: none can end before its signal (a job found by polling /proc could end
    between the look and the kill, or its SIGHUP be ignored, and the three jobs exited 0)."""
    require_tilelang()
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    (kernels / "waits.py").write_text(WAITING_KERNEL)
    jobs = [
        job(tmp_path, f"j{i}", "--mode", "instrument", "--kernel-file", str(kernels / "waits.py")) for i in range(4)
    ]
    batch = start([sys.executable, str(BATCH_SCRIPT), "--jobs", "-", "--workers", "4", "--tolerate=1"],
                  json.dumps(jobs), preexec_fn=_default_stop_signals)  # fmt: skip
    running = wait_for(lambda: (found := list(kernels.glob("running.*"))) and len(found) == len(jobs) and found)
    assert running, "the jobs did not start"
    pids = {json.loads(path.read_text())[-1]: int(path.suffix[1:]) for path in running}  # --out DIR is last
    assert set(pids.values()) <= set(forked_children(batch.pid)), "a kernel ran outside the batch's own children"
    stopped = dict(zip(STOPS, jobs))  # the fourth job runs on
    for number, killed in stopped.items():
        os.kill(pids[killed["args"][-1]], number)
    (kernels / "go").write_text("")
    stdout, stderr = batch.communicate(timeout=600)
    assert batch.returncode == 3, stdout + stderr
    for number, killed in stopped.items():
        name, index = signal.Signals(number).name, jobs.index(killed) + 1
        named = [line for line in stderr.splitlines() if f"(log: {killed['log']})" in line and "nothing" in line]
        assert len(named) == 1, f"{name} to job {index}:\n{stdout}{stderr}"
        assert named[0].startswith(f"trace_batch.py: error: job {index} of 4 was killed by {name} (signal {number}) ")
        assert f"in the environment {sys.prefix}, nothing recorded: gemm_lower_trace.py --mode instrument" in named[0]
        assert f"trace_batch.py: error: job was killed by {name}; see {killed['log']}" in stderr
        # the job's own log ends with what happened to it (the child could write nothing more itself)
        assert Path(killed["log"]).read_text().splitlines()[-1] == (
            f"trace_batch.py: error: this job was killed by {name} (signal {number}) in the environment {sys.prefix}; "
            "nothing was recorded"
        )
        assert not (Path(killed["args"][-1]) / "passes.csv").exists()
    assert pt.read_rows(Path(jobs[3]["args"][-1]) / "passes.csv"), stderr  # the job beside them is not affected
    assert f"exit 0: {shlex.join(['gemm_lower_trace.py', *jobs[3]['args']])} " in stdout


def test_a_job_whose_own_process_crashes_is_a_failed_row_naming_the_signal_and_the_run_goes_on(tmp_path):
    """Round four: a segfault in a user's build() (or the out-of-memory killer's SIGKILL) failed the whole trace
    rule, "nothing recorded". Now it is the job's failed setup row naming the signal ("out of memory?" for
    SIGKILL), exit 1 (a recorded failure, data), and the batch's other jobs keep their results."""
    require_tilelang()
    kernels = {
        "segfault": "import ctypes\n\n\ndef build(N=8):\n    ctypes.string_at(0)\n",
        "oom": "import os\nimport signal\n\n\ndef build(N=8):\n    os.kill(os.getpid(), signal.SIGKILL)\n",
    }
    jobs = []
    for name, source in kernels.items():
        (tmp_path / f"{name}.py").write_text(source)
        jobs.append(job(tmp_path, name, "--mode", "instrument", "--kernel-file", str(tmp_path / f"{name}.py")))
    jobs.append(job(tmp_path, "gemm", "--mode", "instrument", "--shape", "64,64,64", "--block", "64,64,32"))
    batch = start_batch(jobs, "--workers", "2")  # exit 1: a recorded failure (the rules tolerate it), not 3
    stdout, stderr = batch.communicate(timeout=600)
    assert batch.returncode == 1, stdout + stderr
    said = {
        "segfault": "killed by SIGSEGV (signal 11): a crash in the kernel's code or in TileLang",
        "oom": "killed by SIGKILL (signal 9): out of memory? (the kernel's out-of-memory killer sends SIGKILL)",
    }
    for (name, words), recorded in zip(said.items(), jobs):
        (row,) = pt.read_rows(Path(recorded["args"][-1]) / "passes.csv")
        assert (row["pass"], row["status"]) == ("setup", pt.STATUS_FAILED) and words in row["error"], row
        assert f"kernel '{name}'" in stderr and words in stderr
    assert len(pt.read_rows(Path(jobs[2]["args"][-1]) / "passes.csv")) > 10  # the GEMM beside them is traced


# what the trace rules' script: entry does with the params they pass
WRAPPER = """
import json, sys
sys.path.insert(0, sys.argv[1])
from tilelang_churn.trace import trace_batch
spec = json.loads(sys.stdin.read())
raise SystemExit(trace_batch.run_in_own_process(spec["jobs"], 1, [1], "", spec["batch_log"]))
"""


def test_a_batch_killed_while_importing_tilelang_is_named_and_fails_with_3(tmp_path):
    """The issue's SIGBUS in `import tilelang` (a corrupted shared library): Snakemake's script wrapper, given
    the params the trace rules pass, names the signal, the jobs and the environment, and exits 3, not 249."""
    require_tilelang()
    jobs = [[["--mode", "instrument"], str(tmp_path / name), str(tmp_path / "logs" / f"{name}.log")] for name in "ab"]
    batch_log = tmp_path / "batch.log"
    wrapper = start(
        [sys.executable, "-c", WRAPPER, str(SCRIPTS)], json.dumps({"jobs": jobs, "batch_log": str(batch_log)})
    )
    batch = wait_for(lambda: [pid for pid in children(wrapper.pid) if b"trace_batch.py\0--jobs" in cmdline(pid)])
    assert batch, "the wrapper started no batch"
    # killed once TVM's shared libraries are being mapped: inside `import tilelang`
    assert wait_for(lambda: b"libtvm" in (PROC / str(batch[0]) / "maps").read_bytes(), step=0.005)
    os.kill(batch[0], signal.SIGBUS)
    stdout, stderr = wrapper.communicate(timeout=300)
    assert wrapper.returncode == 3, stdout + stderr
    line = (
        f"trace_batch.py: error: the batch process (pid {batch[0]}) of 2 job(s) was killed by SIGBUS (signal 7) "
        f"in the environment {sys.prefix}; first job's log: {jobs[0][2]}; batch log: {batch_log}"
    )
    assert stderr.splitlines() == [line]  # on the console, alone
    assert batch_log.read_text().splitlines()[-1] == line
    assert "trace_batch.py --jobs -" in batch_log.read_text().splitlines()[0]  # the log starts with the command


def test_children_die_with_a_batch_killed_by_sigkill(tmp_path):
    require_tilelang()
    # trace-env jobs of the default 1024^3 GEMM write TileLang's run record for a few seconds each
    jobs = [job(tmp_path, f"j{i}", "--mode", "trace-env", "--target", "cuda-sm90") for i in range(6)]
    batch = start_batch(jobs, "--workers", "2")
    found = wait_for(lambda: forked_children(batch.pid))
    assert found, "the batch forked no child"
    started = {pid: start_time(pid) for pid in found}

    def tables() -> set:
        return set(tmp_path.glob("*/passes.csv"))

    written = tables()  # just before the kill: the children just forked are lowering, for a second or more
    os.kill(batch.pid, signal.SIGKILL)
    assert batch.wait(timeout=60) == -signal.SIGKILL
    survivors = {pid for pid, when in started.items() if when is not None}
    assert wait_for(lambda: not [pid for pid in survivors if start_time(pid) == started[pid]], timeout=10), (
        "a child outlived the batch"
    )
    time.sleep(5)  # longer than a job's lowering: a child that had lived on would have written its table now
    assert tables() == written, "a child wrote its table after the batch was killed"
    assert len(written) < len(jobs)
