"""What a trace job is expected to cost: seconds of one core in its forked child, by mode, kernel and target.

The grid cuts its batches by it (batches.make_batches: at most config trace_batch_seconds each), so that there
are enough of them to keep the cores busy whatever the order they finish in. A model, not a measure: the mode's
seconds are the means of the book's GEMM's jobs in the default grid (TileLang 0.1.15, this project's 2-core
machine, 2026-12-02, ``run.json``'s ``wall_seconds``), scaled by the kernel's lowering cost against the GEMM's
(its file's LOWERING_COST, kernel/kernels.py), by the target's factor (the shipped targets' means against the
mean of the three) and by the release's (its lowering against 0.1.15's); a mode or target it does not know costs
as an instrument job on an average target, a release it does not know as 0.1.15, and a job of a mode its release
lacks as the one row it writes. Standard library only.

An earlier run's record of a job (its ``run.json``) says what the job took: ``recorded_seconds``. The grid orders
batches that run again by it (batches.learned_seconds), never cuts them by it.
"""

from __future__ import annotations

import heapq
import math

MODE_SECONDS = {"trace-env": 1.28, "trace-api": 0.71, "pass-diff": 0.71, "instrument": 0.66}
# the shipped targets against their mean, by whether the mode runs the whole tilelang.lower (trace-env,
# instrument: sm80's software pipelining makes it 2.5-3x sm90) or a pass list (the API modes: hip's is shorter);
# the default grid's jobs, TileLang 0.1.15, this machine, 2026-12-02. Another target: 1.
TARGET_FACTOR = {
    True: {"cuda-sm80": 1.7, "cuda-sm90": 0.6, "hip": 0.7},
    False: {"cuda-sm80": 1.25, "cuda-sm90": 1.25, "hip": 0.5},
}
WHOLE_LOWERING = ("trace-env", "instrument")
DEFAULT_SECONDS = MODE_SECONDS["instrument"]


# an instrument job recorded from a trace-env job's lowering (trace_batch.pair_jobs) adds only its tracer to that
# lowering: the shared GEMM lowering took 1.19 s of CPU against 1.05 s for trace-env alone and 0.42 s for
# instrument alone (0.1.15, this machine, 2026-12-02)
SERVED_FACTOR = 0.35
# a release's lowering against 0.1.15's: the CPU seconds of its jobs against the model's, over 0.1.15's (the
# 8-release comparison of the default grid, this machine, 2026-12-03; trace-api and pass-diff where a release
# has them, else instrument); a release not listed: 1
RELEASE_FACTOR = {"0.1.8": 1.65, "0.1.9": 2.5, "0.1.10": 1.28, "0.1.11": 1.27, "0.1.12": 1.48, "0.1.13": 1.5}
# a job of a mode its release lacks (trace-env or trace-api before 0.1.13) writes one "unsupported" row and lowers
# nothing: 0.008-0.016 s, 0.011 s on average (0.1.12's 33 trace-env jobs of the default grid, this machine,
# 2026-12-03); costed as a lowering, 0.1.12's made three batches of what takes a fraction of one
UNSUPPORTED_SECONDS = 0.011
# a trace batch's process imports TileLang before its first job: 2-4.5 s on this machine (docs/performance.md, (b))
IMPORT_SECONDS = 3.0


def expected_seconds(
    mode: str,
    lowering_cost: float = 1.0,
    served: bool = False,
    target: str | None = None,
    release: str | None = None,
    supported: bool = True,
) -> float:
    """The expected seconds of one job of ``mode`` lowering a kernel of ``lowering_cost`` (its file's
    LOWERING_COST) for ``target`` (its folder name) with TileLang ``release``; ``served``: an instrument job
    recorded from a trace-env job's lowering; not ``supported``: its release lacks the mode's tool."""
    if not supported:
        return UNSUPPORTED_SECONDS
    seconds = MODE_SECONDS.get(mode, DEFAULT_SECONDS) * lowering_cost * RELEASE_FACTOR.get(release, 1.0)
    seconds *= TARGET_FACTOR[mode in WHOLE_LOWERING].get(target, 1.0)
    return seconds * SERVED_FACTOR if served else seconds


