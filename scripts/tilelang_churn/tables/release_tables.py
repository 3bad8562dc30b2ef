"""The comparison of releases, as tables: the same configurations traced by several TileLang releases.

From Python::

    churn, archives = read_jobs(paths)              # DataFrame + {job key tuple: archive path}
    by_version = churn_by_version(churn, archives)
    edits = pass_edits.EditCache(archives)          # optional: shares each job's edits between the two below
    alignment = pass_alignment(churn, archives, edits)
    diverging = divergence(churn, archives, edits)

The figures and the command line (``scripts/compare_releases.py``): ``figures/release_figures.py``; the HTML
pages: ``figures/compare_pages.py``; the per-pass edit: ``tables/pass_edits.py``.

Terms
-----

- job key: ``passes_table.JOB_KEY`` (tilelang_version, target_name, M, N, K, block_M, block_N, block_K,
  dtype, accum_dtype, threads, stages, mode, kernel, params, pass_configs, version_name) as a tuple of Python ints
  and strings (``job_key()``; a row without ``version_name``, from a table written before it, reads as its
  ``tilelang_version``).
- configuration: the job key without ``tilelang_version`` and ``version_name`` (``CONFIG_KEY``). Its label (column
  ``configuration``, the value of ``--heatmap-config``) is ``config_label()``, e.g.
  ``cuda-sm90 1024x1024x1024 b128x128x32 float16/float32 t128 s3 trace-env``.
- release (a version): an entry of config ``versions``, told apart and labelled by its name (``version_name``: the
  release number for a release, the name given to a wheel or an environment), so that two entries importing the
  same ``tilelang_version`` (a release and an environment of it) stay two. Versions are ordered by the
  ``tilelang_version`` they imported, then their name (``version_sort_key``), releases by ``release_sort_key``: PEP
  440 order through ``packaging.version.Version`` when importable (0.1.7 < 0.1.7.post3 < 0.1.8rc1 < 0.1.8 <
  0.1.10), else a small parser giving the same order for release/pre/post/dev versions; an unparsable or empty
  version (TileLang could not be imported) sorts last, by its text. A wheel named my-branch that imports
  0.1.15+test follows 0.1.15; an environment named dev that imports 0.1.14 sits beside 0.1.14. The columns
  ``release_old`` and ``release_new`` below hold the names.
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
- tilelang_version: the TileLang version the job imported. source: the tool that counted added/deleted (from the
  job's first row).
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
- version_name: the version's name (the release for a release), as ``release_old``/``release_new`` name it.

``pass_alignment.csv`` (``ALIGNMENT_COLUMNS``), per configuration and pair of consecutive releases, one
row per aligned pass run:

- configuration columns as above; release_old, release_new.
- position: 0, 1, ... along the alignment of the pair (execution order of both releases).
- op: ``kept`` (the same pass, paired), ``removed`` (runs in release_old only) or ``added`` (runs in
  release_new only). A pass is its identity (``pass_id``, core/pass_names.py), paired across releases by
  ``pass_names.alignment_key``: ``tl.Simplify`` never pairs with ``tirx.Simplify``, and an anonymous ``pass_fn``
  of one release pairs with the same pass named in the next (``renamed``).
- step_old, pass_old, status_old, changed_old, added_old, deleted_old: the old run (empty for added);
  step_new, pass_new, status_new, changed_new, added_new, deleted_new: the new run (empty for removed).
- churn_delta: (added_new + deleted_new) - (added_old + deleted_old) of a kept row where both runs have
  counts; empty otherwise (added/removed rows, failed runs).
- edit_same: for a kept row, whether both runs made the same *edit* (``tables/pass_edits.py``: the lines the
  run removed and added, after ``normalize_ir``; context ignored, so the same edit on differently printed IR
  is the same); False when only one side failed; empty for added/removed rows and when either edit is
  unknown (no IR archive: modes other than instrument; a nested run, whose starting IR the archive lacks).
- ir_equal_after, difference: whether the normalised IR after the position is equal in both releases, and what
  the position does to the difference (``ir_states``: equal, introduced, carried, absorbed, edits differ).
- pass_id_old, pass_id_new: the runs' identities; renamed: for a kept row whose two identities differ, how
  (``named tl.AddWrapperForSingleBufStore in 0.1.15``); empty otherwise.

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
  run after which the normalised printed IR differs (or that failed on one side only), the pass by its name in
  release_new (its identity where another pass shares its short name); empty when none.
- final_ir_differs: the normalised IR after the last pass run that produced IR differs.
- ir_identical_throughout: initial IR, IR after every kept pass run and final IR all equal (after
  normalisation), with every kept run found in both archives.
- source_differs: the generated kernel source differs (trailing whitespace ignored); True when only one
  side has a source; empty when neither has one.
- note: ``; ``-separated facts: each pass paired under another identity (named in release_new), a missing or
  unreadable archive (the IR columns are then empty), a pass
  that failed, added/removed runs just before the first divergence, texts that differ only in the
  normalised noise, an archive that lacks a step.
- first_divergent_edit, first_divergent_edit_step_old, first_divergent_edit_step_new: the first kept aligned
  pair of runs whose edits differ (``edit_same`` False): the first pass that behaves differently, even when
  the IR differs from before the first pass; empty when none (or no archive).
- edit_added_old, edit_deleted_old, edit_added_new, edit_deleted_new: the sizes of those two edits (lines
  added and removed, normalised); empty for a failed side.
- edit_differs_runs, edit_unknown_runs: kept pairs whose edits differ; kept pairs with an unknown edit. The
  note names the added/removed runs that edited the IR before the first divergent edit, and the unknown count.
- differs_from, reconverges_at, introduced_by, edits_differ_at, difference_summary: the reading of the
  alignment's ``difference`` (``difference_columns``): where the IR starts to differ (``frontend`` or a pass),
  the top-level pass after which it is equal to the end, the passes that introduce a difference and those that
  edit differently on IR that already differs, and all of it in words.
- tilelang_version_old, tilelang_version_new: the TileLang version each side imported.
- equal_again_at: the first top-level aligned pass, from where the pair starts to behave differently on, after
  which the normalised IR of both is equal again (``review``); empty when it never is, nothing differs, or the
  comparison stops first. Unlike ``reconverges_at`` the IR need not stay equal to the end.
- statement: the pair in one sentence, as the index says it (``review``): ``NEW differs from OLD from pass X;
  reconverges at Y; the generated source differs``, X the first divergent edit (or an earlier pass that one
  release alone runs and that introduces a difference; ``the frontend`` where only the initial IR differs),
  ``does not reconverge`` when the IR is never equal again, ``NEW is the same as OLD at every pass`` when nothing
  differs; where the comparison stops early, why (``NEW fails at P``).

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

Text churn is a clue to locate, not proof of a semantic or performance change.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from tilelang_churn.core import ir_archive, pass_names, statuses
from tilelang_churn.core import passes_table as pt
from tilelang_churn.core.jobs import CONFIG_KEY, JOB_KEY, config_key, distinct_config_labels, job_key, version_name
from tilelang_churn.core.releases import release_text, version_sort_key
from tilelang_churn.tables import frames, pass_edits

_INT_KEY = [column for column in JOB_KEY if column in pt.INT_COLUMNS]
FAILED = pt.STATUS_FAILED
CODEGEN = pt.STATUS_CODEGEN
CHANGED = pt.STATUS_CHANGED
UNSUPPORTED = pt.STATUS_UNSUPPORTED
CHURN_STATUSES = pt.CHURN_STATUSES
PASS_RUN_STATUSES = statuses.PASS_RUN_STATUSES
SECONDS_COLUMN = "seconds"
SOURCE_LINES_COLUMNS = ("generated_source_lines", "kernel_source_lines")

# the integer counts of churn_by_version.csv (nullable: empty for an unsupported job)
BY_VERSION_COUNTS = ["pass_runs", "changed_runs", *pt.TOTAL_COLUMNS]
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
    # added with version entries that are no release (a wheel, an environment): the entry's name, which the other
    # tables' release_old/release_new hold (tilelang_version stays the version the job imported)
    "version_name",
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
    "edit_same",
    "ir_equal_after",
    "difference",
    # added with pass identities (core/pass_names.py): each run's identity, and "named X in R" where a pass
    # paired under another identity (an anonymous pass_fn of the older release that the newer one names)
    "pass_id_old",
    "pass_id_new",
    "renamed",
]
EDIT_COUNT_COLUMNS = [
    "first_divergent_edit_step_old",
    "first_divergent_edit_step_new",
    "edit_added_old",
    "edit_deleted_old",
    "edit_added_new",
    "edit_deleted_new",
    "edit_differs_runs",
    "edit_unknown_runs",
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
    "first_divergent_edit",
    *EDIT_COUNT_COLUMNS,
    "differs_from",
    "reconverges_at",
    "introduced_by",
    "edits_differ_at",
    "difference_summary",
    # added with version entries: the TileLang version each side imported (release_old/release_new: their names),
    # where the IR is equal again after the first divergence, and the pair in one sentence (the index's)
    "tilelang_version_old",
    "tilelang_version_new",
    "equal_again_at",
    "statement",
]
OUTPUT_TABLES = ("churn_by_version.csv", "pass_alignment.csv", "divergence.csv")

KEPT, ADDED, REMOVED = "kept", "added", "removed"
# the columns of a pass run that the alignment, the edits and the pages read (ReleaseJob.run_list)
RUN_FIELDS = (
    "step", "phase", "pass", "pass_id", "status", "changed", "added", "deleted", "depth", "seconds", "source", "error",
)  # fmt: skip


# ------------------------------------------------------------------------------------------ jobs, keys


def _sortable(key: tuple) -> tuple:
    """Key values made comparable: None first, then ints numerically and strings lexicographically."""
    return tuple((0, 0, "") if v is None else (1, v, "") if isinstance(v, int) else (2, 0, v) for v in key)


@dataclass
class ReleaseJob:
    """One job as the table holds it: its key (its job spec's ``key``, core/job_spec.py: the rows carry no more of
    the spec), its rows (by step) and its pass runs (by step)."""

    key: tuple
    release: str  # the version entry's name (version_name): what tells the version apart, and labels it
    rows: pd.DataFrame
    runs: pd.DataFrame
    failed: bool
    unsupported: bool
    tilelang_version: str = ""  # the TileLang version the job imported: what orders the versions

    @property
    def order(self) -> tuple:
        """Where the job's version sorts: the version it imported in release order, then its name."""
        return version_sort_key(self.tilelang_version, self.release)

    def run_list(self) -> list[dict]:
        """The pass runs as dicts (by position), made once: row access on a DataFrame costs far more."""
        cached = self.__dict__.get("_run_list")
        if cached is None:
            wanted = [name for name in RUN_FIELDS if name in self.runs.columns]
            columns = {name: self.runs[name].tolist() for name in wanted}  # far faster than to_dict
            cached = [dict(zip(columns, values)) for values in zip(*columns.values())]
            self.__dict__["_run_list"] = cached
        return cached

    def alignment_keys(self) -> tuple[str, ...]:
        """What pairs each pass run with the other release's (core/pass_names.alignment_key of its identity)."""
        return tuple(pass_names.alignment_key(pass_names.identity_of(run)) for run in self.run_list())

    def label(self, run) -> str:
        """The name shown for a run: its short name where no other pass of this job shares it, else its
        identity (``tl.Simplify`` beside ``tirx.Simplify``)."""
        labels = self.__dict__.get("_labels")
        if labels is None:
            labels = self.__dict__["_labels"] = pass_names.display_names(map(pass_names.identity_of, self.run_list()))
        return labels[pass_names.identity_of(run)]


