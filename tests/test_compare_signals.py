"""scripts/compare_releases.py stopped by a signal, for real: one line and 128 + the signal's number, never a
traceback; the rule's shell is the script itself (exec), and the script dies with a parent that is killed, so
no orphan writes figures after Snakemake removed the outputs. Each run is stopped while it starts (a second)."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO
from test_compare_releases import write_jobs
from test_config_reaches_no_shell import shell_commands

SCRIPT = REPO / "scripts" / "compare_releases.py"


def stopped_line(number: int) -> str:
    return f"compare_releases: stopped by {signal.Signals(number).name}: nothing more written\n"


def _default_sigint():
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a pytest-xdist worker ignores SIGINT, and children inherit that


def wait_for(condition, what: str, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.005)
    pytest.fail(f"timed out waiting for {what}")


def handles_sigterm(pid: int) -> bool:
    """The process runs the script (no longer the shell that forked it) and has its SIGTERM handler installed
    (the script's first step, before its imports)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        if str(SCRIPT).encode() not in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"):
            return False
    except OSError:
        return False
    caught = int(re.search(r"^SigCgt:\s*([0-9a-f]+)$", status, re.M).group(1), 16)
    return bool(caught & (1 << (signal.SIGTERM - 1)))


def gone(pid: int) -> bool:
    try:
        return re.search(r"^State:\s*Z", Path(f"/proc/{pid}/status").read_text(), re.M) is not None  # a zombie
    except OSError:
        return True


@pytest.fixture()
def job(tmp_path):
    """(the script's arguments, its output folder) for a small release grid (test_compare_releases.write_jobs)."""
    out = tmp_path / "compare"
    return ["--out-dir", str(out), *map(str, write_jobs(tmp_path / "runs"))], out


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_stops_it_with_one_line_and_128_plus_the_signal(job, number):
    args, out = job
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=_default_sigint,
    )  # fmt: skip
    wait_for(lambda: handles_sigterm(proc.pid), "the script's signal handler")
    proc.send_signal(number)
    stdout, stderr = proc.communicate(timeout=60)
    assert (proc.returncode, stderr, stdout) == (128 + number, stopped_line(number), "")
    assert not out.exists()


def rule_command(args: list[str], log: Path) -> str:
    """Rule compare_releases' shell command as Snakemake runs it (bash -c, its strict-mode prefix)."""
    (command,) = [c for c in shell_commands((REPO / "workflow" / "rules" / "compare.smk").read_text())]
    values = {
        "params.script": shlex.quote(str(SCRIPT)),
        "params.out_dir": shlex.quote(args[1]),
        "input.passes": shlex.join(args[2:]),
        "params.attribution": "",  # no GPU stage
        "params.heatmap": "",
        "params.sources": "",  # the installed release: no environment to read pass links from
        "log": shlex.quote(str(log)),
    }
    command = re.sub(r"\{([\w.]+):q\}", lambda m: values[m.group(1)], command)
    return f"set -euo pipefail; {command.replace('python3', shlex.quote(sys.executable), 1)}"


def test_the_rules_process_is_the_script_so_stopping_it_stops_the_script(job, tmp_path):
    args, out = job
    log = tmp_path / "compare_releases.log"
    shell = subprocess.Popen(["bash", "-c", rule_command(args, log)], preexec_fn=_default_sigint)
    # the process Snakemake started and would signal is the script itself: no shell in between
    wait_for(lambda: handles_sigterm(shell.pid), "the script's signal handler in the rule's own process")
    shell.terminate()
    assert shell.wait(timeout=60) == 128 + signal.SIGTERM
    assert log.read_text() == stopped_line(signal.SIGTERM)
    assert not out.exists()


