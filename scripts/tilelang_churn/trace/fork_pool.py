"""Children forked from a process that imported TileLang once, a few at a time, each in a process group of its own.

    with ForkPool(workers=2, prctl=die_with_parent_prctl()) as pool:
        pool.start("job 1", run_one_job, timeout=600)    # run_one_job() -> exit status, in the child
        key, ended = pool.wait()                          # the first to end: Ended(status, reported, timed_out)

A child that ends, runs past its time limit or outlives the pool has its whole group killed (SIGKILL), so no
process its code forked writes after it; children die with the pool's process (``PR_SET_PDEATHSIG`` on Linux).
``Ended.reported`` is the status the child's function returned, written to a pipe before the child exits: None
means the process ended some other way (a signal, or ``os._exit`` in the kernel's code). Used by the trace
batches (trace_batch.py: one child per job) and the pass knockout (pass_knockout.py: one child per variant).

A stop from outside (STOP_SIGNALS: SIGHUP, SIGINT, SIGQUIT, SIGTERM sent to a child) always ends the child as
stopped by that signal, never as a finished job: the signals are blocked across the fork (no handler of the pool's
process runs in a child just forked), and a child keeps them blocked in all its threads while a thread of its own
waits for them (``_stop_on_signals``). Delivered the usual way, a SIGINT would become a KeyboardInterrupt that TVM's
FFI turns into a RuntimeError (a failed pass row, as if the lowering had failed), or z3's Ctrl-C handler, installed
around each proof, would take it to cancel the proof and the lowering would go on. Standard library only.
"""

from __future__ import annotations

import ctypes
import errno
import os
import select
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from tilelang_churn.core.child_group import kill_group

EXIT_NOT_RECORDED = 3  # trace_cli's: the child could not say what happened
EXIT_NO_SPACE = 5  # the child's files could not be written: no space left on their file system
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
# a stop from outside the pool (a user, Snakemake, a scheduler): the child ends as stopped by it, whatever it runs
STOP_SIGNALS = frozenset({signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM})
STOPPED_PREFIX = "stopped by signal "  # what a stopped child writes to its pipe, then its number
STOP_GRACE_S = 1.0  # how long a closing pool waits for a child to end after SIGTERM, before SIGKILL


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


def _stop_on_signals(pipe: int, report: threading.Lock, blocked: set) -> None:
    """In a child just forked, STOP_SIGNALS blocked (start): no handler of the pool's process runs here; a thread
    waits for a stop signal (one the pool's process ignores stays ignored), says it on the pipe and ends the child at
    once. Every thread keeps them blocked (threads inherit the mask), so no library's handler takes one: TVM's FFI
    would turn a KeyboardInterrupt into a RuntimeError, z3 would cancel a proof and go on. ``report``: held by whoever
    writes the child's outcome on the pipe, once."""
    for number in signal.valid_signals():
        if callable(signal.getsignal(number)):  # a Python handler of the pool's process (SIGINT's, the batch's SIGTERM)
            signal.signal(number, signal.SIG_DFL)
    watched = {number for number in STOP_SIGNALS if signal.getsignal(number) != signal.SIG_IGN}

    def watch() -> None:
        number = signal.sigwait(watched)
        if report.acquire(blocking=False):  # else the job has ended and said so: its process exits now
            os.write(pipe, f"{STOPPED_PREFIX}{number}".encode())
            os._exit(128 + number)

    if watched:
        threading.Thread(target=watch, name="stop-signals", daemon=True).start()  # all signals blocked in it
    signal.pthread_sigmask(signal.SIG_SETMASK, blocked | STOP_SIGNALS)


@dataclass(frozen=True)
class Ended:
    """How a child ended: its exit status (-N: killed by signal N, or stopped from outside by N: STOP_SIGNALS),
    what its function returned (None: it never returned), and whether the pool killed it for running past its time
    limit."""

    status: int
    reported: int | None
    timed_out: bool

    @property
    def signal(self) -> int | None:
        return -self.status if self.status < 0 and not self.timed_out else None


def _ended(pid: int) -> bool:
    """Whether the child PID has ended, left unreaped."""
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def _pidfd(pid: int):
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _reported(fd: int) -> tuple[int | None, int | None]:
    """(the status the child's function returned, the stop signal that ended it), each None when not said."""
    os.set_blocking(fd, False)
    try:
        text = os.read(fd, 64).decode(errors="replace").strip()
    except BlockingIOError:
        text = ""
    finally:
        os.close(fd)
    if text.startswith(STOPPED_PREFIX) and text[len(STOPPED_PREFIX) :].isdigit():
        return None, int(text[len(STOPPED_PREFIX) :])
    return (int(text) if text.lstrip("-").isdigit() else None), None


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
        # every signal waits until the child is registered here and has its own handling (_stop_on_signals)
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
        deadline = time.monotonic() + timeout if timeout else None
        try:
            pid = os.fork()
            if pid == 0:  # the child never returns into the caller
                self._child(function, read_end, write_end, blocked)
            # registered first: a signal taken by another thread (TVM's) runs its Python handler here all the same,
            # and close() must know the child to end it
            self.running[pid] = child = {"key": key, "pipe": read_end, "deadline": deadline, "pidfd": None}
            os.close(write_end)
            try:
                os.setpgid(pid, pid)  # here too: the group exists before the parent may kill it
            except OSError:
                pass
            child["pidfd"] = _pidfd(pid)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)

    def _child(self, function, read_end: int, write_end: int, blocked: set) -> None:
        """In the child: ``function()``, its status on the pipe, then the process's exit; never returns."""
        report = threading.Lock()
        code = EXIT_NOT_RECORDED
        try:
            os.close(read_end)
            os.setpgid(0, 0)
            die_with_parent(self._prctl, self._parent)
            _stop_on_signals(write_end, report, blocked)
            code = function()
        except OSError as exc:
            code = EXIT_NO_SPACE if no_space(exc) else code  # its log is on the full disk too: the parent says it
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except OSError as exc:  # a full disk under the job's log
                    code = EXIT_NO_SPACE if no_space(exc) else code
            report.acquire()  # a stop signal taken first ends the process here
            os.write(write_end, str(code).encode())  # the function returned: what it records is written
            os._exit(code)

    def wait(self) -> tuple[object, Ended]:
        """(key, how it ended) of the first child to end or to run past its deadline; its group is killed."""
        pid, timed_out = self._first_ended()
        child = self.running.pop(pid)
        kill_group(pid, signal.SIGKILL)
        _, wait_status = os.waitpid(pid, 0)
        if child["pidfd"] is not None:
            os.close(child["pidfd"])
        reported, stopped = _reported(child["pipe"])
        status = -stopped if stopped and not timed_out else os.waitstatus_to_exitcode(wait_status)
        return child["key"], Ended(status, reported, timed_out)

    def close(self) -> None:
        """Interrupted (SIGINT, SIGTERM) or done: no child outlives the pool. Each gets SIGTERM (its thread ends it
        at once), then its group SIGKILL once it ended, or after STOP_GRACE_S (its code holding Python's lock)."""
        for pid in self.running:
            kill_group(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        for pid, child in list(self.running.items()):
            try:
                while not _ended(pid) and time.monotonic() < deadline:  # ended, not reaped: its group id is its own
                    time.sleep(0.01)
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
                    if _ended(pid):
                        return pid, False
                time.sleep(min(0.02, wait) if wait is not None else 0.02)
