"""The pass knockout of many kernel configurations in one process: TileLang is imported once, then every lowering
(each configuration's baseline, then one per knocked-out pass) runs in a child forked from it.

    python3 scripts/knockout_batch.py --jobs JOBS.json [--workers N] [--passes changed|all|A,B]
        [--occurrence all|first|each] [--timeout S] [--release-env DIR]

JOBS.json is a list of ``{"args": [gemm_lower_trace.py arguments of the configuration, --out DIR], "log": PATH}``
(``--mode instrument``: the lowering the tracer sees). Per configuration DIR gets ``knockout.csv`` (one row per
lowering, core/knockout_rows.py), ``sources.json.gz`` (every generated source once, for the diffs of the
knockout page) and ``knockout.json`` (the variants, settings, versions, the process's import and times, and
knockout.csv's rows and sha256 for the readers' check). The children write to the configuration's log.

A lowering that raises is a ``lower_failed`` row, one that runs past --timeout a ``timeout`` row, one whose
process dies (abort, segfault: a knocked-out pass can leave IR that TVM's C++ cannot handle) a ``crashed`` row
naming the signal: none takes the batch down. A baseline that does not lower leaves its configuration with that
one row. Exit status: 0 when every configuration was recorded; 2 bad arguments; 3 a configuration not recorded,
or TileLang not importable or not the release the jobs name (``--expect-release``): a broken environment is no
result.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import os
import sys
import time
from collections import deque
from pathlib import Path

from tilelang_churn.core import files, knockout_rows, line_churn, pass_configs, statuses
from tilelang_churn.knockout import pass_knockout
from tilelang_churn.trace import fork_pool, trace_batch, trace_cli

PROG = "knockout_batch.py"
SCRIPT = Path(__file__).resolve().parents[2] / "knockout_batch.py"
RESULTS_DIR = ".variants"  # inside a configuration's folder: one JSON per lowering, removed once its rows are written
RECORD = "knockout.json"
TABLE = "knockout.csv"


def check_jobs(jobs: list) -> list:
    """(spec, out folder) of each job; ValueError naming the job when its arguments are not an instrument job's."""
    if not jobs:
        raise ValueError("no jobs given")
    parsed = []
    for number, job in enumerate(jobs, start=1):
        args = job.get("args") if isinstance(job, dict) else None
        if not isinstance(args, list) or not job.get("log") or "--out" not in args:
            raise ValueError(f"job {number} is not {{'args': [... --out DIR], 'log': PATH}}: {job!r}")
        problem = trace_cli.job_argument_problem(list(args))
        if problem:
            raise ValueError(f"job {number}: {problem}")
        parsed_args = trace_cli.parse_args(list(args))
        if parsed_args.mode != "instrument":
            raise ValueError(f"job {number}: --mode {parsed_args.mode}: a knockout lowers under the instrument tracer")
        parsed.append((parsed_args.spec, Path(os.path.abspath(parsed_args.out))))
    return parsed


def _child(spec, variant, log: str, result_path: Path, truncate: bool) -> int:
    """In the forked child: its output to the configuration's log, one lowering, the result as JSON."""
    fork_pool.output_to(log, append=not truncate)
    name = variant.name if variant is not None else knockout_rows.BASELINE
    print(f"{PROG}: lowering {name}", flush=True)
    result = pass_knockout.lower(spec, variant)
    files.write_json(result_path, result, indent=None)
    print(f"{PROG}: {name}: {result['status']}" + (f" ({result['error']})" if result["error"] else ""), flush=True)
    return 0


def _note(variant: pass_knockout.Variant, result: dict, same_source: bool | None) -> str:
    status = result["status"]
    if variant.knocked_pass_id is None:
        return "every pass runs" if status == statuses.STATUS_LOWERED else "the baseline did not lower: no knockout"
    if status in statuses.UNFINISHED_STATUSES:
        return "the lowering did not finish: nothing known of its source"
    if not result.get("skipped_runs"):
        why = "the pass does not run in the baseline lowering" if not variant.baseline_runs else "TVM asked no more"
        return f"no effect: the knockout did not take effect (no run skipped; {why})"
    if status == statuses.STATUS_LOWER_FAILED:
        return "lowering fails without this pass"
    if same_source:
        return "no effect on the generated source"
    return "the generated source differs from the baseline's"


