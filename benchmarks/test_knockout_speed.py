"""The pass knockout's cost (issue 26): the lowering part of one configuration, its baseline and every changed pass
knocked out, costs at most 1.5x its floor (run with `make bench`).

The floor: the lowerings' own CPU seconds (each child's, the kernel's build included, from knockout.json) plus one
import of TileLang for the process, over the cores. Measured: the wall time of scripts/knockout_batch.py from its
start to its exit, with as many workers as cores, on the book's reference (the 1024^3 GEMM on cuda-sm90).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from bench_table import record

REPO = Path(__file__).resolve().parents[1]
REPORT = REPO / "results" / "bench" / "scale.csv"
MAX_RATIO = 1.5


def test_one_configuration_every_changed_pass_within_one_and_a_half_its_floor(tmp_path):
    pytest.importorskip("tilelang")
    cores = os.cpu_count() or 1
    out = tmp_path / "gemm"
    args = ["--mode", "instrument", "--target", "cuda-sm90", "--out", str(out)]
    jobs = [{"args": args, "log": str(tmp_path / "knockout.log")}]
    (tmp_path / "jobs.json").write_text(json.dumps(jobs))
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, str(REPO / "scripts" / "knockout_batch.py"), "--jobs", str(tmp_path / "jobs.json"),
         "--workers", str(cores), "--passes", "changed"],
        check=True, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    wall = time.perf_counter() - started
    written = json.loads((out / "knockout.json").read_text())
    floor = (written["lower_cpu_seconds"] + written["process"]["import_seconds"]) / cores
    variants = len(written["variants"]) - 1
    # the count in a row of its own: the table keys a row by its text, which must not change with the count
    record(REPORT, "k", "knockout of the reference GEMM on cuda-sm90: changed passes knocked out", variants, "passes")
    record(REPORT, "k", "knockout of the reference GEMM on cuda-sm90: every changed pass, wall", wall, "s")
    record(REPORT, "k", "its floor: the lowerings' CPU seconds plus one import, over the cores", floor, "s")
    record(REPORT, "k", f"knockout wall over its floor ({cores} cores)", wall / floor, "x", MAX_RATIO)


@pytest.mark.gpu
def test_gpu_knockout_of_a_4096_gemm_every_changed_pass_under_two_minutes(tmp_path):
    """On the GPU machine (issue 26: the lent H200, 16 cores): the 4096^3 GEMM's GPU knockout, every changed pass,
    compile included, as knockout_gpu.py runs it alone with a worker per core."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device visible")
    from tilelang_churn.gpu import gpu_bench

    cores = os.cpu_count() or 1
    out = tmp_path / "runs" / "v" / "t" / "c"
    args = ["--shape", "4096,4096,4096", "--target", "cuda-sm90"]
    jobs = [{"args": ["--mode", "instrument", *args, "--out", str(out)], "log": str(tmp_path / "cpu.log")}]
    (tmp_path / "jobs.json").write_text(json.dumps(jobs))
    subprocess.run(
        [sys.executable, str(REPO / "scripts" / "knockout_batch.py"), "--jobs", str(tmp_path / "jobs.json"),
         "--workers", str(cores)],
        check=True, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    (tmp_path / "device.json").write_text(json.dumps(gpu_bench.probe_device()))
    gpu_out = tmp_path / "gpu" / "knockout_gpu.csv"
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, str(REPO / "scripts" / "knockout_gpu.py"), "--knockout", str(out / "knockout.json"),
         "--device", str(tmp_path / "device.json"), "--out", str(gpu_out), "--workers", str(cores), *args],
        check=True, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    wall = time.perf_counter() - started
    written = json.loads(gpu_out.with_name("knockout_gpu.json").read_text())
    keep = REPO / "results" / "bench" / "knockout_gpu_4096.csv"
    keep.parent.mkdir(parents=True, exist_ok=True)
    keep.write_bytes(gpu_out.read_bytes())  # the rows themselves, for the record
    what = f"GPU knockout of the 4096^3 GEMM: {len(written['variants']) - 1} variants, {cores} cores"
    record(REPORT, "k", what, wall, "s", 120)
