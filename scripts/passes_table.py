"""The per-pass table: column order, allowed values, CSV read/write (standard library only).

One row per pass step of one trace job. ``passes.csv`` (one job) and ``results/churn.csv`` (all jobs)
share these columns; config/README.md documents them and a test keeps that document in step.
"""

from __future__ import annotations

import csv
from pathlib import Path

# Per-step columns, then provenance columns (who/what produced the numbers).
STEP_COLUMNS = ["step", "phase", "pass", "status", "changed", "added", "deleted", "depth", "error"]
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

# status: "changed"/"noop" are IR-to-IR passes; "codegen" compares TIR with generated source and is never
# churn; "failed" is a pass (or codegen) that raised, its text in ``error``.
STATUSES = ("changed", "noop", "failed", "codegen")
CHURN_STATUSES = ("changed", "noop")

# source: which code computed added/deleted.
SOURCE_BY_MODE = {
    # difflib.SequenceMatcher over the run record's <NN>_<Pass>_before/_after files, as report.html counts.
    "trace-env": "run_record",
    # the dicts returned by tilelang.tools.lower_trace.lower_trace (unified diff, context 3).
    "trace-api": "lower_trace",
    # the dicts returned by tilelang.utils.pass_diff.pass_diff (its own unified diff).
    "pass-diff": "pass_diff",
}
MODES = tuple(SOURCE_BY_MODE)

INT_COLUMNS = ("step", "added", "deleted", "depth", "M", "N", "K", "block_M", "block_N", "block_K", "threads", "stages")


def write_rows(path: str | Path, rows: list[dict]) -> None:
    """Write rows in COLUMNS order; a missing key is an empty cell, an unknown key is an error."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, extrasaction="raise", lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({key: _cell(value) for key, value in row.items()})
    tmp.replace(path)  # never leave a half-written table behind


def read_rows(path: str | Path) -> list[dict]:
    """Read a passes.csv back with integer and boolean columns typed."""
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        if reader.fieldnames != COLUMNS:
            raise ValueError(f"{path}: columns {reader.fieldnames} are not the passes.csv schema {COLUMNS}")
        rows = []
        for raw in reader:
            row: dict = dict(raw)
            for key in INT_COLUMNS:
                row[key] = int(row[key]) if row[key] != "" else None
            row["changed"] = {"True": True, "False": False, "": None}[row["changed"]]
            rows.append(row)
        return rows


def _cell(value):
    if value is None:
        return ""
    if isinstance(value, str):
        # one physical line per row keeps the table greppable; the full text is in the run's log
        return " ".join(value.split())
    return value


def error_text(error: BaseException | str) -> str:
    """Exception type and message without TVM's source-excerpt lines."""
    if isinstance(error, BaseException):
        message = str(error).strip()
        text = f"{type(error).__name__}: {message}" if message else type(error).__name__
    else:
        text = error
    lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith(("|", "-->"))]
    return " ".join(line.strip() for line in lines[:3])
