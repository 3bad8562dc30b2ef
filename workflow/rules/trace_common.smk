"""Input functions and resources of the trace batches (trace.smk, plots.smk): data and getters, no rules."""

import functools
import math

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger


def release_env_markers(wildcards=None) -> dict:
    """{version: its environment marker} of every version whose environment rule release_env builds."""
    return {version: RELEASE_ENV_MARKER.format(version=version) for version in GRID.versions
            if GRID.builds_environment(version)}  # fmt: skip


def release_env_args(wildcards) -> list:
    """The build's arguments beyond the release (each quoted by the rule): a wheel's file, pins given in the config."""
    entry = GRID.entries[wildcards.version]
    args = []
    if entry.kind == "wheel":  # the sha256 checked here: a wheel switched since is refused, not installed unrecorded
        args = ["--wheel", str(Path(entry.wheel).absolute()), "--wheel-sha256", entry.wheel_sha256]
    if entry.kind == "wheel" and entry.pins_from is None:
        args += [arg for pin in entry.pins for arg in ("--pin", pin.requirement)]
    return args


def get_release_env(version: str):
    """The input function of a batch: its release's environment marker, built by rule release_env (none for the
    installed release). Evaluated as the DAG is built, when Snakemake knows whether this is a dry run: a marker
    whose environment lost its python or holds another TileLang is removed then (release_envs.drop_stale_marker),
    so that rule release_env rebuilds the environment instead of the trace jobs running in it."""

    def release_env_marker(wildcards) -> list:
        if not GRID.builds_environment(version):  # the installed release, an environment entry
            return []
        marker = str(Path(RELEASE_ENV_MARKER.format(version=version)))
        wheel_sha256 = GRID.entries[version].wheel_sha256
        warning = release_envs.drop_stale_marker(marker, version, dry_run=workflow.dryrun, wheel_sha256=wheel_sha256)
        if warning:
            logger.warning(warning)
        return [marker]

    return release_env_marker


def batch_paths(batch, pattern: str) -> list:
    """pattern filled for every job of a trace batch."""
    return [pattern.format(**job.wildcards) for job in batch.jobs]


TRACE_BATCHES = {batch.name: batch for batch in GRID.batches}  # rule name -> its batch


@functools.cache
def batch_seconds(name: str) -> float:
    """A batch's seconds: as its jobs' run.json of an earlier run recorded them where present, else as expected
    (batches.learned_seconds; batching/job_cost.py); read once, for its priority and its share of the cores. A job on
    a cluster node (remote execution) parses the Snakefile again but schedules nothing, so it takes the expected
    seconds instead of reading every job's record."""
    batch = TRACE_BATCHES[name]
    if workflow.remote_exec:
        return batch.expected_seconds
    return batches.learned_seconds(batch, batch_paths(batch, f"{RUN_DIR}/run.json"))


def batch_priority(batch) -> int:
    """The longest first: its seconds (batch_seconds)."""
    return round(batch_seconds(batch.name))


def relative_to_workdir(path: str) -> str:
    """PATH relative to the working directory when it lies inside it, else as given."""
    resolved = Path(path).resolve()
    return str(resolved.relative_to(Path.cwd())) if resolved.is_relative_to(Path.cwd()) else path


def trace_cached(batch) -> bool:
    """Whether a batch is eligible for Snakemake's between-workflow cache: config trace_cache is on and its
    release is one of the release data (config/tilelang_releases.yaml), not a TileLang built locally."""
    return bool(config["trace_cache"]) and batch.version in released_versions()


@functools.cache
def released_versions() -> frozenset:
    return frozenset(release_envs.load_releases())


@functools.cache
def tracing_code_digest() -> str:
    """The sha256 of the tracing code (the package and the entry scripts) and the release data (its pins): read
    once for all batches (trace_cache.code_digest)."""
    return trace_cache.code_digest(SCRIPTS, release_envs.RELEASES_FILE)


TRACE_CACHE_DIR = "results/trace_cache"  # a cached batch's archive: its jobs' files as one output


def trace_archive_path(batch) -> str:
    return f"{TRACE_CACHE_DIR}/{batch.version}/{batch.name}.tar"


def batch_inputs(batch) -> dict:
    return {
        "release_env": get_release_env(batch.version),
        # a user's kernel file: editing it retraces its batches (its jobs only: batches.make_batches)
        "kernel_files": batch.kernel_files,
    }


def batch_logs(batch) -> dict:
    return {"batch": f"logs/trace/{batch.version}/{batch.name}.log", "jobs": batch_paths(batch, TRACE_LOG)}


def batch_params(batch) -> dict:
    params = {
        "jobs": batch_jobs_param(batch),
        "release_env": GRID.release_env(batch.version) or "",
        # a wheel's sha256, an environment's TileLang version, commit and sources: a change retraces this version
        **({"identity": GRID.entries[batch.version].identity} if GRID.entries[batch.version].identity else {}),
        # statuses accepted besides 0: 1 (a recorded pass failure), or none
        "tolerate": [] if config["fail_on_pass_error"] else [1],
    }
    if batch.kernel_files:
        # a user's kernel file by content too: an edit keeping an older mtime (cp -p, rsync -t, tar x) retraces
        # its batches; none for the other batches, whose params stay as they were
        params["kernel_sha256"] = kernels.file_digests(batch.kernel_files)
    return params


