"""Wiring of the tilelang-churn workflow: the config check, the job grid, wildcard constraints, input functions.

The logic lives in scripts/tilelang_churn/grid/ (config_checks.py, job_grid.py; unit-tested on their own): a bad
config stops Snakemake here, before any job, with a message naming the config key and the bad value.
"""

import gc
import os
import re
from pathlib import Path

from snakemake.logging import logger

# the package tilelang_churn: installed (editable) in the environment that runs Snakemake (make, environment.yml)
import tilelang_churn
from tilelang_churn.batching import batches, job_cost, trace_cache
from tilelang_churn.compat import snakemake_scheduler
from tilelang_churn.core import jobs, trace_modes
from tilelang_churn.grid import config_checks, config_schema, grid_keys, job_grid
from tilelang_churn.kernel import kernels
from tilelang_churn.releases import release_envs, release_process
from tilelang_churn.tables import version_table
from tilelang_churn.gpu import gpu_bench

# Snakemake's modules and ours live as long as the run: frozen, the collections that building the DAG and scheduling
# run skip them (a dry run of config/test_config.yaml: 1.31 -> 1.06 s of CPU)
gc.freeze()

# Rules reach their scripts through this file's own location (not workflow.basedir, the main Snakefile's folder),
# so `-s PATH/Snakefile --directory OTHER` works, and so does this workflow as a module of another project.
PROJECT = Path(str(workflow.current_basedir)).parents[1]
SCRIPTS = str(PROJECT / "scripts")
# An environment whose editable install is another checkout's (a venv shared between worktrees) would plan this
# checkout's jobs with that checkout's package while the jobs' entry files import their own: refused
OWN_PACKAGE = PROJECT / "scripts" / "tilelang_churn"
if OWN_PACKAGE.is_dir() and Path(tilelang_churn.__file__).resolve().parent != OWN_PACKAGE.resolve():
    raise ValueError(
        f"tilelang_churn is imported from {Path(tilelang_churn.__file__).parent}, not from this workflow's "
        f"{OWN_PACKAGE}: install this checkout in the environment (uv pip install --no-deps -e {PROJECT}) "
        f"or put its package first (PYTHONPATH={PROJECT / 'scripts'})"
    )

# Snakemake's scheduler otherwise adds a chain of rounds per finished job (compat/snakemake_scheduler.py)
snakemake_scheduler.install()

# `--config gpu=true job_figures=false` arrives as strings: one rule for every boolean key of the schema
config_schema.coerce_booleans(config, workflow.config_settings.config or {})

try:
    GRID = job_grid.build_grid(config_checks.validate_config(config))
    # --cache with config trace_cache: the cache's folder must be known before a job asks it
    config_checks.check_output_cache(config, workflow.workflow_settings.cache, os.environ.get("SNAKEMAKE_OUTPUT_CACHE"))
except config_checks.ConfigError as error:  # say where the config came from: config files and any --config
    sources = [str(path) for path in workflow.configfiles]
    sources += ["--config"] if workflow.config_settings.config else []
    raise ValueError(f"{error} (config read from {', '.join(sources)})") from None
for warning in GRID.warnings:  # a release the data file does not list: built with the nearest one's pins
    logger.warning(f"warning: {warning}")

# The heatmap shows one mode: trace-env (every pass of tilelang.lower) when configured, else the first.
HEATMAP_MODE = "trace-env" if "trace-env" in GRID.modes else GRID.modes[0]
HEATMAP_JOBS = [job for (_, _, _, mode), job in GRID.jobs.items() if mode == HEATMAP_MODE]
STATIC_CHECK = "results/static/static_check.txt"
RUN_DIR = jobs.RUN_DIR
JOB_PATH = jobs.JOB_PATH
TRACE_LOG = jobs.TRACE_LOG
FIGURE_DIR = "results/figures"
COMPARE_DIR = "results/compare"
RELEASE_ENV_MARKER = f"{GRID.release_env_dir}/tilelang-{{version}}/environment.json"
VERSIONS_TABLE = "results/versions.csv"  # one row per entry of config versions: what it is, what it can do


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
        VERSIONS_TABLE,
        *(per_job(jobs.JOB_FIGURE) if config["job_figures"] else []),
        *get_heatmap_paths(),
        *(get_compare_outputs() if GRID.compares_releases else []),
        *(get_gpu_outputs() if config["gpu"] else []),
        *(get_knockout_outputs() if GRID.knockout else []),
    ]


# The GPU stage (gpu.smk): its joined churn is that of one mode, instrument (every release has it) when configured
GPU_JOIN_MODE = "instrument" if "instrument" in GRID.modes else GRID.modes[0]
GPU_KERNELS = gpu_bench.kernel_names(GRID)


def get_gpu_outputs() -> list:
    tables = ["results/gpu/kernel_speed.csv", "results/gpu/churn_vs_speed.csv"]
    return tables + [f"results/gpu/figures/{kernel}.{ext}" for kernel in GPU_KERNELS for ext in ("png", "svg")]


def get_attribution_inputs() -> dict:
    """--speed and --knockout of compare_releases.py: the GPU stage's latencies and the knockout's GPU columns."""
    if not (config["gpu"] and GRID.compares_releases):
        return {}
    return {
        "speed": "results/gpu/kernel_speed.csv",
        **({"knockout": f"{jobs.KNOCKOUT_DIR}/knockout.csv"} if GRID.knockout else {}),
    }


def get_attribution_outputs() -> dict:
    return {"attribution": f"{COMPARE_DIR}/speed_attribution.csv"} if get_attribution_inputs() else {}


def get_compare_outputs() -> list:
    tables = ("churn_by_version.csv", "pass_alignment.csv", "divergence.csv")
    figures = [f"{stem}.{ext}" for stem in ("release_heatmap", "release_trend") for ext in ("png", "svg")]
    pages = ("index.html", "pages")  # compare_pages: the index and one page per configuration x release pair
    paths = [f"{COMPARE_DIR}/{name}" for name in (*tables, *figures, *pages)]
    return paths + list(get_attribution_outputs().values())


def per_job(pattern: str, grid_jobs=None) -> list:
    """pattern filled for every trace job of the grid (or of GRID_JOBS, some of them), in grid order."""
    return [pattern.format(**job.wildcards) for job in (GRID.jobs.values() if grid_jobs is None else grid_jobs)]


def get_all_passes_csv(wildcards=None) -> list:
    return per_job(f"{RUN_DIR}/passes.csv")


def get_heatmap_paths() -> list:
    return [f"{FIGURE_DIR}/churn_heatmap.{ext}" for ext in config["heatmap_formats"]]
