"""compat/snakemake_scheduler.py: Snakemake's scheduler keeps one re-evaluation timer pending, so its rounds stop
growing with the jobs finished. The real Snakemake runs a small workflow of sleeping jobs, once as it ships (the rounds
between two finishes grow: the reason for the change, and the sign to drop it once Snakemake keeps one timer itself)
and once with the change (they do not)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest
from conftest import REPO
from tilelang_churn.compat import snakemake_scheduler


class Scheduler:
    """Snakemake's JobScheduler as far as the change sees it: a semaphore that starts a round, and the timer."""

    def __init__(self):
        self._open_jobs = threading.Semaphore(0)

    def _schedule_reevalutation(self, delay):
        threading.Timer(delay, lambda: self._open_jobs.release()).start()


def rounds_started(scheduler, wait: float) -> int:
    count = 0
    deadline = time.monotonic() + wait
    while scheduler._open_jobs.acquire(timeout=max(0.0, deadline - time.monotonic())):
        count += 1
    return count


def test_one_timer_is_pending_at_a_time_and_a_new_one_starts_once_it_fired():
    class Shipped(Scheduler):
        pass

    class Changed(Scheduler):
        pass

    assert snakemake_scheduler.keep_one_reevaluation_pending(Changed) is True
    assert snakemake_scheduler.keep_one_reevaluation_pending(Changed) is False  # changed already: left as it is
    assert snakemake_scheduler.keep_one_reevaluation_pending(object) is False  # no such method: nothing to change
    shipped, changed, other = Shipped(), Changed(), Changed()
    for _ in range(5):  # five rounds ended before the first timer fired
        shipped._schedule_reevalutation(0.05)
        changed._schedule_reevalutation(0.05)
    other._schedule_reevalutation(0.05)  # each scheduler has its own timer
    assert rounds_started(shipped, 0.5) == 5
    assert rounds_started(changed, 0.5) == 1 and rounds_started(other, 0.2) == 1
    changed._schedule_reevalutation(0.05)  # the timer fired: the next round's timer starts
    assert rounds_started(changed, 0.5) == 1


def test_the_change_is_made_only_on_the_pinned_snakemake_whose_private_names_are_there():
    """The private names the change touches exist in the installed Snakemake (this fails when they go), which is
    the one requirements.txt pins; on another release, or without the names, Snakemake's own scheduler runs and
    one line per process says why."""
    import re

    import snakemake
    from snakemake.scheduling.job_scheduler import JobScheduler

    pin = re.search(r"^snakemake==(\S+)$", (REPO / "requirements.txt").read_text(), re.M).group(1)
    assert snakemake_scheduler.WRITTEN_FOR == pin == snakemake.__version__
    assert snakemake_scheduler.missing_names(JobScheduler) == []

    class Older(Scheduler):
        def __init__(self):
            self._jobs_open = threading.Semaphore(0)  # the semaphore renamed

    said = []
    assert (
        snakemake_scheduler.install(Scheduler, "9.28.0", said.append)
        == "Snakemake 9.28.0, not 9.27.1 (requirements.txt)"
    )
    assert snakemake_scheduler.install(Scheduler, "9.28.0", said.append) is not None and len(said) == 1  # once
    assert snakemake_scheduler.install(Older, pin, said.append) == "its JobScheduler has no _open_jobs"
    assert snakemake_scheduler.install(object, pin, said.append) == (
        "its JobScheduler has no _schedule_reevalutation or _open_jobs"
    )
    assert said[0].startswith("tilelang-churn: Snakemake's own scheduler runs (Snakemake 9.28.0") and len(said) == 3
    assert not getattr(Older._schedule_reevalutation, snakemake_scheduler.PATCHED, False)  # left as it ships

    class Current(Scheduler):
        pass

    assert snakemake_scheduler.install(Current, pin, said.append) is None and len(said) == 3
    assert getattr(Current._schedule_reevalutation, snakemake_scheduler.PATCHED)


SNAKEFILE = """
import sys
sys.path.insert(0, {scripts!r})
from snakemake.scheduling.job_scheduler import JobScheduler
from tilelang_churn.compat import snakemake_scheduler

if {change}:
    assert snakemake_scheduler.keep_one_reevaluation_pending(JobScheduler)

rule all:
    input: expand("out/{{i}}.txt", i=range(8))

rule one:
    output: "out/{{i}}.txt"
    shell: "sleep 1; touch {{output}}"
"""


def rounds_between_finishes(workdir, change: bool) -> list[int]:
    """Snakemake's scheduling rounds between each two finished jobs of 8 one-second jobs on one core (--verbose
    logs each round's resources)."""
    workdir.mkdir()
    (workdir / "Snakefile").write_text(SNAKEFILE.format(scripts=str(REPO / "scripts"), change=change))
    command = [sys.executable, "-m", "snakemake", "--cores", "1", "--verbose", "--nolock"]
    proc = subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    counts, rounds = [], 0
    for line in proc.stderr.splitlines():
        if "Resources before job selection" in line:
            rounds += 1
        elif line.startswith("Finished jobid"):
            counts.append(rounds)
            rounds = 0
    assert len(counts) == 9  # 8 jobs and rule all
    return counts[:8]


@pytest.mark.slow
def test_snakemakes_rounds_grow_with_the_jobs_finished_and_stop_growing_with_one_timer(tmp_path):
    shipped = rounds_between_finishes(tmp_path / "shipped", change=False)
    changed = rounds_between_finishes(tmp_path / "changed", change=True)
    assert max(shipped) >= shipped[1] + 4, shipped  # a chain more per finished job
    assert max(changed) <= 3, changed  # the finish's round, the timer's, at most one more
    assert sum(changed) < sum(shipped), (changed, shipped)
