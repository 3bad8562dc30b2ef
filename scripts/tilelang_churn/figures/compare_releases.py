"""Compare the lowering of the same GEMM configurations across TileLang releases.

Usage::

    python scripts/compare_releases.py --out-dir results/compare [--heatmap-config LABEL] \\
        [--formats png,svg] PASSES_CSV [PASSES_CSV ...]

Each PASSES_CSV is one job's ``passes.csv`` (read with ``passes_table``'s reader); the job's IR archive
is looked for next to it, as ``<same folder>/ir.json.gz``. A file holding several jobs (``churn.csv``) is
accepted too; its jobs then have no archive and ``divergence.csv`` says so. The command writes, under
``--out-dir``: ``churn_by_version.csv``, ``pass_alignment.csv``, ``divergence.csv``,
``release_heatmap.<fmt>`` and ``release_trend.<fmt>`` for every ``--formats`` entry (default png,svg).
Exit status 0 on success, 1 on a bad input (one line on stderr naming the file or the label), 2 on bad
arguments.

From Python (e.g. a Snakemake ``script:`` shim)::

    churn, archives = read_jobs(paths)              # DataFrame + {job key tuple: archive path}
    by_version = churn_by_version(churn, archives)
    alignment = pass_alignment(churn)
    diverging = divergence(churn, archives)
    plot_release_heatmap(churn, ["h.png", "h.svg"], configuration=None)
    plot_release_trend(by_version, alignment, ["t.png", "t.svg"])
    write_all(churn, archives, out_dir)             # everything the CLI writes
    build(paths, out_dir)                           # read + write_all, errors as exit status 1 (shims)

Terms
-----

- job key: ``passes_table.JOB_KEY`` (tilelang_version, target_name, M, N, K, block_M, block_N, block_K,
  dtype, accum_dtype, threads, stages, mode) as a tuple of Python ints and strings (``job_key()``).
- configuration: the job key without ``tilelang_version`` (``CONFIG_KEY``). Its label (column
  ``configuration``, the value of ``--heatmap-config``) is ``config_label()``, e.g.
  ``cuda-sm90 1024x1024x1024 b128x128x32 float16/float32 t128 s3 trace-env``.
- release: a ``tilelang_version``. Releases are ordered by ``release_sort_key``: PEP 440 order through
  ``packaging.version.Version`` when importable (0.1.7 < 0.1.7.post3 < 0.1.8rc1 < 0.1.8 < 0.1.10), else a
  small parser giving the same order for release/pre/post/dev versions; an unparsable or empty version
  (TileLang could not be imported) sorts last, by its text.
- pass run: a row whose status is ``changed``, ``noop`` or ``failed`` (the pass that raised, or the
  ``setup``/``lower`` stage of a failure outside any pass). ``codegen`` rows (TIR -> source, never churn)
  and an ``unsupported`` row (a mode the release lacks; one row, no counts) are not pass runs.
- consecutive releases: for one configuration, neighbours in release order among the releases that have
  a job for that configuration (an unsupported job is a job: its neighbours are paired with it).

Tables (written atomically, rows in a fixed order: configurations sorted by their key values, ints
numerically; releases in release order; alignment rows in alignment order). Empty cells are missing
values; booleans are ``True``/``False``.

``churn_by_version.csv`` (``BY_VERSION_COLUMNS``), one row per configuration x release with a job:

- configuration, target_name, M, N, K, block_M, block_N, block_K, dtype, accum_dtype, threads, stages,
  mode, kernel, params: the configuration (label, then key columns; the GEMM's empty for another kernel).
- tilelang_version: the release. source: the tool that counted added/deleted (from the job's first row).
- pass_runs: pass runs of the job (rows other than codegen and unsupported).
- changed_runs: rows with status changed.
- added_total, deleted_total, churn_total: sums of added, deleted, added+deleted over changed/noop rows.
- added_stripped_total, deleted_stripped_total, churn_stripped_total: the same over passes.csv's
  added_stripped/deleted_stripped (lines compared without leading and trailing whitespace); empty when a
  churn row has no such count.
- seconds_total: sum of the ``seconds`` column over pass runs; empty when the table has no ``seconds``
  column or the job no value.
- (these five counts and seconds_total are empty for an unsupported job: nothing ran, which is not 0)
- failed: the job has a failed row. unsupported: the job has an unsupported row.
- first_error: error text of the job's first (by step) failed or unsupported row; empty otherwise.
- generated_source_lines: lines of the generated kernel source: from a ``generated_source_lines`` (or
  ``kernel_source_lines``) column when the table has one, else ``len(kernel_source.splitlines())`` of the
  job's IR archive; empty when unknown or when lowering produced no source.

``pass_alignment.csv`` (``ALIGNMENT_COLUMNS``), per configuration and pair of consecutive releases, one
row per aligned pass run:

- configuration columns as above; release_old, release_new.
- position: 0, 1, ... along the alignment of the pair (execution order of both releases).
- op: ``kept`` (the same pass name, paired), ``removed`` (runs in release_old only) or ``added`` (runs in
  release_new only).
- step_old, pass_old, status_old, changed_old, added_old, deleted_old: the old run (empty for added);
  step_new, pass_new, status_new, changed_new, added_new, deleted_new: the new run (empty for removed).
- churn_delta: (added_new + deleted_new) - (added_old + deleted_old) of a kept row where both runs have
  counts; empty otherwise (added/removed rows, failed runs).

A pair in which neither release has a pass run (e.g. both unsupported) has no alignment row; its
``divergence.csv`` row is still written.

Alignment (``align_passes``): a global alignment over the pass-name lists that pairs only equal names (a
changed name is a removal plus an addition, never a silent substitution), and chooses, in this order:
(1) the most kept pairs (a longest common subsequence, so the added/removed rows are a minimal edit
script); (2) among those, the fewest runs of consecutive added or removed rows (an affine gap cost,
Gotoh's three-state Needleman-Wunsch: a pass is usually inserted together with its Simplify, so gaps are
grouped); (3) on a remaining tie, the earliest pairing, and removed rows before added rows in a region
that has both. Both sides keep execution order. It is exact dynamic programming, O(3 n m) with n, m the
pass runs of the two jobs (about 90 in trace-env). ``difflib.SequenceMatcher`` (even with
``autojunk=False``, needed since ``Simplify`` is a frequent element that autojunk would drop) was not
used: it anchors on the longest contiguous block first and recurses around it, so a block of repeated
names such as ``Simplify, LowerTileOp, Simplify`` that moved can make it miss many pairs that a
maximum alignment keeps (a test shows such a case), and its ``replace`` blocks would need splitting.

``divergence.csv`` (``DIVERGENCE_COLUMNS``), one row per configuration and pair of consecutive releases:

- configuration columns; release_old, release_new.
- kept_runs, removed_runs, added_runs: rows of each op in ``pass_alignment.csv`` for the pair.
- initial_ir_differs: the normalised printed IR before the first pass differs.
- first_divergent_step_old, first_divergent_step_new, first_divergent_pass: the first kept aligned pass
  run after which the normalised printed IR differs (or that failed on one side only); empty when none.
- final_ir_differs: the normalised IR after the last pass run that produced IR differs.
- ir_identical_throughout: initial IR, IR after every kept pass run and final IR all equal (after
  normalisation), with every kept run found in both archives.
- source_differs: the generated kernel source differs (trailing whitespace ignored); True when only one
  side has a source; empty when neither has one.
- note: ``; ``-separated facts: a missing or unreadable archive (the IR columns are then empty), a pass
  that failed, added/removed runs just before the first divergence, texts that differ only in the
  normalised noise, an archive that lacks a step.

Normalisation of printed IR (``normalize_ir``), and nothing else:

1. trailing whitespace of every line is removed, and line endings unified (``str.splitlines``): TVMScript
   is only sensitive to leading indentation; trailing blanks are printer artefacts;
2. the import prelude that ``IRModule.script()`` puts above the module, lines such as
   ``# from tvm.script import ir as I`` / ``# from tvm.script import tirx as T`` (with or without the
   ``#``) at the top of the text, is removed: they are comments naming the Python modules the ``I.``/``T.``
   aliases come from, carry no IR, and their module name changed between TVM builds (``tir`` ->
   ``tirx``), which would otherwise mark every pass of a release pair as divergent;
3. blank lines at the start and the end of the text are removed.

Everything else is compared verbatim: a changed spelling in the body (``T.block`` -> ``T.sblock``) is a
real difference of the printed IR and shows as ``initial_ir_differs``.

IR archive (one per job, gzip JSON written by the IR-archive module)::

    {"format": 1, "initial": int | None, "steps": [{"step": int, "pass": str, "after": int | None}],
     "texts": [str, ...], "kernel_source": str | None}

``initial``/``after`` index ``texts``; ``after`` is None for a pass run that failed. Steps are matched to
pass runs by ``step``, and the archived ``pass`` must equal passes.csv's ``pass`` of that step (else the
note says so and the comparison stops there); a failed run without an archived step (a failure outside
any pass) counts as a step without IR.

Figures (matplotlib Agg; byte-identical on reruns: no dates or software tags in the metadata, fixed
``svg.hashsalt``):

- ``release_heatmap``: for one configuration (``--heatmap-config``; default: the one with pass runs in the
  most releases, then a trace-env one, then key order), pass runs (rows, the union alignment: each
  release is aligned with ``align_passes`` to the rows of all earlier releases, so a pass that disappears
  and comes back keeps its row) x releases (columns: every release of the table). A cell is added+deleted; 0 is pale;
  absent is hatched grey; failed is a red x; an unsupported release, a release without a job for the
  configuration, and a release that shares no pass run with any other are labelled as such.
- ``release_trend``: pass runs (top) and churn_total (bottom) per release, one column of panels per mode
  (counts of different modes come from different tools), one line per configuration. Failed jobs are red
  x marks, unsupported jobs hollow grey squares at 0; a dotted segment joins consecutive releases that
  share no pass run; releases where every job of the mode is missing, unsupported or failed are labelled.

Text churn is a clue to locate, not proof of a semantic or performance change.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import matplotlib.colors as mcolors  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker as mticker  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch, Rectangle  # noqa: E402

from tilelang_churn.core import passes_table as pt  # noqa: E402
from tilelang_churn.figures import (
    figure_style as fs,  # the one style of every figure: fonts, colours, DPI, saving (sets the Agg backend)
)

try:  # PEP 440 ordering when available; the fallback parser gives the same order for usual versions
    from packaging.version import InvalidVersion, Version
except ImportError:  # pragma: no cover - exercised by a test through _HAVE_PACKAGING
    Version = None
    InvalidVersion = ValueError
_HAVE_PACKAGING = Version is not None

# passes_table is being reworked: take its names where it has them, with the documented values as fallback
JOB_KEY = list(
    getattr(pt, "JOB_KEY", None) or [column for column in pt.PROVENANCE_COLUMNS if column not in ("target", "source")]
)
CONFIG_KEY = [column for column in JOB_KEY if column != "tilelang_version"]
_INT_KEY = [column for column in JOB_KEY if column in pt.INT_COLUMNS]

FAILED = getattr(pt, "STATUS_FAILED", "failed")
CODEGEN = getattr(pt, "STATUS_CODEGEN", "codegen")
CHANGED = getattr(pt, "STATUS_CHANGED", "changed")
UNSUPPORTED = getattr(pt, "STATUS_UNSUPPORTED", "unsupported")
CHURN_STATUSES = tuple(pt.CHURN_STATUSES)
PASS_RUN_STATUSES = CHURN_STATUSES + (FAILED,)
SECONDS_COLUMN = getattr(pt, "SECONDS_COLUMN", "seconds")
SOURCE_LINES_COLUMNS = ("generated_source_lines", "kernel_source_lines")
ARCHIVE_NAME = "ir.json.gz"
ARCHIVE_FORMAT = 1

# the integer counts of churn_by_version.csv (nullable: empty for an unsupported job)
BY_VERSION_COUNTS = [
    "pass_runs",
    "changed_runs",
    "added_total",
    "deleted_total",
    "churn_total",
    "added_stripped_total",
    "deleted_stripped_total",
    "churn_stripped_total",
]
BY_VERSION_COLUMNS = [
    "configuration",
    *CONFIG_KEY,
    "tilelang_version",
    "source",
    *BY_VERSION_COUNTS,
    "seconds_total",
    "failed",
    "first_error",
    "unsupported",
    "generated_source_lines",
]
ALIGNMENT_COLUMNS = [
    "configuration",
    *CONFIG_KEY,
    "release_old",
    "release_new",
    "position",
    "op",
    "step_old",
    "pass_old",
    "status_old",
    "step_new",
    "pass_new",
    "status_new",
    "changed_old",
    "changed_new",
    "added_old",
    "deleted_old",
    "added_new",
    "deleted_new",
    "churn_delta",
]
DIVERGENCE_COLUMNS = [
    "configuration",
    *CONFIG_KEY,
    "release_old",
    "release_new",
    "kept_runs",
    "removed_runs",
    "added_runs",
    "initial_ir_differs",
    "first_divergent_step_old",
    "first_divergent_step_new",
    "first_divergent_pass",
    "final_ir_differs",
    "ir_identical_throughout",
    "source_differs",
    "note",
]
OUTPUT_TABLES = ("churn_by_version.csv", "pass_alignment.csv", "divergence.csv")
FIGURE_STEMS = ("release_heatmap", "release_trend")

KEPT, ADDED, REMOVED = "kept", "added", "removed"

DPI = fs.SCREEN_DPI
ZERO_COLOR = fs.ZERO_COLOR  # the palette of figure_style, shared with plot_churn
ABSENT_COLOR = fs.ABSENT_COLOR
ABSENT_EDGE = fs.ABSENT_EDGE
FAILED_COLOR = fs.FAILED_COLOR
FAILED_FILL = fs.FAILED_FILL
UNSUPPORTED_FILL = fs.UNSUPPORTED_FILL
UNSUPPORTED_EDGE = fs.UNSUPPORTED_EDGE
NO_JOB_FILL = "#ffffff"
UNKNOWN_RELEASE = "(unknown)"
_SAVE_METADATA = fs.SAVE_METADATA  # no date and no software tags: reruns write identical bytes
_RC = fs.rc("en", hashsalt="tilelang-churn/compare_releases")


# ------------------------------------------------------------------------------------------- releases


def release_sort_key(version: str) -> tuple:
    """Sort key of a tilelang_version: release order, unparsable or empty versions last (by text)."""
    text = str(version).strip()
    if _HAVE_PACKAGING:
        try:
            return (0, Version(text), text)
        except InvalidVersion:
            return (1, text)
    parsed = _fallback_version(text)
    return (0, parsed, text) if parsed is not None else (1, text)


_VERSION_RE = re.compile(
    r"^v?(?P<release>\d+(?:\.\d+)*)"
    r"(?:[-_.]?(?P<pre>a|b|rc|alpha|beta|c)[-_.]?(?P<pre_n>\d*))?"
    r"(?:[-_.]?(?:post|rev|r)[-_.]?(?P<post>\d*))?"
    r"(?:[-_.]?dev[-_.]?(?P<dev>\d*))?"
    r"(?:\+[a-z0-9.]*)?$",
    re.IGNORECASE,
)
_PRE_RANK = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2}


def _fallback_version(text: str) -> tuple | None:
    """PEP 440-like order without packaging: release ints (trailing zeros dropped), then dev < pre < final
    < post. 0.1.7 < 0.1.7.post3 < 0.1.8.dev1 < 0.1.8rc1 < 0.1.8."""
    match = _VERSION_RE.match(text)
    if not match:
        return None
    release = [int(part) for part in match["release"].split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    # one tuple per phase so that tuples of different phases never compare element types they do not share
    if match["pre"] is not None:
        pre = (_PRE_RANK[match["pre"].lower()], int(match["pre_n"] or 0))
    elif match["dev"] is not None and match["post"] is None:
        pre = (-1, 0)  # 0.1.8.dev1 precedes 0.1.8a1
    else:
        pre = (3, 0)
    post = int(match["post"] or 0) if match["post"] is not None else -1
    dev = int(match["dev"] or 0) if match["dev"] is not None else float("inf")
    return (tuple(release), pre, post, dev)


def sort_releases(versions: Iterable[str]) -> list[str]:
    """Distinct versions in release order."""
    return sorted(set(versions), key=release_sort_key)


def _release_text(version: str) -> str:
    return version if version else UNKNOWN_RELEASE


# ------------------------------------------------------------------------------------------ jobs, keys


def job_key(row: Mapping) -> tuple:
    """The job key of a row (dict or Series) as a tuple of Python ints and strings, in JOB_KEY order."""
    return tuple(_key_value(column, row[column]) for column in JOB_KEY)


def config_key(row: Mapping) -> tuple:
    """The configuration key (CONFIG_KEY order) of a row."""
    return tuple(_key_value(column, row[column]) for column in CONFIG_KEY)


def config_label(row: Mapping) -> str:
    """``target MxNxK bBMxBNxBK dtype/accum tTHREADS sSTAGES mode`` for the GEMM, ``target LABEL mode`` for another
    kernel (its configuration label): the configuration's one-line name."""
    if row.get("kernel", "gemm") != "gemm":
        return f"{row['target_name']} {row['kernel_label']} {row['mode']}"
    return (
        f"{row['target_name']} {row['M']}x{row['N']}x{row['K']} "
        f"b{row['block_M']}x{row['block_N']}x{row['block_K']} {row['dtype']}/{row['accum_dtype']} "
        f"t{row['threads']} s{row['stages']} {row['mode']}"
    )


