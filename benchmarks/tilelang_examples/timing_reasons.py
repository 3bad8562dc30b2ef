#!/usr/bin/env python3
"""Why the stage's latency and TileLang's do_bench differ, kernel by kernel: docs/gpu-stage.md's "Why does the stage
differ from do_bench?", made from own_timing.py's run on an H100 and the GPU's clocks meanwhile:

    python3 benchmarks/tilelang_examples/timing_reasons.py tests/data/gpu

Each kernel of the stage's 0.1.13 corpus was timed five ways in one process (own_timing.py's table). The stage's
median is compared with do_bench's event backend (its mean, TileLang's default) and with its cupti backend. A
kernel more than 5 % from the event backend gets the first reason that its own numbers show:

| reason | shown by |
| --- | --- |
| ``host`` | the event backend reads more than twice one launch alone after a flush (``cold``, no host cost) |
| ``clock`` | NVML said ``sw_power_cap`` while the stage or the event backend ran: the SM clock fell |
| ``launch`` | most of the gap is event minus cupti: the launch's own latency, between do_bench's two events |
| ``l2`` | most of the gap is cupti minus the stage: the stage's later launches found their inputs in L2 |
"""

from __future__ import annotations

import json
import lzma
import statistics
import sys
from pathlib import Path

OWN_TIMING = "own_timing_h100_examples_0.1.13.jsonl"
CLOCKS = "clocks_h100_own_timing.csv.xz"
POWER_CAP = 0x4  # NVML's clock event reason sw_power_cap
CLOSE, HOST_FACTOR = 0.05, 2.0
BANDS = ((0.1, "0.1 ms and more"), (0.01, "10-100 µs"), (0.0, "under 10 µs"))


def read_timings(folder: Path) -> list[dict]:
    rows = [json.loads(line) for line in (folder / OWN_TIMING).read_text().splitlines() if line.startswith("{")]
    return [row for row in rows if row.get("stage_ms")]


def read_clocks(folder: Path) -> list[tuple[float, int, int]]:
    """(Unix time, SM clock MHz, NVML reasons) of every sample examples_device.sh logged (``$EPOCHREALTIME, ...``)."""
    samples = []
    for line in lzma.decompress((folder / CLOCKS).read_bytes()).decode().splitlines():
        at, sm, _mem, _power, _temp, reasons = (cell.strip() for cell in line.split(","))
        samples.append((float(at), int(sm), int(reasons, 16)))
    return samples


def capped(clocks: list, at: list[float]) -> bool:
    return any(at[0] <= t <= at[1] and reasons & POWER_CAP for t, _, reasons in clocks)


def reason(row: dict, clocks: list) -> str:
    if row["event_mean_ms"] > HOST_FACTOR * row["cold_ms"]:
        return "host"
    if capped(clocks, row["stage_at"]) or capped(clocks, row["event_at"]):
        return "clock"
    launch, warm = launch_ms(row), row["cupti_ms"] - row["stage_ms"]
    if max(launch, warm) <= 0:
        return "unexplained"
    return "launch" if launch >= warm else "l2"


def launch_ms(row: dict) -> float:
    """What do_bench's event backend times beyond the kernel's device time (cupti): a launch's own latency."""
    return row["event_mean_ms"] - row["cupti_ms"]


def band(ms: float) -> str:
    return next(label for floor, label in BANDS if ms >= floor)


def summary(folder: Path) -> dict:
    clocks = read_clocks(folder)
    bands: dict[str, dict] = {
        label: {"kernels": 0, "event": 0, "cupti": 0, "ratios": [], "cupti_ratios": [], "launch_us": [], "reasons": {}}
        for _, label in BANDS
    }
    for row in read_timings(folder):
        found = bands[band(row["stage_ms"])]
        found["kernels"] += 1
        ratio = row["stage_ms"] / row["event_mean_ms"]
        found["ratios"].append(ratio)
        found["cupti_ratios"].append(row["stage_ms"] / row["cupti_ms"])
        found["launch_us"].append(launch_ms(row) * 1e3)
        found["cupti"] += abs(row["stage_ms"] / row["cupti_ms"] - 1) <= CLOSE
        if abs(ratio - 1) <= CLOSE:
            found["event"] += 1
        else:
            found["reasons"].setdefault(reason(row, clocks), []).append(row["kernel"])
    for found in bands.values():
        ratios, cupti_ratios, launch = found.pop("ratios"), found.pop("cupti_ratios"), found.pop("launch_us")
        found["event_low"], found["event_high"] = min(ratios), max(ratios)
        found["cupti_low"], found["cupti_high"] = min(cupti_ratios), max(cupti_ratios)
        found["launch_us_median"] = statistics.median(launch)
        found["reasons"] = {key: sorted(kernels) for key, kernels in sorted(found["reasons"].items())}
    return bands


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    print(json.dumps(summary(Path(argv[0])), indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
