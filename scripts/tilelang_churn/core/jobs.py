"""The job: one lowering of one kernel configuration by one TileLang release for one target, in one trace mode.

Its spec and its grid face live in core/job_spec.py; here are what both share with the tables: the paths of a
job's folder and files (``RUN_DIR``, ``TRACE_LOG``, ``JOB_FIGURE``, from its wildcard values: release, target,
configuration folder, mode), those of a configuration's GPU job and knockout (``GPU_DIR``, ``KNOCKOUT_RUN_DIR``,
...) and, in a table, the rows that share its key (``JOB_KEY``: release, the parameter columns, kernel, params,
target name, mode and the version entry's name, ``version_name``); ``group_rows`` is the one way rows become jobs,
and ``config_label`` the one name of a configuration (a job less its version). ``version_name``, ``version_order``
and ``version_label`` are a row's version entry: what tells it apart, where it sorts, how a title names it.
Standard library only.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from tilelang_churn.core import pass_configs, passes_table, releases

JOB_PATH = "{version}/{target}/{shape}/{mode}"  # shape: the configuration's folder (a config shape, a kernel's params)
RUN_DIR = f"results/runs/{JOB_PATH}"  # passes.csv, run.json, ir.json.gz, TileLang's own trace
TRACE_LOG = f"logs/trace/{JOB_PATH}.log"
# The longest time limit a job may be given (config job_timeout_s, knockout.timeout_s; the schema's maximum): a week,
# far past any lowering, and within what the batches' timers (select, SIGALRM, time_t) can wait
LONGEST_TIMEOUT_S = 7 * 24 * 3600
JOB_FIGURE = f"results/figures/churn/{JOB_PATH}.png"
# the GPU stage's files of a configuration (workflow/rules/gpu.smk)
GPU_DIR = "results/gpu"
GPU_JOB = "{version}/{target}/{shape}"
# the pass knockout's files of a configuration (workflow/rules/knockout.smk)
KNOCKOUT_DIR = "results/knockout"
KNOCKOUT_JOB = "{version}/{target}/{shape}"
KNOCKOUT_RUN_DIR = f"{KNOCKOUT_DIR}/runs/{KNOCKOUT_JOB}"
KNOCKOUT_LOG = f"logs/knockout/{KNOCKOUT_JOB}.log"
KNOCKOUT_FIGURE = f"{KNOCKOUT_DIR}/figures/{KNOCKOUT_JOB}.png"

# A job is told apart by its provenance: target_name names the target dict and mode fixes the source;
# kernel_label is derived from kernel and params. Its version is its version entry: version_name (two entries may
# import the same tilelang_version: a release and an environment of it).
VERSION_COLUMNS = ("tilelang_version", "version_name")
JOB_KEY = [c for c in passes_table.PROVENANCE_COLUMNS if c not in ("target", "source", "kernel_label")]
CONFIG_KEY = [c for c in JOB_KEY if c not in VERSION_COLUMNS]
_INT_KEY = frozenset(JOB_KEY) & frozenset(passes_table.INT_COLUMNS)
# a key column that a row may lack (written before it): read as another column of the row (passes_table.ADDED_FROM)
_KEY_FROM = {column: source for column, source in passes_table.ADDED_FROM.items() if column in JOB_KEY}
# a key column that a row may lack, read as the value a table written before it holds (passes_table.ADDED_COLUMNS)
_KEY_DEFAULT = {column: value for column, value in passes_table.ADDED_COLUMNS.items() if column in JOB_KEY and value}


def _key_value(column: str, value):
    """A key cell as a plain int or str; None for a missing value (None, NaN, pandas' NA)."""
    if value is None:
        return None
    try:
        if value != value:  # NaN
            return None
    except TypeError:  # pandas' NA has no truth value
        return None
    return int(value) if column in _INT_KEY else str(value)


def _key_cell(row: Mapping, column: str):
    """A key cell of a row; a column added since that the row lacks or leaves empty is read as its source column
    (version_name: tilelang_version) or as its default (device: none)."""
    try:
        value = _key_value(column, row[column])
    except KeyError:
        value = None
    if value in (None, "") and column in _KEY_FROM:
        return _key_value(column, row[_KEY_FROM[column]])
    if value in (None, "") and column in _KEY_DEFAULT:
        return _KEY_DEFAULT[column]
    return value


def job_key(row: Mapping) -> tuple:
    """The job key of a row (a dict, or a pandas row), in JOB_KEY order."""
    return tuple(_key_cell(row, column) for column in JOB_KEY)


def config_key(row: Mapping) -> tuple:
    """The configuration key (CONFIG_KEY order) of a row: its job key without the version."""
    return tuple(_key_cell(row, column) for column in CONFIG_KEY)


def config_of_job(key: tuple) -> tuple:
    """The configuration key of a job key (the job key less its version columns)."""
    return tuple(value for column, value in zip(JOB_KEY, key) if column not in VERSION_COLUMNS)


def version_name(row: Mapping) -> str:
    """The name of a row's version entry (config ``versions``): its ``version_name``, else (a table written before the
    column, a row that leaves it empty) its ``tilelang_version``; "" when neither is known."""
    return _key_cell(row, "version_name") or ""


def version_order(row: Mapping) -> tuple:
    """Sort key of a row's version: the TileLang version it imported in release order, then its name
    (releases.version_sort_key)."""
    return releases.version_sort_key(_key_value("", row["tilelang_version"]) or "", version_name(row))


def version_label(row: Mapping) -> str:
    """A row's version as a title names it: its name, with the TileLang version it imported where that is not the
    name itself (``my-branch (0.1.15+test)``, ``dev (0.1.14)``); a release is its version (``0.1.14``)."""
    name, imported = version_name(row), _key_value("", row["tilelang_version"]) or ""
    if not imported or name in (imported, releases.base_version(imported)):
        return releases.release_text(name)
    return f"{releases.release_text(name)} ({imported})"


def is_release(name: str, tilelang_version: str) -> bool:
    """Whether a version entry is a TileLang release (it has a tag on GitHub): its name is the release of the
    version it imported (0.1.14 importing 0.1.14 or 0.1.14+cu128); a wheel's or an environment's name is not, nor a
    local build's own version (0.1.15+test)."""
    return bool(name) and name == releases.base_version(tilelang_version)


def fills_param_columns(row: Mapping) -> bool:
    """Whether a job's row fills every parameter column (passes_table.PARAM_COLUMNS): its kernel's file declares
    them all (kernel/kernels.py COLUMNS), as the book's GEMM's does; such a configuration is named by them."""
    return not any(_is_empty(row.get(column)) for column in passes_table.PARAM_COLUMNS)


def _is_empty(value) -> bool:
    """A missing cell: None, NaN, pandas' NA, or the empty string of a table read as text."""
    return _key_value("", value) in (None, "")


def config_label(row: Mapping) -> str:
    """A configuration's one-line name: ``target MxNxK bBMxBNxBK dtype/accum tTHREADS sSTAGES [PASS CONFIGS] mode``
    for a kernel that fills the parameter columns (the pass configs only when set), ``target KERNEL_LABEL mode``
    for another (its label names its pass configs)."""
    if not fills_param_columns(row):
        return f"{row['target_name']} {row['kernel_label']} {row['mode']}"
    return (
        f"{row['target_name']} {row['M']}x{row['N']}x{row['K']} "
        f"b{row['block_M']}x{row['block_N']}x{row['block_K']} {row['dtype']}/{row['accum_dtype']} "
        f"t{row['threads']} s{row['stages']}{_pass_config_label(row)} {row['mode']}"
    )


def distinct_config_labels(first_rows: Mapping[tuple, Mapping]) -> dict[tuple, str]:
    """{configuration key: its label} for a row of each configuration: config_label, with the kernel's name after
    the target in every label named by the parameter columns when more than one kernel of the table fills them
    (a kernel of the user's declaring the GEMM's COLUMNS), so that no two configurations share a name, or a page."""
    labels = {key: config_label(row) for key, row in first_rows.items()}
    by_columns = {key: row for key, row in first_rows.items() if fills_param_columns(row)}
    if len({row.get("kernel") for row in by_columns.values()}) > 1:
        for key, row in by_columns.items():
            target, rest = labels[key].split(" ", 1)
            labels[key] = f"{target} {row['kernel']} {rest}"
    return labels


def _pass_config_label(row: Mapping) -> str:
    return pass_configs.label(json.loads(row["pass_configs"]))


def group_rows(rows: Iterable[Mapping]) -> dict[tuple, list]:
    """{job key: its rows in step order}, jobs in order of first appearance."""
    grouped: dict[tuple, list] = {}
    for row in rows:
        grouped.setdefault(job_key(row), []).append(row)
    return {key: sorted(job, key=lambda r: r["step"]) for key, job in grouped.items()}