def _key_value(column: str, value):
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return None
    if column in _INT_KEY:
        return int(value)
    return str(value)


def _sortable(key: tuple) -> tuple:
    """Key values made comparable: None first, then ints numerically and strings lexicographically."""
    return tuple((0, 0, "") if v is None else (1, v, "") if isinstance(v, int) else (2, 0, v) for v in key)


@dataclass
class Job:
    """One job of the table: its key, its rows (by step) and its pass runs (by step)."""

    key: tuple
    release: str
    rows: pd.DataFrame
    runs: pd.DataFrame
    failed: bool
    unsupported: bool


@dataclass
class Configuration:
    """One configuration: its key, its label and its jobs in release order."""

    key: tuple
    label: str
    jobs: list[Job]

    def pairs(self) -> list[tuple[Job, Job]]:
        """Consecutive releases (in release order among the releases with a job)."""
        return list(zip(self.jobs, self.jobs[1:]))

    def columns(self) -> dict:
        return {"configuration": self.label, **dict(zip(CONFIG_KEY, self.key))}


def _prepared(churn_df: pd.DataFrame) -> pd.DataFrame:
    """A typed copy of a churn table: nullable ints, plain strings, boolean ``changed``; any extra columns
    (``seconds``, source-line counts) kept."""
    required = ("step", "pass", "status", "added", "deleted", "changed", "error", "source", *JOB_KEY)
    missing = [c for c in required if c not in churn_df.columns]
    if missing:
        raise ValueError(f"churn table lacks columns {missing}")
    df = churn_df.copy()
    for column in ("step", "added", "deleted", *_INT_KEY):
        df[column] = pd.to_numeric(df[column].replace("", None)).astype("Int64")
    for column in ("pass", "status", "error", "source", "phase", *[c for c in JOB_KEY if c not in _INT_KEY]):
        if column in df:
            df[column] = df[column].fillna("").astype(str)
    df["changed"] = (
        df["changed"]
        .map(
            lambda v: (
                pd.NA
                if v is None or v is pd.NA or v == "" or (isinstance(v, float) and np.isnan(v))
                else v in (True, "True", "true", 1)
            )
        )
        .astype("boolean")
    )
    if SECONDS_COLUMN in df:
        df[SECONDS_COLUMN] = pd.to_numeric(df[SECONDS_COLUMN].replace("", None), errors="coerce").astype("Float64")
    for column in SOURCE_LINES_COLUMNS:
        if column in df:
            df[column] = pd.to_numeric(df[column].replace("", None), errors="coerce").astype("Int64")
    if df["step"].isna().any():
        raise ValueError("churn table has rows without a step")
    return df


