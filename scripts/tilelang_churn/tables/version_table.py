"""results/versions.csv: one row per entry of config ``versions``, what it is and what it can do.

Each row: the entry as checked before any job (version_entries.VersionEntry.record: a release, the installed one, a
wheel with its sha256, an environment's interpreter with its TileLang's commit and sources' sha256), then what its
TileLang can do (capabilities.py): probed from its package before any build (the installed release, a wheel, an
environment), else from the environment rule release_env built (its environment.json). ``versions.json`` beside it
holds the same records with their lists whole. Every column is documented in docs/outputs.md.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from tilelang_churn.core import files
from tilelang_churn.releases.capabilities import Capabilities

COLUMNS = (
    "version_name",
    "kind",
    "tilelang_version",
    "listed",
    "pins",
    "pins_from",
    "wheel",
    "wheel_sha256",
    "python",
    "commit",
    "source_sha256",
    "environment",
    "probed_from",
    "modes",
    "lower_trace",
    "pass_diff",
    "hip_lowers",
    "knockout_compile_hook",
    "pass_configs",
)
LIST_COLUMNS = ("pins", "modes", "pass_configs")  # space-separated in the CSV


def probed_record(found: Capabilities | None) -> dict:
    """The capability fields of an entry probed before any build (Grid.probed), {} where none was."""
    return {**found.as_record(), "probed_from": "package"} if found is not None else {}


def rows(entries: Sequence[Mapping], markers: Mapping[str, str]) -> list[dict]:
    """One record per entry (its record and what was probed before any build), completed from the environment
    marker of those whose environment was built (``markers``: name -> environment.json)."""
    out = []
    for entry in entries:
        row = dict(entry)
        marker = markers.get(row["version_name"])
        if marker is not None:
            data = json.loads(Path(marker).read_text(encoding="utf-8"))
            row["environment"] = str(Path(marker).parent)
            row["tilelang_version"] = data.get("tilelang_version", row["tilelang_version"])
            if "capabilities" in data and "modes" not in row:
                row.update(data["capabilities"], probed_from="environment")
        out.append({column: row.get(column) for column in COLUMNS})
    return out


def write(entries: Sequence[Mapping], markers: Mapping[str, str], out: str | Path) -> int:
    """versions.csv at OUT and versions.json beside it; 0."""
    records = rows(entries, markers)

    def cell(column: str, value):
        if value is None:
            return ""
        if column in LIST_COLUMNS:
            return " ".join(value)
        return str(value).lower() if isinstance(value, bool) else value

    out = Path(out)
    with files.atomic_file(out) as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows({column: cell(column, record[column]) for column in COLUMNS} for record in records)
    files.write_json(out.with_suffix(".json"), records)
    return 0
