"""The row model of passes.csv, churn.csv and churn_summary.csv: columns, statuses, one reader, one writer.

One row per pass step of one trace job. ``passes.csv`` (one job) and ``results/churn.csv`` (all jobs) share
``COLUMNS``; ``churn_summary.csv`` (one row per job) has ``SUMMARY_COLUMNS``. config/README.md documents every
column and a test keeps that document in step. Reading and writing need only the standard library; the
DataFrame helpers import pandas when called.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
from pathlib import Path

import trace_modes

# status of a step: changed/noop are IR-to-IR passes; codegen compares TIR with generated source and is never
# churn; failed is a pass (or codegen, or the set-up) that raised, its text in ``error``; unsupported is the one
# row of a job whose mode the TileLang release lacks (e.g. lower_trace before 0.1.13), the reason in ``error``.
STATUS_CHANGED = "changed"
STATUS_NOOP = "noop"
STATUS_FAILED = "failed"
STATUS_CODEGEN = "codegen"
STATUS_UNSUPPORTED = "unsupported"
STATUSES = (STATUS_CHANGED, STATUS_NOOP, STATUS_FAILED, STATUS_CODEGEN, STATUS_UNSUPPORTED)
CHURN_STATUSES = (STATUS_CHANGED, STATUS_NOOP)

# Per-step columns, then provenance columns (who/what produced the numbers).
STEP_COLUMNS = [
    "step",
    "phase",
    "pass",
    "status",
    "changed",
    "added",
    "deleted",
    # the same count with lines compared without leading/trailing whitespace (line_churn.py); empty when the
    # mode has no IR text to count from
    "added_stripped",
    "deleted_stripped",
    "depth",
    "seconds",
    "error",
]
PROVENANCE_COLUMNS = [
    "tilelang_version",
    "target_name",
    "target",
    "M",
    "N",
    "K",
    "block_M",
    "block_N",
    "block_K",
    "dtype",
    "accum_dtype",
    "threads",
    "stages",
    "mode",
    "source",
]
COLUMNS = STEP_COLUMNS + PROVENANCE_COLUMNS
PROVENANCE_INT_COLUMNS = ("M", "N", "K", "block_M", "block_N", "block_K", "threads", "stages")
INT_COLUMNS = ("step", "added", "deleted", "added_stripped", "deleted_stripped", "depth") + PROVENANCE_INT_COLUMNS
BOOL_COLUMNS = ("changed",)
FLOAT_COLUMNS = ("seconds",)

# A job is told apart by its provenance: target_name names the target dict and mode fixes the source.
JOB_KEY = [column for column in PROVENANCE_COLUMNS if column not in ("target", "source")]

# churn_summary.csv: the job's provenance, then its counts (meanings in config/README.md and churn_table.py).
SUMMARY_COUNT_COLUMNS = [
    "pass_steps",
    "churn_steps",
    "changed_steps",
    "noop_steps",
    "failed_steps",
    "codegen_steps",
    "unsupported_steps",
    "added_total",
    "deleted_total",
    "churn_total",
    "added_stripped_total",
    "deleted_stripped_total",
    "churn_stripped_total",
    "top_pass",
    "top_pass_step",
    "top_pass_churn",
    "first_error",
]
SUMMARY_COLUMNS = PROVENANCE_COLUMNS + SUMMARY_COUNT_COLUMNS
SUMMARY_INT_COLUMNS = PROVENANCE_INT_COLUMNS + (
    "added_stripped_total",
    "deleted_stripped_total",
    "churn_stripped_total",
    "top_pass_step",
)

_BOOLS = {"True": True, "False": False, "": None}


class TableError(ValueError):
    """A table that is not a complete passes.csv: the message names the file and the line."""


# ---------------------------------------------------------------------------------------------- writing


def write_rows(path: str | Path, rows: list[dict]) -> None:
    """Write rows in COLUMNS order; a missing key is an empty cell, an unknown key is an error."""
    with atomic_file(path) as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, extrasaction="raise", lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({key: _cell(value) for key, value in row.items()})


def write_frame(df, path: str | Path) -> None:
    """Write a DataFrame (churn.csv, churn_summary.csv) atomically."""
    with atomic_file(path) as handle:
        df.to_csv(handle, index=False, lineterminator="\n")


class atomic_file:
    """Open a sibling temporary file for writing and rename it over ``path`` only when the block succeeds,
    so no reader ever sees a half-written table."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")

    def __enter__(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.handle = open(self.tmp, "w", newline="", encoding="utf-8")
        return self.handle

    def __exit__(self, exc_type, exc, tb):
        self.handle.close()
        if exc_type is None:
            os.replace(self.tmp, self.path)
        else:
            self.tmp.unlink(missing_ok=True)
        return False


def _cell(value):
    if value is None:
        return ""
    if isinstance(value, str):
        # one physical line per row keeps the table greppable; the full text is in the run's log
        return " ".join(value.split())
    return value


# TVM's diagnostics quote the kernel source: "  --> k.py:12:1", "     |", " 33 |   C_local = ..."
_SOURCE_EXCERPT = re.compile(r"^\s*(-->|\d*\s*\|)")


def error_text(error: BaseException | str) -> str:
    """Exception type and message without TVM's source-excerpt lines, on one line (at most 3 lines joined)."""
    if isinstance(error, BaseException):
        message = str(error).strip()
        text = f"{type(error).__name__}: {message}" if message else type(error).__name__
    else:
        text = error
    lines = [line for line in text.splitlines() if line.strip() and not _SOURCE_EXCERPT.match(line)]
    return " ".join(line.strip() for line in lines[:3])


def fingerprint(path: str | Path) -> dict:
    """Rows and sha256 of a written passes.csv, kept in the job's run.json for the readers' check."""
    data = Path(path).read_bytes()
    return {"rows": data.count(b"\n") - 1, "sha256": hashlib.sha256(data).hexdigest()}


# ---------------------------------------------------------------------------------------------- reading


def read_rows(path: str | Path) -> list[dict]:
    """Read a passes.csv (or churn.csv) with integer and boolean columns typed (see ``read_table``)."""
    return read_table(path)[1]


def read_table(path: str | Path) -> tuple[str, list[dict]]:
    """The text of a passes.csv (or churn.csv) and its rows, integer and boolean columns typed.

    Refuses, naming the file and line, anything but a complete table: another header, a row with too few or
    too many cells (a file cut mid-row), a file that does not end with a newline, an unknown status or mode,
    a cell that should be an integer or a boolean and is not, and a table without rows.
    """
    path = Path(path)
    with open(path, newline="", encoding="utf-8") as handle:
        text = handle.read()
    if not text.endswith("\n"):
        raise TableError(f"{path}: the last line is cut off (no final newline): a half-written file")
    _check_against_run_json(path, text)
    reader = csv.reader(text.splitlines(keepends=True))
    header = next(reader, None)
    if header != COLUMNS:
        raise TableError(f"{path}: columns {header} are not the passes.csv schema {COLUMNS}")
    rows = []
    for values in reader:
        line = reader.line_num
        if len(values) != len(COLUMNS):
            raise TableError(f"{path}, line {line}: {len(values)} cells where the schema has {len(COLUMNS)}")
        row = dict(zip(COLUMNS, values))
        try:
            for key in INT_COLUMNS:
                row[key] = int(row[key]) if row[key] != "" else None
            for key in BOOL_COLUMNS:
                row[key] = _BOOLS[row[key]]
            for key in FLOAT_COLUMNS:
                row[key] = float(row[key]) if row[key] != "" else None
        except (ValueError, KeyError) as exc:
            raise TableError(f"{path}, line {line}: column {key!r} holds {row[key]!r}: {exc}") from None
        if row["status"] not in STATUSES:
            raise TableError(f"{path}, line {line}: unknown status {row['status']!r}; allowed {list(STATUSES)}")
        if row["mode"] not in trace_modes.MODES:
            raise TableError(f"{path}, line {line}: unknown mode {row['mode']!r}; known {list(trace_modes.MODES)}")
        if row["step"] is None:
            raise TableError(f"{path}, line {line}: empty step")
        rows.append(row)
    if not rows:
        raise TableError(f"{path}: no rows (every job writes at least one row, even a failure)")
    return text, rows


def _check_against_run_json(path: Path, text: str) -> None:
    """A job's passes.csv must be the file its run wrote (run.json beside it records rows and sha256): a file
    cut exactly at a row boundary, or changed afterwards, parses but is refused here."""
    run_json = path.with_name("run.json")
    if path.name != "passes.csv" or not run_json.is_file():
        return
    try:
        recorded = json.loads(run_json.read_text(encoding="utf-8")).get("passes_csv")
    except (OSError, ValueError):
        raise TableError(f"{run_json}: not readable JSON, so {path} cannot be checked") from None
    if not recorded:
        return  # written before run.json recorded it
    data = text.encode("utf-8")
    if hashlib.sha256(data).hexdigest() != recorded["sha256"]:
        rows = text.count("\n") - 1
        raise TableError(
            f"{path}: {rows} rows where the run wrote {recorded['rows']} ({run_json.name} records its sha256): "
            "cut short or changed after the run"
        )


def to_frame(rows: list[dict]):
    """A DataFrame in COLUMNS order: integer columns nullable Int64, ``changed`` nullable boolean."""
    import pandas as pd

    df = pd.DataFrame(rows, columns=COLUMNS)
    for key in INT_COLUMNS:
        df[key] = df[key].astype("Int64")
    df["changed"] = df["changed"].astype("boolean")
    df["seconds"] = df["seconds"].astype("Float64")
    return df


def read_frame(path: str | Path):
    """``read_rows`` as a DataFrame (see ``to_frame``)."""
    return to_frame(read_rows(path))
