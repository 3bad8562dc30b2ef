"""Bad input, broken environments and failures around the trace script: clear errors, failures as rows.

Each test here is a row of the table in tests/README.md.
"""

from __future__ import annotations

import os
import re

import pytest
from conftest import run_script
from tilelang_churn.core import passes_table
from tilelang_churn.tables import churn_table

SHADOW = "x = 1  # a module named tilelang that is not TileLang\n"


def one_line_error(proc) -> str:
    """The run's stderr: one error line naming the problem, never a traceback."""
    assert "Traceback" not in proc.stderr, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("gemm_lower_trace.py: error:")]
    assert len(errors) == 1, proc.stderr
    return errors[0]


# ------------------------------------------------------------------------------------- tables cut short


@pytest.fixture(scope="session")
def real_passes_csv(trace_runs):
    pytest.importorskip("tilelang")
    proc, out = trace_runs.get("--mode", "trace-env", "--target", "cuda-sm90")
    assert proc.returncode == 0, proc.stderr
    return out / "passes.csv"


@pytest.mark.parametrize("cut", ["mid_row", "at_a_cell_boundary", "inside_the_last_cell"])
def test_a_table_cut_short_is_refused_naming_file_and_line(real_passes_csv, tmp_path, cut):
    text = real_passes_csv.read_text()
    last_row_start = text.rstrip("\n").rindex("\n") + 1
    last_row = text[last_row_start:]
    keep = {
        "mid_row": last_row_start + len(last_row) // 2,
        "at_a_cell_boundary": last_row_start + last_row.index(",", 10) + 1,
        "inside_the_last_cell": len(text) - 3,  # the file ends inside its last cell, without a newline
    }[cut]
    cut_csv = tmp_path / "passes.csv"
    cut_csv.write_text(text[:keep])
    with pytest.raises(passes_table.TableError, match=r"passes\.csv") as caught:
        passes_table.read_rows(cut_csv)
    assert "half-written" in str(caught.value) or ", line " in str(caught.value)
    # the churn table refuses it too, and writes nothing
    out = tmp_path / "churn.csv"
    assert (
        churn_table.main(["--out", str(out), "--summary", str(tmp_path / "s.csv"), str(real_passes_csv), str(cut_csv)])
        == 1
    )
    assert not out.exists()


def test_a_row_with_too_few_cells_is_refused_even_with_a_final_newline(real_passes_csv, tmp_path):
    lines = real_passes_csv.read_text().splitlines(keepends=True)
    short = tmp_path / "passes.csv"
    short.write_text("".join(lines[:-1]) + ",".join(lines[-1].split(",")[:5]) + "\n")
    with pytest.raises(passes_table.TableError, match=rf"passes\.csv, line {len(lines)}: 5 cells"):
        passes_table.read_rows(short)


# ------------------------------------------------------------------------------- runs that cannot record


@pytest.mark.parametrize("where", ["a_regular_file", "under_proc"])
def test_an_unwritable_out_exits_3_with_one_line(tmp_path, where):
    if where == "a_regular_file":
        out = tmp_path / "file"
        out.write_text("not a folder")
    else:
        out = "/proc/gemm_lower_trace_out"
    proc = run_script("--mode", "trace-env", "--out", str(out))
    assert proc.returncode == 3
    assert "cannot write the run's files under --out" in one_line_error(proc)


BLOCK_TILELANG = """
import sys


class _NoTileLang:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("tilelang", "tvm", "tvm_ffi"):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)")
        return None


sys.meta_path.insert(0, _NoTileLang())
"""


def environment_with(tmp_path, file_name: str, text: str) -> dict:
    folder = tmp_path / "pythonpath"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / file_name).write_text(text)
    return dict(os.environ, PYTHONPATH=str(folder))


def tilelang_blocked_env(tmp_path) -> dict:
    """The environment of a process in which importing tilelang (or TVM) fails, as on a machine without it."""
    return environment_with(tmp_path, "sitecustomize.py", BLOCK_TILELANG)


@pytest.mark.parametrize("broken", ["unimportable", "shadowed"])
def test_a_broken_tilelang_exits_3_and_records_the_failed_setup(tmp_path, broken):
    env = (
        tilelang_blocked_env(tmp_path)
        if broken == "unimportable"
        else environment_with(tmp_path, "tilelang.py", SHADOW)
    )
    out = tmp_path / "out"
    proc = run_script("--mode", "trace-env", "--out", str(out), env=env)
    assert proc.returncode == 3
    assert "TileLang cannot be imported here" in one_line_error(proc)
    rows = passes_table.read_rows(out / "passes.csv")
    assert [(row["pass"], row["status"]) for row in rows] == [("setup", passes_table.STATUS_FAILED)]