def lowered_by_another(record: dict) -> bool:
    """Whether a job's run.json ``record`` was written from another job's lowering (its ``lowering.by``, a
    shared lowering: config share_lowering), whose record holds the lowering's seconds."""
    lowering = record.get("lowering")
    return isinstance(lowering, dict) and lowering.get("by", record.get("out_dir")) != record.get("out_dir")


def recorded_seconds(record: object) -> float | None:
    """What a job took by its run.json ``record``: its child's ``wall_seconds``; 0 for a job recorded from
    another job's lowering (that job's record holds the lowering's time); None when the record says neither."""
    if not isinstance(record, dict):
        return None
    if lowered_by_another(record):
        return 0.0
    seconds = record.get("wall_seconds")
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds) or seconds < 0:
        return None
    return float(seconds)


# how close the longest run gets to the shortest it can be: far below a job's seconds and 26 halvings of 60 s
CUT_TOLERANCE_SECONDS = 1e-6


def cut(costs: list[float], most_seconds: float, most_items: int, sizes: list[int] | None = None) -> list[range]:
    """``costs`` cut, in order, into runs of at most ``most_items`` (each item counting as its ``sizes`` entry,
    default 1) whose sum stays within ``most_seconds`` (a single item above either is a run of its own): no more
    runs than filling each in turn up to the limits gives, with the longest of them as short as it can be. Filled in
    turn, the last run holds what is left (the default grid's trace-env jobs: three batches of 20 s and one of
    8), and the cores that finish first wait for the longest."""
    sizes = sizes or [1] * len(costs)
    filled = _runs(costs, most_seconds, most_items, sizes)
    if len(filled) < 2:
        return filled
    shortest, longest = 0.0, min(most_seconds, sum(costs))  # a cut at `longest` needs no more runs than `filled`
    while longest - shortest > CUT_TOLERANCE_SECONDS:
        middle = (shortest + longest) / 2
        if len(_runs(costs, middle, most_items, sizes)) <= len(filled):
            longest = middle
        else:
            shortest = middle
    return _runs(costs, longest, most_items, sizes)


def _runs(costs: list[float], most_seconds: float, most_items: int, sizes: list[int]) -> list[range]:
    """Each run filled in turn up to the limits (a single item above either is a run of its own)."""
    parts, start, total, items = [], 0, 0.0, 0
    for index, cost in enumerate(costs):
        if index > start and (total + cost > most_seconds or items + sizes[index] > most_items):
            parts.append(range(start, index))
            start, total, items = index, 0.0, 0
        total += cost
        items += sizes[index]
    if costs:
        parts.append(range(start, len(costs)))
    return parts


def share_cores(seconds: dict[str, float], most: dict[str, int], cores: int) -> dict[str, int]:
    """Threads for batches that run side by side: each batch (name -> expected ``seconds`` of one core, at most
    ``most`` children at a time) one core, then each spare core to the batch expected to end last (its import, then
    its seconds over its threads), as long as it has children to give it: the batches end as close together as
    whole cores allow. No more cores than batches: one each."""
    threads = dict.fromkeys(seconds, 1)
    spare = cores - len(threads)
    ends = [(-(IMPORT_SECONDS + seconds[name]), name) for name in sorted(seconds)]
    heapq.heapify(ends)
    while spare > 0 and ends:
        _, name = heapq.heappop(ends)
        if threads[name] >= most[name]:
            continue  # every child of it has a core: the next latest gets the core
        threads[name] += 1
        spare -= 1
        heapq.heappush(ends, (-(IMPORT_SECONDS + seconds[name] / threads[name]), name))
    return threads
