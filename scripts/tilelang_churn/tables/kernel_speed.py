"""The GPU stage's tables: every GPU job's row (its speed.json) gathered into ``results/gpu/kernel_speed.csv``, and
that table joined with ``churn_summary.csv`` into ``results/gpu/churn_vs_speed.csv``.

    python3 scripts/kernel_speed.py --summary results/churn_summary.csv --mode instrument \\
        --speed results/gpu/kernel_speed.csv --joined results/gpu/churn_vs_speed.csv SPEED_JSON...

``SPEED_COLUMNS`` and ``JOINED_COLUMNS`` are the schemas, each column with its meaning (docs/outputs-gpu.md shows
the same text; a test keeps them in step). The join pairs a GPU row with the trace job of the same version
(``join_version``: its ``version_name``, a release compared without a local ``+...`` suffix; a user's wheel or
environment by its name alone), ``target_name``, ``kernel``, ``params`` and ``pass_configs``, in
one trace mode (``--mode``: the workflow passes ``instrument`` when it is configured, the mode of every release,
else the first configured). A GPU row without such a job keeps empty churn columns. A launch-only row is checked
against the previous version's outputs (``check_across_versions``, with torch). Standard library only otherwise.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from tilelang_churn.core import passes_table
from tilelang_churn.core.releases import base_version

# (column, meaning): the job (passes_table's provenance, without mode and source: a GPU job has no trace mode)
_PROVENANCE_DOCS = {
    "tilelang_version": "TileLang release that compiled the kernel (as imported).",
    "target_name": "Target's short name, as in churn.csv.",
    "target": "Target dict as JSON (sorted keys), as in churn.csv.",
    "M": "The parameter columns, M to stages, as in churn.csv (empty for a kernel that declares none).",
    "N": "As in churn.csv.",
    "K": "As in churn.csv.",
    "block_M": "As in churn.csv.",
    "block_N": "As in churn.csv.",
    "block_K": "As in churn.csv.",
    "dtype": "As in churn.csv.",
    "accum_dtype": "As in churn.csv.",
    "threads": "As in churn.csv.",
    "stages": "As in churn.csv.",
    "kernel": "The kernel's name, as in churn.csv.",
    "params": "Its parameters as canonical JSON, as in churn.csv.",
    "kernel_label": "Its readable label, as in churn.csv.",
}
SPEED_SCHEMA: list[tuple[str, str]] = [
    *_PROVENANCE_DOCS.items(),
    ("gpu_name", "The GPU (torch.cuda.get_device_properties), e.g. `NVIDIA H200`."),
    ("gpu_arch", "Its compute capability as a CUDA arch, e.g. `sm_90`: the jobs are the grid's CUDA targets of it."),
    ("driver_version", "NVIDIA driver (nvidia-smi); empty when it cannot be read."),
    ("cuda_version", "CUDA release torch was built for (torch.version.cuda)."),
    ("nvcc_version", "Release of the nvcc TileLang compiled with (CUDA_HOME's, else PATH's)."),
    ("torch_version", "torch that ran the inputs, the reference and the timing."),
    ("measured_by", "What timed the launches: `torch.cuda.Event` (a pair around each repeat's launches)."),
    (
        "status",
        "`ok` (compiled, launched and, with a reference that ran, right), `wrong` (off the reference by more than "
        "`tolerance`), `build_failed` (the kernel's function raised, another TileLang release was imported, or "
        "the release's TileLang loaded another install's libtvm: `error` names the library), "
        "`compile_failed` (tilelang.compile raised: lowering, codegen or nvcc), `launch_failed` (inputs, the "
        "launch, the reference or the timing raised; `error` names the step), `timeout` (the job held the GPU "
        "past `gpu_timeout_s` for its launch, check and timing, a kernel that never finishes, and its process was "
        "ended), `crashed` (the job's process died by a signal or ended without its row; `error` names the "
        "signal).",
    ),
    ("compiled", "`True` when tilelang.compile returned a kernel (a lowering that works can fail to compile)."),
    (
        "compile_target",
        "The target TileLang compiled for: kind and arch (e.g. `cuda sm_90a`, the visible GPU's own arch, as "
        "TileLang picks it), or `cuda` when the release does not say.",
    ),
    ("compile_seconds", "Wall time of tilelang.compile, nvcc included, with an empty cache of the job's own."),
    (
        "check",
        "What the outputs were compared with: `reference`, `baseline`, `version:<name>`, `launch-only`, or "
        "`reference-failed` (the reference raised and no earlier version ran: timed, unchecked). Each is defined in "
        "[the GPU stage](gpu-stage.md#what-is-a-kernels-output-compared-with).",
    ),
    ("correct", "`True` when max_rel_error <= tolerance (integer outputs: equal); empty for launch-only."),
    ("max_abs_error", "max abs(out - ref) of the worst output, in float64."),
    ("max_rel_error", "max_abs_error / max abs(ref): the checked error (NaN anywhere: NaN, never correct)."),
    (
        "tolerance",
        "The largest max_rel_error accepted for the worst output: the kernel's tolerance hook, else by the output's "
        "dtype (docs/gpu-stage.md's table; integers 0: exact).",
    ),
    ("error", "Exception type and message of the failed step, one line; empty otherwise."),
    ("repeats", "Timed repeats (after a warm-up of at least 100 ms of launches)."),
    ("launches", "Launches per repeat, between one pair of CUDA events."),
    ("latency_ms", "Median over the repeats of one repeat's elapsed time / launches, in ms."),
    ("latency_min_ms", "The fastest repeat's time per launch, ms."),
    ("latency_max_ms", "The slowest repeat's time per launch, ms."),
    ("spread", "latency_max_ms / latency_min_ms: the timing's own noise (1.0 is none)."),
    ("work_kind", "`flops` or `bytes`: what the kernel's work hook counts; empty without one."),
    ("work", "The kernel's work for these parameters (floating-point operations or bytes moved)."),
    ("tflops", "work / latency in TFLOP/s, when work_kind is flops."),
    ("gbps", "work / latency in GB/s, when work_kind is bytes."),
    ("torch_latency_ms", "The reference (torch), timed the same way in the same process: median, ms."),
    ("torch_latency_min_ms", "Its fastest repeat, ms."),
    ("torch_latency_max_ms", "Its slowest repeat, ms."),
    ("torch_spread", "Its max / min."),
    ("torch_tflops", "work / torch_latency_ms in TFLOP/s."),
    ("torch_gbps", "work / torch_latency_ms in GB/s."),
    ("speedup_vs_torch", "torch_latency_ms / latency_ms: above 1, the TileLang kernel is faster."),
    ("source_lines", "Lines of the generated CUDA source (kernel.get_kernel_source())."),
    ("job_seconds", "Wall time of the whole GPU job (import excluded)."),
    ("pass_configs", "The pass configs it compiled under (`tilelang.compile(pass_configs=)`), as in churn.csv."),
    (
        "version_name",
        "The version entry's name (config `versions`), as in churn.csv: the release, or the name of a wheel or an "
        "environment. A table written before the column reads as `tilelang_version`.",
    ),
    ("checked_outputs", "Every buffer the kernel wrote (its out_idx outputs, then those it writes in place)."),
    (
        "timing_method",
        "`cuda-graph` (the launches captured in a CUDA graph, replayed per repeat: no host cost per launch) or "
        "`launches` (the kernel could not be captured: launched one by one), `+l2-flush` when the L2 cache was "
        "flushed before each repeat (config gpu_flush_l2).",
    ),
    (
        "do_bench_ms",
        "TileLang's own timing of the same compiled kernel (tilelang.profiler.do_bench: the L2 flushed before each "
        "launch), in ms; empty where it failed.",
    ),
    ("do_bench_backend", "The do_bench backend that timed (`cupti` where available, else `event`), or why none."),
    (
        "sm_clock_mhz",
        "The GPU's SM clock while the repeats ran (NVML, every 10 ms): median, MHz; empty where NVML is not readable.",
    ),
    ("sm_clock_min_mhz", "Its lowest sample, MHz."),
    (
        "clock_limits",
        "What NVML said held the clock down meanwhile (`sw_power_cap`, `sw_thermal`, `hw_slowdown`, ...), or `none`: "
        "a row under the power cap ran at a lower clock than one without.",
    ),
    ("device", "As in churn.csv (on a GPU, the GPU itself answers the kernel's questions)."),
]
SPEED_COLUMNS = [name for name, _ in SPEED_SCHEMA]
# columns a table written before them lacks (issue 57): read as empty
LATER_SPEED_COLUMNS = (
    "checked_outputs",
    "timing_method",
    "do_bench_ms",
    "do_bench_backend",
    "sm_clock_mhz",
    "sm_clock_min_mhz",
    "clock_limits",
)

# the churn side: the trace job's churn_summary.csv columns (names kept), and whether it lowered
JOINED_SCHEMA: list[tuple[str, str]] = [
    *SPEED_SCHEMA,
    ("mode", "The trace mode whose churn is joined (instrument when configured, else the first mode)."),
    ("source", "Which code counted the churn, as in churn_summary.csv."),
    ("lowered", "`True` when the trace job lowered without a failed step (`False`: lowering failed or the "
     "release lacks the mode); empty when the grid has no such trace job. Compare with `compiled`."),
    ("pass_steps", "From churn_summary.csv: rows of the trace job."),
    ("changed_steps", "From churn_summary.csv: passes that changed the IR."),
    ("failed_steps", "From churn_summary.csv."),
    ("added_total", "From churn_summary.csv: lines added over all IR passes."),
    ("deleted_total", "From churn_summary.csv."),
    ("churn_total", "From churn_summary.csv: added_total + deleted_total."),
    ("churn_stripped_total", "From churn_summary.csv: the same, whitespace ignored."),
    ("top_pass", "From churn_summary.csv: the pass with the most churn."),
    ("first_error", "From churn_summary.csv: the trace job's first error."),
]  # fmt: skip
JOINED_COLUMNS = [name for name, _ in JOINED_SCHEMA]
CHURN_COLUMNS = JOINED_COLUMNS[len(SPEED_COLUMNS) :]
JOIN_KEY = ("version_name", "target_name", "kernel", "params", "pass_configs", "device")
FLOAT_COLUMNS = (
    "compile_seconds", "max_abs_error", "max_rel_error", "tolerance", "latency_ms", "latency_min_ms",
    "latency_max_ms", "spread", "tflops", "gbps", "torch_latency_ms", "torch_latency_min_ms",
    "torch_latency_max_ms", "torch_spread", "torch_tflops", "torch_gbps", "speedup_vs_torch", "job_seconds",
    "do_bench_ms",
)  # fmt: skip
INT_COLUMNS = (*passes_table.PROVENANCE_INT_COLUMNS, "repeats", "launches", "work", "source_lines")
INT_COLUMNS += ("pass_steps", "changed_steps", "failed_steps", "added_total", "deleted_total", "churn_total")
INT_COLUMNS += ("churn_stripped_total",)
BOOL_COLUMNS = ("compiled", "correct", "lowered")


def read_speed_rows(paths) -> list[dict]:
    """The row of each speed.json, in the order given."""
    rows = []
    for path in paths:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        row = data["row"]
        unknown = sorted(set(row) - set(SPEED_COLUMNS))
        if unknown:
            raise ValueError(f"{path}: columns not in kernel_speed.SPEED_COLUMNS: {', '.join(unknown)}")
        rows.append(row)
    return rows


def write_csv(path: str | Path, rows: list[dict], columns: list[str]) -> None:
    """Write rows in the columns' order (a missing key: an empty cell), atomically."""
    passes_table.write_rows(path, rows, columns, cell=_cell)


