"""The row model of passes.csv, churn.csv and churn_summary.csv: columns, statuses, one reader, one writer.

One row per pass step of one trace job. ``passes.csv`` (one job) and ``results/churn.csv`` (all jobs) share
``COLUMNS``; ``churn_summary.csv`` (one row per job) has ``SUMMARY_COLUMNS``. docs/outputs.md documents every
column and a test keeps that document in step. Reading and writing need only the standard library; the
The DataFrame view of a table is tables/frames.py. The readers refuse a table changed since it was written: a
passes.csv against its run.json, churn.csv against churn.json (``write_manifest``, by churn_table.py).
Every file goes through ``atomic_file``: a temporary renamed into place, removed on any error.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from pathlib import Path
from typing import TypedDict

from tilelang_churn.core import files, pass_configs, trace_modes

# status of a step: core/statuses.py's vocabulary (the meanings are there), re-exported under the names callers use
from tilelang_churn.core.statuses import (  # noqa: F401
    CHURN_STATUSES,
    STATUS_CHANGED,
    STATUS_CODEGEN,
    STATUS_FAILED,
    STATUS_NOOP,
    STATUS_UNSUPPORTED,
    STATUSES,
)

# Per-step columns, then provenance columns (who/what produced the numbers).
STEP_COLUMNS = [
    "step",
    "phase",
    "pass",
    # the pass's identity where ``pass`` names two (tl.Simplify, tirx.Simplify) or many (pass_fn): core/pass_names.py
    "pass_id",
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
NO_DEVICE = "none"  # the device column of a job built without a profile (lower case: pandas reads "None" as NA)
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
    # the kernel of the job (any kernel file: kernel/kernels.py): its name, its parameters as canonical JSON
    # (sorted keys), a readable label; the parameter columns above (PARAM_COLUMNS) are empty unless it fills them
    "kernel",
    "params",
    "kernel_label",
    # the TileLang pass configs (PassConfigKey options) the job lowered under, canonical JSON: {} for the defaults
    "pass_configs",
    # the name of the version entry (config `versions`): the release for a release, the name given to a wheel or
    # an environment
    "version_name",
    # the device profile the kernel was built under (config device: kernel/device_profiles.py), or none
    "device",
]
KERNEL_COLUMNS = ("kernel", "params", "kernel_label", "pass_configs")
# the columns a kernel's own parameters may fill (its file's COLUMNS: kernel/kernels.py), empty for a kernel that
# declares none; their meaning is fixed: a problem M x N x K, a block tile, element types, threads, stages
PARAM_COLUMNS = ("M", "N", "K", "block_M", "block_N", "block_K", "dtype", "accum_dtype", "threads", "stages")
# Columns added after tables were first written, each with the value a table without it reads as (so that a
# table written before, e.g. one recorded on a GPU, keeps being read): the readers fill them in.
ADDED_COLUMNS = {"pass_configs": pass_configs.DEFAULT, "pass_id": None, "version_name": None, "device": NO_DEVICE}
# an added column whose value in a table written before it is another column's of the same row
ADDED_FROM = {"pass_id": "pass", "knocked_pass_id": "knocked_pass", "version_name": "tilelang_version"}
# provenance columns added after the tables that follow PROVENANCE_COLUMNS with columns of their own were first
# written (churn_summary.csv, kernel_speed.csv, knockout.csv): those tables put them last, so no column moves
LATER_PROVENANCE = ("version_name", "device")
COLUMNS = STEP_COLUMNS + PROVENANCE_COLUMNS
PROVENANCE_INT_COLUMNS = ("M", "N", "K", "block_M", "block_N", "block_K", "threads", "stages")
INT_COLUMNS = ("step", "added", "deleted", "added_stripped", "deleted_stripped", "depth") + PROVENANCE_INT_COLUMNS
BOOL_COLUMNS = ("changed",)
FLOAT_COLUMNS = ("seconds",)


def _cell_type(column: str):
    for columns, kind in ((INT_COLUMNS, int), (BOOL_COLUMNS, bool), (FLOAT_COLUMNS, float)):
        if column in columns:
            return kind if column == "step" else kind | None
    return str


# One row as its producer builds it: every key a column (a key left out, or None, is an empty cell), ``status``
# one of STATUSES, the cells typed as read_rows types them. Typing only: a row is a plain dict, written as before.
PassRow = TypedDict("PassRow", {column: _cell_type(column) for column in COLUMNS}, total=False)

# The respects in which one job's kernel can differ from another's, each with its provenance columns (the
# book's figure 4 shows the configurations that differ from the reference in exactly one; the workflow decides
# from the grid with the same function whether that figure can be made).
KERNEL_AXES = {
    "target": ("target_name",),
    "shape": ("M", "N", "K"),
    "block": ("block_M", "block_N", "block_K"),
    "dtype": ("dtype", "accum_dtype"),
    "threads": ("threads",),
    "stages": ("stages",),
    "pass_configs": ("pass_configs",),
}


def differing_axes(job: dict, reference: dict) -> list[str]:
    """The KERNEL_AXES in which job differs from reference (dicts holding the provenance columns)."""
    return [axis for axis, columns in KERNEL_AXES.items() if any(job[c] != reference[c] for c in columns)]


# the sums over a job's changed/noop rows: churn_summary.csv, and churn_by_version.csv per release
TOTAL_COLUMNS = (
    "added_total",
    "deleted_total",
    "churn_total",
    "added_stripped_total",
    "deleted_stripped_total",
    "churn_stripped_total",
)
# churn_summary.csv: the job's provenance, then its counts (meanings in docs/outputs.md and churn_table.py).
SUMMARY_COUNT_COLUMNS = [
    "pass_steps",
    "churn_steps",
    "changed_steps",
    "noop_steps",
    "failed_steps",
    "codegen_steps",
    "unsupported_steps",
    *TOTAL_COLUMNS,
    "top_pass",
    "top_pass_step",
    "top_pass_churn",
    "first_error",
]
# the kernel's columns after the counts, where the summary had no column before them, and the later ones last
SUMMARY_COLUMNS = (
    [column for column in PROVENANCE_COLUMNS if column not in KERNEL_COLUMNS + LATER_PROVENANCE]
    + SUMMARY_COUNT_COLUMNS
    + list(KERNEL_COLUMNS)
    + list(LATER_PROVENANCE)
)
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


def write_rows(path: str | Path, rows: list[dict], columns=COLUMNS, cell=None) -> None:
    """Write rows in the columns' order (passes.csv's by default); a missing key is an empty cell, an unknown key
    is an error. ``cell`` formats a value (default: this table's ``_cell``)."""
    cell = cell or _cell
    with files.atomic_file(path) as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="raise", lineterminator="\n")
        writer.writeheader()
        for row in rows:
            for column, source in ADDED_FROM.items():  # a row that is no pass run: its identity is its name
                if column in columns and not row.get(column) and row.get(source):
                    row = {**row, column: row[source]}
            writer.writerow({key: cell(value) for key, value in row.items()})


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
    return pass_configs.shorter_option_error(" ".join(line.strip() for line in lines[:3]))


