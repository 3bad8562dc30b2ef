"""Write the numbers of results/bench/*.csv into README.md, between its bench-table markers (`make bench`).

    python benchmarks/bench_table.py [README.md]

scale.csv (benchmarks/test_scale.py) gives one row per number: goal, what, value, unit, limit, met.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "results" / "bench"
START, END = "<!-- bench-table:start -->", "<!-- bench-table:end -->"


def table(rows: list[dict]) -> str:
    lines = ["| goal | what | measured | limit | met |", "| --- | --- | --- | --- | --- |"]
    for row in rows:
        limit = f"{row['limit']} {row['unit']}" if row["limit"] else ""
        lines.append(f"| {row['goal']} | {row['what']} | {row['value']} {row['unit']} | {limit} | {row['met']} |")
    return "\n".join(lines)


def rewrite(readme: Path, rows: list[dict]) -> None:
    text = readme.read_text(encoding="utf-8")
    if START not in text or END not in text:
        raise SystemExit(f"{readme}: no {START} ... {END} section to fill")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    readme.write_text(f"{head}{START}\n{table(rows)}\n{END}{tail}", encoding="utf-8")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    readme = Path(argv[0]) if argv else REPO / "README.md"
    with open(BENCH / "scale.csv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    rewrite(readme, rows)
    print(f"{readme}: {len(rows)} measured numbers from {BENCH / 'scale.csv'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
