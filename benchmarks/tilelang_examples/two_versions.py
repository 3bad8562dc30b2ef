#!/usr/bin/env python3
"""The counts of docs/gpu-stage.md's "Two releases on an H100", made from the recorded runs:

    python3 benchmarks/tilelang_examples/two_versions.py tests/data/gpu

Checked: the runs (tests/data/gpu/PROVENANCE.md) are read in order, a later run's row of a (version, kernel,
params) replacing an earlier one; a configuration counts as checked when a version's row was checked against the
example's reference or the previous version. Repeated: 0.1.13's rows of run 1 against its GPU jobs run again on
the same machine (``..._again.csv``), the kernels of 10 µs and more. The stage against TileLang's do_bench:
timing_reasons.py.
"""

from __future__ import annotations

import csv
import sys
from collections import Counter
from pathlib import Path

RUNS = [f"kernel_speed_h100_examples_two_versions_run{n}.csv" for n in (1, 3, 4, 5)]
AGAIN = "kernel_speed_h100_examples_0.1.13_again.csv"
FIRST = "0.1.13"  # run 1's rows of r0.1.14 imported 0.1.13 (the bug its runs 3 and 4 were made after)
TIMED = ("ok", "wrong")


def read(path: Path) -> list[dict]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def latest_rows(folder: Path) -> dict[tuple, dict]:
    rows: dict[tuple, dict] = {}
    for index, name in enumerate(RUNS):
        for row in read(folder / name):
            if index == 0 and row["version_name"] != FIRST:
                continue
            rows[(row["version_name"], row["kernel"], row["params"])] = row
    return rows


def is_checked(row: dict) -> bool:
    return row["check"] == "reference" or row["check"].startswith("version:")


def summary(folder: Path) -> dict:
    rows = latest_rows(folder)
    configurations: dict[tuple, list[dict]] = {}
    for (_, kernel, params), row in rows.items():
        configurations.setdefault((kernel, params), []).append(row)
    unchecked = sorted(kernel for (kernel, _), found in configurations.items() if not any(map(is_checked, found)))
    by_check = Counter((row["version_name"], row["check"] or "(none)") for row in rows.values())
    first = {(row["kernel"], row["params"]): row for row in read(folder / RUNS[0]) if row["version_name"] == FIRST}
    pairs = []
    for row in read(folder / AGAIN):
        before = first.get((row["kernel"], row["params"]))
        if before and row["status"] in TIMED and before["status"] in TIMED:
            pairs.append((float(before["latency_ms"]), float(row["latency_ms"])))
    large = [(a, b) for a, b in pairs if a >= 0.01]
    apart = sorted(abs(b / a - 1) for a, b in large)
    return {
        "configurations": len(configurations),
        "checked": len(configurations) - len(unchecked),
        "unchecked": unchecked,
        "by_check": dict(sorted(by_check.items())),
        "repeated": len(large),
        "within_3_percent": sum(d <= 0.03 for d in apart),
        "largest_move": max(apart, default=0.0),
    }


def main(argv: list[str]) -> int:
    found = summary(Path(argv[0] if argv else "tests/data/gpu"))
    print(
        f"checked: {found['checked']} of {found['configurations']} configurations; not: {', '.join(found['unchecked'])}"
    )
    for (version, check), count in found["by_check"].items():
        print(f"  {version} {check}: {count}")
    print(f"repeated (10 µs and more): {found['within_3_percent']} of {found['repeated']} within 3 %, the largest move "
          f"{found['largest_move']:.1%}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