def renamed_note(run_old, run_new, new: ReleaseJob) -> str:
    """How a pass paired across a release pair changed its identity, "" when it did not ("named
    tl.AddWrapperForSingleBufStore in 0.1.14": core/pass_names.renamed_note)."""
    return pass_names.renamed_note(
        pass_names.identity_of(run_old), pass_names.identity_of(run_new), release_text(new.release)
    )


@dataclass
class Configuration:
    """One configuration: its key, its label and its jobs in release order."""

    key: tuple
    label: str
    jobs: list[ReleaseJob]

    def pairs(self) -> list[tuple[ReleaseJob, ReleaseJob]]:
        """Consecutive releases (in release order among the releases with a job)."""
        return list(zip(self.jobs, self.jobs[1:]))

    def columns(self) -> dict:
        return {"configuration": self.label, **dict(zip(CONFIG_KEY, self.key))}


def typed_table(churn_df: pd.DataFrame) -> pd.DataFrame:
    """A typed copy of a churn table: nullable ints, plain strings, boolean ``changed``; any extra columns
    (``seconds``, source-line counts) kept."""
    required = ("step", "pass", "status", "added", "deleted", "changed", "error", "source", *JOB_KEY)
    missing = [c for c in required if c not in churn_df.columns and c not in pt.ADDED_FROM]
    if missing:
        raise ValueError(f"churn table lacks columns {missing}")
    df = frames.with_version_names(churn_df.copy())  # a table without version_name: each job's tilelang_version
    df["pass_id"] = df["pass_id"].astype(object) if "pass_id" in df else df["pass"]
    for column in ("step", "added", "deleted", *_INT_KEY):
        df[column] = pd.to_numeric(df[column].replace("", None)).astype("Int64")
    for column in ("pass", "pass_id", "status", "error", "source", "phase", *[c for c in JOB_KEY if c not in _INT_KEY]):
        if column in df:
            df[column] = df[column].fillna("").astype(str)
    df["pass_id"] = df["pass_id"].where(df["pass_id"] != "", df["pass"])
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
    ordered, bounds = frames.job_blocks(typed_table(churn_df))
    # whole-table selections, then a slice per job: a selection per job copies every column, a millisecond each
    status = ordered["status"].to_numpy()
    is_run = ordered["status"].isin(PASS_RUN_STATUSES).to_numpy()
    runs_before = np.concatenate([[0], np.cumsum(is_run)]).tolist()  # pass runs in the rows before each row
    all_runs = ordered[is_run].reset_index(drop=True)
    firsts = ordered.iloc[[start for start, _ in bounds]].to_dict("records")
    by_config: dict[tuple, list[ReleaseJob]] = {}
    first_rows: dict[tuple, Mapping] = {}
    for (start, stop), first in zip(bounds, firsts):
        job = ReleaseJob(
            key=job_key(first),
            release=version_name(first),
            tilelang_version=str(first["tilelang_version"]),
            rows=frames.fresh_index(ordered.iloc[start:stop]),
            runs=frames.fresh_index(all_runs.iloc[runs_before[start] : runs_before[stop]]),
            failed=bool((status[start:stop] == FAILED).any()),
            unsupported=bool((status[start:stop] == UNSUPPORTED).any()),
        )
        ckey = config_key(first)
        by_config.setdefault(ckey, []).append(job)
        first_rows[ckey] = first
    labels = distinct_config_labels(first_rows)
    out = []
    for ckey in sorted(by_config, key=_sortable):
        jobs = sorted(by_config[ckey], key=lambda j: j.order)
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
    rows: list[dict] = []
    archives: dict[tuple, Path] = {}
    seen: dict[tuple, Path] = {}
    for path in paths:
        file_rows = pt.read_rows(path)  # the strict reader; typed into one DataFrame at the end, not per file
        keys = list(dict.fromkeys(job_key(row) for row in file_rows))
        for key in keys:
            if key in seen:
                raise ValueError(f"job {'/'.join(map(str, key))} appears in {seen[key]} and {path}")
            seen[key] = path
        if len(keys) == 1:
            archives[keys[0]] = path.parent / ir_archive.NAME
        rows.extend(file_rows)
    return frames.to_frame(rows), archives


