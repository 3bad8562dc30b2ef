"""passes_table: the schema, the CSV round trip, and the schema's documentation."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tilelang_churn.core import files, passes_table

README = Path(__file__).resolve().parents[1] / "docs" / "outputs.md"


def test_round_trip_keeps_types_and_empty_cells(tmp_path):
    row = {
        "step": 3,
        "phase": "pipeline_cuda",
        "pass": "LowerTileOp",
        "status": "failed",
        "changed": None,
        "added": None,
        "deleted": None,
        "depth": 0,
        "error": "InternalError: line one\n  line two",
        "M": 1000,
        "mode": "trace-env",
    }
    path = tmp_path / "passes.csv"
    passes_table.write_rows(path, [row])
    back = passes_table.read_rows(path)[0]
    assert (back["step"], back["changed"], back["added"], back["M"], back["N"]) == (3, None, None, 1000, None)
    assert back["error"] == "InternalError: line one line two"
    assert not list(tmp_path.glob("*.tmp"))


def test_an_unknown_column_is_refused(tmp_path):
    with pytest.raises(ValueError):
        passes_table.write_rows(tmp_path / "p.csv", [{"step": 0, "bogus": 1}])


def test_a_foreign_header_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "other.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="other.csv"):
        passes_table.read_rows(path)


def test_error_text_drops_source_excerpts():
    error = RuntimeError("Check failed: layout\n  --> k.py:12:1\n     |\n 12 |   C = x\n     |   ^\n")
    assert passes_table.error_text(error) == "RuntimeError: Check failed: layout"


def test_every_column_is_documented_in_config_readme():
    text = README.read_text()
    section = text[text.index("## passes.csv and churn.csv") :]
    section = section[: section.index("\n## ", 1)]  # other tables (results/gpu/) share some names
    documented = re.findall(r"^\| `([A-Za-z_]+)` \|", section, re.M)
    assert [c for c in documented if c in passes_table.COLUMNS] == passes_table.COLUMNS


def test_every_summary_column_is_documented_in_config_readme():
    text = README.read_text()
    summary_section = text[text.index("## churn_summary.csv") :]
    summary_section = summary_section[: summary_section.index("\n## ", 1)]
    documented = re.findall(r"^\| `([A-Za-z_]+)` \|", summary_section, re.M)
    assert documented == passes_table.SUMMARY_COUNT_COLUMNS


def test_the_atomic_writer_removes_its_temporary_on_any_error(tmp_path):
    path = tmp_path / "passes.csv"
    for error in (ValueError("in the block"), KeyboardInterrupt()):
        with pytest.raises(type(error)):
            with files.atomic_file(path) as handle:
                handle.write("half a table")
                raise error
        assert not path.exists() and not list(tmp_path.iterdir())
    with pytest.raises(files.WriteError) as caught:  # an OSError names the file, never its temporary
        with files.atomic_file(path):
            raise OSError(28, "No space left on device")
    assert str(caught.value) == f"cannot write {path}: no space left on device" and isinstance(caught.value, OSError)
    assert not list(tmp_path.iterdir())


def test_one_failed_row_for_every_maker():
    """passes_table.failed_row is the failed row of tilelang_trace, pass_instrument and trace_job alike: no
    counts, an exception as its error_text, a given text as it is (trace_batch's record of an unfinished job)."""
    error = RuntimeError("Check failed: layout\n  --> k.py:12:1\n")
    row = passes_table.failed_row(3, "pipeline_cuda", "LowerTileOp", error, depth=0, seconds=0.5)
    assert row == {
        "step": 3,
        "phase": "pipeline_cuda",
        "pass": "LowerTileOp",
        "status": passes_table.STATUS_FAILED,
        "changed": None,
        "added": None,
        "deleted": None,
        "depth": 0,
        "seconds": 0.5,
        "error": "RuntimeError: Check failed: layout",
    }
    assert passes_table.failed_row(0, "trace-env", "setup", "ran past\n  --> x")["error"] == "ran past\n  --> x"
    assert list(passes_table.PassRow.__annotations__) == passes_table.COLUMNS  # the typed row is the schema's


def test_every_versions_column_is_documented():
    from tilelang_churn.tables import version_table

    text = README.read_text()
    section = text[text.index("## versions.csv") :]
    section = section[: section.index("\n## ", 1)]
    documented = [
        name for row in re.findall(r"^\| (`[^|]+`) \|", section, re.M) for name in re.findall(r"`(\w+)`", row)
    ]
    assert documented == list(version_table.COLUMNS)
