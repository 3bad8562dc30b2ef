"""results/knockout/knockout.csv: every configuration's knockout.csv in one table, and what each pass is worth.

    python3 scripts/knockout_table.py --out results/knockout/knockout.csv results/knockout/runs/*/*/*/knockout.json \
        [results/knockout/gpu/*/*/*/knockout_gpu.json]

Each input is a configuration's ``knockout.json`` (knockout_batch.py), or its GPU job's ``knockout_gpu.json``
(knockout_gpu.py: the GPU columns of its variants, joined by variant); the table beside each is read only when
it is the file its job wrote (rows and sha256 recorded in the JSON): a table cut short or edited since is
refused, naming it, and nothing is written. The rows keep their columns (core/knockout_rows.py).

``summarize`` gives, per configuration, what the knockout page's index shows: the variants by status, the passes
whose knockout changes the generated source most, and the passes lowering cannot do without.
"""

from __future__ import annotations

import difflib
import json
import sys
from pathlib import Path

from tilelang_churn.core import jobs, knockout_rows, pass_configs, pass_names, statuses

PROG = "knockout_table.py"
GPU_RECORD = "knockout_gpu.json"  # a GPU job's record (gpu/knockout_gpu.py)
# a configuration: its version (the version entry's name tells apart two that import one tilelang_version), kernel,
# target and pass configs
CONFIG_COLUMNS = ("tilelang_version", "target_name", "kernel", "params", "kernel_label", "pass_configs", "version_name")
# a configuration apart from its pass configs: the one it is compared with when a switch is turned on
SIBLING_COLUMNS = ("tilelang_version", "target_name", "kernel", "params", "version_name")


def read_configuration(record: str | Path, gpu_record: str | Path | None = None) -> list[dict]:
    """The rows of one configuration: the knockout.csv beside RECORD, checked against it; with GPU_RECORD (its
    knockout_gpu.json) each variant's GPU columns from the knockout_gpu.csv beside that, checked the same way."""
    rows = knockout_rows.read_recorded(record)
    if gpu_record is None:
        return rows
    gpu_rows = knockout_rows.read_recorded(gpu_record, knockout_rows.GPU_TABLE_COLUMNS)
    by_variant = {row["variant"]: row for row in gpu_rows}
    unknown = set(by_variant) - {row["variant"] for row in rows}
    if unknown:
        raise knockout_rows.TableError(
            f"{gpu_record}: variants {sorted(unknown)} are not in {Path(record).with_suffix('.csv')}: the GPU table is "
            "of another knockout; rerun its GPU job (delete the file)"
        )
    return [{**row, **{k: v for k, v in by_variant.get(row["variant"], {}).items() if k != "variant"}} for row in rows]


def configuration_folder(record: str | Path) -> tuple[str, str, str]:
    """<version>, <target>, <configuration> of a knockout.json or knockout_gpu.json: the folders that name it."""
    parts = Path(record).parent.parts
    return tuple(parts[-3:])


def configurations(paths: list) -> list[tuple[Path, list[dict]]]:
    """(knockout.json, its rows) of each configuration among PATHS, in their order: PATHS name knockout.json
    records and knockout_gpu.json records, and a configuration's GPU record, when given, is joined to its rows."""
    paths = [Path(path) for path in paths]
    gpu = {configuration_folder(path): path for path in paths if path.name == GPU_RECORD}
    return [
        (path, read_configuration(path, gpu.get(configuration_folder(path))))
        for path in paths
        if path.name != GPU_RECORD
    ]


def gather(paths: list) -> list[dict]:
    """Every configuration's rows (configurations), one table, each variant beside its pass's switch (add_switches)."""
    return add_switches([row for _, rows in configurations(paths) for row in rows])


def add_switches(rows: list[dict]) -> list[dict]:
    """Fill the switch columns of each variant whose pass has an official switch (its ``switch`` cell) from the
    baseline of the same configuration with that switch on, when the rows hold it (config pass_configs): its
    pass configs, whether the variant's generated source is that baseline's, and that baseline's GPU latency."""
    baselines = {
        (_values(row, SIBLING_COLUMNS), row["pass_configs"]): row
        for row in rows
        if row["variant"] == knockout_rows.BASELINE
    }
    filled = []
    for row in rows:
        switched = None
        if row["switch"]:
            configs = {**json.loads(row["pass_configs"]), **json.loads(row["switch"])}
            spelled = pass_configs.canonical(configs)
            if spelled != row["pass_configs"]:
                switched = baselines.get((_values(row, SIBLING_COLUMNS), spelled))
        if switched is None:
            filled.append(row)
            continue
        same = None
        if row["source_sha256"] and switched["source_sha256"]:
            same = row["source_sha256"] == switched["source_sha256"]
        filled.append(
            {
                **row,
                "switch_pass_configs": switched["pass_configs"],
                "switch_source_equal": same,
                "switch_latency_ms": switched.get("latency_ms"),
                "switch_gpu_status": switched.get("gpu_status"),
            }
        )
    return filled