def configurations(churn_df: pd.DataFrame) -> list[Configuration]:
    """The table's configurations (sorted by key) with their jobs (release order)."""
    df = _prepared(churn_df)
    by_config: dict[tuple, list[Job]] = {}
    labels: dict[tuple, str] = {}
    for _, rows in df.groupby(JOB_KEY, sort=False, dropna=False):
        rows = rows.sort_values("step", kind="stable").reset_index(drop=True)
        first = rows.iloc[0]
        status = rows["status"]
        job = Job(
            key=job_key(first),
            release=str(first["tilelang_version"]),
            rows=rows,
            runs=rows[status.isin(PASS_RUN_STATUSES)].reset_index(drop=True),
            failed=bool((status == FAILED).any()),
            unsupported=bool((status == UNSUPPORTED).any()),
        )
        ckey = config_key(first)
        by_config.setdefault(ckey, []).append(job)
        labels[ckey] = config_label(first)
    out = []
    for ckey in sorted(by_config, key=_sortable):
        jobs = sorted(by_config[ckey], key=lambda j: release_sort_key(j.release))
        out.append(Configuration(ckey, labels[ckey], jobs))
    return out


def read_jobs(paths: Iterable[str | os.PathLike]) -> tuple[pd.DataFrame, dict[tuple, Path]]:
    """Read passes.csv files: (the concatenated churn table, {job key: archive path}).

    A file with one job maps that job to ``<its folder>/ir.json.gz`` (whether or not it exists: a missing
    archive is reported by ``divergence``); a file with several jobs (a churn.csv) maps none. Raises
    ValueError for a bad file (passes_table's reader) or a job that appears in two files.
    """
    paths = [Path(p) for p in paths]
    if not paths:
        raise ValueError("no passes.csv given")
    frames = []
    archives: dict[tuple, Path] = {}
    seen: dict[tuple, Path] = {}
    for path in paths:
        df = _read_passes(path)
        keys = [job_key(row) for _, row in df[JOB_KEY].drop_duplicates().iterrows()]
        for key in keys:
            if key in seen:
                raise ValueError(f"job {'/'.join(map(str, key))} appears in {seen[key]} and {path}")
            seen[key] = path
        if len(keys) == 1:
            archives[keys[0]] = path.parent / ARCHIVE_NAME
        frames.append(df)
    return pd.concat(frames, ignore_index=True), archives


def _read_passes(path: Path) -> pd.DataFrame:
    """One passes.csv as a typed DataFrame, through passes_table's reader (or churn_table's, older tree)."""
    if hasattr(pt, "read_frame"):
        return pt.read_frame(path)
    from tilelang_churn.tables import churn_table

    return churn_table.read_passes(path)


