"""A child process run in a process group of its own, so that nothing it started outlives it.

A program we ask a question (an environment's interpreter, a kernel file's import) may start processes of its own
that live on. Through pipes, a plain ``subprocess.run`` waits for them too (they hold the pipes open), and its
timeout kills the child alone. ``run`` starts the child in a new session with its output in temporary files, waits
for the child itself, then kills whatever is left in its group before the child is reaped (so the group's id cannot
have been taken by another process). Standard library only.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import tempfile
import time


def run(
    argv: list[str], *, timeout: float, env: dict | None = None, cwd: str | None = None
) -> subprocess.CompletedProcess:
    """ARGV's exit status and output (text), once ARGV itself has exited; what it started is killed then. After
    TIMEOUT seconds its group is killed and subprocess.TimeoutExpired raised, its ``cmd`` ARGV[0] alone (the caller
    names what ran; a program passed with -c would fill pages). An interrupt kills the group too."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env, cwd=cwd,
                                start_new_session=True)  # fmt: skip
        try:
            ended = _ended(proc.pid, timeout)
        finally:  # after an exit, a timeout or an interrupt alike: nothing it started is left running
            kill_group(proc.pid)
            proc.wait()
            _wait_group_gone(proc.pid)
        if not ended:
            raise subprocess.TimeoutExpired(argv[0], timeout)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", errors="replace")
        stderr = err.read().decode("utf-8", errors="replace")
    return subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)


def kill_group(pid: int, number: int = signal.SIGKILL) -> None:
    """Signal NUMBER to the process group PID leads (the child and whatever it started), else to the child alone;
    a group or child already gone is fine."""
    try:
        os.killpg(pid, number)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, number)
        except ProcessLookupError:
            pass


def _wait_group_gone(pgid: int, timeout: float = 2.0) -> None:
    """Wait (at most TIMEOUT seconds) until no process of group PGID runs: a SIGKILL is delivered, not waited for,
    and a grandchild under load was seen alive just after killpg returned. A zombie has ended (PID 1 of a
    container may never reap it); without /proc, nothing to wait on."""
    deadline = time.monotonic() + timeout
    while _group_running(pgid) and time.monotonic() < deadline:
        time.sleep(0.01)


def _group_running(pgid: int) -> bool:
    try:
        names = os.listdir("/proc")
    except OSError:
        return False
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="utf-8", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
            return True
    return False


def _ended(pid: int, timeout: float) -> bool:
    """Whether the child PID ends within TIMEOUT seconds, leaving it unreaped."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    if pidfd is not None:
        try:
            poller = select.poll()  # not select(): a descriptor past FD_SETSIZE is refused there
            poller.register(pidfd, select.POLLIN)
            return bool(poller.poll(timeout * 1000))
        finally:
            os.close(pidfd)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            return True
        time.sleep(0.05)
    return False
