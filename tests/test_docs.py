"""tests/README.md names the test of each case: every name it gives is a test that exists, so a renamed or
deleted test cannot leave its row pointing at nothing."""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
# `test_file.py::test_name`, optionally with a parameter id ([...]) or a shared fixture (@...) after it
NODE = re.compile(r"`(test_\w+\.py)::(\w+)[^`]*`")


def defined_tests(path: Path) -> set[str]:
    """The names of the functions and fixtures defined anywhere in a test file (module level or in a class)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}


def named_tests(text: str) -> list[tuple[str, str]]:
    return sorted(set(NODE.findall(text)))


def test_every_test_the_readme_names_exists():
    named = named_tests((TESTS / "README.md").read_text(encoding="utf-8"))
    assert len(named) > 50  # the table is read, not an empty match
    missing = []
    for file, name in named:
        path = TESTS / file
        if not path.is_file() or name not in defined_tests(path):
            missing.append(f"{file}::{name}")
    assert not missing, "tests/README.md names tests that do not exist: " + ", ".join(missing)


def test_a_name_that_does_not_exist_is_caught(tmp_path):
    (tmp_path / "test_x.py").write_text("def test_here():\n    pass\n")
    named = named_tests("| a | b | `test_x.py::test_here[p]`, `test_x.py::test_gone@run` |")
    assert named == [("test_x.py", "test_gone"), ("test_x.py", "test_here")]
    assert [name for _, name in named if name not in defined_tests(tmp_path / "test_x.py")] == ["test_gone"]
