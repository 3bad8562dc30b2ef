"""A child process run in a process group of its own, so that nothing it started outlives it.

A program we ask a question (an environment's interpreter, a kernel file's import) may start processes of its own
that live on. Through pipes, a plain ``subprocess.run`` waits for them too (they hold the pipes open), and its
timeout kills the child alone. ``run`` starts the child in a new session with its output in temporary files, waits
for the child itself, then kills whatever is left in its group. Standard library only.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile


def run(
    argv: list[str], *, timeout: float, env: dict | None = None, cwd: str | None = None
) -> subprocess.CompletedProcess:
    """ARGV's exit status and output (text), once ARGV itself has exited; what it started is killed then. After
    TIMEOUT seconds its group is killed and subprocess.TimeoutExpired raised, its ``cmd`` ARGV[0] alone (the caller
    names what ran; a program passed with -c would fill pages)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env, cwd=cwd,
                                start_new_session=True)  # fmt: skip
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(proc.pid)
            proc.wait()
            raise subprocess.TimeoutExpired(argv[0], timeout) from None
        finally:  # after an exit, a timeout or an interrupt alike: nothing it started is left running
            kill_group(proc.pid)
            if proc.returncode is None:
                proc.wait()
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", errors="replace")
        stderr = err.read().decode("utf-8", errors="replace")
    return subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)


def kill_group(pgid: int) -> None:
    """SIGKILL to every process of group PGID; a group already empty is fine."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