def failed_row(step: int, phase: str, name: str, error: BaseException | str, **columns) -> PassRow:
    """The one failed row, whoever makes it (a pass that raised, a failure outside every pass, the set-up): no
    counts, ``error`` the exception's ``error_text`` or the given text as it is. ``columns`` adds the maker's
    other cells (depth, seconds); a cell left out is empty in passes.csv."""
    return {
        "step": step,
        "phase": phase,
        "pass": name,
        "status": STATUS_FAILED,
        "changed": None,
        "added": None,
        "deleted": None,
        **columns,
        "error": error_text(error) if isinstance(error, BaseException) else error,
    }


def fingerprint(path: str | Path) -> dict:
    """Rows and sha256 of a written passes.csv, kept in the job's run.json for the readers' check."""
    data = Path(path).read_bytes()
    return {"rows": data.count(b"\n") - 1, "sha256": hashlib.sha256(data).hexdigest()}


def manifest_path(table: str | Path) -> Path:
    """The manifest beside a gathered table: results/churn.csv -> results/churn.json."""
    return Path(table).with_suffix(".json")


def write_manifest(table: str | Path, sha256: str, parts: list[dict], writer: str) -> Path:
    """Write (atomically, after the table) what the readers check a gathered table against: its rows and
    sha256, and per part (one input passes.csv) its line range and sha256, so that a mismatch names the lines."""
    table = Path(table)
    rows = sum(part["lines"][1] - part["lines"][0] + 1 for part in parts)
    manifest = {"table": table.name, "written_by": writer, "rows": rows, "sha256": sha256, "parts": parts}
    path = manifest_path(table)
    with files.atomic_file(path) as handle:
        json.dump(manifest, handle, indent=1)
        handle.write("\n")
    return path


# ---------------------------------------------------------------------------------------------- reading


def read_rows(path: str | Path) -> list[dict]:
    """Read a passes.csv (or churn.csv) with integer and boolean columns typed (see ``read_table``)."""
    return read_table(path)[1]


def read_table(path: str | Path) -> tuple[str, list[dict]]:
    """The text of a passes.csv (or churn.csv) and its rows, integer and boolean columns typed.

    Refuses, naming the file and line, anything but a complete table: another header, a row with too few or
    too many cells (a file cut mid-row), a file that does not end with a newline, an unknown status or mode,
    a cell that should be an integer or a boolean and is not, and a table without rows; and a file changed
    since it was written: a passes.csv whose run.json, or a churn.csv whose churn.json, records other rows or
    another sha256.
    """
    path = Path(path)
    with open(path, newline="", encoding="utf-8") as handle:
        text = handle.read()
    if not text.endswith("\n"):
        raise TableError(f"{path}: the last line is cut off (no final newline): a half-written file")
    _check_against_run_json(path, text)
    _check_against_manifest(path, text)
    rows = []
    for line, row in typed_rows(path, text, COLUMNS, "the passes.csv schema", INT_COLUMNS, BOOL_COLUMNS, FLOAT_COLUMNS):
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