def test_a_script_whose_parent_is_killed_stops_and_writes_nothing(job, tmp_path):
    args, out = job
    log = tmp_path / "compare_releases.log"
    # a shell that waits for it (`; true`), as any wrapper without exec does; killed outright, it cannot pass
    # the signal on
    command = f"{shlex.join([sys.executable, str(SCRIPT), *args])} > {shlex.quote(str(log))} 2>&1; true"
    shell = subprocess.Popen(["bash", "-c", command])
    children = Path(f"/proc/{shell.pid}/task/{shell.pid}/children")
    script = int(wait_for(lambda: children.read_text().split(), "the wrapper's child")[0])
    wait_for(lambda: handles_sigterm(script), "the script's signal handler")
    shell.kill()
    shell.wait(timeout=60)
    wait_for(lambda: gone(script), "the orphaned script to stop", timeout=30)
    assert log.read_text() == stopped_line(signal.SIGTERM)
    assert not out.exists()
    assert os.path.exists(args[2])  # its inputs are still there: it stopped, and nothing else went wrong


# the with block of a probe command, where the signal's raise is lost before it reaches the command's own code
LOST_IN_A_FINALIZER = (
    "    box = Box()\n"
    "    weakref.finalize(box, lambda: (os.kill(os.getpid(), signal.SIGTERM), time.sleep(0.01)))\n"
    "    del box  # the signal's handler runs inside the finalizer\n"
    "    deadline = time.monotonic() + 5\n"
    "    while time.monotonic() < deadline: pass\n"
)
REPLACED_AS_C_CODE_DOES = (
    "    try:\n"
    "        os.kill(os.getpid(), signal.SIGTERM)\n"
    "        time.sleep(5)\n"
    "    except BaseException:\n"
    "        raise ImportError('PyCapsule_Import could not import module \"datetime\"')\n"
)


@pytest.mark.parametrize("body", [LOST_IN_A_FINALIZER, REPLACED_AS_C_CODE_DOES], ids=["finalizer", "c_code"])
def test_a_signal_whose_raise_is_lost_or_replaced_still_stops_the_command(body):
    """Python prints and ignores an exception raised inside a finalizer or a weakref callback (as importlib's module
    locks have): a SIGTERM that came there was lost, and the command went on to write everything. The handler raises
    again until the raise lands in the command's own code. C code may catch the raise and raise an error of its own
    (seen in CI: SIGTERM during numpy's import, ImportError "PyCapsule_Import could not import module 'datetime'",
    a traceback and exit 1). Either way: one line, 128 + the signal, the rest never runs."""
    code = (
        "import os, signal, sys, time, weakref; sys.path.insert(0, sys.argv[1])\n"
        "from tilelang_churn.core import interrupt\n"
        "class Box: pass\n"
        "with interrupt.stopped_in_one_line('probe'):\n"
        f"{body}"
        "    print('went on')\n"
    )
    command = [sys.executable, "-c", code, str(REPO / "scripts")]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout) == (128 + signal.SIGTERM, "")
    assert proc.stderr == "probe: stopped by SIGTERM: nothing more written\n"


def test_a_signal_that_lands_while_the_handlers_are_installed_still_stops_in_one_line():
    """SIGTERM taken inside stopped_in_one_line's own set-up, before its with block starts (seen in CI, on a busy
    machine: the test's poll saw the handler and signalled at once): one line and 143, no traceback."""
    code = (
        "import os, signal, sys\n"
        f"sys.path.insert(0, {str(REPO / 'scripts')!r})\n"
        "from tilelang_churn.core import interrupt\n"
        "real = signal.getsignal\n"
        "def getsignal(number):\n"
        "    os.kill(os.getpid(), signal.SIGTERM)  # the handler is installed: it runs at the next bytecode\n"
        "    return real(number)\n"
        "signal.getsignal = getsignal\n"
        "with interrupt.stopped_in_one_line('compare_releases'):\n"
        "    print('the with block ran')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stderr, proc.stdout) == (128 + signal.SIGTERM, stopped_line(signal.SIGTERM), "")
