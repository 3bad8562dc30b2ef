"""Issue 26's cost of capture (run with `make bench`): a program that builds 20 kernels, run alone and under
`scripts/capture_kernels.py`, takes at most 1.2x its own time with the capture.

The program (tests/data/capture/host_kernel.py 20) compiles its 20 kernels for the host (target "c") and runs
each on CPU tensors: on this machine without a GPU it runs for real, as it does alone, so the two runs do the same
work and the difference is the capture's (its hook in the program, the records, the command around it). Each run
has a TileLang kernel cache of its own, empty (a program's first run); the runs alternate, ROUNDS of each, and
the ratio is that of their medians. Numbers go to results/bench/scale.csv (goal capture).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import measured_run
import pytest
import yaml
from test_scale import record

REPO = Path(__file__).resolve().parents[1]
PROGRAM = REPO / "tests" / "data" / "capture" / "host_kernel.py"
CAPTURE = REPO / "scripts" / "capture_kernels.py"
KERNELS = 20
ROUNDS = 3


def test_capture_costs_at_most_1_2x_the_programs_own_run(tmp_path):
    pytest.importorskip("tilelang")
    alone, captured = [], []
    for round_ in range(ROUNDS):
        env = {**_environ(), "TILELANG_CACHE_DIR": str(tmp_path / f"alone{round_}")}
        run = measured_run.run([sys.executable, str(PROGRAM), str(KERNELS)], cwd=tmp_path, env=env)
        assert run.returncode == 0 and f"{KERNELS} kernels right" in run.stdout, run.stderr[-2000:]
        alone.append(run.wall_seconds)
        out = tmp_path / f"kernels{round_}.yaml"
        env["TILELANG_CACHE_DIR"] = str(tmp_path / f"captured{round_}")
        command = [sys.executable, str(CAPTURE), "--out", str(out), "--", sys.executable, str(PROGRAM), str(KERNELS)]
        run = measured_run.run(command, cwd=tmp_path, env=env)
        assert run.returncode == 0 and f"{KERNELS} kernels right" in run.stdout, run.stderr[-2000:]
        assert len(yaml.safe_load(out.read_text())["kernels"]) == KERNELS
        captured.append(run.wall_seconds)
    own, with_capture = statistics.median(alone), statistics.median(captured)
    record("capture", f"a program building {KERNELS} kernels (host target, run on CPU): alone, median", own, "s")
    record("capture", f"the same program under capture_kernels.py, median of {ROUNDS}", with_capture, "s")
    record("capture", "capture / the program alone", with_capture / own, "x", 1.2)


def _environ() -> dict:
    import os

    return {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
