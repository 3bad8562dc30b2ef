"""Gather per-job ``passes.csv`` tables into ``churn.csv`` and summarise each job into ``churn_summary.csv``.

Usage::

    python scripts/churn_table.py --out results/churn.csv --summary results/churn_summary.csv \\
        PASSES_CSV [PASSES_CSV ...]

``churn.csv`` is the row-wise concatenation of the inputs (columns exactly ``passes_table.COLUMNS``, input
order). ``churn_summary.csv`` has one row per job, jobs in order of first appearance. A job is identified by
``JOB_KEY`` (tilelang_version, target_name, M, N, K, block_M, block_N, block_K, dtype, accum_dtype, threads,
stages, mode). Churn counts only rows whose status is in ``passes_table.CHURN_STATUSES`` (changed, noop):
``codegen`` rows (TIR -> generated source) are never churn, ``failed`` rows are counted but carry no churn.

Summary columns (``SUMMARY_COLUMNS``):

- tilelang_version, target_name, target, M, N, K, block_M, block_N, block_K, dtype, accum_dtype, threads,
  stages, mode, source: the job's provenance, as in passes.csv (target and source from the job's first row).
- pass_steps: number of rows (pass steps) of the job, all statuses.
- churn_steps: rows with status changed or noop (the IR-to-IR passes that ran to completion).
- changed_steps: rows with status changed.
- noop_steps: rows with status noop.
- failed_steps: rows with status failed (0 or 1: lowering stops at the first failure).
- codegen_steps: rows with status codegen (not churn).
- added_total: sum of ``added`` over churn rows (empty cells count as 0).
- deleted_total: sum of ``deleted`` over churn rows (empty cells count as 0).
- churn_total: added_total + deleted_total.
- top_pass: pass name of the churn row with the largest added+deleted (ties: earliest step); empty when no
  churn row changed any line.
- top_pass_step: that row's step; empty when top_pass is empty.
- top_pass_churn: that row's added+deleted; 0 when top_pass is empty.
- first_error: ``error`` text of the job's first failed row (by step); empty when nothing failed.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import pandas as pd

import passes_table as pt

# target_name names the target dict and mode fixes the source, so these two add nothing to the key
JOB_KEY = [column for column in pt.PROVENANCE_COLUMNS if column not in ("target", "source")]
# provenance columns in passes.csv order: the job key plus target and source
JOB_COLUMNS = list(pt.PROVENANCE_COLUMNS)
COUNT_COLUMNS = [
    "pass_steps",
    "churn_steps",
    "changed_steps",
    "noop_steps",
    "failed_steps",
    "codegen_steps",
    "added_total",
    "deleted_total",
    "churn_total",
    "top_pass",
    "top_pass_step",
    "top_pass_churn",
    "first_error",
]
SUMMARY_COLUMNS = JOB_COLUMNS + COUNT_COLUMNS

_BOOL = {"True": True, "False": False, "": pd.NA}


def read_passes(path: str | Path) -> pd.DataFrame:
    """Read one passes.csv (or churn.csv) with the schema checked; integer columns are nullable Int64."""
    path = Path(path)
    with open(path, newline="", encoding="utf-8") as handle:
        header = next(csv.reader(handle), None)
    if header != pt.COLUMNS:
        raise ValueError(f"{path}: header {header} is not the passes.csv schema {pt.COLUMNS}")
    df = pd.read_csv(path, dtype=str, keep_default_na=False, na_filter=False, encoding="utf-8")
    if df.empty:
        raise ValueError(f"{path}: no rows (every job writes at least one row, even a failure)")
    bad = sorted(set(df["status"]) - set(pt.STATUSES))
    if bad:
        raise ValueError(f"{path}: unknown status {bad}; allowed {list(pt.STATUSES)}")
    for col in pt.INT_COLUMNS:
        try:
            df[col] = pd.to_numeric(df[col].replace("", None)).astype("Int64")
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{path}: column {col!r} is not integer: {exc}") from exc
    if df["step"].isna().any():
        raise ValueError(f"{path}: empty step at row(s) {list(df.index[df['step'].isna()] + 2)}")
    bad_changed = sorted(set(df["changed"]) - set(_BOOL))
    if bad_changed:
        raise ValueError(f"{path}: column 'changed' has {bad_changed}; expected True, False or empty")
    df["changed"] = df["changed"].map(_BOOL).astype("boolean")
    return df[pt.COLUMNS]


def gather(paths) -> pd.DataFrame:
    """Concatenate passes.csv files (input order, columns exactly passes_table.COLUMNS).

    Raises ValueError naming the file for a wrong header, a file without rows, an unknown status or a
    non-integer number; and naming both files when the same (job, step) appears twice.
    """
    paths = [Path(p) for p in paths]
    if not paths:
        raise ValueError("no passes.csv given")
    frames = []
    for path in paths:
        df = read_passes(path)
        df["_file"] = str(path)
        frames.append(df)
    out = pd.concat(frames, ignore_index=True)
    dup = out.duplicated(subset=JOB_KEY + ["step"], keep=False)
    if dup.any():
        first = out[dup].sort_values("step", kind="stable").iloc[0]
        files = sorted(set(out.loc[dup & (out["step"] == first["step"]), "_file"]))
        raise ValueError(f"step {first['step']} of job {_job_label(first)} appears more than once, in {files}")
    return out[pt.COLUMNS]


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
    out = {col: first[col] for col in JOB_COLUMNS}
    out.update(
        pass_steps=len(job),
        churn_steps=len(churn),
        changed_steps=int((status == "changed").sum()),
        noop_steps=int((status == "noop").sum()),
        failed_steps=int((status == "failed").sum()),
        codegen_steps=int((status == "codegen").sum()),
        added_total=int(added.sum()),
        deleted_total=int(deleted.sum()),
        churn_total=int(added.sum() + deleted.sum()),
        top_pass="",
        top_pass_step=pd.NA,
        top_pass_churn=0,
        first_error="",
    )
    if len(per_step) and per_step.max() > 0:
        top = int(per_step.to_numpy().argmax())  # first maximum; rows are sorted by step, so earliest step
        out.update(top_pass=churn["pass"].iloc[top], top_pass_step=int(churn["step"].iloc[top]),
                   top_pass_churn=int(per_step.iloc[top]))
    failed = job[status == "failed"]
    if len(failed):
        out["first_error"] = failed.iloc[0]["error"]
    return out


def summarize(df: pd.DataFrame) -> pd.DataFrame:
    """One row per job (SUMMARY_COLUMNS, see the module docstring), jobs in order of first appearance."""
    if df.empty:
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    groups = df.groupby(JOB_KEY, sort=False, dropna=False)
    rows = [_summarize_job(job) for _, job in groups]
    out = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    for col in pt.INT_COLUMNS:
        if col in out:
            out[col] = out[col].astype("Int64")
    out["top_pass_step"] = out["top_pass_step"].astype("Int64")
    return out


def write_csv(df: pd.DataFrame, path: str | Path) -> None:
    """Write a table atomically: a sibling .tmp file, then rename over the target."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    try:
        df.to_csv(tmp, index=False, lineterminator="\n", encoding="utf-8")
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="churn.csv: all rows of all inputs")
    parser.add_argument("--summary", required=True, help="churn_summary.csv: one row per job")
    parser.add_argument("passes", nargs="+", metavar="PASSES_CSV", help="per-job passes.csv files")
    args = parser.parse_args(argv)
    try:
        df = gather(args.passes)
        summary = summarize(df)
    except (OSError, ValueError) as exc:
        print(f"churn_table: error: {exc}", file=sys.stderr)
        return 1
    write_csv(df, args.out)
    write_csv(summary, args.summary)
    print(f"churn_table: {len(df)} rows of {len(summary)} job(s) -> {args.out}, {args.summary}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