def make_row(spec, version: str, variant: pass_knockout.Variant, result: dict, baseline: dict) -> dict:
    """The knockout.csv row of one lowering, beside its configuration's baseline."""
    source, baseline_source = result.get("source"), baseline.get("source")
    same = None if source is None or baseline_source is None else source == baseline_source
    row = {
        "variant": variant.name,
        "knocked_pass": variant.knocked_pass,
        "knocked_pass_id": variant.knocked_pass_id,
        "occurrence": None
        if variant.knocked_pass_id is None
        else knockout_rows.OCCURRENCE_ALL
        if variant.occurrence is None
        else variant.occurrence,
        "pipeline_step": variant.pipeline_step,
        "baseline_runs": variant.baseline_runs if variant.knocked_pass_id is not None else None,
        "skipped_runs": result.get("skipped_runs") if variant.knocked_pass_id is not None else None,
        "status": result["status"],
        "error": result.get("error"),
        "source_sha256": _sha256(source),
        "source_equal": same,
        "source_lines": None if source is None else len(source.splitlines()),
        "pass_runs": result.get("pass_runs"),
        "churn_total": result.get("churn_total"),
        "baseline_churn_total": baseline.get("churn_total"),
        "lower_seconds": result.get("lower_seconds"),
        "lower_cpu_seconds": result.get("lower_cpu_seconds"),
        "note": _note(variant, result, same),
        **spec.provenance(version),
        "switch": _switch(variant.knocked_pass_id),
        "mode": knockout_rows.MODE,
        "source": knockout_rows.SOURCE,
    }
    if same is not None:
        added, deleted = (0, 0) if same else line_churn.sequence_matcher_counts(baseline_source, source)
        row.update(source_added=added, source_deleted=deleted)
    return row


def _switch(knocked_pass_id: str | None) -> str | None:
    switch = pass_configs.switch_of(knocked_pass_id) if knocked_pass_id is not None else None
    return pass_configs.canonical(switch) if switch else None