def _cell(value):
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(round(value, 6)) if abs(value) >= 1e-3 or value == 0 else f"{value:.6g}"
    return passes_table._cell(value)


def read_csv(path: str | Path) -> list[dict]:
    """A table of this module (or churn_summary.csv), cells typed: ints, floats, bools, None for empty."""
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        rows = list(reader)
    # a table written before a column was added reads as holding its default (passes_table.ADDED_COLUMNS), or the
    # value of the column it comes from (passes_table.ADDED_FROM: version_name is tilelang_version)
    added = {
        column: value
        for column, value in passes_table.ADDED_COLUMNS.items()
        if column not in reader.fieldnames and column in passes_table.PROVENANCE_COLUMNS
    }
    sources = {column: passes_table.ADDED_FROM[column] for column in added if column in passes_table.ADDED_FROM}
    if "gpu_name" in reader.fieldnames:  # a speed table of before issue 57's columns: they read as empty
        added |= {column: "" for column in LATER_SPEED_COLUMNS if column not in reader.fieldnames}
    typed = []
    for row in rows:
        row = {**row, **added, **{column: row.get(source, "") for column, source in sources.items()}}
        typed.append({key: _typed(key, value) for key, value in row.items()})
    return typed


def _typed(key: str, value: str):
    if value == "":
        return None
    if key in BOOL_COLUMNS:
        return {"True": True, "False": False}.get(value, value)
    if key in INT_COLUMNS:
        try:
            return int(float(value))
        except ValueError:
            return value
    if key in FLOAT_COLUMNS:
        return float(value)
    return value


