"""Churn that ignores re-indentation (added_stripped / deleted_stripped) beside the raw counts."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest
from conftest import require_tilelang
from tilelang_churn.core import line_churn, passes_table
from tilelang_churn.tables import frames
from tilelang_churn.trace import run_record

WRAPPED = """def main():
    for i in range(4):
        x[i] = 0
        y[i] = x[i] + 1
"""
# the same statements one block deeper, as a pass that wraps them in a new scope prints them
REINDENTED = """def main():
        for i in range(4):
            x[i] = 0
            y[i] = x[i] + 1
"""


def independent_counts(before: str, after: str) -> tuple[int, int]:
    """SequenceMatcher over stripped lines, written out here rather than taken from the project."""
    old = [line.strip() for line in before.splitlines()]
    new = [line.strip() for line in after.splitlines()]
    added = deleted = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new).get_opcodes():
        added += (j2 - j1) if tag in ("insert", "replace") else 0
        deleted += (i2 - i1) if tag in ("delete", "replace") else 0
    return added, deleted


def test_a_pass_that_only_reindents_has_raw_churn_and_no_stripped_churn(tmp_path):
    record = tmp_path / "run_1"
    (record / "pipeline_cuda").mkdir(parents=True)
    (record / "pipeline_cuda" / "00_WrapScope_before.tir").write_text(WRAPPED)
    (record / "pipeline_cuda" / "00_WrapScope_after.tir").write_text(REINDENTED)
    (row,) = run_record.read_run_record(record)
    assert (row["status"], row["added"], row["deleted"]) == (passes_table.STATUS_CHANGED, 3, 3)
    assert (row["added_stripped"], row["deleted_stripped"]) == (0, 0)
    for keepends in (False, True):  # the API tools' way of counting says the same
        assert line_churn.unified_diff_counts(WRAPPED, REINDENTED, keepends=keepends) == (3, 3)
        assert line_churn.unified_diff_counts(WRAPPED, REINDENTED, strip=True, keepends=keepends) == (0, 0)


@pytest.mark.integration
def test_a_real_run_records_stripped_counts_equal_an_independent_recount(trace_runs):
    require_tilelang()
    proc, out = trace_runs.get("--mode", "trace-env", "--target", "cuda-sm90")
    assert proc.returncode == 0, proc.stderr
    rows = {row["step"]: row for row in passes_table.read_rows(out / "passes.csv")}
    run_dir = Path(trace_runs.run_info(out)["run_record"])
    checked = 0
    for before in run_dir.glob("*/*_before.tir"):
        step = int(before.name.split("_")[0])
        after = next(before.parent.glob(before.name.replace("_before.tir", "_after.*")))
        expected = independent_counts(before.read_text(), after.read_text())
        assert (rows[step]["added_stripped"], rows[step]["deleted_stripped"]) == expected, before.name
        checked += 1
    assert checked == len(rows)
    churn = [row for row in rows.values() if row["status"] in passes_table.CHURN_STATUSES]
    # re-indentation is part of the raw churn, never more than it in total
    assert sum(r["added_stripped"] for r in churn) < sum(r["added"] for r in churn)


@pytest.mark.integration
def test_instrument_counts_whitespace_as_trace_env_does(trace_runs):
    require_tilelang()
    _, env_out = trace_runs.get("--mode", "trace-env", "--target", "cuda-sm90")
    proc, out = trace_runs.get("--mode", "instrument", "--target", "cuda-sm90")
    assert proc.returncode == 0, proc.stderr
    columns = ("pass", "added_stripped", "deleted_stripped")
    instrument = [tuple(row[c] for c in columns) for row in passes_table.read_rows(out / "passes.csv")]
    trace_env = [tuple(row[c] for c in columns) for row in passes_table.read_rows(env_out / "passes.csv")]
    assert instrument == trace_env


@pytest.mark.integration
@pytest.mark.parametrize(("mode", "tool_counts_with_line_ends"), [("trace-api", True), ("pass-diff", False)])
def test_the_api_modes_count_stripped_lines_the_tools_way(trace_runs, mode, tool_counts_with_line_ends):
    """Recounting the tool's own texts the tool's way gives its raw numbers, so the stripped ones are comparable."""
    require_tilelang()
    import contextlib
    import io

    from tilelang.tools.lower_trace import lower_trace
    from tilelang.utils.pass_diff import pass_diff
    from tilelang_churn.trace import tilelang_trace, trace_cli

    spec = trace_cli.parse_args(["--mode", mode, "--shape", "256,256,256"]).spec
    target = tilelang_trace.make_target(spec)
    tool = lower_trace if mode == "trace-api" else pass_diff
    with target, contextlib.redirect_stdout(io.StringIO()):
        results = tool(tilelang_trace.build_kernel(spec), tilelang_trace.resolve_passes(spec, target), mode="terminal")
    proc, out = trace_runs.get("--mode", mode, "--shape", "256,256,256")
    assert proc.returncode == 0, proc.stderr
    rows = passes_table.read_rows(out / "passes.csv")
    assert len(rows) == len(results)
    for row, result in zip(rows, results):
        before, after = result["before_script"], result["after_script"]
        raw = line_churn.unified_diff_counts(before, after, keepends=tool_counts_with_line_ends)
        assert raw == (result["insertions"], result["deletions"]), result["name"]
        stripped = line_churn.unified_diff_counts(before, after, strip=True, keepends=tool_counts_with_line_ends)
        assert (row["added_stripped"], row["deleted_stripped"]) == (stripped if result["changed"] else (0, 0))


@pytest.mark.integration
def test_the_heatmap_can_show_either_count(trace_runs):
    require_tilelang()
    import numpy as np
    from tilelang_churn.figures import plot_churn

    _, out = trace_runs.get("--mode", "trace-env", "--target", "cuda-sm90")
    df = frames.read_frame(out / "passes.csv")
    churn = df[df["status"].isin(passes_table.CHURN_STATUSES)]
    for measure, columns in (("raw", ["added", "deleted"]), ("stripped", ["added_stripped", "deleted_stripped"])):
        values, *_ = plot_churn.configuration_matrix(df, "trace-env", measure)
        assert np.nansum(values) == int(churn[columns].sum().sum()), measure
