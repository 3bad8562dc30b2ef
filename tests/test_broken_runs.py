"""Bad input, broken environments and failures around the trace script: clear errors, failures as rows.

Each test here is a row of the tables in docs/failure-modes*.md.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest
from conftest import entry, make_row, require_tilelang, run_script
from tilelang_churn.core import files, passes_table

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
    require_tilelang()
    proc, out = trace_runs.get("--mode", "trace-env", "--target", "cuda-sm90")
    assert proc.returncode == 0, proc.stderr
    return out / "passes.csv"


@pytest.mark.integration
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
    argv = ["--out", str(out), "--summary", str(tmp_path / "s.csv"), str(real_passes_csv), str(cut_csv)]
    assert entry("churn_table").main(argv) == 1
    assert not out.exists()


@pytest.mark.integration
def test_a_row_with_too_few_cells_is_refused_even_with_a_final_newline(real_passes_csv, tmp_path):
    lines = real_passes_csv.read_text().splitlines(keepends=True)
    short = tmp_path / "passes.csv"
    short.write_text("".join(lines[:-1]) + ",".join(lines[-1].split(",")[:5]) + "\n")
    with pytest.raises(passes_table.TableError, match=rf"passes\.csv, line {len(lines)}: 5 cells"):
        passes_table.read_rows(short)


# ------------------------------------------------------------------------------- runs that cannot record


@pytest.mark.integration
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


@pytest.mark.integration
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


@pytest.mark.integration
def test_static_only_tells_a_shadowed_tilelang_from_a_missing_one(tmp_path):
    shadowed = run_script("--static-only", env=environment_with(tmp_path, "tilelang.py", SHADOW))
    assert shadowed.returncode == 3
    assert "shadows the TileLang package" in one_line_error(shadowed)
    # a machine without TileLang: the book's --static-only still works, and says that nothing was verified
    missing = run_script("--static-only", env=tilelang_blocked_env(tmp_path / "b"))
    assert missing.returncode == 0, missing.stderr
    assert "no entry point was verified" in missing.stdout


# ------------------------------------------------------------------------------ arguments and warnings


@pytest.mark.integration
def test_a_size_beyond_int64_is_an_argument_error_before_any_import():
    proc = run_script("--mode", "trace-env", "--shape", "99999999999999999999,1,1", python_flags=("-X", "importtime"))
    assert proc.returncode == 2
    assert "exceeds 9223372036854775807 (int64)" in proc.stderr
    assert not re.search(r"\|\s+tilelang$", proc.stderr, re.M), "tilelang was imported"


@pytest.mark.integration
def test_a_grid_beyond_the_targets_launch_limit_and_an_ignored_option_are_warned(trace_runs):
    require_tilelang()
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
    require_tilelang()
    import tilelang.tools.lower_trace as module

    return monkeypatch, module


@pytest.mark.integration
def test_a_tool_failing_before_any_pass_is_not_blamed_on_the_first_pass(lower_trace_tool):
    from tilelang_churn.trace import tilelang_trace, trace_cli

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


@pytest.mark.integration
def test_an_empty_pass_list_is_an_error_not_an_index_error():
    require_tilelang()
    from tilelang_churn.trace import tilelang_trace

    rows, error = tilelang_trace.run_api_tool("pass_diff", None, [])
    assert rows == [] and isinstance(error, ValueError) and "empty" in str(error)


@pytest.mark.integration
def test_a_failed_rows_error_drops_tvms_source_excerpt(trace_runs):
    require_tilelang()
    proc, out = trace_runs.get("--mode", "trace-env", "--target", "llvm")
    assert proc.returncode == 1
    failed = passes_table.read_rows(out / "passes.csv")[-1]
    assert failed["status"] == passes_table.STATUS_FAILED and "can not be inferred" in failed["error"]
    assert "T.alloc_fragment" not in failed["error"] and " | " not in failed["error"], failed["error"]


@pytest.mark.integration
def test_no_stray_files_are_left_next_to_the_tables(real_passes_csv):
    leftovers = [path.name for path in real_passes_csv.parent.iterdir() if path.name.endswith(".tmp")]
    assert leftovers == []


def observe_writes(monkeypatch, write) -> tuple[list, list]:
    """Run write() with every open for writing and every rename seen: (paths opened for writing, (source,
    destination, the source's bytes at that moment) of each rename)."""
    import builtins
    import io

    opened, renamed = [], []
    real_open, real_os_open, real_replace, real_rename = builtins.open, os.open, os.replace, os.rename

    def spy_open(file, mode="r", *args, **kwargs):
        if isinstance(file, (str, os.PathLike)) and set(str(mode)) & set("wax+"):
            opened.append(Path(file).absolute())
        return real_open(file, mode, *args, **kwargs)

    def spy_os_open(path, flags, *args, **kwargs):
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC):
            opened.append(Path(path).absolute())
        return real_os_open(path, flags, *args, **kwargs)

    def spy(real):
        def rename(src, dst, *args, **kwargs):
            renamed.append((Path(src).absolute(), Path(dst).absolute(), Path(src).read_bytes()))
            return real(src, dst, *args, **kwargs)

        return rename

    with monkeypatch.context() as patch:
        for module in (builtins, io):
            patch.setattr(module, "open", spy_open)
        patch.setattr(os, "open", spy_os_open)
        patch.setattr(os, "replace", spy(real_replace))
        patch.setattr(os, "rename", spy(real_rename))
        write()
    return opened, renamed


WRITERS = {  # the project's writers of tables, run.json and figures, each with what a reader must see
    "passes.csv": (lambda path, n: passes_table.write_rows(path, ROWS[:n]), lambda path: passes_table.read_rows(path)),
    "run.json": (lambda path, n: files.write_json(path, list(range(n))), lambda path: json.loads(path.read_text())),
    "figure.png": (lambda path, n: files.write_bytes(path, bytes(range(n))), lambda path: path.read_bytes()),
}
ROWS = [make_row(step, f"Pass{step}", passes_table.STATUS_CHANGED, step, 1) for step in range(1, 4)]


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_a_file_is_never_seen_half_written_it_appears_whole_by_one_rename(tmp_path, monkeypatch, name):
    write, read = WRITERS[name]
    dest = tmp_path / "job" / name
    for n in (2, 3):  # a new file, then one replacing an older, complete one
        opened, renamed = observe_writes(monkeypatch, partial(write, dest, n))
        # the destination is never opened for writing: it only appears (or changes) by one rename of a finished
        # temporary in the same folder (a rename within a filesystem is atomic), holding every byte
        assert dest.absolute() not in opened, opened
        ((source, target, complete),) = renamed
        assert target == dest.absolute() and source.parent == dest.parent.absolute() and source != target
        assert source in opened and not source.exists()
        assert complete == dest.read_bytes()
        expected = tmp_path / f"expected-{n}" / name
        write(expected, n)
        assert read(dest) == read(expected) and len(read(dest)) == n


# ------------------------------------------------------------------- the tests' own view of a broken TileLang

CORE_MODULES = ("tests/test_trace_env.py", "tests/test_pass_instrument.py", "tests/test_trace_api_modes.py")


@pytest.mark.parametrize("ci", ["true", ""])
def test_a_shadowed_tilelang_fails_the_core_tests_under_ci_and_skips_them_elsewhere(tmp_path, ci):
    from conftest import REPO

    env = environment_with(tmp_path, "tilelang.py", SHADOW)
    env = {key: value for key, value in env.items() if key != "PYTEST_ADDOPTS"} | {"CI": ci}
    command = [sys.executable, "-m", "pytest", "-n", "0", "-p", "no:cacheprovider", "--collect-only", "-q", "-rsE"]
    proc = subprocess.run([*command, *CORE_MODULES], cwd=REPO, capture_output=True, text=True, env=env, timeout=120)
    reason = "TileLang cannot be imported (ModuleNotFoundError: No module named 'tilelang.language'"
    shadow = f"tilelang found at {tmp_path / 'pythonpath' / 'tilelang.py'})"
    said = proc.stdout + proc.stderr
    # under CI each module is a collection error with the reason; elsewhere one skip reason for all three
    starts = (
        [f"ERROR {module} - Failed: CI=true: " for module in CORE_MODULES]
        if ci
        else [f"SKIPPED [{len(CORE_MODULES)}] "]
    )
    for start in starts:
        lines = [line for line in said.splitlines() if line.startswith(start) and reason in line and shadow in line]
        assert len(lines) == 1, said
    assert proc.returncode == (pytest.ExitCode.INTERRUPTED if ci else pytest.ExitCode.NO_TESTS_COLLECTED), said