def trace_cache_key(batch) -> dict:
    """What decides a cached batch's files besides its jobs' arguments (in the key as params): the release, the
    tracing code (the package and the entry scripts), the release data (its pins), every kernel file traced
    (trace_cache.cache_key)."""
    return trace_cache.cache_key(batch, tracing_code_digest())


def batch_jobs_param(batch) -> list:
    """The batch rule's params.jobs: (trace arguments, --out folder, log) of each of its jobs."""
    return [(list(job.args), job.run_dir, job.trace_log) for job in batch.jobs]


def workflow_cores() -> int:
    """The cores Snakemake was given; none given: one. Known only when a job's threads are evaluated."""
    try:
        return workflow.cores or 1
    except WorkflowError:  # Snakemake's own words when no --cores was given
        return 1


def rules_to_run(names: list) -> list:
    """Those of the rules NAMES that have a job this run runs: known once the DAG is built, which it is when a
    job's threads are evaluated; before that, all of them."""
    dag = workflow.dag
    if dag is None:
        return names
    running = {job.rule.name for job in dag.needrun_jobs(exclude_finished=False)}
    return [name for name in names if name in running] or names


@functools.cache
def cores_of_batches(cores: int) -> dict:
    """Threads of each trace batch this run runs, the cores shared by their seconds (job_cost.share_cores): the
    batches run side by side, so one batch's import of TileLang (one core, 2-5 s) overlaps another's lowering,
    and the batch expected to end last gets the spare cores, up to one per lowering it forks (Batch.children).
    Batches that run again share every core among them (an edited kernel's, an added release's), not the cores
    the whole grid would give them. Every core for each batch, one batch after another, measured slower on the
    lent 16-core machine (74.7 s against 45.5 s for the default grid: a batch's children scale poorly past a few,
    and the figures wait for the cores; benchmarks/balance_device.sh)."""
    running = rules_to_run(list(TRACE_BATCHES))
    seconds = {name: batch_seconds(name) for name in running}
    return job_cost.share_cores(seconds, {name: TRACE_BATCHES[name].children for name in running}, cores)


def batch_threads(batch):
    """A trace batch's threads (cores_of_batches). Evaluated per job, when the cores are known (--max-threads
    caps it, e.g. on Slurm); none given: one."""
    return lambda wildcards: cores_of_batches(workflow_cores()).get(batch.name, 1)


@functools.cache
def cores_of_figures(cores: int) -> int:
    """An equal share of the cores for each batch's per-job figures that this run draws, at least one core."""
    drawn = rules_to_run([f"plot_job_churn_{name}" for name in TRACE_BATCHES])
    return max(1, cores // min(len(drawn), cores))


def figure_threads(wildcards) -> int:
    """A per-job figure rule's threads (cores_of_figures), evaluated per job as batch_threads."""
    return cores_of_figures(workflow_cores())


def batch_runtime(jobs: int, seconds_per_job: float, floor_minutes: int):
    """A batch rule's runtime in minutes for its threads (as the executor sets them, --max-threads included)."""
    return lambda wildcards, threads: floor_minutes + math.ceil(jobs * seconds_per_job / 60 / threads)


# The pass knockout (knockout.smk): its folders, one per configuration x target x release
KNOCKOUT_DIR = jobs.KNOCKOUT_DIR


def knockout_threads(wildcards) -> int:
    """Every core (--max-threads caps it): a knockout batch forks hundreds of short lowerings."""
    return workflow_cores()


def batch_knockout_paths(batch, name: str) -> list:
    """A file of every configuration of a knockout batch (knockout.csv, knockout.json, sources.json.gz)."""
    return [f"{grid_keys.knockout_dir(job)}/{name}" for job in batch.jobs]


def get_knockout_records(wildcards=None) -> list:
    return [path for batch in GRID.knockout_batches for path in batch_knockout_paths(batch, "knockout.json")]


def get_knockout_tables(wildcards=None) -> list:
    """The knockout.csv beside each knockout.json: the readers read both, so both are their inputs (deleting a
    table, as a reader's refusal advises, reruns its batch)."""
    return [path for batch in GRID.knockout_batches for path in batch_knockout_paths(batch, "knockout.csv")]


def knockout_figure_paths() -> list:
    """(job, figure) of every knockout configuration."""
    return [
        (job, jobs.KNOCKOUT_FIGURE.format(**job.wildcards)) for batch in GRID.knockout_batches for job in batch.jobs
    ]


def get_knockout_outputs() -> list:
    """The knockout's outputs that the run wants, each configuration's own files among them: Snakemake remakes a
    missing file only when something wants it, so a deleted table (as a reader's refusal advises) reruns its batch
    and then its readers."""
    figures = [path for _, path in knockout_figure_paths()]
    own = [*get_knockout_records(), *get_knockout_tables()]
    own += [path for batch in GRID.knockout_batches for path in batch_knockout_paths(batch, "sources.json.gz")]
    return [f"{KNOCKOUT_DIR}/knockout.csv", *figures, f"{KNOCKOUT_DIR}/index.html", f"{KNOCKOUT_DIR}/pages", *own]
