"""tables/frames.py: a churn table's jobs as frames, against core.jobs.group_rows (the one way rows become jobs)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from tilelang_churn.core import jobs
from tilelang_churn.tables import frames


def _as_rows(frame: pd.DataFrame) -> list[dict]:
    return frame.astype(object).where(frame.notna(), None).to_dict("records")


@pytest.mark.slow
def test_job_frames_group_a_shuffled_table_as_group_rows_does(finished_run):
    table = frames.read_frame(finished_run / "results" / "churn.csv")
    shuffled = table.sample(frac=1.0, random_state=np.random.RandomState(7)).reset_index(drop=True)
    expected = jobs.group_rows(_as_rows(shuffled))
    got = frames.job_frames(shuffled)
    assert len(expected) > 1
    assert [jobs.job_key(frame.iloc[0]) for frame in got] == list(expected)
    for frame, rows in zip(got, expected.values()):
        assert list(frame.index) == list(range(len(rows)))  # a fresh index, as a frame of its own
        assert _as_rows(frame) == rows


def test_job_blocks_put_a_step_left_empty_last_and_keep_an_empty_table():
    table = frames.to_frame([
        {"step": step, "pass": name, "tilelang_version": version, "mode": "instrument"}
        for version, step, name in [("0.1.15", 2, "b"), ("0.1.14", 1, "x"), ("0.1.15", None, "?"), ("0.1.15", 1, "a")]
    ])  # fmt: skip
    ordered, bounds = frames.job_blocks(table)
    assert bounds == [(0, 3), (3, 4)]  # 0.1.15 first: its row comes first in the table
    assert list(ordered["pass"]) == ["a", "b", "?", "x"]
    empty, no_bounds = frames.job_blocks(table.iloc[:0])
    assert empty.empty and no_bounds == []
    assert frames.job_frames(table.iloc[:0]) == []
