"""A command stopped by a signal, or by its parent's death, in one line: ``stopped_in_one_line(PROG)``.

Around a command's imports and its main: SIGINT (KeyboardInterrupt) or SIGTERM prints ``PROG: stopped by
SIGNAL: nothing more written`` on stderr and exits 128 + the signal's number, never a traceback. On Linux the
process also gets SIGTERM when its parent dies (PR_SET_PDEATHSIG), so no orphan goes on writing after Snakemake
removed the outputs. A raise that lands in a finalizer or a weakref callback, where Python prints and ignores it, is
raised again until it lands in the command's own code (``_stop``); one that C code replaced by an error of its own
still stops the command in one line. Every entry file that a rule runs ends this way: ``run(PROG, command)`` in its
``__main__`` block, the package's slow imports (pandas, matplotlib, TileLang) inside the command. The files of
an interrupted command are written atomically (core/files.py): the raise unwinds through the writer, which
removes its temporary. A pool's workers that such a command forks take ``quiet_worker`` as their initializer.
Standard library only.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from typing import NoReturn

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


class Stopped(BaseException):
    """Raised in the main thread by SIGTERM, as KeyboardInterrupt is by SIGINT."""


RETRY_SECONDS = 0.05
_received: list[int] = []  # the signal that stops the command, once one came


def _raise(signum: int):
    raise KeyboardInterrupt if signum == signal.SIGINT else Stopped(signum)


def _stop(signum, frame):
    """A raise that lands in a finalizer or a weakref callback (an import's module lock) is printed and ignored,
    and the command would go on: raise it again every RETRY_SECONDS (SIGALRM, taken only now that the command
    stops) until it lands where it stops the command."""
    if not _received:
        _received.append(signum)
        signal.signal(signal.SIGALRM, lambda number, frame: _raise(_received[0]))
        signal.setitimer(signal.ITIMER_REAL, RETRY_SECONDS, RETRY_SECONDS)
    _raise(_received[0])


def _quiet_unraisable(previous):
    """sys.unraisablehook that drops the ignored raises of _stop (the retry repeats them), passing on the rest."""

    def hook(unraisable):
        if not isinstance(unraisable.exc_value, (Stopped, KeyboardInterrupt)) or not _received:
            previous(unraisable)

    return hook


def die_with_parent() -> None:
    """SIGTERM once the parent is gone (Linux; elsewhere nothing)."""
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        except (OSError, AttributeError):
            pass


def stop_when_orphaned(poll_seconds: float = 1.0) -> None:
    """SIGTERM to this process once its parent process is gone (it was reparented): a batch whose Snakemake was
    SIGKILLed stops, its children with it, instead of running on unseen. A watcher thread polls ``getppid``
    rather than PR_SET_PDEATHSIG, which fires when the thread that started this process exits (Snakemake starts
    jobs from worker threads), not only when the process does."""
    import threading
    import time

    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(poll_seconds)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="stop-when-orphaned", daemon=True).start()


class stopped_in_one_line:
    def __init__(self, prog: str):
        self.prog = prog

    def __enter__(self):
        parent = os.getppid()
        die_with_parent()
        try:  # a signal may land before the with block starts, while the handlers are being installed
            signal.signal(signal.SIGTERM, _stop)  # after prctl: once it is seen, a parent's death reaches the handler
            if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not where the caller ignores it
                signal.signal(signal.SIGINT, _stop)
            sys.unraisablehook = _quiet_unraisable(sys.unraisablehook)
        except KeyboardInterrupt:
            self._exit(signal.SIGINT)
        except Stopped as stopped:
            self._exit(stopped.args[0])
        if os.getppid() != parent:  # the parent died before prctl ran: stopped as its signal would have
            self._exit(signal.SIGTERM)
        return self

    def __exit__(self, exc_type, exc, tb):
        # once a signal came, the command was stopped however it ends: its every raise ignored and the command done, or
        # a raise that C code replaced by an error of its own (numpy's import: ImportError, "PyCapsule_Import could
        # not import module 'datetime'")
        if _received and exc_type not in (KeyboardInterrupt, Stopped):
            self._exit(_received[0])
        if exc_type is KeyboardInterrupt:
            self._exit(signal.SIGINT)
        if exc_type is Stopped:
            self._exit(exc.args[0])
        return False

    def _exit(self, number: int):
        signal.setitimer(signal.ITIMER_REAL, 0)  # no more retries
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # one line, even if a second signal follows
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        name = signal.Signals(number).name
        print(f"{self.prog}: stopped by {name}: nothing more written", file=sys.stderr, flush=True)
        raise SystemExit(128 + number)


def run(prog: str, command: Callable[[], int | None]) -> NoReturn:
    """An entry file's process: COMMAND()'s exit status; stopped by SIGINT, SIGTERM or its parent's death, one line
    and 128 + the signal (stopped_in_one_line)."""
    with stopped_in_one_line(prog):
        status = command()
    raise SystemExit(status)


def quiet_worker() -> None:
    """In a worker forked by a stopped_in_one_line command (a multiprocessing pool's initializer): SIGINT ignored (a
    Ctrl-C reaches the whole process group, and the command stops its workers), SIGTERM (the pool's terminate, or
    the command's death) ends it with no traceback, the exception unwinding through its file writers first."""
    _received.clear()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _exit_quietly)
    sys.unraisablehook = _exit_if_swallowed
    die_with_parent()


def _exit_quietly(signum, frame):
    raise SystemExit(128 + signum)  # a worker's SystemExit ends its process without a traceback


def _exit_if_swallowed(unraisable) -> None:
    """A worker's stop raised where Python cannot unwind it (a finalizer, an import lock's callback: seen under
    make test's load) would be printed as "Exception ignored" and the worker would go on: it ends here, quietly."""
    if isinstance(unraisable.exc_value, SystemExit):
        code = unraisable.exc_value.code
        os._exit(code if isinstance(code, int) else 1)
    sys.__unraisablehook__(unraisable)
