#!/usr/bin/env python3
"""The GPU stage's latency beside TileLang's own timings of the same compiled kernel (issues 47, 57), on a GPU machine.

For each configuration that the stage timed (`ok` or `wrong` rows of results/gpu/kernel_speed.csv; a row per
kernel) the kernel is compiled as the stage compiles it (gpu_bench.kernel_io, tilelang.compile with the job's pass
configs) and timed these ways in one process, one after the other (each method's wall-clock start and end, in
Unix seconds, beside it, to join with a GPU clock log):

| key | method | L2 | host cost timed |
| --- | --- | --- | --- |
| ``stage`` | gpu_bench.time_launches: a graph of 20 launches, flushed before each of 7 replays | warm, not 1st | no |
| ``cold`` | the same, a graph of 1 launch, 50 replays: each launch alone after a flush | cold | no |
| ``event`` | ``do_bench(backend="event")``: events around each launch, flushed before each | cold | past the flush |
| ``cudagraph`` | ``do_bench(backend="cudagraph")``: TileLang's graph replay, the stage's method | warm, not 1st | no |
| ``cupti`` | ``do_bench(backend="cupti")``: the profiler's device time of each kernel, flushed before | cold | no |

``*_ms`` is each method's median (cupti: its mean; event: the mean, TileLang's default, and the median), ``*_spread``
max over min of the repeats, or the 90th over the 10th percentile (event, cudagraph).

    python3 benchmarks/tilelang_examples/own_timing.py --speed results/gpu/kernel_speed.csv \
        --configfile benchmarks/tilelang_examples/v0.1.13.yaml --jobs 16 > own_timing.jsonl

Compiles first in --jobs processes (spawned: TileLang's import initialises CUDA), then times in this process,
smallest stage latency first.
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
    rows = {}
    for row in _speed_rows(Path(speed_csv)):
        key = (row["kernel"], row["kernel_label"])
        if row["status"] in ("ok", "wrong") and key in specs and key not in rows:  # a table of two versions: the first
            rows[key] = {"row": row, "spec": specs[key]}
    return list(rows.values())


def _speed_rows(speed: Path) -> list[dict]:
    """The rows of a kernel_speed.csv, or of every speed.json under a folder (results/gpu/runs): the stage's jobs
    as they ended, also where the rule that gathers them did not run."""
    if speed.is_dir():
        from tilelang_churn.tables import kernel_speed

        rows = kernel_speed.read_speed_rows(sorted(speed.rglob("speed.json")))
        return [{key: "" if value is None else value for key, value in row.items()} for row in rows]
    with open(speed, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _stage_ms(row: dict) -> float:
    return float(row["latency_ms"] or "inf")


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


COLD_REPEATS = 50
QUANTILES = [0.5, 0.1, 0.9]


def _timed(out: dict, key: str, measure) -> None:
    """out[key_ms], out[key_spread] (where measured) and out[key_at] = [start, end] from measure(), or the error."""
    started = time.time()
    try:
        out |= {f"{key}_{name}": value for name, value in measure().items()}
    except Exception as exc:  # noqa: BLE001 - a backend this TileLang lacks: said in the row
        out[f"{key}_error"] = f"{type(exc).__name__}: {exc}"[:200]
    out[f"{key}_at"] = [round(started, 3), round(time.time(), 3)]


def _repeats(times: list[float]) -> dict:
    from tilelang_churn.gpu import gpu_bench

    summary = gpu_bench.summarize_times(times)
    return {"ms": summary["median"], "spread": summary["spread"]}


def _quantiles(do_bench, launch, backend: str) -> dict:
    median, low, high = do_bench(launch, backend=backend, quantiles=QUANTILES)
    return {"ms": median, "spread": high / low if low > 0 else None}


def time_ways(spec) -> dict:
    import torch
    from tilelang.profiler import do_bench
    from tilelang_churn.gpu import gpu_bench

    io, kernel = _kernel(spec)
    torch.manual_seed(0)
    inputs = io.inputs("cuda")
    launch = lambda: kernel(*inputs)  # noqa: E731
    out: dict = {}
    _timed(out, "stage", lambda: _repeats(gpu_bench.time_launches(launch)[0]))
    _timed(out, "cold", lambda: _repeats(gpu_bench.time_launches(launch, repeats=COLD_REPEATS, launches=1)[0]))
    _timed(out, "event", lambda: _quantiles(do_bench, launch, "event") | {"mean_ms": do_bench(launch)})
    _timed(out, "cudagraph", lambda: _quantiles(do_bench, launch, "cudagraph"))
    _timed(out, "cupti", lambda: {"ms": do_bench(launch, backend="cupti")})
    return out


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
    for item, error in sorted(zip(todo, errors), key=lambda pair: _stage_ms(pair[0]["row"])):
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
                out |= time_ways(item["spec"])
            except Exception as exc:  # noqa: BLE001
                out["error"] = f"{type(exc).__name__}: {exc}"[:300]
        print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
