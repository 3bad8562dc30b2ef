"""A command stopped by a signal, or by its parent's death, in one line: ``stopped_in_one_line(PROG)``.

Around a command's imports and its main: SIGINT (KeyboardInterrupt) or SIGTERM prints ``PROG: stopped by
SIGNAL: nothing more written`` on stderr and exits 128 + the signal's number, never a traceback. On Linux the
process also gets SIGTERM when its parent dies (PR_SET_PDEATHSIG), so no orphan goes on writing after Snakemake
removed the outputs. Standard library only.
"""

from __future__ import annotations

import os
import signal
import sys

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


class Stopped(BaseException):
    """Raised in the main thread by SIGTERM, as KeyboardInterrupt is by SIGINT."""


def _stop(signum, frame):
    raise Stopped(signum)


def die_with_parent() -> None:
    """SIGTERM once the parent is gone (Linux; elsewhere nothing)."""
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        except (OSError, AttributeError):
            pass


class stopped_in_one_line:
    def __init__(self, prog: str):
        self.prog = prog

    def __enter__(self):
        parent = os.getppid()
        die_with_parent()
        signal.signal(signal.SIGTERM, _stop)  # after prctl: once it is seen, a parent's death reaches the handler
        if os.getppid() != parent:  # the parent died before prctl ran: stopped as its signal would have
            self._exit(signal.SIGTERM)
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is KeyboardInterrupt:
            self._exit(signal.SIGINT)
        if exc_type is Stopped:
            self._exit(exc.args[0])
        return False

    def _exit(self, number: int):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # one line, even if a second signal follows
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        name = signal.Signals(number).name
        print(f"{self.prog}: stopped by {name}: nothing more written", file=sys.stderr, flush=True)
        raise SystemExit(128 + number)