def typed_rows(path: Path, text: str, columns: list[str], schema: str, ints=(), bools=(), floats=(),
               added: dict | None = None):  # fmt: skip
    """(line, row) of each row of a CSV text with the header COLUMNS, the cells of INTS, BOOLS and FLOATS typed
    (an empty cell None); a TableError naming PATH and the line for another header, a row with too few or too
    many cells, or a cell that is not its type. A header that lacks only columns of ADDED (default
    ADDED_COLUMNS: added to the schema since) is read with their values filled in. The one typed reader of the
    project's tables."""
    added = ADDED_COLUMNS if added is None else added
    reader = csv.reader(text.splitlines(keepends=True))
    header = next(reader, None)
    missing = {column: added[column] for column in columns if column in added and column not in (header or ())}
    if header != columns and header != [column for column in columns if column not in missing]:
        raise TableError(f"{path}: columns {header} are not {schema} {columns}")
    ints, bools, floats = ([column for column in kind if column in columns] for kind in (ints, bools, floats))
    for values in reader:
        line = reader.line_num
        if len(values) != len(header):
            raise TableError(f"{path}, line {line}: {len(values)} cells where the schema has {len(header)}")
        if missing:
            given = dict(zip(header, values))
            row = {column: given[column] if column in given else missing[column] for column in columns}
            for column, source in ADDED_FROM.items():
                if column in missing:
                    row[column] = row.get(source)
        else:
            row = dict(zip(columns, values))
        try:
            for key in ints:
                row[key] = int(row[key]) if row[key] != "" else None
            for key in bools:
                row[key] = _BOOLS[row[key]]
            for key in floats:
                row[key] = float(row[key]) if row[key] != "" else None
        except (ValueError, KeyError) as exc:
            raise TableError(f"{path}, line {line}: column {key!r} holds {row[key]!r}: {exc}") from None
        yield line, row


def in_columns(text: str, columns: list[str] = COLUMNS, added: dict | None = None) -> str:
    """The text of a table written before columns of ADDED (default ADDED_COLUMNS) were added, as it would be written
    now: the header COLUMNS, each cell it has as it is, an added cell its ADDED_FROM column's or its ADDED value.
    The text itself when its header is COLUMNS (a table that lacks others is for typed_rows to refuse)."""
    lines = text.splitlines(keepends=True)
    header = next(csv.reader(lines[:1]), [])
    if header == columns:
        return text
    added = ADDED_COLUMNS if added is None else added
    handle = io.StringIO()
    writer = csv.writer(handle, lineterminator="\n")
    writer.writerow(columns)
    for values in csv.reader(lines[1:]):
        given = dict(zip(header, values))
        for column in columns:
            if column not in given:
                source = ADDED_FROM.get(column)
                given[column] = given[source] if source in given else _cell(added.get(column))
        writer.writerow([given[column] for column in columns])
    return handle.getvalue()


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


def _check_against_manifest(path: Path, text: str) -> None:
    """A gathered table (churn.csv) with its manifest beside it (churn.json) must be the file its writer wrote:
    an edited cell, or rows added or removed, is refused naming the lines that differ and how to rebuild it."""
    manifest = manifest_path(path)
    if path.name == "passes.csv" or not manifest.is_file():
        return
    try:
        recorded = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise TableError(
            f"{manifest}: not readable JSON, so {path} cannot be checked; delete {path} to rebuild both"
        ) from None
    if not isinstance(recorded, dict) or recorded.get("table") != path.name:
        return  # another file that happens to share the stem
    data = text.encode("utf-8")
    if hashlib.sha256(data).hexdigest() == recorded.get("sha256"):
        return
    writer = recorded.get("written_by", "its writer")
    lines = text.splitlines(keepends=True)
    rows = len(lines) - 1
    if rows != recorded.get("rows"):
        what = f"{rows} rows where it wrote {recorded.get('rows')}"
    else:
        what = f"its {rows} rows, but other bytes in line 1 (the header)"
        for part in recorded.get("parts", []):
            first, last = part["lines"]
            if hashlib.sha256("".join(lines[first - 1 : last]).encode("utf-8")).hexdigest() != part["sha256"]:
                what = f"its {rows} rows, but other bytes in lines {first}-{last} (the rows of {part['passes_csv']})"
                break
    raise TableError(
        f"{path}: changed after {writer} wrote it ({manifest.name} records its sha256): {what}; "
        f"delete {path} to rebuild it from the jobs' passes.csv"
    )