def write_csv(df: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write a table atomically, through the project's one writer (passes_table.atomic_file)."""
    pt.write_frame(df, path)


# ---------------------------------------------------------------------------------------- IR archives


def load_archive(path: str | os.PathLike) -> dict:
    """Read and check one IR archive; ValueError (OSError when unreadable) when it is not a format-1 archive."""
    try:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            data = json.load(handle)
    except EOFError as exc:  # a truncated gzip stream
        raise ValueError(f"truncated: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != ARCHIVE_FORMAT:
        raise ValueError(f"not an IR archive of format {ARCHIVE_FORMAT}")
    texts = data.get("texts")
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise ValueError("'texts' is not a list of strings")
    steps = data.get("steps")
    if not isinstance(steps, list) or not all(isinstance(s, dict) and isinstance(s.get("step"), int) for s in steps):
        raise ValueError("'steps' is not a list of {step, pass, after} objects")
    for index in [data.get("initial")] + [s.get("after") for s in steps]:
        if index is not None and not (isinstance(index, int) and 0 <= index < len(texts)):
            raise ValueError(f"text index {index!r} out of range (0..{len(texts) - 1})")
    return data


def _archive_text(archive: dict, index: int | None) -> str | None:
    return None if index is None else archive["texts"][index]


_PRELUDE_RE = re.compile(r"^#?\s*from\s+tvm\.script\s+import\s+[\w.]+(?:\s+as\s+\w+)?$")


def normalize_ir(text: str) -> str:
    """Printed IR without the noise listed in the module docstring (trailing blanks, import prelude, blank
    lines at both ends)."""
    lines = [line.rstrip() for line in text.splitlines()]
    start = 0
    while start < len(lines) and (not lines[start] or _PRELUDE_RE.match(lines[start].strip())):
        start += 1
    lines = lines[start:]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


def _normalize_source(text: str) -> str:
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


# ------------------------------------------------------------------------------------ churn_by_version


def _int_or_na(value):
    return pd.NA if value is None or value is pd.NA else int(value)


def _job_source_lines(job: Job, archive_path: Path | None) -> int | None:
    for column in SOURCE_LINES_COLUMNS:
        if column in job.rows:
            values = job.rows[column].dropna()
            if len(values):
                return int(values.iloc[0])
    if archive_path is None or not Path(archive_path).is_file():
        return None
    try:
        source = load_archive(archive_path).get("kernel_source")
    except (OSError, ValueError):
        return None  # divergence.csv reports the unreadable archive
    return len(source.splitlines()) if isinstance(source, str) else None


def _stripped_totals(churn: pd.DataFrame) -> dict:
    """The whitespace-insensitive totals (passes.csv added_stripped/deleted_stripped); empty when a churn row
    has none (a mode without the IR text) or the table predates those columns."""
    columns = ["added_stripped", "deleted_stripped"]
    if not set(columns) <= set(churn.columns) or churn[columns].isna().any().any():
        return dict.fromkeys(("added_stripped_total", "deleted_stripped_total", "churn_stripped_total"), pd.NA)
    added, deleted = int(churn[columns[0]].sum()), int(churn[columns[1]].sum())
    return {"added_stripped_total": added, "deleted_stripped_total": deleted, "churn_stripped_total": added + deleted}


def churn_by_version(churn_df: pd.DataFrame, archives: Mapping[tuple, str | os.PathLike] | None = None) -> pd.DataFrame:
    """One row per configuration x release (BY_VERSION_COLUMNS, see the module docstring)."""
    archives = archives or {}
    records = []
    for config in configurations(churn_df):
        for job in config.jobs:
            runs = job.runs
            churn = runs[runs["status"].isin(CHURN_STATUSES)]
            added = int(churn["added"].fillna(0).sum())
            deleted = int(churn["deleted"].fillna(0).sum())
            seconds = pd.NA
            if SECONDS_COLUMN in runs and runs[SECONDS_COLUMN].notna().any():
                seconds = round(float(runs[SECONDS_COLUMN].fillna(0).sum()), 6)
            problems = job.rows[job.rows["status"].isin((FAILED, UNSUPPORTED))]
            source_lines = _job_source_lines(job, archives.get(job.key))
            counts = {
                "pass_runs": len(runs),
                "changed_runs": int((runs["status"] == CHANGED).sum()),
                "added_total": added,
                "deleted_total": deleted,
                "churn_total": added + deleted,
                **_stripped_totals(churn),
                "seconds_total": seconds,
            }
            if job.unsupported:  # nothing ran: empty, not 0, so that means and sums over releases stay honest
                counts = dict.fromkeys(counts, pd.NA)
            records.append(
                {
                    **config.columns(),
                    "tilelang_version": job.release,
                    "source": job.rows["source"].iloc[0],
                    **counts,
                    "failed": job.failed,
                    "first_error": problems["error"].iloc[0] if len(problems) else "",
                    "unsupported": job.unsupported,
                    "generated_source_lines": _int_or_na(source_lines),
                }
            )
    out = pd.DataFrame(records, columns=BY_VERSION_COLUMNS)
    for column in (*_INT_KEY, *BY_VERSION_COUNTS, "generated_source_lines"):
        if column in out:
            out[column] = out[column].astype("Int64")
    out["seconds_total"] = out["seconds_total"].astype("Float64")
    for column in ("failed", "unsupported"):
        out[column] = out[column].astype("boolean")
    return out


# ------------------------------------------------------------------------------------------- alignment


def align_passes(old: Sequence[str], new: Sequence[str]) -> list[tuple[str, int | None, int | None]]:
    """Align two pass-name lists: [(op, index in old or None, index in new or None), ...] in order.

    op is ``kept`` (equal names paired), ``removed`` (old only) or ``added`` (new only). The alignment keeps
    the most pairs, then has the fewest runs of consecutive removed/added entries, then pairs as early as
    possible and puts removed before added (see the module docstring).
    """
    n, m = len(old), len(new)
    # score = big * kept - gap_runs: with big above any possible gap count, kept pairs always win first
    big = n + m + 1
    # best[state][i][j]: the best score of aligning old[i:] with new[j:] when the previous entry was
    # kept or none (0), removed (1) or added (2); a removed/added entry opens a run unless it continues one
    best = [[[0] * (m + 1) for _ in range(n + 1)] for _ in range(3)]
    kept_s, removed_s, added_s = best
    for i in range(n, -1, -1):
        for j in range(m, -1, -1):
            if i == n and j == m:
                continue
            keep = big + kept_s[i + 1][j + 1] if i < n and j < m and old[i] == new[j] else None
            rem = removed_s[i + 1][j] if i < n else None
            add = added_s[i][j + 1] if j < m else None
            for state in (0, 1, 2):
                options = []
                if keep is not None:
                    options.append(keep)
                if rem is not None:
                    options.append(rem - (state != 1))
                if add is not None:
                    options.append(add - (state != 2))
                best[state][i][j] = max(options)
    ops: list[tuple[str, int | None, int | None]] = []
    i = j = state = 0
    while i < n or j < m:
        target = best[state][i][j]
        if i < n and j < m and old[i] == new[j] and big + kept_s[i + 1][j + 1] == target:
            ops.append((KEPT, i, j))
            i, j, state = i + 1, j + 1, 0
        elif i < n and removed_s[i + 1][j] - (state != 1) == target:
            ops.append((REMOVED, i, None))
            i, state = i + 1, 1
        else:
            ops.append((ADDED, None, j))
            j, state = j + 1, 2
    return ops


def _run_fields(run, suffix: str) -> dict:
    if run is None:
        return {f"{name}_{suffix}": pd.NA for name in ("step", "pass", "status", "changed", "added", "deleted")}
    return {
        f"step_{suffix}": int(run["step"]),
        f"pass_{suffix}": run["pass"],
        f"status_{suffix}": run["status"],
        f"changed_{suffix}": run["changed"],
        f"added_{suffix}": run["added"],
        f"deleted_{suffix}": run["deleted"],
    }


def _churn_of(run) -> int | None:
    if run is None or run["status"] not in CHURN_STATUSES or pd.isna(run["added"]) or pd.isna(run["deleted"]):
        return None
    return int(run["added"]) + int(run["deleted"])


def align_jobs(old: Job, new: Job) -> list[dict]:
    """Alignment rows (the per-run ALIGNMENT_COLUMNS, without the configuration columns) of two jobs."""
    rows = []
    ops = align_passes(list(old.runs["pass"]), list(new.runs["pass"]))
    for position, (op, i, j) in enumerate(ops):
        run_old = old.runs.iloc[i] if i is not None else None
        run_new = new.runs.iloc[j] if j is not None else None
        churn_old, churn_new = _churn_of(run_old), _churn_of(run_new)
        delta = churn_new - churn_old if op == KEPT and churn_old is not None and churn_new is not None else pd.NA
        rows.append(
            {
                "release_old": old.release,
                "release_new": new.release,
                "position": position,
                "op": op,
                **_run_fields(run_old, "old"),
                **_run_fields(run_new, "new"),
                "churn_delta": delta,
            }
        )
    return rows


def pass_alignment(churn_df: pd.DataFrame) -> pd.DataFrame:
    """Aligned pass runs of every pair of consecutive releases (ALIGNMENT_COLUMNS, module docstring)."""
    records = []
    for config in configurations(churn_df):
        for old, new in config.pairs():
            records.extend({**config.columns(), **row} for row in align_jobs(old, new))
    out = pd.DataFrame(records, columns=ALIGNMENT_COLUMNS)
    for column in (
        *_INT_KEY,
        "position",
        "step_old",
        "step_new",
        "added_old",
        "deleted_old",
        "added_new",
        "deleted_new",
        "churn_delta",
    ):
        out[column] = out[column].astype("Int64")
    for column in ("changed_old", "changed_new"):
        out[column] = out[column].astype("boolean")
    return out


# ------------------------------------------------------------------------------------------ divergence


def _compare_pair(old: Job, new: Job, ops: list, archive_old: dict, archive_new: dict, notes: list[str]) -> dict:
    """The IR/source columns of one release pair whose two archives are loaded."""
    out: dict = {}
    noise_only = False  # some texts differ only in what normalize_ir drops

    def same(text_old: str, text_new: str) -> bool:
        nonlocal noise_only
        if normalize_ir(text_old) != normalize_ir(text_new):
            return False
        noise_only |= text_old != text_new
        return True

    init_old = _archive_text(archive_old, archive_old.get("initial"))
    init_new = _archive_text(archive_new, archive_new.get("initial"))
    if init_old is None or init_new is None:
        out["initial_ir_differs"] = pd.NA if init_old is None and init_new is None else True
        for release, text in ((old.release, init_old), (new.release, init_new)):
            if text is None:
                notes.append(f"no initial IR in the archive of {_release_text(release)}")
    else:
        out["initial_ir_differs"] = not same(init_old, init_new)
    if out["initial_ir_differs"] is True:
        notes.append("IR differs before the first pass")

    steps_old = {s.get("step"): s for s in archive_old["steps"]}
    steps_new = {s.get("step"): s for s in archive_new["steps"]}
    complete = True
    divergent = None
    gap_since_equal: list[str] = []  # added/removed runs since the last kept run with equal IR
    for op, i, j in ops:
        if op != KEPT:
            release, run = (old.release, old.runs.iloc[i]) if op == REMOVED else (new.release, new.runs.iloc[j])
            gap_since_equal.append(f"{op} {run['pass']} ({_release_text(release)} step {int(run['step'])})")
            continue
        run_old, run_new = old.runs.iloc[i], new.runs.iloc[j]
        found = []
        for release, run, steps in ((old.release, run_old, steps_old), (new.release, run_new, steps_new)):
            step = steps.get(int(run["step"]))
            if step is None and run["status"] == FAILED:  # a failure outside any pass has no archived step
                step = {"pass": run["pass"], "after": None}
            if step is None or step.get("pass") != run["pass"]:
                what = "lacks" if step is None else f"has {step.get('pass')!r} at"
                notes.append(
                    f"the archive of {_release_text(release)} {what} step {int(run['step'])} "
                    f"{run['pass']}; IR compared up to there"
                )
                complete = False
            found.append(step)
        if not complete:
            break
        after_old = _archive_text(archive_old, found[0].get("after"))
        after_new = _archive_text(archive_new, found[1].get("after"))
        if after_old is None and after_new is None:  # the same pass fails in both: nothing after it to compare
            break
        if after_old is None or after_new is None or not same(after_old, after_new):
            divergent = (run_old, run_new)
            if gap_since_equal:
                notes.append("first divergence follows " + ", ".join(gap_since_equal))
            break
        gap_since_equal = []
    if divergent is not None:
        out.update(
            first_divergent_step_old=int(divergent[0]["step"]),
            first_divergent_step_new=int(divergent[1]["step"]),
            first_divergent_pass=divergent[0]["pass"],
        )
    for job in (old, new):
        failed = job.runs[job.runs["status"] == FAILED]
        if len(failed):
            notes.append(
                f"{_release_text(job.release)} fails at step {int(failed['step'].iloc[0])} {failed['pass'].iloc[0]}"
            )

    final = [_final_ir(job, archive) for job, archive in ((old, archive_old), (new, archive_new))]
    out["final_ir_differs"] = pd.NA if None in final else not same(final[0], final[1])
    out["ir_identical_throughout"] = (
        complete and divergent is None and out["initial_ir_differs"] is False and out["final_ir_differs"] is False
    )

    source_old, source_new = archive_old.get("kernel_source"), archive_new.get("kernel_source")
    if source_old is None and source_new is None:
        out["source_differs"] = pd.NA
        notes.append("no generated source on either side")
    elif source_old is None or source_new is None:
        out["source_differs"] = True
        notes.append(f"only {_release_text(new.release if source_old is None else old.release)} generated a source")
    else:
        out["source_differs"] = _normalize_source(source_old) != _normalize_source(source_new)
    if noise_only:
        notes.append("some IR texts differ only in normalised noise (import prelude, trailing whitespace)")
    return out


def _final_ir(job: Job, archive: dict) -> str | None:
    """IR after the job's last pass run that produced IR (the initial IR when none did)."""
    steps = {s.get("step"): s for s in archive["steps"]}
    for step in reversed([int(s) for s in job.runs["step"]]):
        after = steps.get(step, {}).get("after")
        if after is not None:
            return archive["texts"][after]
    return _archive_text(archive, archive.get("initial"))


def _divergence_row(
    old: Job, new: Job, archives: Mapping[tuple, str | os.PathLike], cache: dict[tuple, dict | str]
) -> dict:
    ops = align_passes(list(old.runs["pass"]), list(new.runs["pass"]))
    row = {
        "release_old": old.release,
        "release_new": new.release,
        "kept_runs": sum(op == KEPT for op, _, _ in ops),
        "removed_runs": sum(op == REMOVED for op, _, _ in ops),
        "added_runs": sum(op == ADDED for op, _, _ in ops),
    }
    notes: list[str] = []
    if row["kept_runs"] == 0 and len(old.runs) and len(new.runs):
        notes.append("no pass run in common")
    for job in (old, new):
        if job.unsupported:
            notes.append(f"mode unsupported in {_release_text(job.release)}")
    loaded = []
    for job in (old, new):
        if job.key not in cache:
            path = archives.get(job.key)
            if path is None:
                cache[job.key] = f"no IR archive given for {_release_text(job.release)}"
            elif not Path(path).is_file():
                cache[job.key] = f"no IR archive for {_release_text(job.release)} ({path})"
            else:
                try:
                    cache[job.key] = load_archive(path)
                except (OSError, ValueError) as exc:
                    cache[job.key] = f"IR archive of {_release_text(job.release)} unreadable ({path}: {exc})"
        loaded.append(cache[job.key])
    problems = [item for item in loaded if isinstance(item, str)]
    if problems:
        notes.extend(problems)
    else:
        row.update(_compare_pair(old, new, ops, loaded[0], loaded[1], notes))
    row["note"] = "; ".join(notes)
    return row


def divergence(churn_df: pd.DataFrame, archives: Mapping[tuple, str | os.PathLike] | None = None) -> pd.DataFrame:
    """Where the printed IR of consecutive releases first differs (DIVERGENCE_COLUMNS, module docstring).

    ``archives`` maps job keys (``job_key``) to IR archive paths; a job without one gets a note.
    """
    archives = archives or {}
    records = []
    for config in configurations(churn_df):
        cache: dict[tuple, dict | str] = {}  # each archive is read once per configuration
        for old, new in config.pairs():
            records.append({**config.columns(), **_divergence_row(old, new, archives, cache)})
    out = pd.DataFrame(records, columns=DIVERGENCE_COLUMNS)
    for column in (
        *_INT_KEY,
        "kept_runs",
        "removed_runs",
        "added_runs",
        "first_divergent_step_old",
        "first_divergent_step_new",
    ):
        out[column] = out[column].astype("Int64")
    for column in ("initial_ir_differs", "final_ir_differs", "ir_identical_throughout", "source_differs"):
        out[column] = out[column].astype("boolean")
    for column in ("first_divergent_pass", "note"):
        out[column] = out[column].astype(object).fillna("").astype(str)
    return out


# --------------------------------------------------------------------------------------------- figures


def _save(fig, paths: Iterable[str | os.PathLike]) -> None:
    """Save to every path (format from the suffix), atomically, without dates or software tags."""
    for path in paths:
        path = Path(path)
        fmt = path.suffix.lstrip(".").lower()
        if not fmt:
            raise ValueError(f"{path}: no suffix to choose the image format from")
        with matplotlib.rc_context(_RC):
            fs.save(fig, [path], dpi=DPI)


def _as_paths(paths) -> list:
    return [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)


def _pick_configuration(configs: list[Configuration], label: str | None) -> Configuration:
    if not configs:
        raise ValueError("no configuration in the table")
    if label is not None:
        for config in configs:
            if config.label == label:
                return config
        known = "\n  ".join(c.label for c in configs)
        raise ValueError(f"no configuration labelled {label!r}; the table has:\n  {known}")
    # the most releases with pass runs, then trace-env (it has every pass), then key order
    index = min(
        range(len(configs)),
        key=lambda k: (
            -sum(len(j.runs) > 0 for j in configs[k].jobs),
            configs[k].key[CONFIG_KEY.index("mode")] != "trace-env",
            k,
        ),
    )
    return configs[index]


def union_alignment(jobs: Sequence[Job]) -> list[dict[str, int]]:
    """Rows of the union alignment: per row, {release: index of its pass run in that job's runs}.

    Jobs are taken in the given (release) order; each is aligned with ``align_passes`` to the pass names of
    the rows built so far (a row's name is the name of its runs), its unmatched runs become new rows at
    their place. Every job's runs appear in execution order down the rows.
    """
    rows: list[dict[str, int]] = []
    names: list[str] = []
    for job in jobs:
        job_names = list(job.runs["pass"])
        new_rows, new_names = [], []
        for op, i, j in align_passes(names, job_names):
            if op == ADDED:
                new_rows.append({job.release: j})
                new_names.append(job_names[j])
            else:
                row = rows[i]
                if op == KEPT:
                    row[job.release] = j
                new_rows.append(row)
                new_names.append(names[i])
        rows, names = new_rows, new_names
    return rows


def _release_columns(churn_df: pd.DataFrame) -> list[str]:
    return sort_releases(str(v) for v in _prepared(churn_df)["tilelang_version"])


def heatmap_matrix(churn_df: pd.DataFrame, configuration: str | None = None) -> dict:
    """The data of ``plot_release_heatmap``: label, releases, row_labels, values (added+deleted, NaN when
    absent or failed), failed (bool), present (bool: the run exists), and per-release states."""
    configs = configurations(churn_df)
    config = _pick_configuration(configs, configuration)
    releases = _release_columns(churn_df)
    jobs = {job.release: job for job in config.jobs}
    rows = union_alignment([jobs[r] for r in releases if r in jobs])
    values = np.full((len(rows), len(releases)), np.nan)
    failed = np.zeros(values.shape, dtype=bool)
    present = np.zeros(values.shape, dtype=bool)
    names = []
    for r, row in enumerate(rows):
        release, index = next(iter(row.items()))
        names.append(jobs[release].runs["pass"].iloc[index])
        for c, release in enumerate(releases):
            if release in row:
                run = jobs[release].runs.iloc[row[release]]
                present[r, c] = True
                failed[r, c] = run["status"] == FAILED
                churn = _churn_of(run)
                values[r, c] = np.nan if churn is None else churn
    repeated = {name for name in names if names.count(name) > 1}
    counter: dict[str, int] = {}
    row_labels = []
    for name in names:
        counter[name] = counter.get(name, 0) + 1
        row_labels.append(f"{name} #{counter[name]}" if name in repeated else name)
    states = []
    for c, release in enumerate(releases):
        job = jobs.get(release)
        if job is None:
            states.append("no job")
        elif job.unsupported:
            states.append("unsupported")
        elif job.failed:
            states.append("failed")
        elif len(job.runs) and len(jobs) > 1 and not (present[:, c] & (present.sum(axis=1) > 1)).any():
            states.append("shares no pass")
        else:
            states.append("")
    return {
        "label": config.label,
        "releases": releases,
        "row_labels": row_labels,
        "values": values,
        "failed": failed,
        "present": present,
        "states": states,
    }


def plot_release_heatmap(churn_df: pd.DataFrame, paths, configuration: str | None = None) -> str:
    """Pass runs x releases churn heatmap of one configuration (label; default: see the module docstring),
    saved to every path. Returns the configuration label."""
    data = heatmap_matrix(churn_df, configuration)
    values, failed = data["values"], data["failed"]
    releases, states, row_labels = data["releases"], data["states"], list(data["row_labels"])
    if not row_labels:  # no release ran a pass: one placeholder row keeps the columns visible
        row_labels = ["(no pass run)"]
        values = np.full((1, len(releases)), np.nan)
        failed = np.zeros(values.shape, dtype=bool)
    nrows, ncols = values.shape
    col_labels = [_release_text(r) + (f"\n{s}" if s else "") for r, s in zip(releases, states)]
    label_chars = max(len(s) for s in row_labels)
    width = 1.6 + 0.075 * label_chars + 1.05 * ncols + 1.6
    height = 3.4 + 0.2 * nrows
    with matplotlib.rc_context(_RC):
        fig, ax = plt.subplots(figsize=(max(7.0, width), max(4.5, height)), layout="constrained")
        ax.set_facecolor(ABSENT_COLOR)  # absent runs: the axes background, hatched grey
        ax.patch.set_hatch("///")
        ax.patch.set_edgecolor(ABSENT_EDGE)
        vmax = max(2.0, np.nanmax(values, initial=0.0))
        norm = mcolors.LogNorm(vmin=1, vmax=vmax)
        cmap = fs.churn_cmap()
        edges_x = np.arange(ncols + 1) - 0.5
        edges_y = np.arange(nrows + 1) - 0.5
        mesh = ax.pcolormesh(
            edges_x,
            edges_y,
            np.ma.masked_where(~(values > 0), values),
            cmap=cmap,
            norm=norm,
            edgecolors="white",
            linewidth=0.6,
        )
        ax.pcolormesh(
            edges_x,
            edges_y,
            np.ma.masked_where(~(values == 0), values),
            cmap=mcolors.ListedColormap([ZERO_COLOR]),
            vmin=0,
            vmax=1,
            edgecolors="white",
            linewidth=0.6,
        )
        for r, c in zip(*np.nonzero(failed)):
            ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, facecolor=FAILED_FILL, edgecolor="white", lw=0.6))
            ax.text(
                c, r, "\u2715 failed", ha="center", va="center", fontsize=7.5, color=FAILED_COLOR, fontweight="bold"
            )
        for r, c in zip(*np.nonzero(values > 0)):
            rgba = cmap(norm(values[r, c]))
            luminance = 0.299 * rgba[0] + 0.587 * rgba[1] + 0.114 * rgba[2]
            ax.text(
                c,
                r,
                f"{int(values[r, c])}",
                ha="center",
                va="center",
                fontsize=7.5,
                color="black" if luminance > 0.5 else "white",
            )
        for c, state in enumerate(states):  # whole columns without pass data say why
            if state not in ("unsupported", "no job"):
                continue
            unsupported = state == "unsupported"
            ax.add_patch(
                Rectangle(
                    (c - 0.5, -0.5),
                    1,
                    nrows,
                    facecolor=UNSUPPORTED_FILL if unsupported else NO_JOB_FILL,
                    edgecolor=UNSUPPORTED_EDGE,
                    hatch="\\\\" if unsupported else None,
                    lw=0.8,
                    zorder=3,
                )
            )
            ax.text(
                c,
                (nrows - 1) / 2,
                "mode unsupported in this release" if unsupported else "no job for this configuration",
                rotation=90,
                ha="center",
                va="center",
                fontsize=9,
                color="#37474f",
                zorder=4,
                bbox=dict(boxstyle="round,pad=0.3", facecolor="white", edgecolor="none", alpha=0.9),
            )
        fs.matrix_axes(ax, row_labels, col_labels, row_fontsize=8, col_fontsize=8.5)  # first pass on top
        for tick, state in zip(ax.get_xticklabels(), states):
            if state == "failed":
                tick.set_color(FAILED_COLOR)
            elif state:
                tick.set_color(UNSUPPORTED_EDGE)
        ax.tick_params(axis="x", top=True, labeltop=True, bottom=True, labelbottom=True)
        ax.set_ylabel("pass run (union alignment over releases, execution order)")
        ax.set_xlabel("TileLang release")
        cbar = fig.colorbar(mesh, ax=ax, shrink=0.8 if height <= 12 else 12.0 / height, aspect=30, pad=0.02)
        cbar.set_label("lines changed (+added + -deleted)")
        ticks = [t for t in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000) if t <= vmax]
        cbar.set_ticks(ticks if len(ticks) <= 10 else ticks[::2])
        cbar.ax.yaxis.set_major_formatter(mticker.FuncFormatter(lambda v, _: f"{v:g}"))
        cbar.ax.yaxis.set_minor_formatter(mticker.NullFormatter())
        handles = [
            Patch(facecolor=ZERO_COLOR, edgecolor="#bbbbbb", label="no-op (0 lines)"),
            Patch(facecolor=ABSENT_COLOR, edgecolor=ABSENT_EDGE, hatch="///", label="pass run absent"),
            Patch(facecolor=FAILED_FILL, edgecolor=FAILED_COLOR, label="\u2715 failed"),
            Patch(facecolor=UNSUPPORTED_FILL, edgecolor=UNSUPPORTED_EDGE, hatch="\\\\", label="mode unsupported"),
        ]
        fig.legend(handles=handles, loc="outside lower center", ncols=4, fontsize=8.5, frameon=False)
        fig.suptitle(f"TileLang pass churn across releases (codegen excluded)\n{data['label']}", fontsize=11)
        try:
            _save(fig, _as_paths(paths))
        finally:
            plt.close(fig)
    return data["label"]


