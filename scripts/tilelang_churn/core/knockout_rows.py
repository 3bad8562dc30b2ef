"""The row model of the pass knockout: results/knockout/runs/.../knockout.csv (one configuration) and
results/knockout/knockout.csv (all of them) share ``COLUMNS``; one writer, one reader.

One row per lowering of one kernel configuration (release x kernel and its parameters x target): the baseline
(``variant`` baseline: every pass runs) and one row per variant, a pass knocked out (TVM skips it: its
``should_run`` is False) in every run (``occurrence`` all) or in its N-th run only. docs/outputs-knockout.md documents
every column (a test keeps that document in step). Standard library only.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

from tilelang_churn.core import files, passes_table
from tilelang_churn.core.statuses import GPU_STATUSES, KNOCKOUT_STATUSES, UNFINISHED_STATUSES

BASELINE = "baseline"  # the variant that knocks out nothing
MODE = "knockout"  # the provenance column mode of every knockout row
SOURCE = "pass_knockout"  # the tool that computed the numbers: provenance column source
SOURCES = "sources.json.gz"  # beside a configuration's knockout.csv: every generated source once
SOURCES_FORMAT = 1
OCCURRENCE_ALL = "all"  # every run of the pass is skipped; else the 1-based run number
GPU_KNOCKOUT_STATUSES = GPU_STATUSES + UNFINISHED_STATUSES  # the column gpu_status

VARIANT_COLUMNS = [
    "variant",  # baseline, <pass> (every run) or <pass>#<N> (its N-th run); <pass> is knocked_pass_id's label
    "knocked_pass",  # the pass as the run record names it; empty for the baseline
    "knocked_pass_id",  # the pass's identity (core/pass_names.py): only its runs were skipped
    "occurrence",  # all, or N: the N-th run of the pass (in the baseline's order) is skipped
    "pipeline_step",  # the baseline's step of the first skipped run: the pass's place in the pipeline
    "baseline_runs",  # how many times the pass runs in the baseline lowering
    "skipped_runs",  # how many runs TVM skipped in this lowering (0: the knockout did not take effect)
    "status",  # core/statuses.py KNOCKOUT_STATUSES
    "error",  # lower_failed: the exception's first line; timeout and crashed: what happened
    "source_sha256",  # sha256 of the generated kernel source (empty when lowering failed)
    "source_equal",  # the generated source is the baseline's, byte for byte
    "source_lines",  # lines of the generated source
    "source_added",  # lines of the generated source not in the baseline's (difflib, as the pass counts)
    "source_deleted",  # lines of the baseline's source not in this one
    "pass_runs",  # pass runs the tracer saw in this lowering
    "churn_total",  # +added + -deleted over this lowering's IR passes (raw, as passes.csv counts)
    "baseline_churn_total",  # the same over the baseline lowering
    "lower_seconds",  # wall seconds of this lowering (tilelang.lower under the tracer)
    "lower_cpu_seconds",  # CPU seconds of the child that lowered it, kernel build included
    "note",  # in words: no effect, not in the baseline, what the status means here
]
# with gpu: true, each lowered variant compiled for the GPU and timed (knockout_gpu.py); empty without a GPU
GPU_COLUMNS = [
    "gpu_status",  # core/statuses.py GPU_STATUSES, or timeout / crashed; empty: not compiled for a GPU
    "gpu_error",  # what failed: compile, launch, check (the first error line)
    "compile_hook",  # how the knockout reached tilelang.compile (pass_knockout.COMPILE_HOOKS)
    "compile_skipped_runs",  # runs skipped inside tilelang.compile (0: the knockout did not reach its passes)
    "compile_target",  # the target TileLang compiled for (the GPU's own arch, e.g. cuda sm_90a)
    "compile_seconds",  # tilelang.compile's wall seconds, nvcc included
    "gpu_source_sha256",  # sha256 of the compiled kernel's source: this variant's, never a cached binary's
    "gpu_source_equal",  # the compiled source is the baseline's, byte for byte
    "check",  # reference (the kernel's reference), baseline (no reference: the baseline's outputs) or launch-only
    "max_rel_error",  # max|out - ref| / max|ref|
    "tolerance",  # the kernel's tolerance of max_rel_error
    "latency_ms",  # median over the repeats of the milliseconds per launch (gpu_bench.py's timing)
    "latency_min_ms",  # fastest repeat
    "latency_max_ms",  # slowest repeat
    "spread",  # latency_max_ms / latency_min_ms
    "baseline_latency_ms",  # the baseline's latency_ms, timed in the same job
    "baseline_spread",  # the baseline's spread
    "latency_ratio",  # latency_ms / baseline_latency_ms: above 1 the pass makes the kernel faster
    "latency_ratio_low",  # latency_min_ms / baseline_latency_max_ms: the lowest ratio the repeats allow
    "latency_ratio_high",  # latency_max_ms / baseline_latency_min_ms
    "gpu_name",  # the GPU, e.g. NVIDIA H200
    "repeats",  # timed repeats
    "launches",  # launches per repeat
]
# the knocked pass beside its official switch (core/pass_configs.SWITCHES): the same configuration lowered, and
# compiled, with TileLang's own option that turns the pass off, when the grid holds it (config pass_configs)
SWITCH_COLUMNS = [
    "switch",  # the pass configs that turn the knocked pass off, canonical JSON; empty: the pass has no switch
    "switch_pass_configs",  # the configuration with that switch on, as found in the table; empty: not in the grid
    "switch_source_equal",  # this variant's generated source is that configuration's baseline source
    "switch_latency_ms",  # that configuration's baseline latency_ms, timed in its own GPU job
    "switch_gpu_status",  # that configuration's baseline gpu_status
]
# the GPU's clock while the variant and its baseline were timed (gpu_clock.py): a ratio between two clocks is the
# GPU's, not the pass's; added after version_name
CLOCK_COLUMNS = [
    "sm_clock_mhz",  # the SM clock while this variant's repeats ran: median, MHz (NVML)
    "baseline_sm_clock_mhz",  # the same for the baseline, timed in the same job
    "clock_limits",  # what NVML said held this variant's clock down (sw_power_cap, ...), or none
]
# provenance: passes.csv's columns (mode knockout, source pass_knockout), so a row joins the trace tables; those
# added since the switch columns were (version_name) next, then the clock, then the device profile
COLUMNS = (
    VARIANT_COLUMNS
    + GPU_COLUMNS
    + [column for column in passes_table.PROVENANCE_COLUMNS if column not in passes_table.LATER_PROVENANCE]
    + SWITCH_COLUMNS
    + ["version_name"]
    + CLOCK_COLUMNS
    + ["device"]  # added after the clock
)
# read from a table written before them: the provenance's own, no switch known, no clock read
ADDED_COLUMNS = {
    **passes_table.ADDED_COLUMNS,
    **dict.fromkeys(SWITCH_COLUMNS, ""),
    "knocked_pass_id": None,
    **dict.fromkeys(CLOCK_COLUMNS, ""),
}
GPU_TABLE_COLUMNS = ["variant", *GPU_COLUMNS, *CLOCK_COLUMNS]  # a configuration's knockout_gpu.csv
INT_COLUMNS = (
    "pipeline_step",
    "baseline_runs",
    "skipped_runs",
    "source_lines",
    "source_added",
    "source_deleted",
    "pass_runs",
    "churn_total",
    "baseline_churn_total",
    "compile_skipped_runs",
    "repeats",
    "launches",
) + passes_table.PROVENANCE_INT_COLUMNS
BOOL_COLUMNS = ("source_equal", "gpu_source_equal", "switch_source_equal")
FLOAT_COLUMNS = (
    "lower_seconds",
    "lower_cpu_seconds",
    "compile_seconds",
    "max_rel_error",
    "tolerance",
    "latency_ms",
    "latency_min_ms",
    "latency_max_ms",
    "spread",
    "baseline_latency_ms",
    "baseline_spread",
    "latency_ratio",
    "latency_ratio_low",
    "latency_ratio_high",
    "switch_latency_ms",
    "sm_clock_mhz",
    "baseline_sm_clock_mhz",
)


TableError = passes_table.TableError  # a table that is not complete: the message names the file and the line


def variant_name(pass_name: str | None, occurrence: int | None) -> str:
    """baseline, the pass (every run knocked out) or pass#N (its N-th run)."""
    if pass_name is None:
        return BASELINE
    return pass_name if occurrence is None else f"{pass_name}#{occurrence}"


