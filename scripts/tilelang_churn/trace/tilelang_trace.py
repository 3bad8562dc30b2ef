"""The TileLang side of gemm_lower_trace.py: the job's kernel, pass resolution and the runner of each trace mode.

Importing this module imports tilelang: the caller sets TL_LOWER_TRACE* before that. Each mode of
``trace_modes.MODES`` names its runner here: ``runner(spec, func, target, out_dir, trace_dir) -> (rows, error,
info)``.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import time
from pathlib import Path

import tilelang
from tilelang import tvm

from tilelang_churn.core import devices, ir_archive, line_churn, pass_configs, pass_names, passes_table
from tilelang_churn.core.job_spec import JobSpec
from tilelang_churn.kernel import device_profiles, kernels, tilelang_source
from tilelang_churn.releases import kernel_requirements
from tilelang_churn.trace import pass_identity, pass_instrument, run_record
from tilelang_churn.trace.trace_cli import DERIVABLE_PASS_PARAMS


def build_kernel(spec: JobSpec):
    """The job's PrimFunc, as TileLang gets it from its file (kernels.build; the book's GEMM is
    workflow/kernels/gemm.py). The pass configs the kernel brings itself must all be in the job's (the config check
    read them from its source): a kernel that would lower under settings its row does not name is a failure."""
    target = make_target(spec)
    try:  # the kernel's own packages, installed by the config check, found before its import
        kernel_requirements.put_first(spec.requirements)
    except kernel_requirements.RequirementsError as error:
        raise kernels.KernelError(f"{spec.kernel_file}: {error}") from None
    # a kernel that asks the GPU while it is built gets the profile's answers
    with device_profiles.active(devices.from_json(spec.device)):
        func, built = kernels.build(spec.kernel_file, spec.function, spec.params, with_object=True, target=target)
    own = kernels.own_pass_configs(built, func)
    missing = {key: value for key, value in own.items() if key not in spec.pass_configs}
    if missing:
        raise kernels.KernelError(
            f"{spec.function}() in {spec.kernel_file} brings the pass configs {pass_configs.canonical(own)} at run "
            f"time, and the job's {pass_configs.canonical(spec.pass_configs)} lacks "
            f"{', '.join(missing)}: the config check read other settings from its source"
        )
    return func


def make_target(spec: JobSpec):
    return tvm.target.Target(spec.target)


def pass_config_context(spec: JobSpec):
    """A PassContext with the job's pass configs (every mode lowers inside it: the tracers' own contexts keep
    its config), a no-op context without any. TVM refuses a key it does not know here."""
    if not spec.pass_configs:
        return contextlib.nullcontext()
    return pass_instrument.outer_pass_context(tvm, config=spec.pass_configs)


def derived_pass_args(spec: JobSpec, target) -> dict:
    values = {
        "target": target,
        "lower_thread_binding": spec.is_simt,
        "default_threads": spec.threads,
        "storage_scope": "shared",
    }
    assert set(values) == set(DERIVABLE_PASS_PARAMS)
    return values


def resolve_passes(spec: JobSpec, target, identities: dict | None = None) -> list[tuple[str, object]]:
    """(name, Pass) for each name in spec.passes, built by the factory the static catalog names; IDENTITIES, when
    given, gets each name's pass identity (pass_identity.py: an anonymous pass's is its factory)."""
    catalog = tilelang_source.pass_catalog(tilelang_source.find_installed_source())
    derived = derived_pass_args(spec, target)
    named = []
    with pass_identity.watching():
        for name in spec.passes:
            factory = getattr(importlib.import_module(catalog[name].module), name)
            kwargs = {p: derived[p] for p in inspect.signature(factory).parameters if p in derived}
            made = factory(**kwargs)
            named.append((name, made))
            if identities is not None:
                identities[name] = pass_identity.identity(made.info)
    return named


def _step_row(step: int, phase: str, result: dict) -> passes_table.PassRow:
    """A passes.csv row from one dict of lower_trace() / pass_diff(): the tool's own counts, and the
    whitespace-insensitive ones counted the tool's way (unified diff) when the dict holds the IR texts."""
    changed = bool(result["changed"])
    before, after = result.get("before_script"), result.get("after_script")
    stripped = (None, None)
    if isinstance(before, str) and isinstance(after, str):
        keepends = phase == "lower_trace"  # lower_trace diffs lines with their endings, pass_diff without
        stripped = line_churn.unified_diff_counts(before, after, strip=True, keepends=keepends) if changed else (0, 0)
    return {
        "step": step,
        "phase": phase,
        "pass": result["name"],
        "status": passes_table.STATUS_CHANGED if changed else passes_table.STATUS_NOOP,
        "changed": changed,
        "added": int(result["insertions"]),
        "deleted": int(result["deletions"]),
        "added_stripped": stripped[0],
        "deleted_stripped": stripped[1],
        "depth": 0,
    }


