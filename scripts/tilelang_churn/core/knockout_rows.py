"""The row model of the pass knockout: results/knockout/runs/.../knockout.csv (one configuration) and
results/knockout/knockout.csv (all of them) share ``COLUMNS``; one writer, one reader.

One row per lowering of one kernel configuration (release x kernel and its parameters x target): the baseline
(``variant`` baseline: every pass runs) and one row per variant, a pass knocked out (TVM skips it: its
``should_run`` is False) in every run (``occurrence`` all) or in its N-th run only. config/README.md documents
every column (a test keeps that document in step). Standard library only.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import json
from pathlib import Path

from tilelang_churn.core import files, passes_table
from tilelang_churn.core.statuses import KNOCKOUT_STATUSES

BASELINE = "baseline"  # the variant that knocks out nothing
MODE = "knockout"  # the provenance column mode of every knockout row
SOURCE = "pass_knockout"  # the tool that computed the numbers: provenance column source
SOURCES = "sources.json.gz"  # beside a configuration's knockout.csv: every generated source once
SOURCES_FORMAT = 1
OCCURRENCE_ALL = "all"  # every run of the pass is skipped; else the 1-based run number

VARIANT_COLUMNS = [
    "variant",  # baseline, <pass> (every run) or <pass>#<N> (its N-th run)
    "knocked_pass",  # the pass as the run record names it; empty for the baseline
    "occurrence",  # all, or N: the N-th run of the pass (in the baseline's order) is skipped
    "pipeline_step",  # the baseline's step of the first skipped run: the pass's place in the pipeline
    "baseline_runs",  # how many times the pass runs in the baseline lowering
    "skipped_runs",  # how many runs TVM skipped in this lowering (0: the knockout did not take effect)
    "status",  # core/statuses.py KNOCKOUT_STATUSES
    "error",  # lower_failed: the exception's first line; timeout and crashed: what happened
    "source_sha256",  # sha256 of the generated kernel source (empty when lowering failed)
    "source_equal",  # the generated source is the baseline's, byte for byte
    "source_lines",  # lines of the generated source
    "source_added",  # lines of the generated source not in the baseline's (difflib, as the pass counts)
    "source_deleted",  # lines of the baseline's source not in this one
    "pass_runs",  # pass runs the tracer saw in this lowering
    "churn_total",  # +added + -deleted over this lowering's IR passes (raw, as passes.csv counts)
    "baseline_churn_total",  # the same over the baseline lowering
    "lower_seconds",  # wall seconds of this lowering (tilelang.lower under the tracer)
    "lower_cpu_seconds",  # CPU seconds of the child that lowered it, kernel build included
    "note",  # in words: no effect, not in the baseline, what the status means here
]
# provenance: passes.csv's columns (mode knockout, source pass_knockout), so a row joins the trace tables
COLUMNS = VARIANT_COLUMNS + passes_table.PROVENANCE_COLUMNS
INT_COLUMNS = (
    "pipeline_step",
    "baseline_runs",
    "skipped_runs",
    "source_lines",
    "source_added",
    "source_deleted",
    "pass_runs",
    "churn_total",
    "baseline_churn_total",
) + passes_table.PROVENANCE_INT_COLUMNS
BOOL_COLUMNS = ("source_equal",)
FLOAT_COLUMNS = ("lower_seconds", "lower_cpu_seconds")
_BOOLS = {"True": True, "False": False, "": None}


class TableError(ValueError):
    """A knockout table that is not complete: the message names the file and the line."""


def variant_name(pass_name: str | None, occurrence: int | None) -> str:
    """baseline, the pass (every run knocked out) or pass#N (its N-th run)."""
    if pass_name is None:
        return BASELINE
    return pass_name if occurrence is None else f"{pass_name}#{occurrence}"


def fingerprint(path: str | Path) -> dict:
    """Rows and sha256 of a written table, recorded beside it (knockout.json) for the readers' check."""
    data = Path(path).read_bytes()
    return {"rows": data.count(b"\n") - 1, "sha256": hashlib.sha256(data).hexdigest()}


def write_rows(path: str | Path, rows: list[dict]) -> None:
    passes_table.write_rows(path, rows, columns=COLUMNS)


def read_rows(path: str | Path, expected: dict | None = None) -> list[dict]:
    """The rows of a knockout table, typed. Refuses, naming the file and line, anything but a complete table:
    another header, a row cut short, no final newline, an unknown status, a cell of the wrong type; and, given
    ``expected`` (its fingerprint as written), a file changed since."""
    path = Path(path)
    with open(path, newline="", encoding="utf-8") as handle:
        text = handle.read()
    if not text.endswith("\n"):
        raise TableError(f"{path}: the last line is cut off (no final newline): a half-written file")
    if expected is not None and hashlib.sha256(text.encode("utf-8")).hexdigest() != expected.get("sha256"):
        raise TableError(
            f"{path}: {text.count(chr(10)) - 1} rows where its job wrote {expected.get('rows')} (knockout.json "
            "records its sha256): cut short or changed after the job"
        )
    reader = csv.reader(text.splitlines(keepends=True))
    header = next(reader, None)
    if header != COLUMNS:
        raise TableError(f"{path}: columns {header} are not the knockout.csv schema {COLUMNS}")
    rows = []
    for values in reader:
        line = reader.line_num
        if len(values) != len(COLUMNS):
            raise TableError(f"{path}, line {line}: {len(values)} cells where the schema has {len(COLUMNS)}")
        row = dict(zip(COLUMNS, values))
        key = None
        try:
            for key in INT_COLUMNS:
                row[key] = int(row[key]) if row[key] != "" else None
            for key in BOOL_COLUMNS:
                row[key] = _BOOLS[row[key]]
            for key in FLOAT_COLUMNS:
                row[key] = float(row[key]) if row[key] != "" else None
        except (ValueError, KeyError) as exc:
            raise TableError(f"{path}, line {line}: column {key!r} holds {row[key]!r}: {exc}") from None
        if row["status"] not in KNOCKOUT_STATUSES:
            raise TableError(
                f"{path}, line {line}: unknown status {row['status']!r}; allowed {list(KNOCKOUT_STATUSES)}"
            )
        rows.append(row)
    if not rows:
        raise TableError(f"{path}: no rows (every configuration writes at least its baseline row)")
    return rows


def write_sources(path: str | Path, variants: list[str], results: list[dict]) -> int:
    """Every generated source once, and which variant generated which (None: no source), gzip without a date."""
    texts: list[str] = []
    index: dict[str, int] = {}
    by_variant = {}
    for variant, result in zip(variants, results):
        source = result.get("source")
        if source is not None and source not in index:
            index[source] = len(texts)
            texts.append(source)
        by_variant[variant] = None if source is None else index[source]
    data = json.dumps({"format": SOURCES_FORMAT, "variants": by_variant, "texts": texts}).encode("utf-8")
    files.write_bytes(path, gzip.compress(data, mtime=0))
    return len(texts)


def read_sources(path: str | Path) -> dict[str, str | None]:
    """variant name -> its generated source (None: it generated none), from a configuration's sources.json.gz."""
    data = json.loads(gzip.decompress(Path(path).read_bytes()))
    if data.get("format") != SOURCES_FORMAT:
        raise ValueError(f"{path}: sources format {data.get('format')!r}, not {SOURCES_FORMAT}")
    return {name: None if i is None else data["texts"][i] for name, i in data["variants"].items()}