def fingerprint(path: str | Path) -> dict:
    """Rows and sha256 of a written table, recorded beside it (knockout.json) for the readers' check."""
    data = Path(path).read_bytes()
    return {"rows": data.count(b"\n") - 1, "sha256": hashlib.sha256(data).hexdigest()}


def write_rows(path: str | Path, rows: list[dict], columns: list[str] = COLUMNS) -> None:
    passes_table.write_rows(path, rows, columns=columns)


def read_rows(path: str | Path, expected: dict | None = None, columns: list[str] = COLUMNS) -> list[dict]:
    """The rows of a knockout table, typed. Refuses, naming the file and line, anything but a complete table:
    another header, a row cut short, no final newline, an unknown status, a cell of the wrong type; and, given
    ``expected`` (its fingerprint as written), a file changed since."""
    path = Path(path)
    with open(path, newline="", encoding="utf-8") as handle:
        text = handle.read()
    if not text.endswith("\n"):
        raise TableError(f"{path}: the last line is cut off (no final newline): a half-written file")
    if expected is not None and hashlib.sha256(text.encode("utf-8")).hexdigest() != expected.get("sha256"):
        raise TableError(
            f"{path}: {text.count(chr(10)) - 1} rows where its job wrote {expected.get('rows')} (knockout.json "
            "records its sha256): cut short or changed after the job"
        )
    rows = []
    schema = f"the schema of {path.name}"
    typed = passes_table.typed_rows(
        path, text, columns, schema, INT_COLUMNS, BOOL_COLUMNS, FLOAT_COLUMNS, ADDED_COLUMNS
    )
    for line, row in typed:
        if "status" in row and row["status"] not in KNOCKOUT_STATUSES:
            raise TableError(
                f"{path}, line {line}: unknown status {row['status']!r}; allowed {list(KNOCKOUT_STATUSES)}"
            )
        if row.get("gpu_status") and row["gpu_status"] not in GPU_KNOCKOUT_STATUSES:
            raise TableError(
                f"{path}, line {line}: unknown gpu_status {row['gpu_status']!r}; allowed {list(GPU_KNOCKOUT_STATUSES)}"
            )
        rows.append(row)
    if not rows:
        raise TableError(f"{path}: no rows (every configuration writes at least its baseline row)")
    return rows


