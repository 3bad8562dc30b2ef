"""The pass knockout on the GPU (config knockout with gpu: true): each lowered variant of one configuration compiled
for the GPU's own arch with its pass skipped, checked against the kernel's reference and timed beside the baseline.

    python3 scripts/knockout_gpu.py --knockout results/knockout/runs/0.1.15/cuda-sm90/1024x1024x1024/knockout.json \\
        --device results/gpu/device.json --out results/knockout/gpu/0.1.15/cuda-sm90/1024x1024x1024/knockout_gpu.csv \\
        --workers 16 --shape 1024,1024,1024 --target cuda-sm90 --expect-release 0.1.15

The variants are the configuration's CPU knockout (its knockout.json and the knockout.csv beside it, checked against
each other): the baseline and every variant that lowered with at least one run skipped. Each runs in a child forked
from this process before it imports TileLang or torch (importing TileLang initialises CUDA, and a child forked after
that cannot use it: "Cannot re-initialize CUDA in forked subprocess", seen on the H200), so each child imports them
and a device-side assertion or an illegal address poisons that child's CUDA context only. A child runs
``gpu_bench.run_job`` with the knockout (``pass_knockout.compiling_without``: tilelang.compile's own PassContexts
skip the pass), TileLang's cache off and a private cache folder per variant. The children compile side by side (one
nvcc each); launching, checking and timing hold gpu_bench's lock of the GPU, so the timings never overlap, and the
baseline is timed in this same job: ``latency_ratio`` = latency / the baseline's latency, its range from the
repeats' fastest and slowest.

Writes the configuration's ``knockout_gpu.csv`` (core/knockout_rows.py GPU_TABLE_COLUMNS) and ``knockout_gpu.json``
(the device, the variants, times, the table's rows and sha256). Exit status: 0 written (any status), 2 bad
arguments, 3 TileLang not the release --expect-release names, 4 no device description.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import sys
import time
from collections import deque
from pathlib import Path

from tilelang_churn.core import files, knockout_rows, releases, statuses
from tilelang_churn.gpu import gpu_bench
from tilelang_churn.knockout import pass_knockout
from tilelang_churn.trace import fork_pool, trace_cli

PROG = "knockout_gpu.py"
SCRIPT = Path(__file__).resolve().parents[2] / "knockout_gpu.py"
RECORD = "knockout_gpu.json"
TIMEOUT_S = 900.0  # one variant: its compile, its wait for the GPU's lock behind the others, its timing
GPU_SECONDS = gpu_bench.GPU_SECONDS  # one variant holding the GPU: its launch, check and timing (knockout.timeout_s)


def variants_of(record: Path) -> list[pass_knockout.Variant]:
    """The baseline and every variant of the CPU knockout that lowered with a run skipped, in table order."""
    chosen = []
    for row in knockout_rows.read_recorded(record):
        if row["variant"] == knockout_rows.BASELINE:
            chosen.append(pass_knockout.BASELINE)
        elif row["status"] == statuses.STATUS_LOWERED and row["skipped_runs"]:
            occurrence = None if row["occurrence"] == knockout_rows.OCCURRENCE_ALL else int(row["occurrence"])
            label = row["variant"] if occurrence is None else row["variant"].rsplit("#", 1)[0]
            chosen.append(
                pass_knockout.Variant(
                    row["knocked_pass_id"],
                    occurrence,
                    row["pipeline_step"],
                    row["baseline_runs"],
                    knocked_pass=row["knocked_pass"],
                    label=label,
                )
            )
    return chosen


def _child(spec, device: dict, variant, path: Path, cache: Path, repeats: int, launches: int, gpu_seconds: float,
           outputs: Path, baseline: Path | None):  # fmt: skip
    print(f"{PROG}: {variant.name}: compiling", flush=True)
    row = gpu_bench.run_job(spec, device, repeats, launches, cache_dir=cache, knockout=variant.knockout(),
                            knockout_run=True, gpu_seconds=gpu_seconds, keep=outputs if baseline is None else None,
                            baseline=baseline)  # fmt: skip
    files.write_json(path, row, indent=None)
    print(f"{PROG}: {variant.name}: {gpu_bench.summary_line(row)}", flush=True)
    return 0


def _wrong_text(result: dict) -> str | None:
    if result.get("status") != statuses.STATUS_WRONG:
        return None
    return f"wrong: max_rel_error {result['max_rel_error']:.3g} > tolerance {result['tolerance']:.3g}"


def gpu_row(variant: pass_knockout.Variant, result: dict, baseline: dict) -> dict:
    """A knockout_gpu.csv row from gpu_bench's row of the variant and of its baseline."""
    latency, base = result.get("latency_ms"), baseline.get("latency_ms")
    timed = latency is not None and base and result.get("status") != statuses.STATUS_WRONG
    row = {
        "variant": variant.name,
        "gpu_status": result.get("status"),
        "gpu_error": result.get("error") or _wrong_text(result),
        "compile_hook": result.get("compile_hook"),
        "compile_skipped_runs": result.get("compile_skipped_runs"),
        "compile_target": result.get("compile_target"),
        "compile_seconds": result.get("compile_seconds"),
        "gpu_source_sha256": result.get("source_sha256"),
        "gpu_source_equal": None
        if result.get("source_sha256") is None or baseline.get("source_sha256") is None
        else result["source_sha256"] == baseline["source_sha256"],
        "check": result.get("check"),
        "max_rel_error": result.get("max_rel_error"),
        "tolerance": result.get("tolerance"),
        "latency_ms": latency,
        "latency_min_ms": result.get("latency_min_ms"),
        "latency_max_ms": result.get("latency_max_ms"),
        "spread": result.get("spread"),
        "baseline_latency_ms": base,
        "baseline_spread": baseline.get("spread"),
        "gpu_name": result.get("gpu_name"),
        "repeats": result.get("repeats"),
        "launches": result.get("launches"),
        "sm_clock_mhz": result.get("sm_clock_mhz"),
        "baseline_sm_clock_mhz": baseline.get("sm_clock_mhz"),
        "clock_limits": result.get("clock_limits"),
    }
    if timed:
        row["latency_ratio"] = latency / base
        row["latency_ratio_low"] = result["latency_min_ms"] / baseline["latency_max_ms"]
        row["latency_ratio_high"] = result["latency_max_ms"] / baseline["latency_min_ms"]
    return row


