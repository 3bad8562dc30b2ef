"""The trace modes: one table that the CLI, the trace code, the job grid, the config check and the report read.

A mode is one way of seeing the passes of a lowering. Adding a mode means adding one ``TraceMode`` here and
its runner function in ``tilelang_trace.py`` (named by ``runner``); everything else reads this table.

    python3 scripts/trace_modes.py        # prints the table (table_lines)
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TraceMode:
    name: str
    # the ``source`` column of passes.csv: which code computed added/deleted
    source: str
    # how that code counts, for the CSV schema, the report captions and --help
    counts: str
    # trace-api / pass-diff run a pass list (config api_passes, --passes); the others run all of tilelang.lower
    takes_passes: bool
    # TL_LOWER_TRACE is read when tilelang is imported: the script sets it before the import
    sets_lower_trace_env: bool
    # function of tilelang_trace.py that runs the mode:
    # runner(spec, func, target, out_dir, trace_dir) -> (rows, error, info)
    runner: str
    # what the mode runs, one line
    summary: str
    # module the TileLang release must have for the mode; a release without it gives one "unsupported" row
    requires: str | None = None


MODES: dict[str, TraceMode] = {
    mode.name: mode
    for mode in (
        TraceMode(
            name="trace-env",
            source="run_record",
            counts="difflib.SequenceMatcher over the run record's <NN>_<Pass>_before/_after files, as TileLang's "
            "report.html counts (a replaced line is one + and one -)",
            takes_passes=False,
            sets_lower_trace_env=True,
            runner="run_trace_env",
            summary="TL_LOWER_TRACE=1 over the full tilelang.lower (every pass, phases, codegen)",
            requires="tilelang.tools.lower_trace",
        ),
        TraceMode(
            name="trace-api",
            source="lower_trace",
            counts="the dicts returned by tilelang.tools.lower_trace.lower_trace (unified diff, context 3)",
            takes_passes=True,
            sets_lower_trace_env=False,
            runner="run_lower_trace",
            summary="tilelang.tools.lower_trace.lower_trace() over the pass list",
            requires="tilelang.tools.lower_trace",
        ),
        TraceMode(
            name="pass-diff",
            source="pass_diff",
            counts="the dicts returned by tilelang.utils.pass_diff.pass_diff (its own unified diff)",
            takes_passes=True,
            sets_lower_trace_env=False,
            runner="run_pass_diff",
            summary="tilelang.utils.pass_diff.pass_diff() over the pass list",
            requires="tilelang.utils.pass_diff",
        ),
        TraceMode(
            name="instrument",
            source="pass_instrument",
            counts="difflib.SequenceMatcher over IRModule.script() before and after each pass run, seen by a TVM "
            "pass instrument, counted as run_record counts (so comparable with trace-env)",
            takes_passes=False,
            sets_lower_trace_env=False,
            runner="run_instrument",
            summary="a TVM pass instrument in an outer PassContext over the full tilelang.lower: every release "
            "from 0.1.8, nested passes, each pass's own wall time",
        ),
    )
}
MODE_NAMES = tuple(MODES)


# modes whose job can keep the printed IR after every pass (--keep-ir: ir.json.gz) for the release comparison
KEEPS_IR = ("instrument",)
# the mode whose record a trace-env job's lowering can also write (config share_lowering: the grid puts such a job
# beside its trace-env job, trace_batch.pair_jobs gives both one lowering)
SERVED_MODE = "instrument"


def source_of(mode: str) -> str:
    return MODES[mode].source


def sources_text() -> str:
    """One line per source, for report captions: ``run_record`` = ..."""
    return "; ".join(f"``{mode.source}`` ({mode.name}): {mode.counts}" for mode in MODES.values())


def table_lines() -> list[str]:
    """The mode table, one line per mode: name, source, whether it runs a pass list or all passes, summary."""
    lines = []
    for mode in MODES.values():
        passes = "pass list" if mode.takes_passes else "all passes"
        lines.append(f"{mode.name:<10} source={mode.source:<12} {passes:<11} {mode.summary}")
    return lines