def read_recorded(record: str | Path, columns: list[str] = COLUMNS) -> list[dict]:
    """The rows of the table a job recorded: the CSV beside its JSON RECORD (knockout.json -> knockout.csv,
    knockout_gpu.json -> knockout_gpu.csv), refused unless it is the file whose rows and sha256 RECORD holds."""
    record = Path(record)
    try:
        written = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise TableError(f"{record}: not readable JSON ({exc})") from None
    return read_rows(record.with_suffix(".csv"), written.get(f"{record.stem}_csv") or {}, columns=columns)


def write_sources(path: str | Path, variants: list[str], results: list[dict]) -> int:
    """Every generated source once, and which variant generated which (None: no source), gzip without a date."""
    texts: list[str] = []
    index: dict[str, int] = {}
    by_variant = {}
    for variant, result in zip(variants, results):
        source = result.get("source")
        if source is not None and source not in index:
            index[source] = len(texts)
            texts.append(source)
        by_variant[variant] = None if source is None else index[source]
    data = json.dumps({"format": SOURCES_FORMAT, "variants": by_variant, "texts": texts}).encode("utf-8")
    files.write_bytes(path, gzip.compress(data, mtime=0))
    return len(texts)


def read_sources(path: str | Path) -> dict[str, str | None]:
    """variant name -> its generated source (None: it generated none), from a configuration's sources.json.gz."""
    data = json.loads(gzip.decompress(Path(path).read_bytes()))
    if data.get("format") != SOURCES_FORMAT:
        raise ValueError(f"{path}: sources format {data.get('format')!r}, not {SOURCES_FORMAT}")
    return {name: None if i is None else data["texts"][i] for name, i in data["variants"].items()}
