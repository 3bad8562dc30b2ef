"""Per-pass statistics from one TL_LOWER_TRACE run record (standard library only).

A run record is ``.run_records/run_<time>_<pid>_<id>/<phase>/<NN>_<Pass>_before.tir`` plus
``_after.tir`` (``_after.cpp`` for the codegen step). Counts are difflib.SequenceMatcher opcodes over the
two files' lines, the way TileLang's report.html counts them (a replaced line is one + and one -).

    python scripts/run_record.py RUN_DIR      # prints one line per pass step
"""

from __future__ import annotations

import re
from pathlib import Path

from tilelang_churn.core import line_churn, passes_table

_FILE = re.compile(r"^(?P<step>\d+)_(?P<name>.+)_(?P<side>before|after)\.(?P<ext>tir|cpp)$")


def count_line_changes(before: str, after: str) -> tuple[int, int]:
    """(added, deleted) lines, as TileLang's lower_trace core counts them for its report."""
    return line_churn.sequence_matcher_counts(before, after)


def churn_columns(before: str, after: str) -> dict:
    """added/deleted, raw and with lines compared without leading and trailing whitespace."""
    added, deleted = line_churn.sequence_matcher_counts(before, after)
    added_stripped, deleted_stripped = line_churn.sequence_matcher_counts(before, after, strip=True)
    return {"added": added, "deleted": deleted, "added_stripped": added_stripped, "deleted_stripped": deleted_stripped}


NO_CHURN = {"added": 0, "deleted": 0, "added_stripped": 0, "deleted_stripped": 0}
NO_COUNTS = {"added": None, "deleted": None, "added_stripped": None, "deleted_stripped": None}


def read_run_record(run_dir: str | Path) -> list[dict]:
    """One row per before/after pair, in step order: step, phase, pass, status, changed, added, deleted,
    added_stripped, deleted_stripped (``churn_columns``).

    status: codegen when the after side is generated source (.cpp); failed when the after side is empty
    (TileLang writes an empty after file for a pass or codegen that raised; failed rows have no counts);
    else changed or noop.
    """
    run_dir = Path(run_dir)
    pairs: dict[tuple[int, str, str], dict[str, Path]] = {}
    for path in sorted(run_dir.glob("*/*")):
        match = _FILE.match(path.name)
        if not match or not path.is_file():
            continue
        key = (int(match["step"]), path.parent.name, match["name"])
        pairs.setdefault(key, {})[match["side"]] = path
    rows = []
    for (step, phase, name), sides in sorted(pairs.items()):
        if set(sides) != {"before", "after"}:
            raise ValueError(f"{run_dir}: step {step} {phase}/{name} has only its {', '.join(sides)} file")
        before = sides["before"].read_text(encoding="utf-8")
        after = sides["after"].read_text(encoding="utf-8")
        row = {"step": step, "phase": phase, "pass": name}
        if sides["after"].suffix == ".cpp":
            row.update(status=passes_table.STATUS_CODEGEN, changed=True, **churn_columns(before, after))
        elif after == "":
            row.update(status=passes_table.STATUS_FAILED, changed=None, **NO_COUNTS)
        elif before == after:
            row.update(status=passes_table.STATUS_NOOP, changed=False, **NO_CHURN)
        else:
            row.update(status=passes_table.STATUS_CHANGED, changed=True, **churn_columns(before, after))
        rows.append(row)
    return rows


def find_run_dirs(trace_dir: str | Path) -> list[Path]:
    """Every run record under a TL_LOWER_TRACE_DIR, oldest first."""
    return sorted(Path(trace_dir).glob("*/.run_records/run_*"), key=lambda p: p.stat().st_mtime)


def print_run_record(run_dir: str | Path) -> int:
    """One line per pass step of the run record (``read_run_record``): step, phase/pass, status, +added -deleted."""
    for row in read_run_record(run_dir):
        counts = "" if row["status"] == passes_table.STATUS_FAILED else f" +{row['added']} -{row['deleted']}"
        print(f"{row['step']:3d} {row['phase']}/{row['pass']} {row['status']}{counts}")
    return 0
