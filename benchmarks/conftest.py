"""The benchmarks' goals: a number over its limit (bench_table.record, met=no) fails the test that measured it.

Checked when each test's body ends, not when the number is recorded: the test's other numbers are still
written, and a number a module fixture measured fails the first test that used it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_table  # noqa: E402


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    try:
        result = yield
    finally:  # a test that failed by itself takes its missed goals with it
        missed = list(bench_table.MISSED)
        bench_table.MISSED.clear()
    if missed:
        pytest.fail("missed: " + "; ".join(missed), pytrace=False)
    return result
