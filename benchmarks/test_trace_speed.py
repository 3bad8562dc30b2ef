"""Speed and memory targets of one trace job (run with `make bench`, not part of `make test`).

Targets, on the 2-core CPU-only reference machine, for the default 1024^3 fp16 GEMM on cuda-sm90:
- a whole trace job (process start, import tilelang, lower, write) under 15 s wall and 2 GiB peak RSS;
- the lowering step under 5 s (TileLang alone: about 0.3 s plain, 0.75 s traced);
- bad arguments rejected in under 1 s, since TileLang is never imported for them.
Each job's numbers are written to results/benchmarks/bench_trace.tsv for comparison across machines.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
import measured_run  # noqa: E402

SCRIPT = REPO / "scripts" / "gemm_lower_trace.py"
REPORT = REPO / "results" / "benchmarks" / "bench_trace.tsv"

JOB_WALL_S = 15.0
JOB_RSS_MIB = 2048
LOWER_S = 5.0
BAD_ARGS_S = 1.0


def timed(args) -> measured_run.Measured:
    return measured_run.run([sys.executable, str(SCRIPT), *args])


@pytest.mark.parametrize("mode", ["trace-env", "trace-api", "pass-diff"])
def test_one_job_within_time_and_memory(tmp_path, mode):
    proc = timed(["--mode", mode, "--out", str(tmp_path)])
    wall, peak_mib = proc.wall_seconds, proc.peak_rss_mib
    assert proc.returncode == 0, proc.stderr
    info = json.loads((tmp_path / "run.json").read_text())
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    new = not REPORT.exists()
    with open(REPORT, "a") as report:
        if new:
            report.write("mode\twall_s\timport_s\tlower_s\tpeak_rss_mib\n")
        report.write(f"{mode}\t{wall:.2f}\t{info['import_seconds']:.2f}\t{info['lower_seconds']:.2f}\t{peak_mib:.0f}\n")
    assert wall < JOB_WALL_S
    assert info["lower_seconds"] < LOWER_S
    assert peak_mib < JOB_RSS_MIB


def test_bad_arguments_are_rejected_quickly(tmp_path):
    proc = timed(["--mode", "trace-env", "--shape", "1024x1024", "--out", str(tmp_path)])
    assert proc.returncode == 2
    assert proc.wall_seconds < BAD_ARGS_S
