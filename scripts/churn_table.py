"""Gather per-job ``passes.csv`` tables into ``churn.csv`` and summarise each job into ``churn_summary.csv``.

Usage::

    python scripts/churn_table.py --out results/churn.csv --summary results/churn_summary.csv \\
        PASSES_CSV [PASSES_CSV ...]

``churn.csv`` is the row-wise concatenation of the inputs (columns ``passes_table.COLUMNS``, input order).
``churn_summary.csv`` has one row per job (``passes_table.SUMMARY_COLUMNS``), jobs in order of first
appearance; a job is told apart by ``passes_table.JOB_KEY``. Churn counts only rows whose status is in
``passes_table.CHURN_STATUSES``: codegen rows (TIR -> generated source) are never churn, failed rows are
counted but carry no churn. Every column is documented in config/README.md.
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import argparse
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pandas as pd
import passes_table as pt

JOB_KEY = pt.JOB_KEY


def gather(paths) -> pd.DataFrame:
    """Concatenate passes.csv files (input order, columns exactly passes_table.COLUMNS).

    Raises ValueError naming the file for a wrong header, a file without rows, an unknown status or a
    non-integer number; and naming both files when the same (job, step) appears twice.
    """
    paths = [Path(p) for p in paths]
    if not paths:
        raise ValueError("no passes.csv given")
    rows, files = [], []
    for path in paths:
        job_rows = pt.read_rows(path)
        rows.extend(job_rows)
        files.extend([str(path)] * len(job_rows))
    out = pt.to_frame(rows)
    dup = out.duplicated(subset=JOB_KEY + ["step"], keep=False)
    if dup.any():
        first = out[dup].sort_values("step", kind="stable").iloc[0]
        where = pd.Series(files)[dup & (out["step"] == first["step"])]
        raise ValueError(
            f"step {first['step']} of job {_job_label(first)} appears more than once, in {sorted(set(where))}"
        )
    return out


def _job_label(row) -> str:
    return "/".join(str(row[c]) for c in JOB_KEY)


def _summarize_job(job: pd.DataFrame) -> dict:
    job = job.sort_values("step", kind="stable")
    status = job["status"]
    churn = job[status.isin(pt.CHURN_STATUSES)]
    added = churn["added"].fillna(0).astype("int64")
    deleted = churn["deleted"].fillna(0).astype("int64")
    per_step = added + deleted
    first = job.iloc[0]
    out = {col: first[col] for col in pt.PROVENANCE_COLUMNS}
    out.update(
        pass_steps=len(job),
        churn_steps=len(churn),
        changed_steps=int((status == pt.STATUS_CHANGED).sum()),
        noop_steps=int((status == pt.STATUS_NOOP).sum()),
        failed_steps=int((status == pt.STATUS_FAILED).sum()),
        codegen_steps=int((status == pt.STATUS_CODEGEN).sum()),
        unsupported_steps=int((status == pt.STATUS_UNSUPPORTED).sum()),
        added_total=int(added.sum()),
        deleted_total=int(deleted.sum()),
        churn_total=int(added.sum() + deleted.sum()),
        **_stripped_totals(churn),
        top_pass="",
        top_pass_step=pd.NA,
        top_pass_churn=0,
        first_error="",
    )
    if len(per_step) and per_step.max() > 0:
        top = int(per_step.to_numpy().argmax())  # first maximum; rows are sorted by step, so earliest step
        out.update(
            top_pass=churn["pass"].iloc[top],
            top_pass_step=int(churn["step"].iloc[top]),
            top_pass_churn=int(per_step.iloc[top]),
        )
    failed = job[status == pt.STATUS_FAILED]
    if len(failed):
        out["first_error"] = failed.iloc[0]["error"]
    return out


def _stripped_totals(churn: pd.DataFrame) -> dict:
    """Totals of the whitespace-insensitive counts; empty when a churn row has none (no IR text to count)."""
    stripped = churn[["added_stripped", "deleted_stripped"]]
    if stripped.isna().any().any():
        return dict(added_stripped_total=pd.NA, deleted_stripped_total=pd.NA, churn_stripped_total=pd.NA)
    added, deleted = int(stripped["added_stripped"].sum()), int(stripped["deleted_stripped"].sum())
    return dict(added_stripped_total=added, deleted_stripped_total=deleted, churn_stripped_total=added + deleted)


def summarize(df: pd.DataFrame) -> pd.DataFrame:
    """One row per job (SUMMARY_COLUMNS, see the module docstring), jobs in order of first appearance."""
    if df.empty:
        return pd.DataFrame(columns=pt.SUMMARY_COLUMNS)
    groups = df.groupby(JOB_KEY, sort=False, dropna=False)
    rows = [_summarize_job(job) for _, job in groups]
    out = pd.DataFrame(rows, columns=pt.SUMMARY_COLUMNS)
    for col in pt.SUMMARY_INT_COLUMNS:
        out[col] = out[col].astype("Int64")
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description="Gather per-job passes.csv tables into churn.csv and churn_summary.csv."
    )
    parser.add_argument("--out", required=True, help="churn.csv: all rows of all inputs")
    parser.add_argument("--summary", required=True, help="churn_summary.csv: one row per job")
    parser.add_argument("passes", nargs="+", metavar="PASSES_CSV", help="per-job passes.csv files")
    args = parser.parse_args(argv)
    return build_tables(args.passes, args.out, args.summary)


def build_tables(passes_paths, churn_path, summary_path) -> int:
    """Gather, summarise and write both tables; 1 with one line on stderr when an input is refused."""
    try:
        df = gather(passes_paths)
        summary = summarize(df)
    except (OSError, ValueError) as exc:
        print(f"churn_table: error: {exc}", file=sys.stderr)
        return 1
    pt.write_frame(df, churn_path)
    pt.write_frame(summary, summary_path)
    print(f"churn_table: {len(df)} rows of {len(summary)} job(s) -> {churn_path}, {summary_path}")
    return 0


def _from_snakemake(smk) -> int:
    """The rule's `script:` entry: the snakemake object stays here, the logic above."""
    with open(smk.log[0], "w", encoding="utf-8") as log, redirect_stdout(log), redirect_stderr(log):
        return build_tables(list(smk.input), smk.output.churn, smk.output.summary)


if __name__ == "__main__":
    raise SystemExit(_from_snakemake(snakemake) if "snakemake" in globals() else main())  # noqa: F821