def _sha256(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


class Configuration:
    """One job's lowerings as they come back: the baseline first, then its variants in any order."""

    def __init__(self, job: dict, spec, out: Path):
        self.job, self.spec, self.out = job, spec, out
        self.variants: list[pass_knockout.Variant] = [pass_knockout.BASELINE]
        self.results: dict[int, dict] = {}
        self.started = time.perf_counter()

    def result_path(self, index: int) -> Path:
        return self.out / RESULTS_DIR / f"{index}.json"

    @property
    def done(self) -> bool:
        return len(self.results) == len(self.variants)


def record(config: Configuration, version: str, settings: dict, process: dict) -> tuple[Path, dict]:
    """Write the configuration's knockout.csv, sources.json.gz and knockout.json; remove the children's results.
    The table's path and its rows counted by status."""
    results = [config.results[i] for i in range(len(config.variants))]
    baseline = results[0]
    rows = [make_row(config.spec, version, v, r, baseline) for v, r in zip(config.variants, results)]
    table = config.out / TABLE
    knockout_rows.write_rows(table, rows)
    counts = {status: sum(row["status"] == status for row in rows) for status in statuses.KNOCKOUT_STATUSES}
    sources = knockout_rows.write_sources(
        config.out / knockout_rows.SOURCES, [v.name for v in config.variants], results
    )
    ran = dict(
        sorted(
            (run["pass_id"], run["pass"])
            for run in baseline.get("runs") or []
            if run["status"] in statuses.PASS_RUN_STATUSES
        )
    )
    files.write_json(
        config.out / RECORD,
        {
            "command": [sys.executable, str(SCRIPT), *config.job["args"]],
            "spec": config.spec.record(),
            "settings": settings,
            "variants": [variant.as_dict() for variant in config.variants],
            # every pass that ran in the baseline, {identity: spelling}: a named pass that runs in no baseline of
            # the grid is refused (baseline_passes: the spellings, as records before identities had them)
            "baseline_pass_ids": ran,
            "baseline_passes": sorted(set(ran.values())),
            "statuses": counts,
            "sources": sources,
            "process": process,
            "versions": trace_job_versions(),
            "lower_cpu_seconds": round(sum(r.get("lower_cpu_seconds") or 0 for r in results), 4),
            "wall_seconds": round(time.perf_counter() - config.started, 4),
            "knockout_csv": knockout_rows.fingerprint(table),
        },
    )
    for index in range(len(config.variants)):
        config.result_path(index).unlink(missing_ok=True)
    try:
        (config.out / RESULTS_DIR).rmdir()
    except OSError:
        pass
    return table, counts


def trace_job_versions() -> dict:
    from tilelang_churn.trace import trace_job

    return trace_job.versions()


def run_configurations(configs: list, version: str, workers: int, settings: dict, process: dict) -> list[Path]:
    """Every configuration's baseline, then its variants, at most ``workers`` lowerings at a time; a
    configuration's variants go ahead of the baselines still waiting, so configurations finish one by one."""
    timeout = settings["timeout_s"]
    queue = deque((c, 0) for c in range(len(configs)))
    written = []
    with fork_pool.ForkPool(workers) as pool:
        while queue or pool.running:
            while queue and pool.has_room:
                c, index = queue.popleft()
                config = configs[c]
                variant = config.variants[index] if index else None
                path = config.result_path(index)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.unlink(missing_ok=True)
                child = functools.partial(_child, config.spec, variant, config.job["log"], path, index == 0)
                pool.start((c, index), child, timeout)
            (c, index), ended = pool.wait()
            config = configs[c]
            config.results[index] = pass_knockout.child_result(
                config.result_path(index), ended, timeout, "the lowering"
            )
            if index == 0 and config.results[0]["status"] == statuses.STATUS_LOWERED:
                planned = pass_knockout.plan_variants(
                    config.results[0].get("runs") or [], settings["passes"], settings["occurrence"]
                )
                config.variants += planned
                queue.extendleft(reversed([(c, i) for i in range(1, len(config.variants))]))
            if config.done:
                table, counts = record(config, version, settings, process)
                written.append(table)
                said = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
                print(f"{PROG}: {config.spec.kernel_label} on {config.spec.target_name}: {said} ({table})", flush=True)
    return written


def run_batch(jobs: list, workers: int, settings: dict, release_env: str | None = None) -> int:
    parsed = check_jobs(jobs)
    started = time.perf_counter()
    os.environ["TILELANG_DISABLE_CACHE"] = "1"  # no kernel cache may serve one variant another's result
    os.environ["TILELANG_CACHE_DIR"] = str(trace_batch.cache_dir([{"args": job["args"]} for job in jobs]))
    process = {
        "pid": os.getpid(),
        "configurations_in_process": len(jobs),
        "workers": workers,
        **trace_batch.import_tilelang(False),
    }
    print(
        f"{PROG}: {len(jobs)} configuration(s), {workers} lowering(s) at a time; import {process['import_seconds']} s"
        + (f", failed ({process['import_error']})" if process["import_error"] else "")
    )
    broken = _broken_environment(jobs, release_env, process)
    if broken:
        print(f"{PROG}: error: {broken}", file=sys.stderr, flush=True)
        return trace_cli.EXIT_NOT_RECORDED
    configs = [Configuration(job, spec, out) for job, (spec, out) in zip(jobs, parsed)]
    installed = getattr(sys.modules.get("tilelang"), "__version__", "") or ""
    written = run_configurations(configs, installed, max(1, workers), settings, process)
    print(f"{PROG}: {len(written)} of {len(jobs)} configuration(s) recorded in {time.perf_counter() - started:.1f} s")
    stopped = stopped_from_outside(configs)
    if stopped:
        print(
            f"{PROG}: error: {len(stopped)} lowering(s) were stopped from outside this batch ({'; '.join(stopped)}): "
            "their crashed rows are no finding, so the batch fails and a rerun lowers them again",
            file=sys.stderr,
            flush=True,
        )
        return trace_cli.EXIT_NOT_RECORDED
    return 0 if len(written) == len(jobs) else trace_cli.EXIT_NOT_RECORDED


def stopped_from_outside(configs: list) -> list[str]:
    """'<variant> of <configuration> (<signal>)' for each lowering ended by a signal from outside the batch: any
    but a crash's (trace_batch.CRASH_SIGNALS, SIGKILL among them: maybe the kernel's own memory use), as the trace
    batch tells them apart. The batch's own time limit is a timeout, not a signal result."""
    return [
        f"{config.variants[index].name} of {config.spec.kernel_label} ({fork_pool.signal_name(result['signal'])})"
        for config in configs
        for index, result in sorted(config.results.items())
        if result.get("signal") is not None and result["signal"] not in trace_batch.CRASH_SIGNALS
    ]


def _broken_environment(jobs: list, release_env: str | None, process: dict) -> str | None:
    """Why this process cannot give rows under the jobs' release: TileLang not importable, another release, or
    another install's native libraries."""
    if process["import_error"]:
        return f"TileLang cannot be imported here ({process['import_error']}): no configuration was lowered"
    return "; ".join(trace_batch.release_problems(jobs, release_env)) or None


def pass_selection(text: str):
    """The value of --passes: changed, all (pass_knockout.PASS_SELECTIONS), or pass names separated by commas
    (argparse's type: an ArgumentTypeError for none)."""
    if text in pass_knockout.PASS_SELECTIONS:
        return text
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    if not names:
        raise argparse.ArgumentTypeError(f"{text!r}: give changed, all or pass names separated by commas")
    return list(names)


def run_batch_file(
    jobs_path: str,
    workers: int,
    passes: str | list[str],
    occurrence: str,
    timeout_s: float,
    release_env: str | None = None,
) -> int:
    """``run_batch`` of the jobs in JOBS_PATH (``trace_batch.run_jobs_file``: ``-`` reads standard input), with
    the knockout's settings: which passes (``pass_selection``), which of their runs, seconds per lowering."""
    settings = {"passes": passes, "occurrence": occurrence, "timeout_s": timeout_s}
    return trace_batch.run_jobs_file(jobs_path, lambda jobs: run_batch(jobs, workers, settings, release_env), PROG)