def run_instrument(spec: JobSpec, func, target, out_dir: Path, trace_dir: Path, lower=None):
    """instrument: a TVM pass instrument over the full tilelang.lower (pass_instrument.py); ``lower`` as there."""
    rows, error, info = pass_instrument.run_instrument(func, target, keep_ir=spec.keep_ir, lower=lower)
    return rows, error, _write_ir_archive(info, out_dir)


def _write_ir_archive(info: dict, out_dir: Path) -> dict:
    """The instrument's kept IR (info's ``ir``) written to out_dir/ir.json.gz, info naming it."""
    ir = info.pop("ir", None)
    if ir is not None:
        info["ir_archive"] = str(out_dir / "ir.json.gz")
        info["ir_archive_bytes"] = ir_archive.write(ir, out_dir / ir_archive.NAME)
    return info


def run_lower_trace(spec: JobSpec, func, target, out_dir: Path, trace_dir: Path):
    """trace-api: tilelang.tools.lower_trace.lower_trace() over the pass list."""
    identities: dict = {}
    with target:
        rows, error = run_api_tool("lower_trace", func, resolve_passes(spec, target, identities))
    return _with_identities(rows, identities), error, {}


def run_pass_diff(spec: JobSpec, func, target, out_dir: Path, trace_dir: Path):
    """pass-diff: tilelang.utils.pass_diff.pass_diff() over the pass list."""
    identities: dict = {}
    with target:
        rows, error = run_api_tool("pass_diff", func, resolve_passes(spec, target, identities))
    return _with_identities(rows, identities), error, {}


def _with_identities(rows: list[dict], identities: dict) -> list[dict]:
    for row in rows:
        if row["pass"] in identities:
            row["pass_id"] = identities[row["pass"]]
    return rows


def run_api_tool(tool_name: str, func, named_passes: list) -> tuple[list[dict], BaseException | None]:
    """Run lower_trace or pass_diff over the pass list; rows are the tool's own numbers.

    Neither tool returns its results when a pass raises, so each pass is wrapped to learn which step was
    running; the tool is then run again on the passes before it to keep their rows. A failure before any pass
    ran (in the tool itself) is a row named after the tool, not blamed on the first pass.
    """
    if tool_name == "lower_trace":
        from tilelang.tools.lower_trace import lower_trace as tool
    else:
        from tilelang.utils.pass_diff import pass_diff as tool
    running = {"step": None}

    def watched(step, the_pass):
        def run(mod):
            running["step"] = step
            return the_pass(mod)

        return run

    if not named_passes:
        return [], ValueError(f"{tool_name}: the pass list is empty")
    try:
        results = tool(func, [(name, watched(i, p)) for i, (name, p) in enumerate(named_passes)], mode="terminal")
    except Exception as exc:  # noqa: BLE001 - a failing pass is data
        failed_step = running["step"]
        if failed_step is None:  # nothing ran: the tool failed on its own
            return [passes_table.failed_row(0, tool_name, tool_name, exc, depth=0)], exc
        try:
            results = tool(func, named_passes[:failed_step], mode="terminal") if failed_step else []
        except Exception:  # noqa: BLE001 - the prefix failing on its own is unexpected: keep the first error
            results = []
        rows = [_step_row(i, tool_name, result) for i, result in enumerate(results)]
        rows.append(passes_table.failed_row(len(rows), tool_name, named_passes[failed_step][0], exc, depth=0))
        return rows, exc
    return [_step_row(i, tool_name, result) for i, result in enumerate(results)], None


def _direct_lower_trace_to(trace_dir: Path) -> None:
    """Point this lowering's run record at trace_dir. TL_LOWER_TRACE=1 makes ``import tilelang`` call
    lower_trace's ``enable()``, which snapshots TL_LOWER_TRACE_DIR then; a process that runs several jobs
    (trace_batch.py) sets each job's folder through the same public function. Releases without it read the
    environment variable, which the script has set."""
    from tilelang.tools import lower_trace

    enable = getattr(lower_trace, "enable", None)
    if enable is not None and "trace_dir" in inspect.signature(enable).parameters:
        enable(trace_dir=str(trace_dir))


