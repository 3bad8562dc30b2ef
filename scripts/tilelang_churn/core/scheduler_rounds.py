"""One pending re-evaluation of Snakemake's scheduler at a time (standard library only: the class is handed in).

Snakemake 9's job scheduler ends every scheduling round by starting a timer of the job rate limit's timespan
(``--max-jobs-per-timespan``, 1 s by default) that starts another round, which starts another timer. A finished job
starts a round too, so every finished job adds a chain of rounds that lasts to the end of the run: the rounds per
second grow with the jobs finished (12 jobs of 2 s on one core: 3, 5, 7, ... 23 rounds between two finishes), and
each round resets the params and resources of every ready job and stats each of its inputs. In a run of the 8
releases' comparison the ready per-job figures wait behind the traces for minutes, and Snakemake's own process took
a core's worth of those two. With one timer pending at a time the rate limit is re-evaluated as before, within its
timespan; a finished job still starts a round at once. (The cause is discussed upstream in snakemake/snakemake PR
3744; this goes once Snakemake keeps one timer itself.)
"""

from __future__ import annotations

import threading

PATCHED = "_tilelang_churn_one_pending_reevaluation"


def keep_one_reevaluation_pending(scheduler_class) -> bool:
    """Make ``scheduler_class._schedule_reevalutation`` (Snakemake's spelling) start a timer only when none of that
    scheduler's is pending. False, and nothing changed, where the class has no such method (another Snakemake) or
    it is changed already."""
    original = getattr(scheduler_class, "_schedule_reevalutation", None)
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
    scheduler_class._schedule_reevalutation = _schedule_reevalutation
    return True
