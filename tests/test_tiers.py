"""The test tiers and workers of conftest.py: a test declares at least the tier of what it uses, and an expensive
fixture shared by several tests runs on one worker.

pytest-xdist builds a module- or session-scoped fixture once per worker that runs a test using it; conftest.py
puts the tests of such a fixture in one xdist group (SHARED_FIXTURES, SAME_WORKER_AS). Found by reading each
fixture's code for what starts a process (a trace run, a batch, Snakemake, a build), so that a new one is caught.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import conftest
import pytest

TESTS = Path(__file__).resolve().parent
# what makes a fixture cost seconds: a process of its own (TileLang, Snakemake, uv, a figure's command line): the
# integration tier's calls but the in-process import check, and the other ways the tests start one
STARTS_A_PROCESS = tuple(call for call in conftest.INTEGRATION_CALLS if call != "require_tilelang(")
STARTS_A_PROCESS += ("subprocess.", "run_cli(", "build_env(")


def process_fixtures(folder: Path = TESTS) -> dict[str, str]:
    """{fixture name: its file} of the module- and session-scoped fixtures whose code starts a process."""
    found = {}
    for path in sorted(folder.glob("*.py")):
        source = path.read_text(encoding="utf-8")
        for node in ast.parse(source).body:
            if not isinstance(node, ast.FunctionDef):
                continue
            for decorator in node.decorator_list:
                if not (isinstance(decorator, ast.Call) and getattr(decorator.func, "attr", "") == "fixture"):
                    continue
                scopes = [k.value.value for k in decorator.keywords if k.arg == "scope"]
                body = ast.get_source_segment(source, node)
                if scopes in (["module"], ["session"]) and any(call in body for call in STARTS_A_PROCESS):
                    found[node.name] = path.name
    return found


def groups_of_users(items, fixture: str) -> tuple[int, set]:
    """How many collected tests use FIXTURE, and the xdist groups they are in (None: no group)."""
    users = [item for item in items if fixture in getattr(item, "fixturenames", ())]
    groups = set()
    for item in users:
        marker = item.get_closest_marker("xdist_group")
        groups.add(marker.args[0] if marker else None)
    return len(users), groups


def test_every_fixture_that_starts_a_process_runs_on_one_worker(request):
    """Each worker collects every test: the session's items, with those -m or -k left out, are the suite given."""
    items = [*request.session.items, *conftest.DESELECTED]
    fixtures = process_fixtures()
    collected = {item.path.name for item in items}
    if not {file for file in fixtures.values() if file != "conftest.py"} <= collected:
        pytest.skip("a part of the suite: the fixtures' tests are not all collected")
    assert {"finished_run", "traced", "book_sets", "built_0_1_14"} <= set(fixtures)  # the scan finds them
    spread = {}
    for fixture, file in fixtures.items():
        users, groups = groups_of_users(items, fixture)
        if users > 1 and (len(groups) > 1 or None in groups):
            spread[f"{file}::{fixture}"] = sorted(map(str, groups))
    assert not spread, f"built once per worker that runs one of its tests (add it to SHARED_FIXTURES): {spread}"


def test_the_scan_finds_a_fixture_that_starts_a_process(tmp_path):
    (tmp_path / "test_new.py").write_text(
        "import pytest, subprocess\n\n\n"
        '@pytest.fixture(scope="module")\ndef lowered():\n    return subprocess.run(["true"])\n\n\n'
        "@pytest.fixture\ndef per_test():\n    return subprocess.run(['true'])\n\n\n"
        '@pytest.fixture(scope="session")\ndef data():\n    return {}\n'
    )
    assert process_fixtures(tmp_path) == {"lowered": "test_new.py"}


class _Collected:
    """What conftest.tier_problem reads of a collected test: its function, markers, fixtures and module."""

    def __init__(self, function, markers=(), fixtures=(), module="test_new"):
        self.function, self.fixturenames = function, list(fixtures)
        self.markers = [getattr(pytest.mark, name).mark for name in markers]
        self.module = type("Module", (), {"__name__": module})
        self._fixtureinfo = type("Info", (), {"name2fixturedefs": {}})
        self.nodeid = f"tests/{module}.py::{function.__name__}"

    def iter_markers(self):
        return iter(self.markers)


def test_a_test_declares_at_least_the_tier_of_what_it_uses(tmp_path, monkeypatch):
    # a new test module on disk (the check reads its source); the call spelled apart, or this test would need it
    call = "snake" + "make("
    (tmp_path / "new_tests.py").write_text(
        f"def test_runs_the_workflow():\n    {call}['--cores', '1'])\n\n\ndef test_reads_a_table():\n    return []\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    new_tests = importlib.import_module("new_tests")
    test_runs_the_workflow, test_reads_a_table = new_tests.test_runs_the_workflow, new_tests.test_reads_a_table

    assert conftest.tier_problem(_Collected(test_reads_a_table)) is None
    assert conftest.tier_problem(_Collected(test_runs_the_workflow, ["integration"])) is None
    assert conftest.tier_problem(_Collected(test_runs_the_workflow, ["slow"])) is None  # higher: the author's call
    assert conftest.tier_problem(_Collected(test_runs_the_workflow)) == (
        "tests/test_new.py::test_runs_the_workflow: declares no tier marker (the base tier), but what it or a "
        "fixture calls (INTEGRATION_CALLS) need @pytest.mark.integration"
    )
    on_a_run = _Collected(test_reads_a_table, ["integration"], fixtures=["finished_run"])
    assert conftest.tier_problem(on_a_run).endswith("its fixtures or module need @pytest.mark.slow")
    both = _Collected(test_runs_the_workflow, ["slow", "integration"])
    assert "declares @pytest.mark.integration and @pytest.mark.slow" in conftest.tier_problem(both)
