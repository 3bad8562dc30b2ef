"""A passes.csv table as a pandas DataFrame: typed columns (nullable Int64 counts, a nullable boolean
``changed``, Float64 seconds), read through passes_table's strict reader and written through the one atomic writer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from tilelang_churn.core import files
from tilelang_churn.core import passes_table as pt
from tilelang_churn.core.jobs import JOB_KEY


def to_frame(rows: list[dict]) -> pd.DataFrame:
    """A DataFrame in passes_table.COLUMNS order: integer columns nullable Int64, ``changed`` nullable boolean;
    ``version_name`` the row's ``tilelang_version`` where a row lacks it (``with_version_names``)."""
    df = pd.DataFrame(rows, columns=pt.COLUMNS)
    for key in pt.INT_COLUMNS:
        df[key] = df[key].astype("Int64")
    df["changed"] = df["changed"].astype("boolean")
    df["seconds"] = df["seconds"].astype("Float64")
    return with_version_names(df)


def with_version_names(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with its key columns added since a table was first written filled in where a row lacks them, as the
    readers fill a table written before them: from their source column (passes_table.ADDED_FROM: ``version_name``
    is ``tilelang_version``) or with their default (passes_table.ADDED_COLUMNS: ``device`` is ``none``); ``df``
    itself when every row has them."""
    for column in JOB_KEY:
        source, default = pt.ADDED_FROM.get(column), pt.ADDED_COLUMNS.get(column)
        if source is None and not default or source is not None and source not in df:
            continue
        values = df[column] if column in df else pd.Series(pd.NA, index=df.index, dtype=object)
        empty = values.isna() | (values.astype(object) == "")
        if column not in df or empty.any():
            df = df.copy() if column in df else df.assign(**{column: values})
            filled = df[source].astype(object) if source is not None else default
            df[column] = values.astype(object).where(~empty, filled)
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
    ordered, bounds = job_blocks(df)
    return [fresh_index(ordered.iloc[start:stop]) for start, stop in bounds]


def job_blocks(df: pd.DataFrame) -> tuple[pd.DataFrame, list[tuple[int, int]]]:
    """``df`` with each job's rows together (jobs in order of first appearance, each in step order, a step left
    empty last) and the [start, stop) rows of each job in it: one sort of the whole table, where a sort and a copy
    per job cost a millisecond each for a table of 50 columns."""
    if df.empty:
        return df.reset_index(drop=True), []
    df = with_version_names(df)
    job = df.groupby(JOB_KEY, sort=False, dropna=False).ngroup().to_numpy()
    ordered = (
        df.assign(_job=job)
        .sort_values(["_job", "step"], kind="stable", na_position="last")
        .drop(columns="_job")
        .reset_index(drop=True)
    )
    stops = np.cumsum(np.bincount(job)).tolist()
    return ordered, list(zip([0, *stops[:-1]], stops))


def fresh_index(rows: pd.DataFrame) -> pd.DataFrame:
    """A slice of a table numbered from 0, as a frame of its own would be."""
    rows.index = pd.RangeIndex(len(rows))  # the table it was sliced from keeps its own
    return rows


def job_count(df: pd.DataFrame) -> int:
    """How many jobs (JOB_KEY) df holds, without a frame per job."""
    df = with_version_names(df)
    return df.groupby(JOB_KEY, sort=False, dropna=False).ngroups