def _as_bool(series: pd.Series) -> pd.Series:
    return series.map(lambda v: v is True or v == "True" or v is np.True_).astype(bool)


def _mode_names() -> tuple[str, ...]:
    try:
        from tilelang_churn.core import trace_modes

        return tuple(trace_modes.MODES)
    except ImportError:
        return tuple(getattr(pt, "MODES", ("trace-env", "trace-api", "pass-diff")))


_MODE_ORDER = {mode: k for k, mode in enumerate(_mode_names())}
_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p"]


def plot_release_trend(by_version: pd.DataFrame, alignment: pd.DataFrame, paths) -> None:
    """Pass runs and churn_total per release (the output of ``churn_by_version``, and ``pass_alignment``
    for the releases that share no pass run), one panel column per mode, one line per configuration."""
    if by_version.empty:
        raise ValueError("no job to plot")
    table = by_version.copy()
    for column in ("failed", "unsupported"):
        table[column] = _as_bool(table[column])
    table["tilelang_version"] = table["tilelang_version"].fillna("").astype(str)
    releases = sort_releases(table["tilelang_version"])
    x_of = {release: k for k, release in enumerate(releases)}
    modes = sorted(set(table["mode"]), key=lambda m: (_MODE_ORDER.get(m, len(_MODE_ORDER)), m))
    # a configuration without its mode is one line per mode panel, with one colour and marker everywhere
    table["_line"] = table["configuration"].map(lambda label: label.rsplit(" ", 1)[0])
    lines = sorted(set(table["_line"]))
    colors = plt.get_cmap("tab10" if len(lines) <= 10 else "tab20")
    style = {line: (colors(k % colors.N), _MARKERS[k % len(_MARKERS)]) for k, line in enumerate(lines)}
    shared = _kept_by_pair(alignment)

    with matplotlib.rc_context(_RC):
        width = max(7.0, 1.0 + len(modes) * max(4.0, 0.75 * len(releases) + 1.5))
        fig, axes = plt.subplots(
            2,
            len(modes),
            figsize=(width, 8.0 + 0.22 * len(lines) / max(1, len(modes))),
            layout="constrained",
            squeeze=False,
            sharex=True,
        )
        for col, mode in enumerate(modes):
            of_mode = table[table["mode"] == mode]
            for row, (metric, title) in enumerate(
                (("pass_runs", "pass runs"), ("churn_total", "churn (+added + -deleted lines)"))
            ):
                ax = axes[row][col]
                _trend_panel(ax, of_mode, metric, x_of, style, shared)
                _release_spans(ax, of_mode, releases, metric == "pass_runs")
                ax.set_title(f"{mode}: {title}", fontsize=10)
                ax.set_xticks(range(len(releases)))
                ax.set_xticklabels([_release_text(r) for r in releases], rotation=45, ha="right", fontsize=8.5)
                ax.set_xlim(-0.5, len(releases) - 0.5)
                ax.yaxis.set_major_locator(mticker.MaxNLocator(integer=True))
                ax.set_ylim(bottom=0)
                ax.grid(axis="y", color="#dddddd", linewidth=0.6)
                ax.set_axisbelow(True)
                for side in ("top", "right"):
                    ax.spines[side].set_visible(False)
            axes[1][col].set_xlabel("TileLang release")
        handles = [Line2D([], [], color=style[line][0], marker=style[line][1], label=line) for line in lines]
        handles += [
            Line2D(
                [],
                [],
                linestyle="none",
                marker="x",
                color=FAILED_COLOR,
                markersize=9,
                markeredgewidth=2,
                label="job failed (counts up to the failure)",
            ),
            Line2D(
                [],
                [],
                linestyle="none",
                marker="s",
                markerfacecolor="none",
                markeredgecolor=UNSUPPORTED_EDGE,
                markersize=8,
                label="mode unsupported (no pass run)",
            ),
            Line2D([], [], color="#555555", linestyle=":", label="no pass run shared with the previous release"),
        ]
        fig.legend(handles=handles, loc="outside lower center", ncols=2 if width < 14 else 3, fontsize=8, frameon=False)
        fig.suptitle(
            "TileLang GEMM lowering across releases: pass runs and IR churn per configuration\n"
            "(codegen excluded; counts of different modes come from different tools)",
            fontsize=11,
        )
        try:
            _save(fig, _as_paths(paths))
        finally:
            plt.close(fig)


