"""Gather per-job ``passes.csv`` tables into ``churn.csv`` and summarise each job into ``churn_summary.csv``.

Usage::

    python scripts/churn_table.py --out results/churn.csv --summary results/churn_summary.csv \\
        PASSES_CSV [PASSES_CSV ...]

``churn.csv`` is the row-wise concatenation of the inputs (columns ``passes_table.COLUMNS``, input order);
``churn.json`` beside it records its rows and sha256 (and each input's line range), and every reader of
churn.csv (``passes_table.read_table``) refuses a churn.csv that no longer matches it.
``churn_summary.csv`` has one row per job (``passes_table.SUMMARY_COLUMNS``), jobs in order of first
appearance; a job is told apart by ``core.jobs.JOB_KEY``. Churn counts only rows whose status is in
``passes_table.CHURN_STATUSES``: codegen rows (TIR -> generated source) are never churn, failed rows are
counted but carry no churn. Every column is documented in docs/outputs.md.
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import hashlib
import sys
from collections import Counter
from pathlib import Path

import pandas as pd

from tilelang_churn.core import files, pass_names
from tilelang_churn.core import passes_table as pt
from tilelang_churn.core.jobs import group_rows
from tilelang_churn.tables import frames


def read_tables(paths):
    """Yield (path, text, rows) of each passes.csv through the strict reader, in input order.

    Raises ValueError naming the file for a wrong header, a file without rows, an unknown status or a
    non-integer number; and naming both files when the same (job, step) appears twice.
    """
    paths = [Path(p) for p in paths]
    if not paths:
        raise ValueError("no passes.csv given")
    seen: dict[tuple, tuple[Path, set]] = {}  # job key -> (first file, its steps)
    for path in paths:
        text, rows = pt.read_table(path)
        for key, job_rows in group_rows(rows).items():
            steps = Counter(row["step"] for row in job_rows)
            first_path, first_steps = seen.get(key, (path, set()))
            repeated = sorted(step for step, count in steps.items() if step in first_steps or count > 1)
            if repeated:
                raise ValueError(
                    f"step {repeated[0]} of job {'/'.join(map(str, key))} appears more than once, in "
                    f"{sorted({str(first_path), str(path)})}"
                )
            first_steps.update(steps)
            seen[key] = (first_path, first_steps)
        yield path, text, rows


def gather(paths) -> pd.DataFrame:
    """Concatenate passes.csv files into one DataFrame (input order, columns exactly passes_table.COLUMNS);
    refusals as ``read_tables``."""
    return frames.to_frame([row for _, _, rows in read_tables(paths) for row in rows])


def summarize_job(rows: list[dict]) -> dict:
    """One churn_summary.csv row (SUMMARY_COLUMNS) from the rows of one job."""
    rows = sorted(rows, key=lambda row: row["step"])
    churn = [row for row in rows if row["status"] in pt.CHURN_STATUSES]
    added = [row["added"] or 0 for row in churn]
    deleted = [row["deleted"] or 0 for row in churn]
    statuses = [row["status"] for row in rows]
    out = {col: rows[0][col] for col in pt.PROVENANCE_COLUMNS}
    out.update(
        pass_steps=len(rows),
        churn_steps=len(churn),
        changed_steps=statuses.count(pt.STATUS_CHANGED),
        noop_steps=statuses.count(pt.STATUS_NOOP),
        failed_steps=statuses.count(pt.STATUS_FAILED),
        codegen_steps=statuses.count(pt.STATUS_CODEGEN),
        unsupported_steps=statuses.count(pt.STATUS_UNSUPPORTED),
        added_total=sum(added),
        deleted_total=sum(deleted),
        churn_total=sum(added) + sum(deleted),
        **_stripped_totals(churn),
        top_pass="",
        top_pass_step=None,
        top_pass_churn=0,
        first_error="",
    )
    per_step = [a + d for a, d in zip(added, deleted)]
    if per_step and max(per_step) > 0:
        top = per_step.index(max(per_step))  # first maximum; rows are sorted by step, so the earliest step
        # named as the figures name it: the short name, the identity where another pass of the job shares it
        shown = pass_names.display_names(map(pass_names.identity_of, rows))
        top_pass = shown[pass_names.identity_of(churn[top])]
        out.update(top_pass=top_pass, top_pass_step=churn[top]["step"], top_pass_churn=per_step[top])
    failed = [row for row in rows if row["status"] == pt.STATUS_FAILED]
    if failed:
        out["first_error"] = failed[0]["error"]
    return out


def _stripped_totals(churn: list[dict]) -> dict:
    """Totals of the whitespace-insensitive counts; empty when a churn row has none (no IR text to count)."""
    if any(row["added_stripped"] is None or row["deleted_stripped"] is None for row in churn):
        return dict(added_stripped_total=None, deleted_stripped_total=None, churn_stripped_total=None)
    added = sum(row["added_stripped"] for row in churn)
    deleted = sum(row["deleted_stripped"] for row in churn)
    return dict(added_stripped_total=added, deleted_stripped_total=deleted, churn_stripped_total=added + deleted)


def summary_frame(summaries: list[dict]) -> pd.DataFrame:
    out = pd.DataFrame(summaries, columns=pt.SUMMARY_COLUMNS)
    for col in pt.SUMMARY_INT_COLUMNS:
        out[col] = out[col].astype("Int64")
    return out


def summarize(df: pd.DataFrame) -> pd.DataFrame:
    """One row per job (SUMMARY_COLUMNS, see the module docstring), jobs in order of first appearance."""
    rows = df.astype(object).where(df.notna(), None).to_dict("records")
    return summary_frame([summarize_job(job_rows) for job_rows in group_rows(rows).values()])


def build_tables(passes_paths, churn_path, summary_path) -> int:
    """Gather, summarise and write both tables, and churn.json (``passes_table.write_manifest``: rows and
    sha256 of churn.csv, which its readers check) after churn.csv; 1 with one line on stderr when an input is
    refused or a file cannot be written (no table written then, no temporary left). Streams: each job's data
    lines go to churn.csv as the job wrote them (the reader has checked them and its run.json's sha256), so
    10,000 jobs need neither a DataFrame of all rows nor its memory."""
    jobs = rows = 0
    try:
        digest = hashlib.sha256()
        parts = []
        with files.atomic_file(churn_path) as churn:
            header = ",".join(pt.COLUMNS) + "\n"
            churn.write(header)
            digest.update(header.encode("utf-8"))
            summaries = []
            line = 2  # the first data line; the header is line 1
            for path, text, table_rows in read_tables(passes_paths):
                # a passes.csv written before a column was added: its lines as the reader reads them, in COLUMNS
                text = pt.in_columns(text)
                body = text[text.index("\n") + 1 :]
                churn.write(body)
                data = body.encode("utf-8")
                digest.update(data)
                count = body.count("\n")
                sha256 = hashlib.sha256(data).hexdigest()
                parts.append({"passes_csv": str(path), "lines": [line, line + count - 1], "sha256": sha256})
                line += count
                job_summaries = [summarize_job(job_rows) for job_rows in group_rows(table_rows).values()]
                summaries.extend(job_summaries)
                rows += len(table_rows)
                jobs += len(job_summaries)
        try:
            manifest = pt.write_manifest(churn_path, digest.hexdigest(), parts, writer="churn_table.py")
        except OSError:
            Path(churn_path).unlink(missing_ok=True)  # without its manifest no reader could check it
            raise
        frames.write_frame(summary_frame(summaries), summary_path)
    except (OSError, ValueError) as exc:
        print(f"churn_table: error: {exc}", file=sys.stderr)
        return 1
    print(f"churn_table: {rows} rows of {jobs} job(s) -> {churn_path} ({manifest.name}), {summary_path}")
    return 0