class _ReportFlushes:
    """Which of TileLang's report flushes to let through: the first, then each one that finds at least twice the
    records of the last written, and one at the end (``lower_trace_report_doubling``)."""

    def __init__(self, records):
        self.records = records  # () -> the records the report would show now
        self.written = 0  # records in the report as last written
        self.skipped = False  # a flush held back since

    def due(self) -> bool:
        count = len(self.records())
        if count >= 2 * self.written:
            self.written = count
            self.skipped = False
            return True
        self.skipped = True
        return False


@contextlib.contextmanager
def lower_trace_report_doubling():
    """TL_LOWER_TRACE rewrites its whole HTML report after every pass: a lowering of n passes writes n reports
    of up to n sections (772 MB for the default grid's largest, 7.5 s of its 14.5). Within this span a flush
    writes only when the records have doubled since the last report written, and the last one held back is
    written at the end: the same final report (TileLang renders it from the records alone), at most twice its
    bytes in all, and a lowering that crashes still leaves a report of at least half its passes. Releases
    without the report (before 0.1.13) are left as they are."""
    try:
        from tilelang.tools.lower_trace import core
    except ImportError:
        yield
        return
    if callable(getattr(getattr(core, "LowerTraceSession", None), "flush_html", None)):  # 0.1.14 on: a session
        owner, name = core.LowerTraceSession, "flush_html"

        def records(session):
            return session.records

    elif callable(getattr(core, "_incremental_flush_html", None)):  # 0.1.13: module state
        owner, name = core, "_incremental_flush_html"

        def records():
            return core._records

    else:
        yield
        return
    original = owner.__dict__[name]
    pending: dict = {}  # id(session), None for 0.1.13's module -> (the flush's arguments, its _ReportFlushes)

    def flush(*args):  # (session,) for the method, () for 0.1.13's function
        key = id(args[0]) if args else None
        if key not in pending:
            pending[key] = (args, _ReportFlushes(lambda: records(*args)))
        if pending[key][1].due():
            original(*args)

    setattr(owner, name, flush)
    try:
        yield
    finally:
        setattr(owner, name, original)
        for args, flushes in pending.values():
            if flushes.skipped:
                with contextlib.suppress(Exception):  # as TileLang's own flushes: the report never fails a job
                    original(*args)


def run_trace_env(
    spec: JobSpec, func, target, out_dir: Path, trace_dir: Path, lower=None
) -> tuple[list[dict], BaseException | None, dict]:
    """Full tilelang.lower under TL_LOWER_TRACE; rows come from this run's own run record. ``lower(func, target)``
    lowers (default ``tilelang.lower``; run_trace_env_and_instrument's watches it with the pass instrument). The
    report is written as TileLang writes it, less its rewrites after each pass (lower_trace_report_doubling)."""
    from tilelang.tools.lower_trace import core

    _direct_lower_trace_to(trace_dir)
    before = set(run_record.find_run_dirs(trace_dir))
    error = None
    artifact = None
    identities: list[tuple[str, str]] = []  # (TVM name, identity) of each pass run, when this lowering is ours alone
    try:
        with lower_trace_report_doubling(), target:
            if lower is not None:
                artifact = lower(func, target)
            else:
                watch = pass_instrument.outer_pass_context(tvm, [pass_identity.recording_instrument(identities)])
                with pass_identity.watching(), watch:
                    artifact = tilelang.lower(func, target=target)
    except Exception as exc:  # noqa: BLE001 - a failing pass is data
        error = exc
    session = core.get_last_session() if hasattr(core, "get_last_session") else None
    if session is not None and session.run_dir:
        run_dir = Path(session.run_dir)
    else:  # older releases: the run record this process added
        new = [d for d in run_record.find_run_dirs(trace_dir) if d not in before]
        run_dir = new[-1] if new else None
    if run_dir is None and error is None:
        error = RuntimeError(f"TL_LOWER_TRACE wrote no run record under {trace_dir}")
    rows = run_record.read_run_record(run_dir) if run_dir else []
    # depth and error text are not in the files; take them from the session's records when it has them
    by_step = {record.index: record for record in (session.records if session else [])}
    for row in rows:
        record = by_step.get(row["step"])
        row["depth"] = record.depth if record is not None else None
        if row["status"] == passes_table.STATUS_FAILED:
            # the raised exception carries its type; the record only its message
            row["error"] = passes_table.error_text(
                error or (record.error_msg if record is not None else "") or "failed"
            )
    if error is not None and not any(row["status"] == passes_table.STATUS_FAILED for row in rows):
        rows.append(passes_table.failed_row(len(rows), "tilelang.lower", "lower", error, depth=None))
    info = {"run_record": str(run_dir) if run_dir else None}
    if lower is None:  # shared with the instrument: run_trace_env_and_instrument takes the identities from its rows
        info["pass_id_disagreed"] = pass_identity.assign(rows, identities, pass_instrument.run_record_name)
    if artifact is not None:
        info["kernel_source_lines"] = len((artifact.kernel_source or "").splitlines())
    return rows, error, info


