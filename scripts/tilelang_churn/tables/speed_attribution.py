"""results/compare/speed_attribution.csv: which passes explain a kernel's speed moving between two releases.

With two or more releases and ``gpu: true``, for every configuration (target, kernel, params, pass configs)
whose GPU latency moves between consecutive versions (releases, or a user's wheel or environment: by name, in
version order, kernel_speed.join_version) by more than the two timings' spread (the ranges of the
repeats, ``latency_min_ms``..``latency_max_ms``, do not overlap), one row: both latencies, the comparison's first
divergent pass and edit (divergence.csv, in the mode the trace of every release has: instrument when
configured), and, from the pass knockout (config ``knockout``, GPU columns):

- the newer release's passes whose knockout moves its latency at least halfway back to the older release's, and
  lands nearer the older's than the newer's: with the newer latency ``L_new``, the older ``L_old`` and the
  knockout's ``latency_ratio`` ``r`` (timed beside its own baseline), the share of the way back,
  ``L_new * (1 - r) / (L_new - L_old)``, is between 0.5 and 1.5 (a knockout that overshoots further moves the
  kernel by much more than the releases differ: it is not what changed between them);
- the older release's passes whose knockout moves its latency the same way towards the newer's:
  ``L_old * (r - 1) / (L_new - L_old)`` between 0.5 and 1.5.

When the two releases generate the same source (divergence.csv ``source_differs`` False: the trace's lowering
for the job's target), no pass of the lowering can explain the move: the pass lists stay empty and ``note``
says so.

A knockout counts only when its GPU result is right (``gpu_status`` ok), its compiled source is not the
baseline's (the same kernel's ratio is the timing's noise) and the repeats' range of its ratio excludes 1.
``ATTRIBUTION_SCHEMA`` documents every column (docs/outputs-compare.md shows the same text; a test keeps them in step).
Standard library only.
"""

from __future__ import annotations

from pathlib import Path

from tilelang_churn.core import passes_table, statuses
from tilelang_churn.core.releases import version_sort_key
from tilelang_churn.tables.kernel_speed import join_version

HALFWAY = 0.5  # a knockout's share of the way between the releases' latencies: within HALFWAY of all the way
CONFIG = ("target_name", "kernel", "params", "pass_configs")
RELEASE_MODE = "instrument"  # the trace mode of every release (its comparison has the IR after each pass)

ATTRIBUTION_SCHEMA: list[tuple[str, str]] = [
    ("kernel_label", "The configuration's readable label, as in churn.csv."),
    ("target_name", "As in churn.csv."),
    ("kernel", "As in churn.csv."),
    ("params", "As in churn.csv."),
    ("pass_configs", "As in churn.csv."),
    ("release_old", "The older of the two consecutive versions, by its name (a release's number; a wheel's or an "
     "environment's name: config `versions`)."),
    ("release_new", "The newer."),
    ("latency_old_ms", "The older release's latency_ms (kernel_speed.csv: median ms per launch)."),
    ("latency_old_min_ms", "Its fastest repeat."),
    ("latency_old_max_ms", "Its slowest repeat."),
    ("latency_new_ms", "The newer release's latency_ms."),
    ("latency_new_min_ms", "Its fastest repeat."),
    ("latency_new_max_ms", "Its slowest repeat."),
    ("latency_change", "latency_new_ms / latency_old_ms: above 1, the newer release made the kernel slower."),
    ("mode", "The trace mode whose comparison is read (instrument when configured)."),
    ("first_divergent_pass", "divergence.csv's: the first aligned pass after which the IR differs."),
    ("first_divergent_edit", "divergence.csv's: the first aligned pass whose edit differs."),
    ("source_differs", "divergence.csv's: the generated sources differ."),
    ("knockout_new", "The newer release's knockout on the GPU: timed, or why not (not configured, not timed)."),
    ("passes_back_new", "The newer release's passes whose knockout moves its latency back to the older's, between "
     "half and one and a half times the way (nearest to all the way first), `;`-separated."),
    ("back_new", "The share of the way back of each, same order (1: all the way)."),
    ("knockout_old", "The older release's knockout on the GPU, as knockout_new."),
    ("passes_back_old", "The older release's passes whose knockout moves its latency towards the newer's, between "
     "half and one and a half times the way."),
    ("back_old", "The share of the way of each, same order."),
    ("note", "In words: why no pass is listed (the same generated source, no knockout timed), else empty."),
]  # fmt: skip
COLUMNS = [name for name, _ in ATTRIBUTION_SCHEMA]
FLOAT_COLUMNS = (
    "latency_old_ms",
    "latency_old_min_ms",
    "latency_old_max_ms",
    "latency_new_ms",
    "latency_new_min_ms",
    "latency_new_max_ms",
    "latency_change",
)
BOOL_COLUMNS = ("source_differs",)
KNOCKOUT_TIMED = "timed"
KNOCKOUT_NOT_CONFIGURED = "not configured"
KNOCKOUT_NOT_TIMED = "not timed"  # configured, but the configuration has no timed knockout in this release


