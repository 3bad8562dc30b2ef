"""`make bench`'s goals (benchmarks/bench_table.py, benchmarks/conftest.py): a number over its limit is written
with met=no and fails the benchmark that measured it; no benchmark runs here."""

from __future__ import annotations

import csv
import importlib.util
import os
import shutil
import subprocess
import sys

import pytest
from conftest import REPO

# loaded from its file: benchmarks/ on sys.path would put its test modules beside these
_spec = importlib.util.spec_from_file_location("bench_table", REPO / "benchmarks" / "bench_table.py")
bench_table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_table)


def read(report):
    with open(report, encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_a_number_over_its_limit_is_written_as_missed_and_named(tmp_path, monkeypatch):
    monkeypatch.setattr(bench_table, "MISSED", [])
    report = tmp_path / "scale.csv"
    limit = 40
    under = bench_table.record(report, "b", "at the limit", limit, "s", limit)
    over = bench_table.record(report, "b", "over the limit", limit + 0.5, "s", limit)
    free = bench_table.record(report, "a", "no limit", limit * 10, "s")
    zero = bench_table.record(report, "d", "a limit of zero", 0.25, "s", 0)
    assert [under["met"], over["met"], free["met"], zero["met"]] == ["yes", "no", "", "no"]
    assert [(row["what"], row["met"]) for row in read(report)] == [
        ("no limit", ""),
        ("at the limit", "yes"),
        ("over the limit", "no"),
        ("a limit of zero", "no"),
    ]
    assert bench_table.missed(under) is None and bench_table.missed(free) is None
    assert bench_table.MISSED == [bench_table.missed(over), bench_table.missed(zero)]
    assert bench_table.missed(over) == f"goal b, over the limit: {limit + 0.5} s is over its limit of {limit} s"
    # measured again within its limit: the row is replaced, and nothing more is missed
    again = bench_table.record(report, "b", "over the limit", limit - 1, "s", limit)
    assert again["met"] == "yes" and [row["met"] for row in read(report) if row["what"] == "over the limit"] == ["yes"]
    assert len(bench_table.MISSED) == 2


BENCHMARK = """
from pathlib import Path

import bench_table

REPORT = Path({report!r})


def test_over():
    bench_table.record(REPORT, "b", "slow", 41.0, "s", 40)
    bench_table.record(REPORT, "b", "after it", 1.0, "s", 40)  # still written


def test_within():
    bench_table.record(REPORT, "b", "fast", 39.0, "s", 40)
"""


def test_a_missed_goal_fails_its_benchmark_after_every_number_is_written(tmp_path):
    folder = tmp_path / "benchmarks"
    folder.mkdir()
    for name in ("conftest.py", "bench_table.py"):
        shutil.copy(REPO / "benchmarks" / name, folder / name)
    report = tmp_path / "scale.csv"
    (folder / "test_goals.py").write_text(BENCHMARK.format(report=str(report)))
    (folder / "pytest.ini").write_text("[pytest]\n")
    env = {key: value for key, value in os.environ.items() if key != "PYTEST_ADDOPTS"}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-rA", "-vv", str(folder)]
    proc = subprocess.run(command, cwd=folder, capture_output=True, text=True, env=env, timeout=120)
    said = proc.stdout + proc.stderr
    assert proc.returncode == pytest.ExitCode.TESTS_FAILED, said
    assert {row["what"]: row["met"] for row in read(report)} == {"slow": "no", "after it": "yes", "fast": "yes"}
    slow = bench_table.missed({"goal": "b", "what": "slow", "value": 41.0, "unit": "s", "limit": 40, "met": "no"})
    assert f"FAILED test_goals.py::test_over - Failed: missed: {slow}" in said, said
    assert "PASSED test_goals.py::test_within" in said and "1 failed, 1 passed" in said, said


def test_the_readme_keeps_every_number_that_a_run_of_some_benchmarks_did_not_measure(tmp_path):
    readme = tmp_path / "README.md"
    before = []
    report = tmp_path / "scale.csv"
    for goal, what, value, limit in (("b", "first", 30, 40), ("b", "second", 2, None), ("d", "dry run", 4, 5)):
        before.append(bench_table.record(report, goal, what, value, "s", limit))
    readme.write_text(f"# x\n\n{bench_table.START}\n{bench_table.table(before)}\n{bench_table.END}\n\nafter\n")
    text = readme.read_text()
    assert bench_table.readme_rows(readme) == [{k: str(v) for k, v in row.items()} for row in before]
    bench_table.rewrite(readme, bench_table.readme_rows(readme))
    assert readme.read_text() == text  # what it reads, it writes back unchanged

    # a later run measured one number again and one new one: the others keep their values, in their places
    again = bench_table.record(tmp_path / "later.csv", "b", "first", 41, "s", 40)
    new = bench_table.record(tmp_path / "later.csv", "c", "new", 7, "s")
    bench_table.rewrite(readme, bench_table.merged(bench_table.readme_rows(readme), [again, new]))
    rows = bench_table.readme_rows(readme)
    assert [(row["what"], row["value"], row["met"]) for row in rows] == [
        ("first", "41", "no"),
        ("second", "2", ""),
        ("new", "7", ""),
        ("dry run", "4", "yes"),
    ]
    assert readme.read_text().endswith(f"{bench_table.END}\n\nafter\n")
