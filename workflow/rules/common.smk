"""Wiring of the tilelang-churn workflow: the config check, the job grid, wildcard constraints, input functions.

The logic lives in scripts/job_grid.py (unit-tested on its own): a bad config stops Snakemake here, before
any job, with a message naming the config key and the bad value.
"""

import os
import re
import sys
from pathlib import Path

# Rules reach their scripts through the workflow's own location, so `-s PATH/Snakefile --directory OTHER` works.
SCRIPTS = str(Path(workflow.basedir) / "scripts")
sys.path.insert(0, SCRIPTS)
import job_grid  # noqa: E402
import trace_modes  # noqa: E402

try:
    GRID = job_grid.build_grid(job_grid.validate_config(config))
except job_grid.ConfigError as error:  # say where the config came from: config.yaml and any --configfile
    sources = ", ".join(str(path) for path in getattr(workflow, "configfiles", [])) or "--config"
    raise ValueError(f"{error} (config read from {sources})") from None

# The heatmap shows one mode: trace-env (every pass of tilelang.lower) when configured, else the first.
HEATMAP_MODE = "trace-env" if "trace-env" in GRID.modes else GRID.modes[0]
STATIC_CHECK = "results/static/static_check.txt"
RUN_DIR = "results/runs/{target}/{shape}/{mode}"
FIGURE_DIR = "results/figures"


# Jobs run `python3` from PATH: this Snakemake's own venv first, as activating it would (with --sdm conda the
# rule's env comes first). The interpreter's path is no param, so Snakemake from another venv reruns nothing.
envvars:
    "PATH",


INHERITED_PATH = os.environ["PATH"]
os.environ["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), INHERITED_PATH])
TRACE_SCRIPT = f"{SCRIPTS}/gemm_lower_trace.py"


def _alternatives(values) -> str:
    return "|".join(re.escape(value) for value in values)


wildcard_constraints:
    shape=_alternatives(GRID.shapes),
    target=_alternatives(GRID.targets),
    mode=_alternatives(GRID.modes),


def get_final_output() -> list:
    """Everything `snakemake` builds by default."""
    return [
        STATIC_CHECK,
        "results/churn.csv",
        "results/churn_summary.csv",
        *per_job(f"{FIGURE_DIR}/churn/{{target}}/{{shape}}/{{mode}}.png"),
        *get_heatmap_paths(),
    ]


def per_job(pattern: str) -> list:
    """pattern filled for every trace job of the grid, in grid order."""
    return [pattern.format(**job.wildcards) for job in GRID.jobs.values()]


def get_all_passes_csv(wildcards=None) -> list:
    return per_job(f"{RUN_DIR}/passes.csv")


def get_heatmap_paths() -> list:
    return [f"{FIGURE_DIR}/churn_heatmap.{ext}" for ext in config["heatmap_formats"]]


def get_trace_args(wildcards) -> str:
    """The trace script's arguments for this job (shell-quoted), from the grid."""
    return GRID.job(wildcards.target, wildcards.shape, wildcards.mode).command_args
