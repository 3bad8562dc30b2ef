"""Shared helpers: run the trace script for real, in a subprocess, the way users and the workflow do."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "scripts"
TRACE_SCRIPT = SCRIPTS / "gemm_lower_trace.py"


def run_script(*args: str, cwd: Path | None = None, python_flags: tuple[str, ...] = (), env: dict | None = None):
    return subprocess.run(
        [sys.executable, *python_flags, str(TRACE_SCRIPT), *args],
        cwd=cwd or REPO,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


class TraceRuns:
    """Runs of the trace script, each in its own --out folder, cached for the test session."""

    def __init__(self, root: Path):
        self.root = root
        self._done: dict[tuple[str, ...], tuple] = {}

    def get(self, *args: str):
        """(completed process, out dir) of `gemm_lower_trace.py ARGS --out DIR`."""
        if args not in self._done:
            out = self.root / f"run{len(self._done)}"
            proc = run_script(*args, "--out", str(out))
            self._done[args] = (proc, out)
        return self._done[args]

    @staticmethod
    def run_info(out: Path) -> dict:
        return json.loads((out / "run.json").read_text())


@pytest.fixture(scope="session")
def trace_runs(tmp_path_factory) -> TraceRuns:
    return TraceRuns(tmp_path_factory.mktemp("trace_runs"))
