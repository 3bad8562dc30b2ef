"""Write the numbers of results/bench/*.csv into docs/performance.md, between its bench-table markers (`make bench`).

    python benchmarks/bench_table.py [docs/performance.md]

scale.csv (benchmarks/test_scale.py) gives one row per number: goal, what, value, unit, limit, met. A number
over its limit (met=no) is recorded, then fails the benchmark that measured it (benchmarks/conftest.py).

docs/performance.md's table is the record across machines (results/ is not committed, and each session starts on a new
machine): a number of scale.csv replaces that table's row of the same goal and what in place, a new one is added
after its goal's rows, and every number that scale.csv lacks keeps the value there. Running some benchmarks
updates their rows only.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "results" / "bench"
START, END = "<!-- bench-table:start -->", "<!-- bench-table:end -->"
FIELDS = ["goal", "what", "value", "unit", "limit", "met"]
MISSED: list[str] = []  # goals missed since the last check (benchmarks/conftest.py fails the test with them)


def record(report: Path, goal: str, what: str, value: float, unit: str, limit: float | None = None) -> dict:
    """Write one number to REPORT, replacing that number of an earlier run (so one test can be rerun); a number
    over its limit is also added to MISSED. The row written."""
    met = "" if limit is None else ("yes" if value <= limit else "no")
    row = {"goal": goal, "what": what, "value": round(value, 3), "unit": unit, "limit": "" if limit is None else limit}
    row["met"] = met
    rows = []
    if report.is_file():
        with open(report, encoding="utf-8") as handle:
            rows = [old for old in csv.DictReader(handle) if (old["goal"], old["what"]) != (goal, what)]
    report.parent.mkdir(parents=True, exist_ok=True)
    with open(report, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=FIELDS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(sorted([*rows, row], key=lambda r: r["goal"]))  # stable: measuring order within a goal
    if missed(row):
        MISSED.append(missed(row))
    return row


def missed(row: dict) -> str | None:
    """None when the row has no limit or meets it, else one line saying which goal was missed and by what."""
    if row["met"] != "no":
        return None
    unit = row["unit"]
    return f"goal {row['goal']}, {row['what']}: {row['value']} {unit} is over its limit of {row['limit']} {unit}"


def table(rows: list[dict]) -> str:
    lines = ["| goal | what | measured | limit | met |", "| --- | --- | --- | --- | --- |"]
    for row in rows:
        limit = f"{row['limit']} {row['unit']}" if row["limit"] else ""
        lines.append(f"| {row['goal']} | {row['what']} | {row['value']} {row['unit']} | {limit} | {row['met']} |")
    return "\n".join(lines)


def readme_rows(readme: Path) -> list[dict]:
    """The rows of the performance table (as table() wrote them), or [] where it has none."""
    text = readme.read_text(encoding="utf-8")
    if START not in text or END not in text:
        return []
    rows = []
    for line in text.split(START, 1)[1].split(END, 1)[0].strip().splitlines()[2:]:
        goal, what, measured, limit, met = (cell.strip() for cell in line.strip()[1:-1].split(" | "))
        value, _, unit = measured.partition(" ")
        limit_value = limit.partition(" ")[0]
        rows.append({"goal": goal, "what": what, "value": value, "unit": unit, "limit": limit_value, "met": met})
    return rows


def merged(old: list[dict], new: list[dict]) -> list[dict]:
    """OLD's rows with NEW's numbers: a row of the same goal and what replaced in place, the others after the
    last row of their goal (or at the end, goals in order)."""
    rows = list(old)
    index = {(row["goal"], row["what"]): i for i, row in enumerate(rows)}
    for row in new:
        key = (row["goal"], row["what"])
        if key in index:
            rows[index[key]] = row
            continue
        same_goal = [i for i, kept in enumerate(rows) if kept["goal"] == row["goal"]]
        later = [i for i, kept in enumerate(rows) if kept["goal"] > row["goal"]]
        at = same_goal[-1] + 1 if same_goal else (later[0] if later else len(rows))
        rows.insert(at, row)
        index = {(kept["goal"], kept["what"]): i for i, kept in enumerate(rows)}
    return rows


def rewrite(readme: Path, rows: list[dict]) -> None:
    text = readme.read_text(encoding="utf-8")
    if START not in text or END not in text:
        raise SystemExit(f"{readme}: no {START} ... {END} section to fill")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    readme.write_text(f"{head}{START}\n{table(rows)}\n{END}{tail}", encoding="utf-8")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    readme = Path(argv[0]) if argv else REPO / "docs" / "performance.md"
    with open(BENCH / "scale.csv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    kept = readme_rows(readme)
    rewrite(readme, merged(kept, rows))
    print(f"{readme}: {len(rows)} measured numbers from {BENCH / 'scale.csv'}, beside {len(kept)} of the table")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
