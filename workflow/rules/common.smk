"""Wiring of the tilelang-churn workflow: the config check, the job grid, wildcard constraints, input functions.

The logic lives in scripts/tilelang_churn/lowering/job_grid.py (unit-tested on its own): a bad config stops Snakemake here, before
any job, with a message naming the config key and the bad value.
"""

import json
import math
import os
import re
import sys
from pathlib import Path

from snakemake.logging import logger

# Rules reach their scripts through this file's own location (not workflow.basedir, the main Snakefile's folder),
# so `-s PATH/Snakefile --directory OTHER` works, and so does this workflow as a module of another project.
PROJECT = Path(str(workflow.current_basedir)).parents[1]
SCRIPTS = str(PROJECT / "scripts")
sys.path.insert(0, SCRIPTS)
from tilelang_churn.core import jobs, trace_modes  # noqa: E402
from tilelang_churn.lowering import job_grid, release_envs  # noqa: E402
from tilelang_churn.lowering import gpu_bench  # noqa: E402

# `--config gpu=true job_figures=false` arrives as strings: one rule for every boolean key of the schema
job_grid.coerce_booleans(config, workflow.config_settings.config or {})

try:
    GRID = job_grid.build_grid(job_grid.validate_config(config))
except job_grid.ConfigError as error:  # say where the config came from: config files and any --config
    sources = [str(path) for path in workflow.configfiles]
    sources += ["--config"] if workflow.config_settings.config else []
    raise ValueError(f"{error} (config read from {', '.join(sources)})") from None

# The heatmap shows one mode: trace-env (every pass of tilelang.lower) when configured, else the first.
HEATMAP_MODE = "trace-env" if "trace-env" in GRID.modes else GRID.modes[0]
STATIC_CHECK = "results/static/static_check.txt"
RUN_DIR = jobs.RUN_DIR
JOB_PATH = jobs.JOB_PATH
TRACE_LOG = jobs.TRACE_LOG
FIGURE_DIR = "results/figures"
COMPARE_DIR = "results/compare"
RELEASE_ENV_MARKER = f"{GRID.release_env_dir}/tilelang-{{version}}/environment.json"


# Jobs run `python3` from PATH: this Snakemake's own venv first, as activating it would (with --sdm conda the
# rule's env comes first). The interpreter's path is no param, so Snakemake from another venv reruns nothing.
envvars:
    "PATH",