def _kept_by_pair(alignment: pd.DataFrame) -> dict[tuple, int]:
    """{(configuration, release_old, release_new): kept rows} from pass_alignment rows."""
    if alignment is None or alignment.empty:
        return {}
    kept = (
        alignment.assign(_kept=alignment["op"] == KEPT)
        .groupby(["configuration", "release_old", "release_new"], sort=False, dropna=False)["_kept"]
        .sum()
    )
    return {
        (str(c), str(o) if not pd.isna(o) else "", str(n) if not pd.isna(n) else ""): int(k)
        for (c, o, n), k in kept.items()
    }


def _trend_panel(ax, of_mode: pd.DataFrame, metric: str, x_of: dict, style: dict, shared: dict) -> None:
    lines = sorted(set(of_mode["_line"]))
    # a small fixed sideways shift per line, so that configurations with equal values stay visible
    shift = min(0.08, 0.3 / max(1, len(lines)))
    for k, (line, jobs) in enumerate(of_mode.groupby("_line", sort=True)):
        color, marker = style[line]
        dx = (k - (len(lines) - 1) / 2) * shift
        x_of_line = {release: x + dx for release, x in x_of.items()}
        jobs = jobs.sort_values("tilelang_version", key=lambda s: s.map(release_sort_key), kind="stable")
        data = jobs[~jobs["unsupported"]]
        xs = [x_of_line[r] for r in data["tilelang_version"]]
        ys = [float(v) for v in data[metric]]
        ax.plot(xs, ys, linestyle="none", marker=marker, color=color, markersize=6, zorder=3)
        # one segment per consecutive pair with data on both ends; dotted when they share no pass run
        records = list(jobs.itertuples(index=False))
        for old, new in zip(records, records[1:]):
            if old.unsupported or new.unsupported:
                continue
            kept = shared.get((old.configuration, old.tilelang_version, new.tilelang_version), 0)
            disjoint = kept == 0 and old.pass_runs > 0 and new.pass_runs > 0
            ax.plot(
                [x_of_line[old.tilelang_version], x_of_line[new.tilelang_version]],
                [float(getattr(old, metric)), float(getattr(new, metric))],
                color=color,
                linestyle=":" if disjoint else "-",
                linewidth=1.4,
                zorder=2,
            )
        failed = data[data["failed"]]
        if len(failed):
            ax.plot(
                [x_of_line[r] for r in failed["tilelang_version"]],
                [float(v) for v in failed[metric]],
                linestyle="none",
                marker="x",
                color=FAILED_COLOR,
                markersize=10,
                markeredgewidth=2,
                zorder=4,
            )
        unsupported = jobs[jobs["unsupported"]]
        if len(unsupported):
            ax.plot(
                [x_of_line[r] for r in unsupported["tilelang_version"]],
                [0.0] * len(unsupported),
                linestyle="none",
                marker="s",
                markerfacecolor="white",
                markeredgecolor=UNSUPPORTED_EDGE,
                markersize=8,
                zorder=4,
                clip_on=False,
            )