def run_trace_env_and_instrument(spec: JobSpec, served: JobSpec, func, target, out_dir: Path, trace_dir: Path,
                                 served_out_dir: Path):  # fmt: skip
    """One tilelang.lower for a trace-env job and an instrument job of the same configuration: TileLang writes
    its run record (TL_LOWER_TRACE, read at import) while the pass instrument, in an outer PassContext, sees
    every pass run. ((rows, error, info) of the trace-env job, the same of the instrument job): each as its
    runner alone gives it, the instrument's IR archive written to ``served_out_dir``."""
    results = {}

    def lower_watched(func, target):
        lowered = {}

        def lower(func, target):
            lowered["artifact"] = tilelang.lower(func, target=target)
            return lowered["artifact"]

        results["instrument"] = pass_instrument.run_instrument(
            func, target, keep_ir=served.keep_ir, lower=lower, other_tracer=lower_trace_timed_apart
        )
        error = results["instrument"][1]
        if error is not None:
            raise error  # the trace-env record reads the same exception its own lowering would have raised
        return lowered["artifact"]

    trace_env = run_trace_env(spec, func, target, out_dir, trace_dir, lower=lower_watched)
    if "instrument" not in results:  # the instrument never ran: its lowering's failure is the trace-env job's
        raise trace_env[1] or RuntimeError("the shared lowering did not run")
    rows, error, info = results["instrument"]
    identities = [
        (row["pass"], pass_names.identity_of(row)) for row in rows if row["status"] != passes_table.STATUS_CODEGEN
    ]
    trace_env[2]["pass_id_disagreed"] = pass_identity.assign(trace_env[0], identities, str)
    return trace_env, (rows, error, _write_ir_archive(info, served_out_dir))


def _lower_trace_callbacks() -> list[tuple[type, str]]:
    """(class, method) of the code TL_LOWER_TRACE runs inside a lowering, where this release has it (0.1.14+:
    the stacked pass instrument's callbacks, the session's codegen hook and its end; 0.1.13 wraps the passes
    from outside TVM's callbacks, so its time is no pass's already)."""
    found = []
    with contextlib.suppress(ImportError):
        from tilelang.instrumentation.events import StackedPassInstrument

        found += [(StackedPassInstrument, "run_before_pass"), (StackedPassInstrument, "run_after_pass")]
    with contextlib.suppress(ImportError):
        from tilelang.tools.lower_trace.core import LowerTraceSession

        found += [(LowerTraceSession, "run_codegen"), (LowerTraceSession, "finish")]
    return [(owner, name) for owner, name in found if callable(getattr(owner, name, None))]


def _timed(method, time_elsewhere):
    """METHOD, its seconds handed to TIME_ELSEWHERE; of run_codegen(event, next_call), less the codegen itself."""

    def timed(self, *args, **kwargs):
        inner = [0.0]
        if method.__name__ == "run_codegen" and len(args) == 2:
            event, next_call = args

            def timed_next_call():
                started = time.perf_counter()
                try:
                    return next_call()
                finally:
                    inner[0] += time.perf_counter() - started

            args = (event, timed_next_call)
        started = time.perf_counter()
        try:
            return method(self, *args, **kwargs)
        finally:
            time_elsewhere(time.perf_counter() - started - inner[0])

    return timed


@contextlib.contextmanager
def lower_trace_timed_apart(time_elsewhere):
    """TileLang's own tracer (TL_LOWER_TRACE: it prints the IR around every pass and writes its report) timed
    apart while the pass instrument watches the same lowering: each pass's ``seconds`` is then its own, as in a
    lowering the instrument watches alone. TVM binds an instrument's methods when it is made, per lowering, so
    the classes are patched for the lowering's span only."""
    patched = [(owner, name, owner.__dict__.get(name)) for owner, name in _lower_trace_callbacks()]
    try:
        for owner, name, _ in patched:
            setattr(owner, name, _timed(getattr(owner, name), time_elsewhere))
        yield
    finally:
        for owner, name, own in patched:
            if own is None:
                delattr(owner, name)  # inherited: the base class's again
            else:
                setattr(owner, name, own)
