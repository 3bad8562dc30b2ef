"""--mode instrument (trace/pass_instrument.py) against TileLang's own trace of the same lowering.

TileLang's trace (TL_LOWER_TRACE=1) comes from the trace script in a subprocess (conftest's trace_runs, shared
with test_trace_env.py); the instrument runs in one driver subprocess whose environment has no TL_LOWER_TRACE,
so TileLang's own tracer is off there. Every expected value is read from TileLang's output, never typed in.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import require_tilelang
from tilelang_churn.core import ir_archive, passes_table
from tilelang_churn.trace import run_record

pytestmark = pytest.mark.integration  # tier: tests/conftest.py checks it against what the tests use

require_tilelang()

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
COMPARED = ("step", "phase", "pass", "status", "changed", "added", "deleted", "depth")

# Runs run_instrument for each job in one process (one TileLang import) and writes every result as JSON.
DRIVER = textwrap.dedent(
    """
    import json, sys
    sys.path.insert(0, sys.argv[1])
    from tilelang_churn.trace import trace_cli
    from tilelang_churn.core import ir_archive, passes_table
    from tilelang_churn.trace import pass_instrument, tilelang_trace

    jobs, results = json.loads(sys.argv[2]), {}
    for job in jobs:
        spec = trace_cli.parse_args(["--mode", "trace-env", "--target", job["target"]]).spec
        real_print = pass_instrument.print_ir
        if job.get("break_print"):  # the tracer's Nth print raises: the lowering must not notice
            calls = []

            def broken_print(mod):
                calls.append(1)
                if len(calls) == job["break_print"]:
                    raise RuntimeError("print broken on purpose")
                return real_print(mod)

            pass_instrument.print_ir = broken_print
        try:
            rows, error, info = pass_instrument.run_instrument(
                tilelang_trace.build_kernel(spec), tilelang_trace.make_target(spec), keep_ir=bool(job.get("archive"))
            )
        finally:
            pass_instrument.print_ir = real_print
        if job.get("archive"):
            info["archive_bytes"] = ir_archive.write(info["ir"], job["archive"])
        results[job["name"]] = {"rows": rows, "error": error and passes_table.error_text(error), "info": info}
    with open(sys.argv[3], "w", encoding="utf-8") as handle:
        json.dump(results, handle)
    """
)


@pytest.fixture(scope="session")
def instrument_runs(tmp_path_factory) -> dict:
    """{job name: {rows, error, info}} of the instrument, all jobs in one subprocess."""
    root = tmp_path_factory.mktemp("pass_instrument")
    jobs = [
        {"name": "cuda-sm90", "target": "cuda-sm90", "archive": str(root / "sm90_ir.json.gz")},
        {"name": "hip", "target": "hip"},
        {"name": "llvm", "target": "llvm"},
        {"name": "broken-print", "target": "cuda-sm90", "break_print": 3},
    ]
    driver = root / "driver.py"
    driver.write_text(DRIVER, encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if not key.startswith("TL_LOWER_TRACE")}
    env["TILELANG_CACHE_DIR"] = str(root / "tilelang_cache")
    out = root / "results.json"
    proc = subprocess.run(
        [sys.executable, str(driver), str(SCRIPTS), json.dumps(jobs), str(out)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    results = json.loads(out.read_text(encoding="utf-8"))
    results["cuda-sm90"]["archive"] = Path(jobs[0]["archive"])
    return results


def trace_env_rows(trace_runs, target: str) -> list[dict]:
    proc, out = trace_runs.get("--mode", "trace-env", "--target", target)
    assert (out / "passes.csv").is_file(), proc.stderr
    return passes_table.read_rows(out / "passes.csv")


def view(row: dict) -> dict:
    return {key: row.get(key) for key in COMPARED}


# cuda-sm90 is make check's one real TileLang run (marker smoke): the instrument's rows against TileLang's own trace
@pytest.mark.parametrize("target", [pytest.param("cuda-sm90", marks=pytest.mark.smoke), "hip"])
def test_rows_equal_tilelangs_own_trace(instrument_runs, trace_runs, target):
    expected = trace_env_rows(trace_runs, target)
    run = instrument_runs[target]
    assert run["error"] is None and run["info"]["tracer_errors"] == []
    assert [view(row) for row in run["rows"]] == [view(row) for row in expected]
    # the comparison covers nested runs, changed and no-op passes, and the codegen row TileLang adds
    assert any(row["depth"] for row in expected)
    assert {"changed", "noop", "codegen"} <= {row["status"] for row in expected}
    assert run["info"]["pass_runs"] == sum(1 for row in expected if row["status"] != "codegen")


def test_a_failing_pass_gives_the_rows_before_it_and_one_failed_row(instrument_runs, trace_runs):
    expected = trace_env_rows(trace_runs, "llvm")
    run = instrument_runs["llvm"]
    rows = run["rows"]
    assert [view(row) for row in rows] == [view(row) for row in expected]
    assert rows[-1]["status"] == "failed" and rows[-1]["pass"] == expected[-1]["pass"]
    assert len(rows) > 1 and all(row["status"] in ("changed", "noop") for row in rows[:-1])
    # the same exception, as the CSV cell shows it
    assert " ".join(rows[-1]["error"].split()) == expected[-1]["error"]
    assert rows[-1]["error"] == run["error"]
    assert "kernel_source_lines" not in run["info"]


def test_seconds_are_recorded_for_every_row(instrument_runs):
    for name in ("cuda-sm90", "hip", "llvm"):
        for row in instrument_runs[name]["rows"]:
            assert isinstance(row["seconds"], float) and row["seconds"] >= 0, (name, row)


def test_ir_archive_round_trips_and_its_texts_give_the_rows_counts(instrument_runs, tmp_path):
    run = instrument_runs["cuda-sm90"]
    rows, ir = run["rows"], run["info"]["ir"]
    archive = run["archive"]
    assert ir_archive.read(archive) == ir
    assert run["info"]["archive_bytes"] == archive.stat().st_size
    assert [name for name in os.listdir(archive.parent) if name.endswith(".tmp")] == []
    # deterministic bytes: no mtime and no file name in the gzip header, sorted keys
    data = archive.read_bytes()
    assert data[4:8] == b"\0\0\0\0" and not data[3] & 0x08
    again = tmp_path / "again.json.gz"
    assert ir_archive.write(ir_archive.read(archive), again) == len(data)
    assert again.read_bytes() == data
    assert len(set(ir["texts"])) == len(ir["texts"])  # each text stored once

    pass_rows = [row for row in rows if row["status"] != "codegen"]
    assert [(step["step"], step["pass"]) for step in ir["steps"]] == [(row["step"], row["pass"]) for row in pass_rows]
    after = {step["step"]: ir["texts"][step["after"]] for step in ir["steps"]}

    def recount(before: str, row: dict):
        assert (before != after[row["step"]]) == row["changed"], row
        assert run_record.count_line_changes(before, after[row["step"]]) == (row["added"], row["deleted"]), row

    recount(ir["texts"][ir["initial"]], pass_rows[0])
    # a top-level pipeline pass starts from what the top-level pass before it returned
    recounted = []
    for previous, row in zip(pass_rows, pass_rows[1:]):
        if (
            row["phase"].startswith("pipeline_")
            and previous["phase"] == row["phase"]
            and not previous["depth"]
            and not row["depth"]
        ):
            recount(after[previous["step"]], row)
            recounted.append(row)
    changed_in_pipeline = [row for row in pass_rows if row["phase"].startswith("pipeline_") and row["changed"]]
    assert 2 * sum(row["changed"] for row in recounted) >= len(changed_in_pipeline)  # most of them were checked
    # every run's own archived before (nested runs and passes outside the pipeline included) gives its counts
    before = {step["step"]: step["before"] for step in ir["steps"]}
    for row in pass_rows:
        if row["status"] != "failed":
            recount(ir["texts"][before[row["step"]]], row)
    assert any(row["depth"] for row in pass_rows)  # nested runs were among them
    # codegen: the IR the last pass returned against the kernel source
    codegen = rows[-1]
    assert codegen["status"] == "codegen"
    assert run_record.count_line_changes(after[pass_rows[-1]["step"]], ir["kernel_source"]) == (
        codegen["added"],
        codegen["deleted"],
    )
    assert run["info"]["kernel_source_lines"] == len(ir["kernel_source"].splitlines())


def test_a_broken_tracer_never_breaks_the_lowering(instrument_runs):
    good, broken = instrument_runs["cuda-sm90"], instrument_runs["broken-print"]
    assert broken["error"] is None
    assert broken["info"]["kernel_source_lines"] == good["info"]["kernel_source_lines"]
    assert broken["info"]["tracer_errors"] and "print broken on purpose" in broken["info"]["tracer_errors"][0]
    # only the run whose text could not be printed lacks its counts; it is marked as the tracer's failure
    differing = [(b, g) for b, g in zip(broken["rows"], good["rows"]) if view(b) != view(g)]
    assert len(broken["rows"]) == len(good["rows"]) and len(differing) == 1
    row, _ = differing[0]
    assert row["status"] == "failed" and row["error"].startswith("pass_instrument:")