def _values(row: dict, columns) -> tuple:
    """The row's cells of COLUMNS; its version's name read as jobs.version_name does (a row without one: its
    tilelang_version)."""
    return tuple(jobs.version_name(row) if column == "version_name" else row[column] for column in columns)


def configuration_key(row: dict) -> tuple:
    return _values(row, CONFIG_COLUMNS)


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
        timed = [row for row in variants if row.get("latency_ratio") is not None]
        timed_other = [row for row in timed if not row["gpu_source_equal"]]
        # a variant compiled to the baseline's very source is the same kernel timed again: how far its ratio is
        # from 1 is the drift between timings (0.9 % for the GQA forward on the H100, outside both ranges)
        drift = max((abs(row["latency_ratio"] - 1) for row in timed if row["gpu_source_equal"]), default=0.0)
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
                "unfinished": [row for row in variants if row["status"] in statuses.UNFINISHED_STATUSES],
                # on the GPU, beyond the repeats' range and the same-source drift: the passes that pay most (the
                # kernel is slower without them) and those that cost most (faster without them)
                "timing_drift": drift,
                "slower_without": sorted(
                    (row for row in timed_other if (row.get("latency_ratio_low") or 0) > 1 + drift),
                    key=lambda row: -row["latency_ratio"],
                )[:top],
                "faster_without": sorted(
                    (row for row in timed_other if (row.get("latency_ratio_high") or 1) < 1 - drift),
                    key=lambda row: row["latency_ratio"],
                )[:top],
                "gpu_failed": [
                    row for row in variants if row.get("gpu_status") and row["gpu_status"] != statuses.STATUS_OK
                ],
            }
        )
    return summaries


def unknown_pass_names(records: list) -> str | None:
    """config knockout.passes, when a list: the names that name no pass of any baseline lowering of the grid (a
    misspelt ``Simplfy`` would otherwise be a quiet "did not take effect" row in every configuration), with the
    closest names that ran; None when every name ran somewhere, or the records predate ``baseline_passes``. A name
    matches a pass by its identity, short name or spelling (core/pass_names.matches)."""
    ran: dict[str, str] = {}  # identity -> spelling
    named: list[str] = []
    lowerings = [path for path in records if Path(path).name != GPU_RECORD]
    for path in lowerings:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
        passes = record.get("settings", {}).get("passes")
        if not isinstance(passes, list) or "baseline_passes" not in record:
            return None
        named += [name for name in passes if name not in named]
        # records before identities: each spelling stands for itself
        ran.update(record.get("baseline_pass_ids") or {name: name for name in record["baseline_passes"]})
    if not ran:  # no baseline lowered: its rows say why
        return None
    problems = []
    for name in named:
        if not any(pass_names.matches(name, pass_id, spelling) for pass_id, spelling in ran.items()):
            candidates = sorted({*ran, *map(pass_names.short_name, ran)})
            close = difflib.get_close_matches(name, candidates, n=3)
            problems.append(f"{name!r}" + (f" (did you mean {', '.join(close)}?)" if close else ""))
    if not problems:
        return None
    return (
        f"config knockout.passes: {', '.join(problems)} ran in no baseline lowering of the grid's {len(lowerings)} "
        "configuration(s); correct the name and rerun (each configuration's knockout.csv is kept)"
    )


def write_table(records: list[str], out: str | Path) -> int:
    """The records gathered (``gather``) into the table ``out``, one line saying so; 1 with one line on stderr,
    nothing written, when a record or its table is refused, or a named pass ran in no baseline."""
    try:
        rows = gather(records)
    except knockout_rows.TableError as exc:
        print(f"{PROG}: error: {exc}; rerun its knockout batch (delete the file)", file=sys.stderr)
        return 1
    unknown = unknown_pass_names(records)
    if unknown:
        print(f"{PROG}: error: {unknown}", file=sys.stderr)
        return 1
    knockout_rows.write_rows(out, rows)
    print(f"{PROG}: {len(rows)} rows of {len(records)} configuration(s) -> {out}")
    return 0
