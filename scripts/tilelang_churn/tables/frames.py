"""A passes.csv table as a pandas DataFrame: typed columns (nullable Int64 counts, a nullable boolean
``changed``, Float64 seconds), read through passes_table's strict reader and written through the one atomic writer."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from tilelang_churn.core import files
from tilelang_churn.core import passes_table as pt
from tilelang_churn.core.jobs import JOB_KEY


def to_frame(rows: list[dict]) -> pd.DataFrame:
    """A DataFrame in passes_table.COLUMNS order: integer columns nullable Int64, ``changed`` nullable boolean."""
    df = pd.DataFrame(rows, columns=pt.COLUMNS)
    for key in pt.INT_COLUMNS:
        df[key] = df[key].astype("Int64")
    df["changed"] = df["changed"].astype("boolean")
    df["seconds"] = df["seconds"].astype("Float64")
    return df


def read_frame(path: str | Path) -> pd.DataFrame:
    """``passes_table.read_rows`` as a DataFrame (see ``to_frame``)."""
    return to_frame(pt.read_rows(path))


def write_frame(df: pd.DataFrame, path: str | Path) -> None:
    """Write a DataFrame (churn.csv, churn_summary.csv) atomically."""
    with files.atomic_file(path) as handle:
        df.to_csv(handle, index=False, lineterminator="\n")


def job_frames(df: pd.DataFrame) -> list[pd.DataFrame]:
    """``core.jobs.group_rows`` for a DataFrame: one frame per job (JOB_KEY), jobs in order of first appearance,
    each in step order with a fresh index."""
    return [
        rows.sort_values("step", kind="stable").reset_index(drop=True)
        for _, rows in df.groupby(JOB_KEY, sort=False, dropna=False)
    ]


def job_count(df: pd.DataFrame) -> int:
    """How many jobs (JOB_KEY) df holds, without a frame per job."""
    return df.groupby(JOB_KEY, sort=False, dropna=False).ngroups
