#!/usr/bin/env python3
"""The examples' table of docs/gpu-stage.md, made from a GPU stage's kernel_speed.csv:

    python3 benchmarks/tilelang_examples/speed_table.py tests/data/gpu/kernel_speed_h200_examples_0.1.13_checked.csv

One line per configuration, in the table's order: the kernel (``#n`` where a kernel has several parameter sets), the
status, what it was checked against, the latency, its spread, TileLang's do_bench of the same kernel and the
reference's (torch) latency, the error against the tolerance, and the first words of the row's error.
"""

from __future__ import annotations

import csv
import sys
from collections import Counter

NOTE_CHARS = 72


def _ms(value: str) -> str:
    return f"{float(value):.4g}" if value else ""


def _error(row: dict) -> str:
    if not row["max_rel_error"]:
        return ""
    return f"{float(row['max_rel_error']):.2g} / {float(row['tolerance']):.0e}"


def _note(row: dict) -> str:
    text = " ".join((row["error"] or "").split()).replace("|", "/")
    return text if len(text) <= NOTE_CHARS else text[: NOTE_CHARS - 3].rstrip() + "..."


def table(rows: list[dict]) -> str:
    sets = Counter(row["kernel"] for row in rows)
    seen: Counter = Counter()
    lines = [
        "| kernel | status | check | ms | spread | do_bench ms | torch ms | error / tolerance | note |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        seen[row["kernel"]] += 1
        name = row["kernel"] + (f" #{seen[row['kernel']]}" if sets[row["kernel"]] > 1 else "")
        spread = f"{float(row['spread']):.3f}" if row["spread"] else ""
        timed = [_ms(row["latency_ms"]), spread, _ms(row.get("do_bench_ms")), _ms(row["torch_latency_ms"])]
        cells = [name, row["status"], row["check"], *timed]
        lines.append("| " + " | ".join([*cells, _error(row), _note(row)]) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    with open(argv[0], newline="", encoding="utf-8") as handle:
        sys.stdout.write(table(list(csv.DictReader(handle))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
