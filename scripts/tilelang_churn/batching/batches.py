"""The trace and knockout batches: the grid's jobs cut into the batches one process runs each (trace_batch.py,
knockout_batch.py), each named from what it holds, and a batch's seconds as an earlier run recorded them
(``learned_seconds``: what orders the batches that run again). What a job is expected to cost, and the cores the
batches that run side by side share, are job_cost.py's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from tilelang_churn.batching import job_cost
from tilelang_churn.core import files, trace_modes
from tilelang_churn.core.job_spec import JobSpec
from tilelang_churn.grid.grid_job import Job
from tilelang_churn.kernel import kernels
from tilelang_churn.releases.capabilities import Capabilities


@dataclass(frozen=True)
class Batch:
    """Trace jobs that one process runs (trace_batch.py): it imports TileLang once and forks a child per job.

    One release each, and TL_LOWER_TRACE (read when tilelang is imported) on for all or none: trace-env jobs
    get batches of their own. At most config trace_batch_size jobs, so that no Snakemake rule has more
    outputs than that (its lookup of a file's producer goes through every output of the rule).
    """

    name: str  # the Snakemake rule that runs it, from what it holds (batch_name), e.g. trace_env_0_1_15
    version: str
    lower_trace_env: bool
    jobs: tuple[Job, ...]
    job_seconds: tuple[float, ...] = ()  # each job's expected seconds (job_cost.py), in the order of jobs
    # the lowerings it runs, each in a child of its own: one per job, but one for a trace-env job and the instrument
    # job its lowering serves (share_lowering); None: one per job
    lowerings: int | None = None

    @property
    def expected_seconds(self) -> float:
        """Of lowering, one core, as make_batches cut it."""
        return sum(self.job_seconds)

    @property
    def children(self) -> int:
        """The children its process forks, at most ``threads`` at a time: so the most threads it can use."""
        return self.lowerings or len(self.jobs)

    @property
    def kernel_files(self) -> list[str]:
        """The user kernel files its jobs trace and the modules each imports from its folder (inputs of the batch's
        rule: editing any of them retraces the batch)."""
        return kernels.kernel_files_of(job.kernel_file for job in self.jobs if job.kernel_file)


# a batch name's part longer than this is cut and given a hash of the whole, so names stay short (Slurm, file names)
MAX_NAME_PART = 24


def name_part(text: str) -> str:
    """A release, mode, kernel or target as part of a Snakemake rule name: letters, digits and _ only."""
    return files.short_name(re.sub(r"[^A-Za-z0-9]", "_", text), MAX_NAME_PART, text, digits=8)


def batch_name(version: str, lower_trace_env: bool, jobs: list[Job], user_file: bool, kind: str = "trace") -> str:
    """trace_<mode>_<release>[_<kernel>][_<target>] from what the batch holds: the mode is env for trace-env
    batches (env_instrument when they also hold the instrument jobs their lowerings serve), the mode itself when
    the batch holds one only, else none; the kernel and the target when it holds one only (a user's kernel file:
    its kernels, always). Nothing positional, so the name stays when other parts of the grid change (another
    kernel, the shapes reordered)."""
    modes = list(dict.fromkeys(job.mode for job in jobs))
    mode = modes[0].removeprefix("trace-") if len(modes) == 1 else None
    mode = ("env_instrument" if trace_modes.SERVED_MODE in modes else "env") if lower_trace_env else mode
    mode = mode if kind == "trace" else None  # a knockout batch: its kind says what it does
    kernels_ = list(dict.fromkeys(job.spec.kernel for job in jobs))
    targets = list(dict.fromkeys(job.target for job in jobs))
    kernel = "_".join(kernels_) if len(kernels_) == 1 or user_file else None
    target = targets[0] if len(targets) == 1 else None
    parts = [kind, mode, version, kernel, target]
    return "_".join(name_part(part) for part in parts if part)


def served_jobs(
    grid_jobs: Mapping[tuple[str, str, str, str], Job], probed: Mapping[str, Capabilities | None] | None = None
) -> dict[Job, Job]:
    """{instrument job: the trace-env job whose lowering also records it} for every configuration x target: one
    lowering writes both records (trace_batch.pair_jobs). Not for a version whose probed capabilities (``probed``:
    version -> Capabilities, known before any environment is built: the installed release, a wheel, an environment)
    lack lower_trace; a release not probed yet is paired, and its batch lowers the instrument job on its own when the
    trace-env job finds no lower_trace (trace_job.serve), so that the batches never depend on what was built."""
    probed = probed or {}
    served = {}
    for (version, target, config_id, mode), job in grid_jobs.items():
        found = probed.get(version)
        env_job = grid_jobs.get((version, target, config_id, "trace-env"))
        if mode == trace_modes.SERVED_MODE and env_job is not None and (found is None or found.lower_trace):
            served[job] = env_job
    return served


def lowering_cost(spec: JobSpec) -> float:
    """The LOWERING_COST its kernel's file declares (kernel/kernels.py; read once per file)."""
    return kernels.read_signature(spec.kernel_file, spec.function).lowering_cost


def make_batches(
    versions: Sequence[str],
    grid_jobs: Mapping[tuple[str, str, str, str], Job],
    size: int,
    seconds: float = float("inf"),
    share_lowering: bool = True,
    probed: Mapping[str, Capabilities | None] | None = None,
) -> list[Batch]:
    """The grid's jobs ((version, target, configuration, mode) -> job) of each release of ``versions``, trace-env
    jobs apart, in grid order, cut into batches of at most size jobs and at most ``seconds`` of expected lowering, as
    evenly as the jobs allow (job_cost.py; not the cores given, so that a run with other --cores finds the same
    batches and reruns nothing). With ``share_lowering`` each instrument job a trace-env job's lowering can serve
    (served_jobs) follows that job in its batch, never cut from it.

    Each is named from what it holds (batch_name), then _<part> where its group needs several batches."""
    probed = probed or {}
    served = served_jobs(grid_jobs, probed) if share_lowering else {}
    serving: dict[Job, Job] = {env_job: job for job, env_job in served.items()}

    def seconds_of(job: Job) -> float:
        found = probed.get(job.version)  # not probed yet: assumed to have the mode's tool
        supported = found is None or found.supports(job.mode)
        return job_cost.expected_seconds(
            job.mode, lowering_cost(job.spec), job in served, job.target, job.version, supported
        )

    batches = []
    for version in versions:
        for lower_trace_env in (True, False):
            units = [
                [job, *([serving[job]] if job in serving else [])]
                for job in grid_jobs.values()
                if job.version == version
                and trace_modes.MODES[job.mode].sets_lower_trace_env == lower_trace_env
                and job not in served
            ]
            # the shipped kernels' jobs share batches; each user kernel file gets its own, so that editing it
            # retraces its jobs and no other
            by_file: dict[str | None, list[list[Job]]] = {}
            for unit in units:
                by_file.setdefault(unit[0].kernel_file, []).append(unit)
            for kernel_file, group in by_file.items():
                unit_seconds = [[seconds_of(job) for job in unit] for unit in group]
                costs = [sum(each) for each in unit_seconds]
                runs = job_cost.cut(costs, seconds, size, sizes=[len(unit) for unit in group])
                for number, run in enumerate(runs, 1):
                    part = [job for unit in group[run.start : run.stop] for job in unit]
                    name = batch_name(version, lower_trace_env, part, kernel_file is not None)
                    name += f"_{number}" if len(runs) > 1 else ""
                    job_seconds = tuple(each for unit in unit_seconds[run.start : run.stop] for each in unit)
                    lowerings = run.stop - run.start  # its units: a job, or a trace-env job and the one it serves
                    batches.append(Batch(name, version, lower_trace_env, tuple(part), job_seconds, lowerings))
    return distinct_names(batches)


def learned_seconds(batch: Batch, records: Sequence[str | Path]) -> float:
    """The batch's seconds as an earlier run recorded them: each job's run.json (``records``, in the order of its
    jobs; job_cost.recorded_seconds), the expected seconds of a job without a readable one. What orders the
    batches that run again, the longest first. Not what cuts them: a cut that followed each run's timings would
    move jobs between batches, and so rerun them."""
    total = 0.0
    for expected, path in zip(batch.job_seconds, records, strict=True):
        try:
            recorded = job_cost.recorded_seconds(json.loads(Path(path).read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError, ValueError):
            recorded = None
        total += expected if recorded is None else recorded
    return total


def distinct_names(batches: list[Batch]) -> list[Batch]:
    """Two names alike (kernel names that differ only in . + -, or a kernel named like another's kernel and
    target together): the later ones numbered, so that every rule has a name of its own."""
    seen: dict[str, int] = {}
    for i, batch in enumerate(batches):
        seen[batch.name] = seen.get(batch.name, 0) + 1
        if seen[batch.name] > 1:
            batches[i] = replace(batch, name=f"{batch.name}_b{seen[batch.name]}")
    return batches


def make_knockout_batches(versions: Sequence[str], knockout_jobs: list[Job], size: int) -> list[Batch]:
    """The knockout jobs (one per configuration x target x release) of each release, a user's kernel file's
    apart, cut into batches of at most size configurations: knockout_<release>[_<kernel>][_<target>][_<n>]."""
    batches = []
    for version in versions:
        by_file: dict[str | None, list[Job]] = {}
        for job in knockout_jobs:
            if job.version == version:
                by_file.setdefault(job.kernel_file, []).append(job)
        for kernel_file, group in by_file.items():
            parts = [group[start : start + size] for start in range(0, len(group), size)]
            for number, part in enumerate(parts, 1):
                name = batch_name(version, False, part, kernel_file is not None, kind="knockout")
                name += f"_{number}" if len(parts) > 1 else ""
                batches.append(Batch(name, version, False, tuple(part)))
    return distinct_names(batches)
