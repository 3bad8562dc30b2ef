"""One pending re-evaluation of Snakemake's scheduler at a time, on the Snakemake release it was written for.

Snakemake 9's job scheduler ends every scheduling round by starting a timer of the job rate limit's timespan
(``--max-jobs-per-timespan``, 1 s by default) that starts another round, which starts another timer. A finished job
starts a round too, so every finished job adds a chain of rounds that lasts to the end of the run: the rounds per
second grow with the jobs finished (12 jobs of 2 s on one core: 3, 5, 7, ... 23 rounds between two finishes), and
each round resets the params and resources of every ready job and stats each of its inputs. In a run of the 8
releases' comparison the ready per-job figures wait behind the traces for minutes, and Snakemake's own process took
a core's worth of those two. With one timer pending at a time the rate limit is re-evaluated as before, within its
timespan; a finished job still starts a round at once. (The cause is discussed upstream in snakemake/snakemake PR
3744; this goes once Snakemake keeps one timer itself.)

The change replaces a private method, ``JobScheduler._schedule_reevalutation`` (Snakemake's spelling), and uses
the private semaphore ``_open_jobs``. ``install`` makes it only on the Snakemake that requirements.txt pins
(WRITTEN_FOR) and only where both names are there; otherwise Snakemake's own scheduler runs, and one line says why.
"""

from __future__ import annotations

import inspect
import sys
import threading

PATCHED = "_tilelang_churn_one_pending_reevaluation"
WRITTEN_FOR = "9.27.1"  # requirements.txt's snakemake pin (a test compares them)
METHOD = "_schedule_reevalutation"
SEMAPHORE = "_open_jobs"
_said: set[str] = set()  # the reasons said in this process, each once


def keep_one_reevaluation_pending(scheduler_class) -> bool:
    """Make ``scheduler_class._schedule_reevalutation`` (Snakemake's spelling) start a timer only when none of that
    scheduler's is pending. False, and nothing changed, where the class has no such method (another Snakemake) or
    it is changed already."""
    original = getattr(scheduler_class, METHOD, None)
    if original is None or getattr(original, PATCHED, False):
        return False

    lock = threading.Lock()  # guards each scheduler's flag between its loop and its timer's thread

    def _schedule_reevalutation(self, delay) -> None:
        with lock:
            if getattr(self, "_reevaluation_pending", False):
                return
            self._reevaluation_pending = True

        def reevaluate() -> None:
            with lock:
                self._reevaluation_pending = False
            self._open_jobs.release()

        threading.Timer(delay, reevaluate).start()

    setattr(_schedule_reevalutation, PATCHED, True)
    _schedule_reevalutation.__doc__ = original.__doc__
    setattr(scheduler_class, METHOD, _schedule_reevalutation)
    return True


def missing_names(scheduler_class) -> list[str]:
    """The private names the change needs that SCHEDULER_CLASS lacks: the method it replaces, and the semaphore its
    ``__init__`` sets (the timer releases it)."""
    missing = [] if callable(getattr(scheduler_class, METHOD, None)) else [METHOD]
    try:
        source = inspect.getsource(scheduler_class.__init__)
    except (OSError, TypeError):
        source = ""
    return missing + ([] if f"self.{SEMAPHORE} =" in source else [SEMAPHORE])


def install(scheduler_class=None, version: str | None = None, say=None) -> str | None:
    """The change made on Snakemake's JobScheduler (or SCHEDULER_CLASS, of Snakemake VERSION); None when it is made
    (or was already), else why not, said once per process through SAY (default: a line on stderr)."""
    if scheduler_class is None:
        from importlib import metadata

        try:
            from snakemake.scheduling.job_scheduler import JobScheduler
        except ImportError as exc:
            return _say(f"no scheduler to change ({exc})", say)
        scheduler_class, version = JobScheduler, metadata.version("snakemake")
    if version != WRITTEN_FOR:
        return _say(f"Snakemake {version}, not {WRITTEN_FOR} (requirements.txt)", say)
    missing = missing_names(scheduler_class)
    if missing:
        return _say(f"its JobScheduler has no {' or '.join(missing)}", say)
    keep_one_reevaluation_pending(scheduler_class)
    return None


def _say(reason: str, say) -> str:
    if reason not in _said:
        _said.add(reason)
        line = f"tilelang-churn: Snakemake's own scheduler runs ({reason}): its rounds grow with the jobs finished"
        (say or (lambda text: print(text, file=sys.stderr)))(line)
    return reason