def _release_spans(ax, of_mode: pd.DataFrame, releases: list[str], with_text: bool) -> None:
    """Shade releases where no job of the mode has pass data, and say why."""
    for x, release in enumerate(releases):
        jobs = of_mode[of_mode["tilelang_version"] == release]
        if len(jobs) == 0:
            why, face, hatch = "no job", "#f5f5f5", None
        elif jobs["unsupported"].all():
            why, face, hatch = "mode unsupported", UNSUPPORTED_FILL, "\\\\"
        elif jobs["failed"].all():
            why, face, hatch = "all jobs failed", "#fff0f0", None
        else:
            continue
        ax.axvspan(
            x - 0.45,
            x + 0.45,
            facecolor=face,
            edgecolor=UNSUPPORTED_EDGE if hatch else "none",
            hatch=hatch,
            linewidth=0,
            zorder=0,
        )
        if with_text:
            ax.text(
                x,
                0.97,
                why,
                transform=ax.get_xaxis_transform(),
                rotation=90,
                ha="center",
                va="top",
                fontsize=8,
                color=FAILED_COLOR if why == "all jobs failed" else "#37474f",
                zorder=5,
                bbox=dict(boxstyle="round,pad=0.2", facecolor="white", edgecolor="none", alpha=0.9),
            )