_NOT_FROM_SUMMARY = ("mode", "lowered")  # columns of the join made here, not copied from the summary


def join_version(row: dict) -> str:
    """The version a row joins by: its version entry's name (``version_name``), a release compared without a local
    ``+...`` suffix (a GPU site's 0.1.14+cu128 is the trace's 0.1.14). A row whose name is the version it imported
    (a release; a row written before the column, or a GPU row, which names none) is that release; a wheel or an
    environment is its name, so a user's build 0.1.15+test never joins release 0.1.15."""
    imported = row.get("tilelang_version") or ""
    name = row.get("version_name") or imported
    return base_version(name) if name == imported else name


def _join_key(row: dict) -> tuple:
    """JOIN_KEY's values, the version as ``join_version`` (read_csv fills a column added since a table was
    written)."""
    return (join_version(row), *(row[column] for column in JOIN_KEY[1:]))


def join(speed_rows: list[dict], summary_rows: list[dict], mode: str) -> list[dict]:
    """Each speed row with the churn of its trace job in `mode` (CHURN_COLUMNS), in the speed rows' order."""
    by_key = {}
    for summary in summary_rows:
        if summary.get("mode") != mode:
            continue
        by_key.setdefault(_join_key(summary), summary)
    joined = []
    for row in speed_rows:
        summary = by_key.get(_join_key(row))
        churn = dict.fromkeys(CHURN_COLUMNS)
        churn["mode"] = mode
        if summary is not None:
            churn |= {name: summary.get(name) for name in CHURN_COLUMNS if name not in _NOT_FROM_SUMMARY}
            failed = int(summary.get("failed_steps") or 0) + int(summary.get("unsupported_steps") or 0)
            churn["lowered"] = failed == 0
        joined.append({**row, **churn})
    return joined


