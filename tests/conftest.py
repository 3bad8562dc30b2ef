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


# ------------------------------------------------------------------------------------- hand-made rows
# Provenance of a hand-made job, spelled as the trace script writes it (trace_cli.TARGETS, trace_modes).


def job_provenance(
    target_name: str = "cuda-sm90", mode: str = "trace-env", tilelang_version: str = "0.1.15", **kernel
) -> dict:
    import trace_cli
    import trace_modes

    spec = dict(
        M=1024,
        N=1024,
        K=512,
        block_M=128,
        block_N=128,
        block_K=32,
        dtype="float16",
        accum_dtype="float32",
        threads=128,
        stages=3,
    )
    spec.update(kernel)
    return dict(
        tilelang_version=tilelang_version,
        target_name=target_name,
        target=json.dumps(trace_cli.TARGETS[target_name], sort_keys=True),
        **spec,
        mode=mode,
        source=trace_modes.source_of(mode),
    )


def make_row(
    step: int,
    name: str,
    status: str,
    added=None,
    deleted=None,
    *,
    job: dict | None = None,
    error: str = "",
    phase: str = "pipeline_cuda",
    depth: int = 1,
) -> dict:
    """One passes.csv row; changed follows the status as the trace script sets it."""
    import passes_table as pt

    changed = {pt.STATUS_CHANGED: True, pt.STATUS_NOOP: False, pt.STATUS_CODEGEN: True}.get(status)
    return dict(
        job or job_provenance(),
        step=step,
        phase=phase,
        status=status,
        changed=changed,
        added=added,
        deleted=deleted,
        depth=depth,
        error=error,
        **{"pass": name},
    )


def write_passes(directory: Path, name: str, rows: list[dict]) -> Path:
    """rows written as DIRECTORY/NAME/passes.csv by the project's one writer."""
    import passes_table as pt

    path = directory / name / "passes.csv"
    pt.write_rows(path, rows)
    return path
