#!/usr/bin/env python3
"""The GPU stage's latency beside TileLang's own timing of the same compiled kernel (issue 47), on a GPU machine.

For each configuration that the stage timed (`ok` or `wrong` rows of results/gpu/kernel_speed.csv) the kernel is
compiled as the stage compiles it (gpu_bench.kernel_io, tilelang.compile with the job's pass configs; TileLang's
kernel cache makes this a lookup after the stage) and timed three ways in one process, one after the other:

- ``events_ms``: the stage's own method (gpu_bench.time_launches: 20 back-to-back launches between two CUDA events,
  median of 7, inputs resident in L2 after the first launch);
- ``do_bench_ms``: ``tilelang.profiler.do_bench`` over the same launch on the same inputs (an L2 flush of 256 MB
  before each launch, each launch timed alone, the mean);
- ``profiler_ms``: ``kernel.get_profiler().do_bench()``, what the examples' ``main()`` print (the profiler makes
  its own inputs).

    python3 benchmarks/tilelang_examples/own_timing.py --speed results/gpu/kernel_speed.csv \
        --configfile benchmarks/tilelang_examples/v0.1.13.yaml --jobs 16 > own_timing.jsonl

Compiles first in --jobs processes (spawned: TileLang's import initialises CUDA), then times in this process.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))


def configurations(speed_csv: str, config_path: str) -> list[dict]:
    """The stage's timed rows, each with its kernel entry's file, function, params, reference and pass configs."""
    import yaml
    from tilelang_churn.grid import config_checks, job_grid

    grid = job_grid.build_grid(
        config_checks.validate_config(yaml.safe_load(Path(config_path).read_text(encoding="utf-8")))
    )
    specs = {}
    for (_, target, _), spec in grid.lowerings.items():
        if "cuda" in target:
            provenance = spec.provenance("")
            specs[(provenance["kernel"], provenance["kernel_label"])] = spec
    rows = []
    for row in _speed_rows(Path(speed_csv)):
        if row["status"] not in ("ok", "wrong"):
            continue
        spec = specs.get((row["kernel"], row["kernel_label"]))
        if spec is not None:
            rows.append({"row": row, "spec": spec})
    return rows


def _speed_rows(speed: Path) -> list[dict]:
    """The rows of a kernel_speed.csv, or of every speed.json under a folder (results/gpu/runs): the stage's jobs
    as they ended, also where the rule that gathers them did not run."""
    if speed.is_dir():
        from tilelang_churn.tables import kernel_speed

        rows = kernel_speed.read_speed_rows(sorted(speed.rglob("speed.json")))
        return [{key: "" if value is None else value for key, value in row.items()} for row in rows]
    with open(speed, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _kernel(spec):
    from tilelang_churn.gpu import gpu_bench

    io = gpu_bench.kernel_io(spec)
    return io, gpu_bench.compile_kernel(io, spec)  # as the stage compiles it: TileLang's cache serves it


def _compile_only(spec) -> str | None:
    try:
        _kernel(spec)
    except Exception as exc:  # noqa: BLE001 - reported beside the row
        return f"{type(exc).__name__}: {exc}"[:300]
    return None


def time_three_ways(spec) -> dict:
    import torch
    from tilelang.profiler import do_bench
    from tilelang_churn.gpu import gpu_bench

    io, kernel = _kernel(spec)
    torch.manual_seed(0)
    inputs = io.inputs("cuda")
    launch = lambda: kernel(*inputs)  # noqa: E731
    events = gpu_bench.summarize_times(gpu_bench.time_launches(launch))["median"]
    flushed = do_bench(launch)
    try:
        profiler = kernel.get_profiler().do_bench()
        profiler_error = None
    except Exception as exc:  # noqa: BLE001 - some kernels' profiler cannot make their inputs
        profiler, profiler_error = None, f"{type(exc).__name__}: {exc}"[:200]
    return {"events_ms": events, "do_bench_ms": flushed, "profiler_ms": profiler, "profiler_error": profiler_error}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--speed", required=True, help="results/gpu/kernel_speed.csv of the GPU stage, or its folder of speed.json"
    )
    parser.add_argument("--configfile", required=True, help="the config the stage ran")
    parser.add_argument("--jobs", type=int, default=16)
    parser.add_argument("--budget-s", type=float, default=240.0, help="stop timing after this many seconds")
    args = parser.parse_args(argv)
    todo = configurations(args.speed, args.configfile)
    with ProcessPoolExecutor(args.jobs, mp_context=get_context("spawn")) as pool:
        errors = list(pool.map(_compile_only, [item["spec"] for item in todo]))
    began = time.perf_counter()
    for item, error in zip(todo, errors):
        row = item["row"]
        out = {
            "kernel": row["kernel"],
            "kernel_label": row["kernel_label"],
            "stage_latency_ms": float(row["latency_ms"] or "nan"),
        }
        if error:
            out["error"] = error
        elif time.perf_counter() - began > args.budget_s:
            out["error"] = f"not timed: past --budget-s {args.budget_s}"
        else:
            try:
                out |= time_three_ways(item["spec"])
            except Exception as exc:  # noqa: BLE001
                out["error"] = f"{type(exc).__name__}: {exc}"[:300]
        print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