def test_static_only_tells_a_shadowed_tilelang_from_a_missing_one(tmp_path):
    shadowed = run_script("--static-only", env=environment_with(tmp_path, "tilelang.py", SHADOW))
    assert shadowed.returncode == 3
    assert "shadows the TileLang package" in one_line_error(shadowed)
    # a machine without TileLang: the book's --static-only still works, and says that nothing was verified
    missing = run_script("--static-only", env=tilelang_blocked_env(tmp_path / "b"))
    assert missing.returncode == 0, missing.stderr
    assert "no entry point was verified" in missing.stdout


# ------------------------------------------------------------------------------ arguments and warnings


def test_a_size_beyond_int64_is_an_argument_error_before_any_import():
    proc = run_script("--mode", "trace-env", "--shape", "99999999999999999999,1,1", python_flags=("-X", "importtime"))
    assert proc.returncode == 2
    assert "exceeds 9223372036854775807 (int64)" in proc.stderr
    assert not re.search(r"\|\s+tilelang$", proc.stderr, re.M), "tilelang was imported"


def test_a_grid_beyond_the_targets_launch_limit_and_an_ignored_option_are_warned(trace_runs):
    pytest.importorskip("tilelang")
    proc, out = trace_runs.get("--mode", "trace-env", "--shape", "99999999999,128,32", "--passes", "BindTarget")
    assert proc.returncode == 0, proc.stderr
    warnings = trace_runs.run_info(out)["warnings"]
    assert warnings == [
        "--passes is ignored by mode trace-env: it runs every pass of tilelang.lower",
        "the launch grid exceeds what a cuda device can launch (gridDim.y = 781,250,000 > 65,535); it lowers, but "
        "the kernel could never run",
    ]
    assert all(f"warning: {warning}" in proc.stderr for warning in warnings)


# -------------------------------------------------------------------------------- the API tools' failures


@pytest.fixture()
def lower_trace_tool(monkeypatch):
    pytest.importorskip("tilelang")
    import tilelang.tools.lower_trace as module

    return monkeypatch, module


def test_a_tool_failing_before_any_pass_is_not_blamed_on_the_first_pass(lower_trace_tool):
    from tilelang_churn.lowering import tilelang_trace, trace_cli

    monkeypatch, module = lower_trace_tool

    def broken_tool(func, passes, mode="terminal"):
        raise RuntimeError("the tool broke before running a pass")

    monkeypatch.setattr(module, "lower_trace", broken_tool)
    spec = trace_cli.parse_args(["--mode", "trace-api", "--shape", "256,256,256"]).spec
    target = tilelang_trace.make_target(spec)
    with target:
        rows, error = tilelang_trace.run_api_tool("lower_trace", tilelang_trace.build_kernel(spec),
                                                  tilelang_trace.resolve_passes(spec, target))  # fmt: skip
    assert isinstance(error, RuntimeError)
    assert [(row["pass"], row["status"]) for row in rows] == [("lower_trace", passes_table.STATUS_FAILED)]
    assert rows[0]["error"] == "RuntimeError: the tool broke before running a pass"


def test_an_empty_pass_list_is_an_error_not_an_index_error():
    pytest.importorskip("tilelang")
    from tilelang_churn.lowering import tilelang_trace

    rows, error = tilelang_trace.run_api_tool("pass_diff", None, [])
    assert rows == [] and isinstance(error, ValueError) and "empty" in str(error)


def test_a_failed_rows_error_drops_tvms_source_excerpt(trace_runs):
    pytest.importorskip("tilelang")
    proc, out = trace_runs.get("--mode", "trace-env", "--target", "llvm")
    assert proc.returncode == 1
    failed = passes_table.read_rows(out / "passes.csv")[-1]
    assert failed["status"] == passes_table.STATUS_FAILED and "can not be inferred" in failed["error"]
    assert "T.alloc_fragment" not in failed["error"] and " | " not in failed["error"], failed["error"]


def test_no_stray_files_are_left_next_to_the_tables(real_passes_csv):
    leftovers = [path.name for path in real_passes_csv.parent.iterdir() if path.name.endswith(".tmp")]
    assert leftovers == []
