"""results/knockout/knockout.csv: every configuration's knockout.csv in one table, and what each pass is worth.

    python3 scripts/knockout_table.py --out results/knockout/knockout.csv results/knockout/runs/*/*/*/knockout.json

Each input is a configuration's ``knockout.json`` (knockout_batch.py); the ``knockout.csv`` beside it is read
only when it is the file its job wrote (rows and sha256 recorded in knockout.json): a table cut short or edited
since is refused, naming it, and nothing is written. The rows keep their columns (core/knockout_rows.py).

``summarize`` gives, per configuration, what the knockout page's index shows: the variants by status, the passes
whose knockout changes the generated source most, and the passes lowering cannot do without.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tilelang_churn.core import knockout_rows, statuses

PROG = "knockout_table.py"
UNFINISHED = (statuses.STATUS_CRASHED, statuses.STATUS_TIMEOUT)  # lowerings that gave no result
CONFIG_COLUMNS = ("tilelang_version", "target_name", "kernel", "params", "kernel_label")


def read_configuration(record: str | Path) -> list[dict]:
    """The rows of one configuration: the knockout.csv beside RECORD, checked against it."""
    record = Path(record)
    try:
        written = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise knockout_rows.TableError(f"{record}: not readable JSON ({exc})") from None
    return knockout_rows.read_rows(record.with_name("knockout.csv"), written.get("knockout_csv") or {})


def gather(records: list[str | Path]) -> list[dict]:
    rows = []
    for record in records:
        rows += read_configuration(record)
    return rows


def configuration_key(row: dict) -> tuple:
    return tuple(row[column] for column in CONFIG_COLUMNS)


def source_change(row: dict) -> int | None:
    """Lines of generated source a variant changed against its baseline (None: it generated none)."""
    if row["source_added"] is None or row["source_deleted"] is None:
        return None
    return row["source_added"] + row["source_deleted"]


def summarize(rows: list[dict], top: int = 3) -> list[dict]:
    """Per configuration, in table order: its rows, the counts by status, the variants without effect, the
    variants that change the generated source most (at most ``top``) and those lowering fails without."""
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault(configuration_key(row), []).append(row)
    summaries = []
    for key, group in groups.items():
        baseline = next((row for row in group if row["variant"] == knockout_rows.BASELINE), None)
        variants = [row for row in group if row["variant"] != knockout_rows.BASELINE]
        lowered = [row for row in variants if row["status"] == statuses.STATUS_LOWERED and row["skipped_runs"]]
        changing = sorted(
            (row for row in lowered if not row["source_equal"]), key=lambda row: -(source_change(row) or 0)
        )
        summaries.append(
            {
                **dict(zip(CONFIG_COLUMNS, key)),
                "baseline": baseline,
                "rows": group,
                "variants": len(variants),
                "counts": {s: sum(row["status"] == s for row in variants) for s in statuses.KNOCKOUT_STATUSES},
                "no_effect": [row for row in variants if not row["skipped_runs"]],
                "same_source": [row for row in lowered if row["source_equal"]],
                "largest_change": changing[:top],
                "needed": [row for row in variants if row["status"] == statuses.STATUS_LOWER_FAILED],
                "unfinished": [row for row in variants if row["status"] in UNFINISHED],
            }
        )
    return summaries


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="the gathered table (results/knockout/knockout.csv)")
    parser.add_argument("records", nargs="+", help="each configuration's knockout.json")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        rows = gather(args.records)
    except knockout_rows.TableError as exc:
        print(f"{PROG}: error: {exc}; rerun its knockout batch (delete the file)", file=sys.stderr)
        return 1
    knockout_rows.write_rows(args.out, rows)
    print(f"{PROG}: {len(rows)} rows of {len(args.records)} configuration(s) -> {args.out}")
    return 0
