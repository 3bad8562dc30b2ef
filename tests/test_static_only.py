"""--static-only: needs no TileLang; locates the book's entry points by parsing a TileLang source."""

from __future__ import annotations

import importlib.util
import re
import shutil
import zipfile
from pathlib import Path

import pytest
from conftest import run_script

ENTRY_FILES = (
    "tilelang/__init__.py",
    "tilelang/env.py",
    "tilelang/tools/lower_trace/__init__.py",
    "tilelang/tools/lower_trace/core.py",
    "tilelang/utils/pass_diff.py",
    "tilelang/transform/simplify.py",
)


def installed_tilelang() -> Path:
    spec = importlib.util.find_spec("tilelang")
    if spec is None:
        pytest.skip("tilelang is not installed")
    return Path(list(spec.submodule_search_locations)[0])


def line_of(path: Path, pattern: str) -> int:
    """1-based line of the first match, found by the test itself with a regular expression."""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if re.match(pattern, line):
            return number
    raise AssertionError(f"{pattern!r} not in {path}")


def printed_location(stdout: str, label: str) -> str:
    for line in stdout.splitlines():
        if line.strip().startswith(label):
            return line.strip()[len(label) :].strip()
    raise AssertionError(f"{label!r} not printed:\n{stdout}")


def test_without_tilelang_it_exits_0_and_says_nothing_was_verified():
    # -S: no site-packages, so tilelang can neither be imported nor found
    proc = run_script("--static-only", python_flags=("-S",))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("py_compile: ok")
    assert "no entry point was verified" in proc.stdout
    assert "(not located)" in proc.stdout


def _check_all_five(stdout: str, root: Path) -> None:
    env_line = line_of(root / "env.py", r"\s*TL_LOWER_TRACE\s*=")
    assert printed_location(stdout, "TL_LOWER_TRACE / TL_LOWER_TRACE_DIR").startswith(f"tilelang/env.py:{env_line}-")
    span = printed_location(stdout, "enable() / disable()")
    core = root / "tools/lower_trace/core.py"
    first, last = re.fullmatch(r"tilelang/tools/lower_trace/core\.py:(\d+)-(\d+)", span).groups()
    assert int(first) == line_of(core, r"def enable\(")
    assert int(last) > line_of(core, r"def disable\(")
    singles = {
        "lower_trace()": ("tools/lower_trace/__init__.py", r"def lower_trace\("),
        "pass_diff()": ("utils/pass_diff.py", r"def pass_diff\("),
        "transform.Simplify": ("transform/simplify.py", r"def Simplify\("),
    }
    for label, (relpath, pattern) in singles.items():
        assert printed_location(stdout, label) == f"tilelang/{relpath}:{line_of(root / relpath, pattern)}"


def test_with_the_installed_package_each_entry_is_printed_where_the_test_finds_it():
    root = installed_tilelang()
    proc = run_script("--static-only", "--tilelang-src", str(root))
    assert proc.returncode == 0, proc.stderr
    _check_all_five(proc.stdout, root)
    # with no --tilelang-src the same installed package is found without importing it
    plain = run_script("--static-only", python_flags=("-X", "importtime"))
    assert plain.returncode == 0
    assert plain.stdout.splitlines()[2:] == proc.stdout.splitlines()[2:]
    assert not re.search(r"\|\s+tilelang$", plain.stderr, re.M)


def test_a_wheel_is_read_without_unpacking(tmp_path):
    root = installed_tilelang()
    wheel = tmp_path / "tilelang-0.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for relpath in ENTRY_FILES:
            archive.write(root.parent / relpath, relpath)
    proc = run_script("--static-only", "--tilelang-src", str(wheel))
    assert proc.returncode == 0, proc.stderr
    _check_all_five(proc.stdout, root)


def test_a_missing_entry_point_exits_1_and_is_named(tmp_path):
    root = installed_tilelang()
    for relpath in ENTRY_FILES:
        (tmp_path / relpath).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(root.parent / relpath, tmp_path / relpath)
    pass_diff_py = tmp_path / "tilelang/utils/pass_diff.py"
    pass_diff_py.write_text(pass_diff_py.read_text().replace("def pass_diff(", "def renamed_pass_diff("))
    proc = run_script("--static-only", "--tilelang-src", str(tmp_path))
    assert proc.returncode == 1
    assert "pass_diff in tilelang/utils/pass_diff.py" in proc.stderr
    assert "lower_trace()" in proc.stdout  # the others are still listed


def test_a_source_path_that_holds_no_tilelang_exits_2(tmp_path):
    proc = run_script("--static-only", "--tilelang-src", str(tmp_path / "nowhere"))
    assert proc.returncode == 2
    assert "--tilelang-src" in proc.stderr and "nowhere" in proc.stderr


def test_a_syntax_error_in_the_scripts_fails_py_compile(tmp_path):
    scripts = tmp_path / "scripts"
    shutil.copytree(
        Path(__file__).resolve().parents[1] / "scripts", scripts, ignore=shutil.ignore_patterns("__pycache__")
    )
    (scripts / "broken.py").write_text("def broken(:\n")
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-S", str(scripts / "gemm_lower_trace.py"), "--static-only"], capture_output=True, text=True
    )
    assert proc.returncode == 1
    assert "py_compile: FAILED" in proc.stdout and "broken.py" in proc.stdout
