"""Children forked from a process that imported TileLang once, a few at a time, each in a process group of its own.

    with ForkPool(workers=2, prctl=die_with_parent_prctl()) as pool:
        pool.start("job 1", run_one_job, timeout=600)    # run_one_job() -> exit status, in the child
        key, ended = pool.wait()                          # the first to end: Ended(status, reported, timed_out)

A child that ends, runs past its time limit or outlives the pool has its whole group killed (SIGKILL), so no
process its code forked writes after it; children die with the pool's process (``PR_SET_PDEATHSIG`` on Linux).
``Ended.reported`` is the status the child's function returned, written to a pipe before the child exits: None
means the process ended some other way (a signal, or ``os._exit`` in the kernel's code). Used by the trace
batches (trace_batch.py: one child per job) and the pass knockout (pass_knockout.py: one child per variant).
Standard library only.
"""

from __future__ import annotations

import ctypes
import errno
import os
import select
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

EXIT_NOT_RECORDED = 3  # trace_cli's: the child could not say what happened
EXIT_NO_SPACE = 5  # the child's files could not be written: no space left on their file system
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def no_space(exc: OSError) -> bool:
    """An OSError of a full file system (or quota)."""
    return exc.errno in (errno.ENOSPC, errno.EDQUOT)


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def load_prctl():
    """libc's prctl on Linux, else None; loaded before forking, so a child only calls it."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def die_with_parent(prctl, parent: int) -> None:
    """In a child just forked from PARENT: SIGKILL when PARENT dies, so no job writes after the batch is gone.
    The parent may have died before prctl ran: then exit at once."""
    if prctl is not None:
        prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent:
        os._exit(EXIT_NOT_RECORDED)


def output_to(log: str | Path, append: bool = False) -> None:
    """In a child: its stdout and stderr (file descriptors 1 and 2, so native code's output too) into LOG."""
    Path(log).parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC), 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


@dataclass(frozen=True)
class Ended:
    """How a child ended: its exit status (-N: killed by signal N), what its function returned (None: it never
    returned), and whether the pool killed it for running past its time limit."""

    status: int
    reported: int | None
    timed_out: bool

    @property
    def signal(self) -> int | None:
        return -self.status if self.status < 0 and not self.timed_out else None


def kill_group(pid: int, number: int) -> None:
    """Signal the child's process group (the child and whatever its code forked), else the child alone."""
    try:
        os.killpg(pid, number)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, number)
        except ProcessLookupError:
            pass


def _pidfd(pid: int):
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _reported(fd: int) -> int | None:
    os.set_blocking(fd, False)
    try:
        text = os.read(fd, 64)
    except BlockingIOError:
        text = b""
    finally:
        os.close(fd)
    return int(text) if text.strip().lstrip(b"-").isdigit() else None


class ForkPool:
    """At most ``workers`` children at a time; ``start`` forks one, ``wait`` reaps the first to end."""

    def __init__(self, workers: int):
        self.workers = max(1, workers)
        self.running: dict[int, dict] = {}  # pid -> {key, pipe, deadline, pidfd}
        self._prctl, self._parent = load_prctl(), os.getpid()

    def __enter__(self) -> ForkPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def has_room(self) -> bool:
        return len(self.running) < self.workers

    def start(self, key, function, timeout: float | None = None) -> None:
        """Fork a child that runs ``function()`` and exits with the status it returns (3 when it raises)."""
        sys.stdout.flush()
        sys.stderr.flush()
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child never returns into the caller
            os.close(read_end)
            os.setpgid(0, 0)
            die_with_parent(self._prctl, self._parent)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)  # stopped at once, as a process of its own would be
            code = EXIT_NOT_RECORDED
            try:
                code = function()
            except OSError as exc:
                if not no_space(exc):
                    raise
                code = EXIT_NO_SPACE  # its log is on the full disk too: the parent says it
            finally:
                for stream in (sys.stdout, sys.stderr):
                    try:
                        stream.flush()
                    except OSError as exc:  # a full disk under the job's log
                        code = EXIT_NO_SPACE if no_space(exc) else code
                os.write(write_end, str(code).encode())  # the function returned: what it records is written
                os._exit(code)
        os.close(write_end)
        try:
            os.setpgid(pid, pid)  # here too: the group exists before the parent may kill it
        except OSError:
            pass
        deadline = time.monotonic() + timeout if timeout else None
        self.running[pid] = {"key": key, "pipe": read_end, "deadline": deadline, "pidfd": _pidfd(pid)}

    def wait(self) -> tuple[object, Ended]:
        """(key, how it ended) of the first child to end or to run past its deadline; its group is killed."""
        pid, timed_out = self._first_ended()
        child = self.running.pop(pid)
        kill_group(pid, signal.SIGKILL)
        _, wait_status = os.waitpid(pid, 0)
        if child["pidfd"] is not None:
            os.close(child["pidfd"])
        return child["key"], Ended(os.waitstatus_to_exitcode(wait_status), _reported(child["pipe"]), timed_out)

    def close(self) -> None:
        """Interrupted (SIGINT, SIGTERM) or done: no child outlives the pool."""
        for pid in self.running:
            kill_group(pid, signal.SIGTERM)
        for pid, child in list(self.running.items()):
            try:
                os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # ended, not reaped: its group id is still its own
                kill_group(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
            os.close(child["pipe"])
            if child["pidfd"] is not None:
                os.close(child["pidfd"])
        self.running.clear()

    def _first_ended(self) -> tuple[int, bool]:
        """A child that ended, still a zombie, so that its group id is not reused before its group is killed; or
        one past its deadline (True)."""
        while True:
            now = time.monotonic()
            deadlines = {pid: child["deadline"] for pid, child in self.running.items() if child["deadline"] is not None}
            late = [pid for pid, deadline in deadlines.items() if deadline <= now]
            if late:
                return late[0], True
            wait = min((deadline - now for deadline in deadlines.values()), default=None)
            if all(child["pidfd"] is not None for child in self.running.values()):
                ready, _, _ = select.select([child["pidfd"] for child in self.running.values()], [], [], wait)
                for pid, child in self.running.items():
                    if child["pidfd"] in ready:
                        return pid, False
            else:  # no pidfd (not Linux): poll
                for pid in self.running:
                    if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                        return pid, False
                time.sleep(min(0.02, wait) if wait is not None else 0.02)
