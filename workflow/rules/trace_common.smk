"""Input functions and resources of the trace batches (trace.smk, plots.smk): data and getters, no rules."""

import math

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger


def get_release_env(version: str):
    """The input function of a batch: its release's environment marker, built by rule release_env (none for the
    installed release). Evaluated as the DAG is built, when Snakemake knows whether this is a dry run: a marker
    whose environment lost its python or holds another TileLang is removed then (release_envs.drop_stale_marker),
    so that rule release_env rebuilds the environment instead of the trace jobs running in it."""

    def release_env_marker(wildcards) -> list:
        if GRID.release_env(version) is None:
            return []
        marker = str(Path(RELEASE_ENV_MARKER.format(version=version)))
        warning = release_envs.drop_stale_marker(marker, version, dry_run=workflow.dryrun)
        if warning:
            logger.warning(warning)
        return [marker]

    return release_env_marker


def batch_paths(batch, pattern: str) -> list:
    """pattern filled for every job of a trace batch."""
    return [pattern.format(**job.wildcards) for job in batch.jobs]


def batch_jobs_param(batch) -> list:
    """The batch rule's params.jobs: (trace arguments, --out folder, log) of each of its jobs."""
    return [(list(job.args), job.run_dir, job.trace_log) for job in batch.jobs]


def workflow_cores() -> int:
    """The cores Snakemake was given; none given: one. Known only when a job's threads are evaluated."""
    try:
        return workflow.cores or 1
    except WorkflowError:  # Snakemake's own words when no --cores was given
        return 1


def batch_threads(wildcards) -> int:
    """An equal share of the cores for each batch (at least one core): the batches run side by side, so one
    batch's import of TileLang (one core, 2-5 s) overlaps another's lowering instead of idling a core, and the
    per-job figures of a finished batch overlap the others. Every core for each batch, one batch after another,
    measured slower on the lent 16-core machine (74.7 s against 45.5 s for the default grid: a batch's children
    scale poorly past a few, and the figures wait for the cores; benchmarks/balance_device.sh). Evaluated per
    job, when the cores are known (--max-threads caps it, e.g. on Slurm); none given: one."""
    cores = workflow_cores()
    return max(1, cores // min(len(GRID.batches), cores))


def batch_runtime(jobs: int, seconds_per_job: float, floor_minutes: int):
    """A batch rule's runtime in minutes for its threads (as the executor sets them, --max-threads included)."""
    return lambda wildcards, threads: floor_minutes + math.ceil(jobs * seconds_per_job / 60 / threads)


# The pass knockout (knockout.smk): its folders, one per configuration x target x release
KNOCKOUT_DIR = job_grid.KNOCKOUT_DIR


def knockout_threads(wildcards) -> int:
    """Every core (--max-threads caps it): a knockout batch forks hundreds of short lowerings."""
    return workflow_cores()


def batch_knockout_paths(batch, name: str) -> list:
    """A file of every configuration of a knockout batch (knockout.csv, knockout.json, sources.json.gz)."""
    return [f"{job_grid.knockout_dir(job)}/{name}" for job in batch.jobs]


def get_knockout_records(wildcards=None) -> list:
    return [path for batch in GRID.knockout_batches for path in batch_knockout_paths(batch, "knockout.json")]


def knockout_figure_paths() -> list:
    """(job, figure) of every knockout configuration."""
    return [
        (job, job_grid.KNOCKOUT_FIGURE.format(**job.wildcards)) for batch in GRID.knockout_batches for job in batch.jobs
    ]


def get_knockout_outputs() -> list:
    figures = [path for _, path in knockout_figure_paths()]
    return [f"{KNOCKOUT_DIR}/knockout.csv", *figures, f"{KNOCKOUT_DIR}/index.html", f"{KNOCKOUT_DIR}/pages"]