def read_csv(path) -> list[dict]:
    """The rows of a speed_attribution.csv, typed (passes_table's reader: a cut or foreign table is refused)."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    typed = passes_table.typed_rows(path, text, COLUMNS, "the speed_attribution.csv schema", (), BOOL_COLUMNS,
                                    FLOAT_COLUMNS)  # fmt: skip
    return [row for _, row in typed]


def _key(row: dict) -> tuple:
    return tuple(row[column] for column in CONFIG)


def _compared(row: dict, side: str) -> str:
    """One side of a divergence.csv row as ``join_version`` names it: its version's name (``release_SIDE``) and the
    TileLang version it imported (``tilelang_version_SIDE``; a row without it: the name, a release's as before)."""
    name = row[f"release_{side}"]
    return join_version({"version_name": name, "tilelang_version": row.get(f"tilelang_version_{side}") or name})


def moved(old: dict, new: dict) -> bool:
    """Whether the latency moved by more than the two timings' spread: the ranges of their repeats are apart."""
    return new["latency_min_ms"] > old["latency_max_ms"] or new["latency_max_ms"] < old["latency_min_ms"]


def _beyond_noise(row: dict) -> bool:
    low, high = row.get("latency_ratio_low"), row.get("latency_ratio_high")
    return low is not None and high is not None and (low > 1 or high < 1)


def passes_moving(knockout: list[dict], latency: float, toward: float) -> list[tuple[str, float]]:
    """(variant, share of the way from LATENCY to TOWARD that its knockout moves) for each timed knockout whose share
    is within HALFWAY of 1 (it lands nearer TOWARD than LATENCY), nearest to all the way first. The knockout's
    latency is LATENCY x its latency_ratio."""
    found = []
    for row in knockout:
        ratio = row.get("latency_ratio")
        if ratio is None or row.get("gpu_status") != statuses.STATUS_OK or row.get("gpu_source_equal"):
            continue
        if not _beyond_noise(row):
            continue
        share = latency * (1 - ratio) / (latency - toward)
        if abs(share - 1) <= HALFWAY:
            found.append((row["variant"], share))
    return sorted(found, key=lambda item: abs(item[1] - 1))


def _knockout_state(configured: bool, rows: list[dict]) -> str:
    if not configured:
        return KNOCKOUT_NOT_CONFIGURED
    return KNOCKOUT_TIMED if any(row.get("latency_ratio") is not None for row in rows) else KNOCKOUT_NOT_TIMED


def _note(same_source: bool, configured: bool, found: bool) -> str | None:
    if same_source:
        return (
            "both releases generate the same source for this configuration: no pass of the lowering explains the "
            "move (compile, launch or timing do)"
        )
    if not configured:
        return "no knockout configured (config knockout): the passes cannot be named"
    if not found:
        return "no knockout moves the latency within half of the way between the releases"
    return None


def attribute(
    speed_rows: list[dict],
    divergence_rows: list[dict],
    knockout_rows: list[dict] | None,
    modes: list[str] | None = None,
) -> list[dict]:
    """The attribution rows (COLUMNS), configurations in the speed table's order, release pairs in release
    order. knockout_rows None: the knockout was not configured."""
    by_config: dict[tuple, dict[str, dict]] = {}
    for row in speed_rows:
        if row.get("status") == statuses.STATUS_OK and row.get("latency_ms") is not None:
            by_config.setdefault(_key(row), {})[join_version(row)] = row
    available = modes or sorted({row["mode"] for row in divergence_rows})
    mode = RELEASE_MODE if RELEASE_MODE in available else (available[0] if available else None)
    divergence = {
        (_key(row), _compared(row, "old"), _compared(row, "new")): row for row in divergence_rows if row["mode"] == mode
    }
    knockout: dict[tuple, list[dict]] = {}
    for row in knockout_rows or []:
        knockout.setdefault((_key(row), join_version(row)), []).append(row)
    rows = []
    for key, releases in by_config.items():
        # version order: the TileLang version each imported, then the name (releases.version_sort_key)
        ordered = sorted(releases, key=lambda name: version_sort_key(releases[name]["tilelang_version"] or "", name))
        for older, newer in zip(ordered, ordered[1:]):
            old, new = releases[older], releases[newer]
            if not moved(old, new):
                continue
            compared = divergence.get((key, older, newer), {})
            knocked_new, knocked_old = knockout.get((key, newer), []), knockout.get((key, older), [])
            same_source = compared.get("source_differs") is False
            back_new = [] if same_source else passes_moving(knocked_new, new["latency_ms"], old["latency_ms"])
            back_old = [] if same_source else passes_moving(knocked_old, old["latency_ms"], new["latency_ms"])
            rows.append(
                {
                    "kernel_label": new.get("kernel_label"),
                    **dict(zip(CONFIG, key)),
                    "release_old": older,
                    "release_new": newer,
                    **{f"latency_old{part}": old[f"latency{part}"] for part in ("_ms", "_min_ms", "_max_ms")},
                    **{f"latency_new{part}": new[f"latency{part}"] for part in ("_ms", "_min_ms", "_max_ms")},
                    "latency_change": new["latency_ms"] / old["latency_ms"],
                    "mode": mode if compared else None,
                    "first_divergent_pass": compared.get("first_divergent_pass"),
                    "first_divergent_edit": compared.get("first_divergent_edit"),
                    "source_differs": compared.get("source_differs"),
                    "knockout_new": _knockout_state(knockout_rows is not None, knocked_new),
                    "passes_back_new": ";".join(name for name, _ in back_new),
                    "back_new": ";".join(f"{share:.2f}" for _, share in back_new),
                    "knockout_old": _knockout_state(knockout_rows is not None, knocked_old),
                    "passes_back_old": ";".join(name for name, _ in back_old),
                    "back_old": ";".join(f"{share:.2f}" for _, share in back_old),
                    "note": _note(same_source, knockout_rows is not None, back_new or back_old),
                }
            )
    return rows
