"""The test tiers and workers of conftest.py: an expensive fixture shared by several tests runs on one worker.

pytest-xdist builds a module- or session-scoped fixture once per worker that runs a test using it; conftest.py
puts the tests of such a fixture in one xdist group (SHARED_FIXTURES, SAME_WORKER_AS). Found by reading each
fixture's code for what starts a process (a trace run, a batch, Snakemake, a build), so that a new one is caught.
"""

from __future__ import annotations

import ast
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