INHERITED_PATH = os.environ["PATH"]
os.environ["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), INHERITED_PATH])
TRACE_SCRIPT = f"{SCRIPTS}/gemm_lower_trace.py"
REQUIREMENTS = str(PROJECT / "requirements.txt")


def _alternatives(values) -> str:
    return "|".join(re.escape(value) for value in values)


wildcard_constraints:
    version=_alternatives(GRID.versions),
    shape=_alternatives(GRID.configurations),
    target=_alternatives(GRID.targets),
    mode=_alternatives(GRID.modes),


def get_final_output() -> list:
    """Everything `snakemake` builds by default."""
    return [
        STATIC_CHECK,
        # per-job outputs are targets themselves, so a deleted job folder is rebuilt (and the tables with it)
        *per_job(f"{RUN_DIR}/passes.csv"),
        *per_job(f"{RUN_DIR}/run.json"),
        "results/churn.csv",
        "results/churn_summary.csv",
        *(per_job(jobs.JOB_FIGURE) if config["job_figures"] else []),
        *get_heatmap_paths(),
        *(get_compare_outputs() if GRID.compares_releases else []),
        *(get_gpu_outputs() if config["gpu"] else []),
    ]


# The GPU stage (gpu.smk): its joined churn is that of one mode, instrument (every release has it) when configured
GPU_JOIN_MODE = "instrument" if "instrument" in GRID.modes else GRID.modes[0]
GPU_KERNELS = gpu_bench.kernel_names(GRID)


def get_gpu_outputs() -> list:
    tables = ["results/gpu/kernel_speed.csv", "results/gpu/churn_vs_speed.csv"]
    return tables + [f"results/gpu/figures/{kernel}.{ext}" for kernel in GPU_KERNELS for ext in ("png", "svg")]


def gpu_site_args(version: str) -> list:
    """gpu_bench.py's --site of a release: none for the installed release; else the release's GPU site (TileLang
    and its pins without dependencies, put in front of the machine's CUDA torch; rule gpu_release_site)."""
    if GRID.release_env(version) is None:
        return []
    return ["--site", str(Path(GPU_SITE_MARKER.format(version=version)).parent.absolute())]


def gpu_kernel_file(configuration: str) -> list:
    """The user's kernel file of a configuration (an input of its GPU jobs), none for the GEMM or a shipped kernel."""
    config_ = GRID.kernel_configs.get(configuration)
    return [config_.source] if config_ is not None and config_.user_file else []


GPU_SITE_MARKER = f"{GRID.release_env_dir}/gpu/tilelang-{{version}}/gpu_site.json"
GPU_DIR = job_grid.GPU_DIR
GPU_JOB = job_grid.GPU_JOB  # the config check knows the length of each file name it makes
GPU_BENCH = f"{SCRIPTS}/gpu_bench.py"


def gpu_device_arch() -> str:
    """The arch of the GPU the checkpoint found (sm_90)."""
    with open(checkpoints.gpu_device.get().output[0]) as handle:
        return json.load(handle)["gpu_arch"]


def gpu_speed_files(wildcards) -> list:
    """speed.json of every GPU job of the GPU's arch (after the checkpoint ran)."""
    return [
        f"{GPU_DIR}/runs/{version}/{target}/{shape}/speed.json"
        for version, target, shape in gpu_bench.gpu_jobs(GRID, gpu_device_arch())
    ]


GPU_JOBS = gpu_bench.gpu_jobs(GRID)  # every CUDA target's: the rule's params look a job up here


def get_compare_outputs() -> list:
    tables = ("churn_by_version.csv", "pass_alignment.csv", "divergence.csv")
    figures = [f"{stem}.{ext}" for stem in ("release_heatmap", "release_trend") for ext in ("png", "svg")]
    pages = ("index.html", "pages")  # compare_pages: the index and one page per configuration x release pair
    return [f"{COMPARE_DIR}/{name}" for name in (*tables, *figures, *pages)]


def per_job(pattern: str) -> list:
    """pattern filled for every trace job of the grid, in grid order."""
    return [pattern.format(**job.wildcards) for job in GRID.jobs.values()]


def get_all_passes_csv(wildcards=None) -> list:
    return per_job(f"{RUN_DIR}/passes.csv")


def get_heatmap_paths() -> list:
    return [f"{FIGURE_DIR}/churn_heatmap.{ext}" for ext in config["heatmap_formats"]]


def batch_paths(batch, pattern: str) -> list:
    """pattern filled for every job of a trace batch."""
    return [pattern.format(**job.wildcards) for job in batch.jobs]


def batch_jobs_param(batch) -> list:
    """The batch rule's params.jobs: (trace arguments, --out folder, log) of each of its jobs."""
    return [(list(job.args), job.run_dir, job.trace_log) for job in batch.jobs]


def batch_threads(wildcards) -> int:
    """An equal share of the cores for each batch (at least one core): the batches run side by side, so one
    batch's import of TileLang (one core, 2-5 s) overlaps another's lowering instead of idling a core.
    Evaluated per job, when the cores are known (--max-threads caps it, e.g. on Slurm)."""
    cores = workflow._cores or 1
    return max(1, cores // min(len(GRID.batches), cores))


def batch_runtime(jobs: int, seconds_per_job: float, floor_minutes: int):
    """A batch rule's runtime in minutes for its threads (as the executor sets them, --max-threads included)."""
    return lambda wildcards, threads: floor_minutes + math.ceil(jobs * seconds_per_job / 60 / threads)


def get_release_env(version: str):
    """The input function of a batch: its release's environment marker, built by rule release_env (none for the
    installed release). Evaluated as the DAG is built, when Snakemake knows whether this is a dry run: a marker
    whose environment lost its python or holds another TileLang is removed then, so that rule release_env
    rebuilds the environment instead of the trace jobs running in it."""

    def release_env_marker(wildcards) -> list:
        if GRID.release_env(version) is None:
            return []
        marker = Path(RELEASE_ENV_MARKER.format(version=version))
        reason = release_envs.stale_reason(marker) if marker.exists() else None
        if reason and workflow.dryrun:
            logger.warning(f"The environment of TileLang {version} will be rebuilt: {reason}")
        elif reason:
            logger.warning(f"Rebuilding the environment of TileLang {version}: {reason}")
            marker.unlink(missing_ok=True)
        return [str(marker)]

    return release_env_marker