# ------------------------------------------------------------------------------------------------- all


def write_all(
    churn_df: pd.DataFrame,
    archives: Mapping[tuple, str | os.PathLike] | None,
    out_dir,
    heatmap_config: str | None = None,
    formats: Sequence[str] = ("png", "svg"),
) -> dict[str, list[Path]]:
    """Write the three tables and both figures under ``out_dir``; returns {"tables": [...], "figures": [...]}.

    Every input problem (unknown heatmap configuration, bad table) raises ValueError before anything is
    written.
    """
    out_dir = Path(out_dir)
    by_version = churn_by_version(churn_df, archives)
    alignment = pass_alignment(churn_df)
    diverging = divergence(churn_df, archives)
    _pick_configuration(configurations(churn_df), heatmap_config)  # fail before writing anything
    tables = [out_dir / name for name in OUTPUT_TABLES]
    for table, path in zip((by_version, alignment, diverging), tables):
        write_csv(table, path)
    heatmap = [out_dir / f"{FIGURE_STEMS[0]}.{fmt}" for fmt in formats]
    trend = [out_dir / f"{FIGURE_STEMS[1]}.{fmt}" for fmt in formats]
    plot_release_heatmap(churn_df, heatmap, heatmap_config)
    plot_release_trend(by_version, alignment, trend)
    return {"tables": tables, "figures": heatmap + trend}


def build(passes_paths, out_dir, heatmap_config: str | None = None, formats: Sequence[str] = ("png", "svg")) -> int:
    """Read the passes.csv files and write everything; 0, or 1 with one line on stderr for a bad input.

    The entry point of a Snakemake ``script:`` shim (this module starts with a ``__future__`` import, so it
    cannot be the ``script:`` itself: Snakemake puts its preamble above the file)::

        import sys; sys.path.insert(0, "scripts")
        from contextlib import redirect_stderr, redirect_stdout
        from tilelang_churn.figures import compare_releases
        with open(snakemake.log[0], "w") as log, redirect_stdout(log), redirect_stderr(log):
            sys.exit(compare_releases.build(snakemake.input, snakemake.params.out_dir,
                                            snakemake.params.get("heatmap_config")))
    """
    passes_paths = [Path(p) for p in passes_paths]
    try:
        churn, archives = read_jobs(passes_paths)
        written = write_all(churn, archives, out_dir, heatmap_config, formats)
    except (OSError, ValueError) as exc:
        print(f"compare_releases: error: {exc}", file=sys.stderr)
        return 1
    print(
        f"compare_releases: {len(passes_paths)} passes.csv -> "
        + ", ".join(str(p) for p in written["tables"] + written["figures"])
    )
    return 0


def _formats(text: str) -> list[str]:
    formats = [part.strip().lower() for part in text.split(",") if part.strip()]
    unknown = [fmt for fmt in formats if fmt not in _SAVE_METADATA]
    if unknown or not formats:
        raise argparse.ArgumentTypeError(f"{text!r}: formats are a comma-separated list of png, svg, pdf")
    return list(dict.fromkeys(formats))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out-dir", required=True, help="folder of the tables and figures")
    parser.add_argument(
        "--heatmap-config",
        default=None,
        metavar="LABEL",
        help="configuration label of the heatmap (the 'configuration' column); default: the one "
        "with jobs in the most releases",
    )
    parser.add_argument(
        "--formats",
        default="png,svg",
        type=_formats,
        help="comma-separated figure formats among png, svg, pdf (default: png,svg)",
    )
    parser.add_argument(
        "passes",
        nargs="+",
        metavar="PASSES_CSV",
        help="per-job passes.csv; the job's IR archive is <its folder>/ir.json.gz",
    )
    args = parser.parse_args(argv)
    return build(args.passes, args.out_dir, args.heatmap_config, args.formats)