def run_variants(spec, device: dict, variants: list, out_dir: Path, workers: int, timeout: float, repeats: int,
                 launches: int, gpu_seconds: float = GPU_SECONDS) -> list[dict]:  # fmt: skip
    """gpu_bench's row of every variant, in variant order: each in a child of its own, ``workers`` at a time. The
    baseline (the first) runs alone first and keeps its outputs: a variant without a reference is checked against
    them (check ``baseline``), on the same seeded inputs."""
    results: dict[int, dict] = {}
    scratch = out_dir / ".variants"
    scratch.mkdir(parents=True, exist_ok=True)
    baseline = scratch / "baseline.outputs.pt"
    baseline.unlink(missing_ok=True)
    queue = deque(range(len(variants)))
    with fork_pool.ForkPool(workers) as pool:
        while queue or pool.running:
            while queue and pool.has_room and (queue[0] == 0 or 0 in results):
                index = queue.popleft()
                path = scratch / f"{index}.json"
                path.unlink(missing_ok=True)
                cache = out_dir / "tilelang_cache" / str(index)  # a private cache: no variant reads another's kernel
                child = functools.partial(_child, spec, device, variants[index], path, cache, repeats, launches,
                                          gpu_seconds, baseline, None if index == 0 else baseline)  # fmt: skip
                pool.start(index, child, timeout)
            index, ended = pool.wait()
            if ended.signal == signal.SIGALRM:  # its kernel held the GPU past gpu_seconds (gpu_bench.run_job)
                results[index] = gpu_bench.held_the_gpu_too_long(gpu_seconds, "knockout.timeout_s")
            else:
                results[index] = pass_knockout.child_result(
                    scratch / f"{index}.json", ended, timeout, "the compile and run"
                )
    for path in [*scratch.glob("*.json"), baseline]:
        path.unlink(missing_ok=True)
    scratch.rmdir()
    return [results[i] for i in range(len(variants))]


def measure_variants(
    kernel_args: list[str],
    knockout: str | Path,
    device_path: str | Path,
    out: str | Path,
    argv: list[str],
    *,
    workers: int = 1,
    timeout: float = TIMEOUT_S,
    gpu_timeout: float = GPU_SECONDS,
    repeats: int = gpu_bench.REPEATS,
    launches: int = gpu_bench.LAUNCHES,
) -> int:
    """The variants of a configuration's CPU knockout (KNOCKOUT: its knockout.json) compiled, checked and timed on
    the device that DEVICE_PATH describes (gpu_bench --probe), the kernel and target those of KERNEL_ARGS (the trace
    script's options and checks: exit 2 on a bad one); OUT (knockout_gpu.csv) and knockout_gpu.json beside it
    written, ARGV recorded, and one line counting the variants by status. The exit statuses: the module's."""
    spec = trace_cli.parse_lowering(kernel_args).with_mode("instrument")
    expected = spec.release
    try:
        device = json.loads(Path(device_path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"{PROG}: error: no device description in {device_path}: {exc}", file=sys.stderr)
        return gpu_bench.EXIT_NO_DEVICE
    try:
        variants = variants_of(Path(knockout))
    except (OSError, ValueError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return trace_cli.EXIT_BAD_ARGUMENTS
    os.environ["TILELANG_DISABLE_CACHE"] = "1"  # no kernel cache may serve one variant another's binary
    started = time.perf_counter()
    out = Path(out)
    results = run_variants(spec, device, variants, out.parent, max(1, workers), timeout, repeats, launches, gpu_timeout)
    imported = sorted({result["tilelang_version"] for result in results if result.get("tilelang_version")})
    if expected and not all(releases.imports_release(version, expected) for version in imported):
        said = f"imported tilelang {', '.join(imported)}, not {expected} (--expect-release)"
        print(f"{PROG}: error: {said}", file=sys.stderr)
        return trace_cli.EXIT_NOT_RECORDED
    rows = [gpu_row(variant, result, results[0]) for variant, result in zip(variants, results)]
    knockout_rows.write_rows(out, rows, columns=knockout_rows.GPU_TABLE_COLUMNS)
    files.write_json(
        out.with_name(RECORD),
        {
            "argv": argv,
            "device": device,
            "tilelang_version": imported[0] if imported else None,
            "variants": [variant.as_dict() for variant in variants],
            "workers": workers,
            "wall_seconds": round(time.perf_counter() - started, 3),
            "knockout_gpu_csv": knockout_rows.fingerprint(out),
        },
    )
    found = [row["gpu_status"] for row in rows]
    said = ", ".join(f"{found.count(s)} {s}" for s in knockout_rows.GPU_KNOCKOUT_STATUSES if s in found)
    print(f"{PROG}: {spec.kernel_label} on {spec.target_name}: {len(rows)} variant(s): {said} ({out})")
    return 0