def _read_passes(path: Path) -> pd.DataFrame:
    """One passes.csv as a typed DataFrame, through passes_table's reader."""
    return frames.read_frame(path)


def write_csv(df: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write a table atomically, through the project's one writer (passes_table.atomic_file)."""
    frames.write_frame(df, path)


# ------------------------------------------------------------------------------- IR normalisation


def _normalize_source(text: str) -> str:
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


# ------------------------------------------------------------------------------------ churn_by_version


def _int_or_na(value):
    return pd.NA if value is None or value is pd.NA else int(value)


def _job_source_lines(job: ReleaseJob, archive_path: Path | None, edits=None) -> int | None:
    for column in SOURCE_LINES_COLUMNS:
        if column in job.rows:
            values = job.rows[column].dropna()
            if len(values):
                return int(values.iloc[0])
    if edits is not None:
        archive = edits.archive(job)
        source = archive.get("kernel_source") if isinstance(archive, dict) else None
        return len(source.splitlines()) if isinstance(source, str) else None
    if archive_path is None or not Path(archive_path).is_file():
        return None
    try:
        source = ir_archive.read(archive_path).get("kernel_source")
    except (OSError, ValueError):
        return None  # divergence.csv reports the unreadable archive
    return len(source.splitlines()) if isinstance(source, str) else None


def _stripped_totals(runs: pd.DataFrame, is_churn: pd.Series) -> dict:
    """The whitespace-insensitive totals (passes.csv added_stripped/deleted_stripped) of the churn runs; empty when
    one has none (a mode without the IR text) or the table predates those columns."""
    columns = ["added_stripped", "deleted_stripped"]
    if not set(columns) <= set(runs.columns):
        return dict.fromkeys(("added_stripped_total", "deleted_stripped_total", "churn_stripped_total"), pd.NA)
    added, deleted = (runs[column][is_churn] for column in columns)  # columns, not the frame: no copy of the rest
    if added.isna().any() or deleted.isna().any():
        return dict.fromkeys(("added_stripped_total", "deleted_stripped_total", "churn_stripped_total"), pd.NA)
    added, deleted = int(added.sum()), int(deleted.sum())
    return {"added_stripped_total": added, "deleted_stripped_total": deleted, "churn_stripped_total": added + deleted}


def churn_by_version(
    churn_df: pd.DataFrame,
    archives: Mapping[tuple, str | os.PathLike] | None = None,
    configs: list[Configuration] | None = None,
    edits: pass_edits.EditCache | None = None,
) -> pd.DataFrame:
    """One row per configuration x release (BY_VERSION_COLUMNS, see the module docstring). ``configs``
    (``configurations(churn_df)``) and an ``edits`` cache, when given, save computing and reading them again."""
    archives = archives or {}
    records = []
    for config in configs if configs is not None else configurations(churn_df):
        for job in config.jobs:
            runs = job.runs  # its columns selected one by one: a selection of the frame copies all 50
            is_churn = runs["status"].isin(CHURN_STATUSES)
            added = int(runs["added"][is_churn].fillna(0).sum())
            deleted = int(runs["deleted"][is_churn].fillna(0).sum())
            seconds = pd.NA
            if SECONDS_COLUMN in runs and runs[SECONDS_COLUMN].notna().any():
                seconds = round(float(runs[SECONDS_COLUMN].fillna(0).sum()), 6)
            problems = job.rows["error"][job.rows["status"].isin((FAILED, UNSUPPORTED))]
            source_lines = _job_source_lines(job, archives.get(job.key), edits)
            counts = {
                "pass_runs": len(runs),
                "changed_runs": int((runs["status"] == CHANGED).sum()),
                "added_total": added,
                "deleted_total": deleted,
                "churn_total": added + deleted,
                **_stripped_totals(runs, is_churn),
                "seconds_total": seconds,
            }
            if job.unsupported:  # nothing ran: empty, not 0, so that means and sums over releases stay honest
                counts = dict.fromkeys(counts, pd.NA)
            records.append(
                {
                    **config.columns(),
                    "tilelang_version": job.tilelang_version,
                    "source": job.rows["source"].iloc[0],
                    **counts,
                    "failed": job.failed,
                    "first_error": problems.iloc[0] if len(problems) else "",
                    "unsupported": job.unsupported,
                    "generated_source_lines": _int_or_na(source_lines),
                    "version_name": job.release,
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
    possible and puts removed before added (see the module docstring). Results are cached (the tables and
    the pages align the same pairs).
    """
    return list(_align_cached(tuple(old), tuple(new)))


@functools.lru_cache(maxsize=4096)
def _align_cached(old: tuple, new: tuple) -> tuple:
    # Common leading names are kept pairs of the optimal alignment that pairs as early as possible, and so are
    # common trailing names that occur nowhere else (tests/test_compare_releases.py checks both against the whole
    # dynamic programme): only the middle, where releases differ, needs it. Releases share most of their pipeline.
    n, m = len(old), len(new)
    head = 0
    while head < n and head < m and old[head] == new[head]:
        head += 1
    # a trailing pair is only safe to fix when its name occurs nowhere else in the middle: otherwise an
    # earlier pairing of equal score exists, and the earliest one is the alignment's choice
    tail = 0
    while tail < n - head and tail < m - head and old[n - 1 - tail] == new[m - 1 - tail]:
        name = old[n - 1 - tail]
        if name in old[head : n - 1 - tail] or name in new[head : m - 1 - tail]:
            break
        tail += 1
    middle = _align_dp(old[head : n - tail], new[head : m - tail])
    ops = [(KEPT, k, k) for k in range(head)]
    ops += [(op, None if i is None else i + head, None if j is None else j + head) for op, i, j in middle]
    ops += [(KEPT, n - tail + k, m - tail + k) for k in range(tail)]
    return tuple(ops)


def _align_dp(old: Sequence[str], new: Sequence[str]) -> list[tuple[str, int | None, int | None]]:
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
        return {
            f"{name}_{suffix}": pd.NA for name in ("step", "pass", "pass_id", "status", "changed", "added", "deleted")
        }
    return {
        f"step_{suffix}": int(run["step"]),
        f"pass_{suffix}": run["pass"],
        f"pass_id_{suffix}": pass_names.identity_of(run),
        f"status_{suffix}": run["status"],
        f"changed_{suffix}": run["changed"],
        f"added_{suffix}": run["added"],
        f"deleted_{suffix}": run["deleted"],
    }


def churn_of_run(run) -> int | None:
    if run is None or run["status"] not in CHURN_STATUSES or pd.isna(run["added"]) or pd.isna(run["deleted"]):
        return None
    return int(run["added"]) + int(run["deleted"])


def align_jobs(old: ReleaseJob, new: ReleaseJob, edits: pass_edits.EditCache | None = None) -> list[dict]:
    """Alignment rows (the per-run ALIGNMENT_COLUMNS, without the configuration columns) of two jobs;
    ``edit_same`` from ``edits`` (empty without)."""
    rows = []
    ops = align_passes(old.alignment_keys(), new.alignment_keys())
    edits_old = edits.of(old) if edits is not None else {}
    edits_new = edits.of(new) if edits is not None else {}
    states = ir_states(old, new, ops, edits)
    for position, (op, i, j) in enumerate(ops):
        run_old = old.run_list()[i] if i is not None else None
        run_new = new.run_list()[j] if j is not None else None
        churn_old, churn_new = churn_of_run(run_old), churn_of_run(run_new)
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
                "edit_same": _edit_same(op, run_old, run_new, edits_old, edits_new),
                **states[position],
                "renamed": renamed_note(run_old, run_new, new) if op == KEPT else "",
            }
        )
    return rows


EQUAL, INTRODUCED, CARRIED, ABSORBED, EDITS_DIFFER = "equal", "introduced", "carried", "absorbed", "edits differ"
DIFFERENCES = (EQUAL, INTRODUCED, CARRIED, ABSORBED, EDITS_DIFFER)


def ir_states(old: ReleaseJob, new: ReleaseJob, ops: list, edits: pass_edits.EditCache | None) -> list[dict]:
    """Per aligned position: ``ir_equal_after`` (the normalised IR after it equal in both releases: each side's
    IR after its latest run at or before the position) and ``difference``, from the IR before and after:
    equal / introduced (equal before, not after) / absorbed (not before, equal after) / carried (differs before
    and after, and both made the same edit, or a one-side run that changed nothing) / edits differ (differs
    before and after, and the edits differ, or a one-side run changed the IR). Unknown (no archive, a step the
    archive lacks, a failed run on either side, and everything after): both None."""
    if edits is None:
        return [{"ir_equal_after": None, "difference": None} for _ in ops]
    key = (old.key, new.key)
    if key not in edits.pair_states:
        edits.pair_states[key] = _ir_states(old, new, ops, edits)
    return edits.pair_states[key]


def _ir_states(old: ReleaseJob, new: ReleaseJob, ops: list, edits: pass_edits.EditCache) -> list[dict]:
    unknown = [{"ir_equal_after": None, "difference": None} for _ in ops]
    loaded = [edits.archive(old), edits.archive(new)]
    if any(not isinstance(archive, dict) for archive in loaded):
        return unknown
    normalized: list[dict[int, str]] = [{}, {}]

    def text(side: int, index: int | None) -> str | None:
        if index is None:
            return None
        if index not in normalized[side]:
            normalized[side][index] = pass_edits.normalize_ir(loaded[side]["texts"][index])
        return normalized[side][index]

    steps = [{step.get("step"): step for step in archive["steps"]} for archive in loaded]
    # the IR of each side after its latest top-level run (top) and, inside a pass, after its latest nested run
    # (inner): a nested run's row follows its parent's, whose IR after is the parent's result, so a nested run
    # starts from the parent's input and the next top-level run from the parent's result
    top = [text(side, loaded[side].get("initial")) for side in (0, 1)]
    if None in top:
        return unknown
    inner = list(top)
    states = []
    edits_old, edits_new = edits.of(old), edits.of(new)
    for op, i, j in ops:
        nested = _nested((op, i, j), old, new)
        before = inner if nested else top
        current = list(before)
        for side, job, index in ((0, old, i), (1, new, j)):
            if index is None:
                continue
            run = job.run_list()[index]
            step = steps[side].get(int(run["step"]))
            after = text(side, step.get("after")) if step is not None and step.get("pass") == run["pass"] else None
            current[side] = after
        if None in current:  # a failed run, or a step the archive lacks: nothing after it to compare
            break
        equal_before, equal_after = before[0] == before[1], current[0] == current[1]
        if nested:
            inner = current
        else:
            top, inner = current, list(before)
        if equal_before:
            difference = EQUAL if equal_after else INTRODUCED
        elif equal_after:
            difference = ABSORBED
        elif op == KEPT:
            same = _edit_same(op, old.run_list()[i], new.run_list()[j], edits_old, edits_new)
            difference = CARRIED if same is True else EDITS_DIFFER if same is False else None
        else:
            run = old.run_list()[i] if op == REMOVED else new.run_list()[j]
            difference = EDITS_DIFFER if run["changed"] is True else CARRIED
        states.append({"ir_equal_after": equal_after, "difference": difference})
    return states + unknown[len(states) :]


def _nested(op: tuple, old: ReleaseJob, new: ReleaseJob) -> bool:
    _, i, j = op
    runs = [job.run_list()[index] for job, index in ((old, i), (new, j)) if index is not None]
    return any(_depth(run) > 0 for run in runs)


def _depth(run) -> int:
    depth = run.get("depth")
    return 0 if depth is None or pd.isna(depth) else int(depth)


def _pass_at(ops: list, position: int, old: ReleaseJob, new: ReleaseJob) -> str:
    _, i, j = ops[position]
    return new.label(new.run_list()[j]) if j is not None else old.label(old.run_list()[i])


def difference_columns(old: ReleaseJob, new: ReleaseJob, ops: list, states: list[dict], initial_differs) -> dict:
    """divergence.csv's reading of the states: where the IR first differs (``frontend``: before the first pass),
    the pass after which it is equal to the end (empty when it never is, or never differed), the passes that
    introduce a difference and those that edit differently where it already differs, and all of it in words."""
    known = [(position, state) for position, state in enumerate(states) if state["difference"] is not None]
    if not known:
        return {"difference_summary": "unknown: no IR to compare"}
    introduced = [_pass_at(ops, p, old, new) for p, state in known if state["difference"] == INTRODUCED]
    differing = [_pass_at(ops, p, old, new) for p, state in known if state["difference"] == EDITS_DIFFER]
    differs_from = "frontend" if initial_differs is True else (introduced[0] if introduced else "")
    reconverges_at = ""
    complete = len(known) == len(states)
    last_position = known[-1][0]
    # reconvergence is the top-level IR's: a nested run's IR is an intermediate inside its parent
    top = [(p, state) for p, state in known if not _nested(ops[p], old, new)]
    if differs_from and complete and top and top[-1][1]["ir_equal_after"]:
        reconverges_at = next(
            (_pass_at(ops, p, old, new) for p, state in reversed(top) if state["difference"] == ABSORBED), ""
        )
    if not differs_from:
        summary = "the IR is equal after every pass" if complete else "equal as far as compared"
    else:
        start = "differs from the frontend" if differs_from == "frontend" else f"differs from {differs_from}"
        end = (
            f"reconverges at {reconverges_at}"
            if reconverges_at
            else "never reconverges"
            if complete
            else f"still differs where the comparison stops ({_pass_at(ops, last_position, old, new)})"
        )
        summary = f"{start}; {end}"
    return {
        "differs_from": differs_from,
        "reconverges_at": reconverges_at,
        "introduced_by": ";".join(dict.fromkeys(introduced)),
        "edits_differ_at": ";".join(dict.fromkeys(differing)),
        "difference_summary": summary,
    }


def _edit_same(op, run_old, run_new, edits_old: dict, edits_new: dict):
    if op != KEPT:
        return pd.NA
    same = pass_edits.same_edit(edits_old.get(int(run_old["step"])), edits_new.get(int(run_new["step"])))
    return pd.NA if same is None else same


def pass_alignment(
    churn_df: pd.DataFrame,
    archives: Mapping[tuple, str | os.PathLike] | None = None,
    edits: pass_edits.EditCache | None = None,
    configs: list[Configuration] | None = None,
) -> pd.DataFrame:
    """Aligned pass runs of every pair of consecutive releases (ALIGNMENT_COLUMNS, module docstring).

    ``archives`` (job key -> IR archive path) or an ``edits`` cache over them fill ``edit_same``."""
    if edits is None:
        edits = pass_edits.EditCache(archives)
    records = []
    for config in configs if configs is not None else configurations(churn_df):
        for old, new in config.pairs():
            records.extend({**config.columns(), **row} for row in align_jobs(old, new, edits))
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
    for column in ("changed_old", "changed_new", "edit_same", "ir_equal_after"):
        out[column] = out[column].astype("boolean")
    return out


# ------------------------------------------------------------------------------------------ divergence


def _compare_pair(
    old: ReleaseJob, new: ReleaseJob, ops: list, archive_old: dict, archive_new: dict, notes: list[str]
) -> dict:
    """The IR/source columns of one release pair whose two archives are loaded."""
    out: dict = {}
    noise_only = False  # some texts differ only in what normalize_ir drops

    def same(text_old: str, text_new: str) -> bool:
        nonlocal noise_only
        if pass_edits.normalize_ir(text_old) != pass_edits.normalize_ir(text_new):
            return False
        noise_only |= text_old != text_new
        return True

    init_old = ir_archive.text_at(archive_old, archive_old.get("initial"))
    init_new = ir_archive.text_at(archive_new, archive_new.get("initial"))
    if init_old is None or init_new is None:
        out["initial_ir_differs"] = pd.NA if init_old is None and init_new is None else True
        for release, text in ((old.release, init_old), (new.release, init_new)):
            if text is None:
                notes.append(f"no initial IR in the archive of {release_text(release)}")
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
            release, run = (old.release, old.run_list()[i]) if op == REMOVED else (new.release, new.run_list()[j])
            job = old if op == REMOVED else new
            gap_since_equal.append(f"{op} {job.label(run)} ({release_text(release)} step {int(run['step'])})")
            continue
        run_old, run_new = old.run_list()[i], new.run_list()[j]
        found = []
        for release, run, steps in ((old.release, run_old, steps_old), (new.release, run_new, steps_new)):
            step = steps.get(int(run["step"]))
            if step is None and run["status"] == FAILED:  # a failure outside any pass has no archived step
                step = {"pass": run["pass"], "after": None}
            if step is None or step.get("pass") != run["pass"]:
                what = "lacks" if step is None else f"has {step.get('pass')!r} at"
                notes.append(
                    f"the archive of {release_text(release)} {what} step {int(run['step'])} "
                    f"{run['pass']}; IR compared up to there"
                )
                complete = False
            found.append(step)
        if not complete:
            break
        after_old = ir_archive.text_at(archive_old, found[0].get("after"))
        after_new = ir_archive.text_at(archive_new, found[1].get("after"))
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
            first_divergent_pass=new.label(divergent[1]),
        )
    for job in (old, new):
        failed = job.runs["status"] == FAILED  # a column, not the frame: a selection of the frame copies all 50
        if failed.any():
            first = int(failed.to_numpy().argmax())
            notes.append(
                f"{release_text(job.release)} fails at step {int(job.runs['step'].iloc[first])} "
                f"{job.runs['pass_id'].iloc[first]}"
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
        notes.append(f"only {release_text(new.release if source_old is None else old.release)} generated a source")
    else:
        out["source_differs"] = _normalize_source(source_old) != _normalize_source(source_new)
    if noise_only:
        notes.append("some IR texts differ only in normalised noise (import prelude, trailing whitespace)")
    return out


def _final_ir(job: ReleaseJob, archive: dict) -> str | None:
    """IR after the job's last pass run that produced IR (the initial IR when none did)."""
    steps = {s.get("step"): s for s in archive["steps"]}
    for step in reversed([int(s) for s in job.runs["step"]]):
        after = steps.get(step, {}).get("after")
        if after is not None:
            return archive["texts"][after]
    return ir_archive.text_at(archive, archive.get("initial"))


def _renamed_passes(old: ReleaseJob, new: ReleaseJob, ops: list) -> list[str]:
    """The passes paired across the pair under another identity, once each: "AddWrapperForSingleBufStore named
    tl.AddWrapperForSingleBufStore in 0.1.15" (an anonymous pass_fn of the older release)."""
    found: dict[str, str] = {}
    for op, i, j in ops:
        if op == KEPT:
            run_old, run_new = old.run_list()[i], new.run_list()[j]
            note = renamed_note(run_old, run_new, new)
            if note:
                found.setdefault(old.label(run_old), note)
    return [f"{label} {note}" for label, note in found.items()]


def _divergence_row(old: ReleaseJob, new: ReleaseJob, edits: pass_edits.EditCache) -> dict:
    ops = align_passes(old.alignment_keys(), new.alignment_keys())
    row = {
        "release_old": old.release,
        "release_new": new.release,
        "kept_runs": sum(op == KEPT for op, _, _ in ops),
        "removed_runs": sum(op == REMOVED for op, _, _ in ops),
        "added_runs": sum(op == ADDED for op, _, _ in ops),
        "tilelang_version_old": old.tilelang_version,
        "tilelang_version_new": new.tilelang_version,
    }
    notes: list[str] = _renamed_passes(old, new, ops)
    if row["kept_runs"] == 0 and len(old.runs) and len(new.runs):
        notes.append("no pass run in common")
    for job in (old, new):
        if job.unsupported:
            notes.append(f"mode unsupported in {release_text(job.release)}")
    loaded = [edits.archive(old), edits.archive(new)]
    problems = [item for item in loaded if isinstance(item, str)]
    states = None
    if problems:
        notes.extend(problems)
    else:
        row.update(_compare_pair(old, new, ops, loaded[0], loaded[1], notes))
        row.update(_first_divergent_edit(old, new, ops, edits.of(old), edits.of(new), notes))
        states = ir_states(old, new, ops, edits)
        row.update(difference_columns(old, new, ops, states, row.get("initial_ir_differs")))
    row["note"] = "; ".join(notes)
    row.update(review(old, new, ops, states, row))
    return row


def _divergence_start(old: ReleaseJob, new: ReleaseJob, ops: list, states: list[dict], row: dict):
    """Where the pair starts to behave differently: (its aligned position, its words) for the first pass whose edit
    differs (``first_divergent_edit``: the IR may differ before any pass, the edits say which pass acts otherwise),
    or an earlier pass that introduces a difference (one release alone runs it); (0, "the frontend") where only
    the IR handed to the first pass differs; None where nothing differs."""
    found = []
    if row.get("first_divergent_edit"):
        steps = (row["first_divergent_edit_step_old"], row["first_divergent_edit_step_new"])
        found += [
            p
            for p, (op, i, j) in enumerate(ops)
            if op == KEPT and (int(old.run_list()[i]["step"]), int(new.run_list()[j]["step"])) == steps
        ][:1]
    found += [p for p, state in enumerate(states) if state["difference"] == INTRODUCED][:1]
    if found:
        position = min(found)
        op = ops[position][0]
        alone = "" if op == KEPT else f" (run by {release_text((old if op == REMOVED else new).release)} only)"
        return position, f"pass {_pass_at(ops, position, old, new)}{alone}"
    if row.get("initial_ir_differs") is True:
        return 0, "the frontend"
    return None


def _stop_words(old: ReleaseJob, new: ReleaseJob, ops: list, position: int) -> str:
    """Why the IR is not compared from ``position`` on: the release whose run fails there, else the last pass
    compared (an archive that lacks a step)."""
    _, i, j = ops[position]
    for job, index in ((new, j), (old, i)):
        if index is not None and job.run_list()[index]["status"] == FAILED:
            return f"{release_text(job.release)} fails at {job.label(job.run_list()[index])}"
    if position == 0:
        return "the IR is not compared past the frontend"
    return f"the IR is not compared past {_pass_at(ops, position - 1, old, new)}"


def review(old: ReleaseJob, new: ReleaseJob, ops: list, states: list[dict] | None, row: dict) -> dict:
    """divergence.csv's ``equal_again_at`` and ``statement``: the pair in one sentence, as the index says it, e.g.
    ``0.1.15 differs from 0.1.14 from pass LowerTileOp; reconverges at Simplify; the generated source differs``.
    The divergence is ``_divergence_start``'s; it reconverges at the first top-level pass at or after it after which
    the IR of both is equal (``ir_equal_after``; a nested run's IR is an intermediate inside its parent) and stays
    equal (else the sentence says where it differs again), and does not when none is; where the comparison stops
    before (a failed run, an archive that lacks a step), it says so.
    ``states`` None: no IR to compare (no archive)."""
    o, n = release_text(old.release), release_text(new.release)
    source_differs = row.get("source_differs")
    source = {True: "the generated source differs", False: "the generated source is the same"}.get(
        None if source_differs is None or source_differs is pd.NA else bool(source_differs)
    )
    if states is None:
        unsupported = [release_text(job.release) for job in (old, new) if job.unsupported]
        what = f"the mode is unsupported in {' and '.join(unsupported)}" if unsupported else "no IR to compare"
        return {"equal_again_at": "", "statement": f"{n} and {o}: {what}"}
    if source is None:
        source = "no generated source to compare"
    unknown = next((p for p, state in enumerate(states) if state["difference"] is None), None)
    start = _divergence_start(old, new, ops, states, row)
    if start is None:
        if unknown is None:
            said = f"{n} is the same as {o} at every pass"
        elif unknown == 0:
            said = f"{n} and {o}: {_stop_words(old, new, ops, 0)}"
        else:
            said = f"{n} is the same as {o} up to {_pass_at(ops, unknown - 1, old, new)}; "
            said += _stop_words(old, new, ops, unknown)
        return {"equal_again_at": "", "statement": f"{said}; {source}"}
    position, words = start
    again, end = "", "does not reconverge"
    for p in range(position, len(ops)):
        if states[p]["difference"] is None:
            end = _stop_words(old, new, ops, p)
            break
        if states[p]["ir_equal_after"] and not _nested(ops[p], old, new):
            again = _pass_at(ops, p, old, new)
            later = next((q for q in range(p + 1, len(ops)) if states[q]["ir_equal_after"] is False
                          and not _nested(ops[q], old, new)), None)  # fmt: skip
            if later is None:
                end = f"reconverges at {again}"
            else:  # equal for a while only: say where it differs again
                end = f"is equal again after {again} but differs again from {_pass_at(ops, later, old, new)}"
            break
    return {"equal_again_at": again, "statement": f"{n} differs from {o} from {words}; {end}; {source}"}


def _first_divergent_edit(old: ReleaseJob, new: ReleaseJob, ops: list, edits_old: dict, edits_new: dict, notes) -> dict:
    """The first kept pair of runs whose edits differ (pass_edits), counts of differing and unknown edits."""
    out: dict = {"edit_differs_runs": 0, "edit_unknown_runs": 0}
    first = None
    gap: list[str] = []  # added/removed runs that edited the IR, since the last kept pair with the same edit
    for op, i, j in ops:
        if op != KEPT:
            job, index = (old, i) if op == REMOVED else (new, j)
            run = (edits_old if op == REMOVED else edits_new).get(int(job.run_list()[index]["step"]))
            if first is None and run is not None and (run.edit is None or not run.edit.empty):
                size = run.edit.size() if run.edit is not None else "edit unknown"
                label = job.label(job.run_list()[index])
                gap.append(f"{op} {label} ({release_text(job.release)} step {run.step}, {size})")
            continue
        run_old = edits_old.get(int(old.run_list()[i]["step"]))
        run_new = edits_new.get(int(new.run_list()[j]["step"]))
        same = pass_edits.same_edit(run_old, run_new)
        if same is None:
            out["edit_unknown_runs"] += 1
        elif not same:
            out["edit_differs_runs"] += 1
            if first is None:
                first = (run_old, run_new)
                first_label = new.label(new.run_list()[j])
                if gap:
                    notes.append("first divergent edit follows " + ", ".join(gap))
        elif first is None and not (run_old.edit is not None and run_old.edit.empty):
            gap = []  # a pass that did the same to both (a no-op on both sides does not end the gap)
    if first is not None:
        run_old, run_new = first
        out.update(
            first_divergent_edit=first_label,
            first_divergent_edit_step_old=run_old.step,
            first_divergent_edit_step_new=run_new.step,
        )
        for suffix, run in (("old", run_old), ("new", run_new)):
            if run.edit is not None:
                out[f"edit_added_{suffix}"] = len(run.edit.added)
                out[f"edit_deleted_{suffix}"] = len(run.edit.removed)
    if out["edit_unknown_runs"]:
        notes.append(
            f"{out['edit_unknown_runs']} kept runs with an unknown edit (nested runs, or the archive lacks the IR "
            "they started from)"
        )
    return out


def divergence(
    churn_df: pd.DataFrame,
    archives: Mapping[tuple, str | os.PathLike] | None = None,
    edits: pass_edits.EditCache | None = None,
    configs: list[Configuration] | None = None,
) -> pd.DataFrame:
    """Where the printed IR of consecutive releases first differs (DIVERGENCE_COLUMNS, module docstring).

    ``archives`` maps job keys (``job_key``) to IR archive paths; a job without one gets a note.
    """
    if edits is None:
        edits = pass_edits.EditCache(archives)  # each archive is read once, each job's edits computed once
    records = []
    for config in configs if configs is not None else configurations(churn_df):
        for old, new in config.pairs():
            records.append({**config.columns(), **_divergence_row(old, new, edits)})
    out = pd.DataFrame(records, columns=DIVERGENCE_COLUMNS)
    for column in (
        *_INT_KEY,
        "kept_runs",
        "removed_runs",
        "added_runs",
        "first_divergent_step_old",
        "first_divergent_step_new",
        *EDIT_COUNT_COLUMNS,
    ):
        out[column] = out[column].astype("Int64")
    for column in ("initial_ir_differs", "final_ir_differs", "ir_identical_throughout", "source_differs"):
        out[column] = out[column].astype("boolean")
    for column in ("first_divergent_pass", "note", "first_divergent_edit", *DIFFERENCE_TEXT_COLUMNS, *REVIEW_COLUMNS):
        out[column] = out[column].astype(object).fillna("").astype(str)
    return out


DIFFERENCE_TEXT_COLUMNS = ("differs_from", "reconverges_at", "introduced_by", "edits_differ_at", "difference_summary")
REVIEW_COLUMNS = ("tilelang_version_old", "tilelang_version_new", "equal_again_at", "statement")