def check_across_versions(rows: list[dict], speed_json: list) -> list[dict]:
    """ROWS (of SPEED_JSON, in config order: versions first) with each row that no reference checked
    (``launch-only``, or ``reference-failed``: its error still says why) checked against the outputs that the
    nearest earlier version's job of the same configuration kept (output_check.KEPT_OUTPUTS beside its
    speed.json): ``check`` becomes ``version:<name>``, the error and tolerance are filled in, and a row off by
    more than its tolerance is ``wrong``. Outputs that do not compare (another shape) leave the row as it was,
    its ``error`` saying why."""
    from tilelang_churn.core import statuses
    from tilelang_churn.gpu import output_check

    earlier: dict[tuple, tuple[str, dict]] = {}
    checked = []
    for row, path in zip(rows, speed_json):
        kept_path, kept = Path(path).with_name(output_check.KEPT_OUTPUTS), None
        try:
            kept = output_check.load_kept(kept_path) if kept_path.exists() else None
        except ValueError as exc:  # a file read from disk: not compared, and said
            print(f"kernel_speed: warning: {exc}")
        key = (row.get("target_name"), row.get("kernel"), row.get("params"), row.get("pass_configs"))
        unchecked = row.get("check") in (output_check.CHECK_LAUNCH_ONLY, output_check.CHECK_REFERENCE_FAILED)
        if kept is not None and unchecked and key in earlier:
            name, before = earlier[key]
            said = f"{row['error']}; " if row.get("error") else ""
            try:
                compared = output_check.compare_kept(kept, before)
            except ValueError as exc:
                row = row | {"error": f"{said}against version {name}: {exc}"}
            else:
                row = row | {"check": output_check.CHECK_VERSION_PREFIX + name, **compared.as_columns()}
                if not compared.correct:
                    row["status"] = statuses.STATUS_WRONG
        if kept is not None:
            earlier[key] = (join_version(row), kept)
        checked.append(row)
    return checked


def build_tables(speed_json: list, summary_csv: str | Path, mode: str, speed_csv, joined_csv) -> int:
    rows = check_across_versions(read_speed_rows(speed_json), speed_json)
    write_csv(speed_csv, rows, SPEED_COLUMNS)
    # params and tilelang_version stay the exact text the trace wrote (the join compares them as text)
    joined = join(read_csv(speed_csv), read_csv(summary_csv), mode)
    write_csv(joined_csv, joined, JOINED_COLUMNS)
    matched = sum(row["lowered"] is not None for row in joined)
    print(f"kernel_speed: {len(rows)} GPU jobs -> {speed_csv}; {matched} joined with {mode} churn -> {joined_csv}")
    return 0
