#!/usr/bin/env python3
"""See how TileLang lowers a GEMM, pass by pass (book chapter 12, example 4).

    python3 gemm_lower_trace.py --static-only [--tilelang-src PATH]   # any machine, no TileLang needed
    python3 gemm_lower_trace.py --mode trace-env    # TL_LOWER_TRACE=1: every pass of tilelang.lower
    python3 gemm_lower_trace.py --mode trace-api    # lower_trace(func, passes)
    python3 gemm_lower_trace.py --mode pass-diff    # pass_diff(func, passes)

Each tracing mode prints ``pass=<name> changed=<True|False> +<added> -<deleted>`` per pass step and
writes DIR/passes.csv (columns: scripts/tilelang_churn/core/passes_table.py) and DIR/run.json under --out DIR.
Exit status: 0 done (an "unsupported" row included); 1 a pass failed and its row is recorded; 2 bad arguments;
3 the run could not be recorded or the environment is broken (output not writable, TileLang not importable or
shadowed, or not the release --expect-release names) -- each with one line on stderr and no traceback.
Depends only on the standard library and TileLang; TL_LOWER_TRACE is read when tilelang is imported, so
arguments are parsed and the environment set first.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import platform
import py_compile
import shlex
import shutil
import sys
import tempfile
import time
from pathlib import Path

from tilelang_churn.core import files, import_gc, passes_table, releases, targets, trace_modes
from tilelang_churn.kernel import tilelang_source
from tilelang_churn.releases import release_process
from tilelang_churn.trace import trace_cli

SCRIPT_DIR = Path(__file__).resolve().parents[2]  # scripts/: the entry files and this package
ENTRY = SCRIPT_DIR / "gemm_lower_trace.py"
PROG = "gemm_lower_trace.py"
# set by trace_batch.py in a job forked from a process that imported TileLang once for many jobs
PROCESS: dict = {}


def static_only(tilelang_src: str | None) -> int:
    """py_compile the project's scripts, then locate the book's entry points in a TileLang source and say
    which trace modes that release serves. A missing entry point is a finding, not a failure (0.1.10 has no
    lower_trace, and its instrument jobs are fine): the config check stops a run whose modes need one."""
    scripts = sorted(SCRIPT_DIR.rglob("*.py"))
    with tempfile.TemporaryDirectory() as scratch:
        for index, path in enumerate(scripts):
            try:
                py_compile.compile(str(path), cfile=os.path.join(scratch, f"{index}.pyc"), doraise=True)
            except py_compile.PyCompileError as exc:
                print(f"py_compile: FAILED {path}: {exc.msg.strip()}")
                return 1
    print(f"py_compile: ok ({len(scripts)} files under {SCRIPT_DIR.name}/)")

    if tilelang_src:
        try:
            source = tilelang_source.SourceTree.from_path(tilelang_src)
        except (ValueError, OSError) as exc:
            print(f"{PROG}: error: argument --tilelang-src: {exc}", file=sys.stderr)
            return 2
    else:
        source = tilelang_source.find_installed_source()
        shadow = tilelang_source.shadowing_module() if source is None else None
        if shadow:
            raise NotRecorded(f"a module named tilelang at {shadow} shadows the TileLang package: nothing verified")
    if source is None:
        print("Entry points to check against the pinned TileLang:")
        for label, relpath, *_ in tilelang_source.ENTRY_POINTS:
            print(f"  {label:<38} {relpath} (not located)")
        print(
            "(no TileLang source found: tilelang is not installed here and --tilelang-src was not given; "
            "only the syntax was checked: no entry point was verified and no report was generated.)"
        )
        return 0

    release = source.release or "(release unknown)"
    print(f"Entry points to check against the pinned TileLang (source: {source.description}, release {release}):")
    locations = tilelang_source.locate_entry_points(source)
    for location in locations:
        print(f"  {location.label:<38} {location.where()}")
    missing = tilelang_source.missing_for_modes(locations, trace_modes.MODE_NAMES)
    print(f"Trace modes of TileLang {release}:")
    for mode in trace_modes.MODE_NAMES:
        needs = [location.label for location in locations if mode in location.modes]
        if mode in missing:
            lacks = ", ".join(location.label for location in missing[mode])
            print(f"  {mode:<12} not served: lacks {lacks}")
        else:
            print(f"  {mode:<12} served" + (f" ({', '.join(needs)})" if needs else " (needs none of these)"))
    found = sum(location.found for location in locations)
    if found < len(locations):
        names = "; ".join(f"{', '.join(m.missing)} in {m.relpath}" for m in locations if not m.found)
        print(
            f"({found} of {len(locations)} entry points found by parsing {source.description}; missing: {names}. "
            "The workflow stops before any job when a configured mode needs a missing one.)"
        )
    else:
        print(f"(all {len(locations)} entry points found by parsing {source.description}.)")
    return 0


def out_dir_of(args) -> Path:
    """The job's folder: --out, else the book's tmp/gemm_lower_trace/<mode>."""
    return Path(args.out or os.path.join("tmp", "gemm_lower_trace", args.mode)).resolve()


def configure_environment(args) -> tuple[Path, Path]:
    """Set TileLang's environment before it is imported; every file of the run lands under DIR."""
    out_dir = out_dir_of(args)
    out_dir.mkdir(parents=True, exist_ok=True)
    # The book's TL_LOWER_TRACE_DIR=... form still works when no --out is given.
    if args.out is None and os.environ.get("TL_LOWER_TRACE_DIR"):
        trace_dir = Path(os.environ["TL_LOWER_TRACE_DIR"]).resolve()
    else:
        trace_dir = out_dir / "lower_trace"
    os.environ["TL_LOWER_TRACE"] = "1" if trace_modes.MODES[args.mode].sets_lower_trace_env else "0"
    os.environ["TL_LOWER_TRACE_DIR"] = str(trace_dir)
    os.environ["TILELANG_CACHE_DIR"] = str(out_dir / "tilelang_cache")
    return out_dir, trace_dir


def versions() -> dict:
    found = {"python": platform.python_version()}
    for module in ("tilelang", "tvm", "torch"):
        loaded = sys.modules.get(module)
        found[module] = getattr(loaded, "__version__", None) if loaded else None
    return found


def tilelang_install() -> dict:
    """Where the imported TileLang comes from: its package folder, its distribution's version and, where its
    install records one (pip install git+..., an editable checkout), the origin URL and git commit."""
    tilelang = sys.modules.get("tilelang")
    found = {"location": os.path.dirname(getattr(tilelang, "__file__", None) or "") or None}
    try:
        from importlib import metadata

        dist = metadata.distribution("tilelang")
        direct = json.loads(dist.read_text("direct_url.json") or "null") or {}
    except (ImportError, ValueError, metadata.PackageNotFoundError):
        return {**found, "distribution_version": None, "url": None, "commit": None}
    commit = (direct.get("vcs_info") or {}).get("commit_id")
    return {**found, "distribution_version": dist.version, "url": direct.get("url"), "commit": commit}


class NotRecorded(Exception):
    """The run cannot be recorded, or the environment is broken: exit status 3, one line on stderr."""


class ReleaseMismatch(Exception):
    """The environment imported another TileLang release than the one the run was asked for, or its TileLang
    loaded another install's native libraries."""


def release_mismatch(expected: str, release_env: str | None) -> str | None:
    """Why the imported TileLang is not release EXPECTED, naming the environment, both versions and how to
    rebuild it; None when it is that release. Rows under another release's name would be wrong data."""
    tilelang = sys.modules.get("tilelang")
    imported = getattr(tilelang, "__version__", None)
    if releases.imports_release(imported, expected):
        return None
    env = release_env or sys.prefix
    if release_env:
        remedy = f"remove {env} and run snakemake again: rule release_env rebuilds it"
    else:
        remedy = f"install tilelang=={expected} in it, or run in that release's environment (--release-env)"
    where = os.path.dirname(getattr(tilelang, "__file__", None) or "") or "?"
    return (
        f"the environment {env} holds TileLang {imported or '(no version)'} (imported from {where}), not release "
        f"{expected} (--expect-release): {remedy}"
    )


def foreign_libraries(release_env: str, libraries: list[str]) -> str | None:
    """Why the TileLang imported in RELEASE_ENV runs native code from another install (LIBRARIES: the ones this
    process loaded), with the remedy; or None."""
    imported = getattr(sys.modules.get("tilelang"), "__version__", "?")
    problem = release_process.foreign_library_problem(f"TileLang {imported} in {release_env}", libraries)
    if problem is None:
        return None
    names = ", ".join(release_process.LIBRARY_VARIABLES)
    return f"{problem}: start it without a variable naming another install ({names}), as the workflow does"


def stop_if_forked(job_pid: int) -> None:
    """A process that the kernel's code forked, back in the job's code: it ends here, so that only the job's
    own process writes its files (a copy that lived on would rewrite passes.csv after the tables were built)."""
    if os.getpid() != job_pid:
        print(f"{PROG}: error: a process forked by the kernel's code (pid {os.getpid()}) stops here", file=sys.stderr)
        sys.stderr.flush()
        os._exit(trace_cli.EXIT_NOT_RECORDED)


def trace(args, served: tuple[list[str], str] | None = None) -> int:
    """Run one job (args parsed by trace_cli). ``served``: (arguments, log path) of an instrument job of the same
    configuration (trace_batch.py pairs them) whose record the same lowering writes too, in its own folder."""
    spec = args.spec
    served_args = trace_cli.parse_args(list(served[0])) if served is not None else None
    job_pid = os.getpid()
    try:
        out_dir, trace_dir = configure_environment(args)
        log = open(out_dir / "tilelang.log", "w", encoding="utf-8")
    except OSError as exc:
        raise NotRecorded(f"cannot write the run's files under --out {args.out or '(default)'}: {exc}") from None
    run_info = job_info(args, [sys.executable, *sys.argv], out_dir, trace_dir)
    for warning in run_info["warnings"]:
        print(f"{PROG}: warning: {warning}", file=sys.stderr)
    rows: list[dict] = []
    error: BaseException | None = None
    broken: str | None = None  # the environment cannot run TileLang: recorded, then exit 3
    shared = None  # the served job's (rows, error, info) when one lowering gave both records
    started, cpu_started = time.perf_counter(), time.process_time()
    # TileLang and TVM print progress (and "ROCm not detected") on stdout: keep it in the run's log
    with log, contextlib.redirect_stdout(log):
        try:
            with import_gc.collector_off():  # a fifth less CPU
                from tilelang_churn.trace import tilelang_trace  # imports tilelang: reads TL_LOWER_TRACE now
        except Exception as exc:  # noqa: BLE001 - recorded as a row, then reported as a broken environment
            error = exc
            broken = f"TileLang cannot be imported here ({passes_table.error_text(exc)})"
        if error is None and args.expect_release:
            broken = release_mismatch(args.expect_release, args.release_env)
            error = ReleaseMismatch(broken) if broken else None
        run_info["native_libraries"] = release_process.native_libraries()
        if error is None and args.release_env:
            broken = foreign_libraries(args.release_env, run_info["native_libraries"])
            error = ReleaseMismatch(broken) if broken else None
        run_info["import_seconds"] = round(time.perf_counter() - started, 4)
        # the process's fixed cost (its import of TileLang) and how many jobs share it
        run_info["process"] = {
            "pid": os.getpid(),
            "jobs_in_process": 1,
            "import_seconds": run_info["import_seconds"],
            "import_cpu_seconds": round(time.process_time() - cpu_started, 4),
            **PROCESS,
        }
        if error is None:
            try:
                target = tilelang_trace.make_target(spec)
            except Exception as exc:  # noqa: BLE001
                print(
                    f"{PROG}: error: argument --target: TVM rejects {spec.target_json}: {passes_table.error_text(exc)}",
                    file=sys.stderr,
                )
                return trace_cli.EXIT_BAD_ARGUMENTS
            lower_started, lower_cpu_started = time.perf_counter(), time.process_time()
            mode = trace_modes.MODES[spec.mode]
            if mode.requires and importlib.util.find_spec(mode.requires) is None:
                rows = [unsupported_row(spec, mode)]  # a release without the mode's tool: data, not a failure
            else:
                try:
                    func = tilelang_trace.build_kernel(spec)
                    stop_if_forked(job_pid)
                    with tilelang_trace.pass_config_context(spec):
                        if served_args is not None:
                            served_out = out_dir_of(served_args)
                            served_out.mkdir(parents=True, exist_ok=True)
                            (rows, error, extra), shared = tilelang_trace.run_trace_env_and_instrument(
                                spec, served_args.spec, func, target, out_dir, trace_dir, served_out
                            )
                        else:
                            runner = getattr(tilelang_trace, mode.runner)
                            rows, error, extra = runner(spec, func, target, out_dir, trace_dir)
                    run_info.update(extra)
                except OSError as exc:  # the run's own files (e.g. ir.json.gz) could not be written
                    raise NotRecorded(f"cannot write the run's files under {out_dir}: {exc}") from None
                except Exception as exc:  # noqa: BLE001 - a failure outside any pass is still a row
                    error = exc
            run_info["lower_seconds"] = round(time.perf_counter() - lower_started, 4)
            # CPU seconds do not grow when other processes share the cores, as the wall seconds above do
            run_info["lower_cpu_seconds"] = round(time.process_time() - lower_cpu_started, 4)
    run_info["versions"] = versions()
    run_info["tilelang_install"] = tilelang_install()
    served_dir = out_dir_of(served_args) if shared is not None else None
    run_info["lowering"] = lowering_info(out_dir, [out_dir] + ([served_dir] if served_dir else []))
    wall_seconds = round(time.perf_counter() - started, 4)
    problem = None
    try:
        status = record(args, spec, rows, error, broken, run_info, out_dir, trace_dir, job_pid, wall_seconds)
    except NotRecorded as exc:  # said once the served job is recorded too
        problem, status = exc, trace_cli.EXIT_NOT_RECORDED
    if served_args is not None:
        run_info["wall_seconds"] = wall_seconds
        status = max(status, serve(served_args, served, shared, run_info, error, broken, out_dir, job_pid))
    if problem is not None:
        raise problem
    return status


def serve(args, served: tuple[list[str], str], shared, primary_info: dict, error, broken, primary_out: Path,
          job_pid: int) -> int:  # fmt: skip
    """Record the served instrument job (trace's ``served``, parsed: ``args``) in its own folder, its lines in
    its own log: from the shared lowering's results (``shared``), or, when the trace-env job did not lower (its
    release lacks lower_trace, its kernel failed to build), from a lowering of its own in this process."""
    argv, log_path = served
    with open(log_path, "w", encoding="utf-8") as job_log, contextlib.redirect_stdout(job_log), \
            contextlib.redirect_stderr(job_log):  # fmt: skip
        try:
            if shared is None and broken is None:
                print(f"{PROG}: lowered on its own in the process of {primary_out}, which did not lower")
                return trace(args)
            return record_served(args, argv, shared, primary_info, error, broken, primary_out, job_pid)
        except NotRecorded as problem:
            print(f"{PROG}: error: {problem}", file=sys.stderr)
            return trace_cli.EXIT_NOT_RECORDED


def record_served(args, argv, shared, primary_info: dict, error, broken, primary_out: Path, job_pid: int) -> int:
    """serve's record from the shared lowering: the instrument's rows, the process's and the lowering's fields."""
    out_dir, trace_dir = out_dir_of(args), out_dir_of(args) / "lower_trace"
    print(f"{PROG}: recorded from the lowering of {primary_out}, which wrote both records")
    run_info = job_info(args, [sys.executable, str(ENTRY), *argv], out_dir, trace_dir)
    for warning in run_info["warnings"]:
        print(f"{PROG}: warning: {warning}", file=sys.stderr)
    for key in ("native_libraries", "import_seconds", "process", "lower_seconds", "lower_cpu_seconds"):
        if key in primary_info:
            run_info[key] = primary_info[key]
    rows, served_error = [], error
    if shared is not None:
        rows, served_error, extra = shared
        run_info.update(extra)
    run_info["versions"] = primary_info["versions"]
    run_info["tilelang_install"] = primary_info.get("tilelang_install")
    run_info["lowering"] = lowering_info(primary_out, [primary_out, out_dir])
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        if (primary_out / "tilelang.log").exists():  # the one lowering's output (--keep tables removes it)
            shutil.copyfile(primary_out / "tilelang.log", out_dir / "tilelang.log")
    except OSError as exc:
        raise NotRecorded(f"cannot write the run's files under {out_dir}: {exc}") from None
    wall_seconds = primary_info["wall_seconds"]
    return record(args, args.spec, rows, served_error, broken, run_info, out_dir, trace_dir, job_pid, wall_seconds)


def job_info(args, command: list[str], out_dir: Path, trace_dir: Path) -> dict:
    """run.json's fields known before the lowering."""
    return {
        "command": command,
        "command_line": shlex.join(command),
        "cwd": os.getcwd(),
        "spec": args.spec.record(),
        "out_dir": str(out_dir),
        "trace_dir": str(trace_dir),
        "platform": platform.platform(),
        "warnings": trace_cli.warnings_for(args),
    }


def lowering_info(lowered_by: Path, records: list[Path]) -> dict:
    """run.json's ``lowering``: the job whose lowering gave this record (``by``, its folder) and every job that
    lowering recorded (``records``); a lone job names itself in both. A floor counts one lowering once."""
    return {"by": str(lowered_by), "records": [str(path) for path in records]}


def record(args, spec, rows, error, broken, run_info: dict, out_dir: Path, trace_dir: Path, job_pid: int,
           wall_seconds: float) -> int:  # fmt: skip
    """Write a job's passes.csv and run.json from its rows, print its step lines, say how it ended: its status."""
    if error is not None and not any(row["status"] == passes_table.STATUS_FAILED for row in rows):
        rows.append(passes_table.failed_row(len(rows), spec.mode, "setup", error))
    provenance = spec.provenance(run_info["versions"]["tilelang"] or "")
    rows = [{**row, **provenance} for row in rows]
    failed = next((row for row in rows if row["status"] == passes_table.STATUS_FAILED), None)
    if failed is not None:  # a kernel for a newer GPU than the job's target: say which target it needs
        failed["error"] = (failed.get("error") or "") + targets.missing_target_hint(failed.get("error"), spec.target)
    status = trace_cli.EXIT_NOT_RECORDED if broken else trace_cli.EXIT_PASS_FAILED if failed else trace_cli.EXIT_OK
    run_info["exit_status"] = status
    run_info["failure"] = failed and {"step": failed["step"], "pass": failed["pass"], "error": failed.get("error")}
    run_info["wall_seconds"] = wall_seconds
    stop_if_forked(job_pid)
    removed = files_not_kept(args.keep, status, out_dir, trace_dir)
    run_info["removed_after_run"] = [str(path) for path in removed]
    try:
        passes_table.write_rows(out_dir / "passes.csv", rows)
        # what the readers check passes.csv against: a file cut at a row boundary still parses
        run_info["passes_csv"] = passes_table.fingerprint(out_dir / "passes.csv")
        files.write_json(out_dir / "run.json", run_info)
    except OSError as exc:
        raise NotRecorded(f"cannot write the run's tables under {out_dir}: {exc}") from None

    for path in removed:  # the rows are written: --keep tables drops what no reader needs
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    for row in rows:
        print(step_line(row))
    print(trace_cli.NOTE_LINE)
    if broken:
        raise NotRecorded(f"{broken}; the failed setup row is in {out_dir / 'passes.csv'}")
    if failed:
        print(
            f"{PROG}: pass {failed['pass']} failed at step {failed['step']}: {failed.get('error')} "
            f"(rows kept in {out_dir / 'passes.csv'})",
            file=sys.stderr,
        )
    return status


def record_unfinished(argv: list[str], error: str, status: int, process: dict) -> Path | None:
    """For trace_batch.py: the record of a job that ended without writing its own (the kernel's code called
    os._exit, or the job ran past its time limit): a failed setup row with ERROR, and a run.json with STATUS.
    The job folder, or None when its arguments do not parse (the job then said why in its log)."""
    try:
        args = trace_cli.parse_args(list(argv))
    except SystemExit:
        return None
    spec = args.spec
    out_dir = out_dir_of(args)
    row = passes_table.failed_row(0, spec.mode, "setup", error)
    found = versions()
    rows = [{**row, **spec.provenance(found["tilelang"] or "")}]
    run_info = {
        "command": [sys.executable, str(ENTRY), *argv],
        "command_line": shlex.join([sys.executable, str(ENTRY), *argv]),
        "cwd": os.getcwd(),
        "spec": spec.record(),
        "out_dir": str(out_dir),
        "process": process,
        "versions": found,
        "exit_status": status,
        "failure": {"step": 0, "pass": "setup", "error": error},
        "recorded_by": "trace_batch.py: the job ended without its record",
    }
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        passes_table.write_rows(out_dir / "passes.csv", rows)
        run_info["passes_csv"] = passes_table.fingerprint(out_dir / "passes.csv")
        files.write_json(out_dir / "run.json", run_info)
    except OSError:
        return None
    return out_dir


def files_not_kept(keep: str, status: int, out_dir: Path, trace_dir: Path) -> list[Path]:
    """What --keep tables removes: trace-env's run record (inside the run's folder only), TileLang's cache
    folder and, after a clean run, TileLang's log. passes.csv, run.json and ir.json.gz (the comparison of
    releases) always stay."""
    if keep == "all":
        return []
    removed = [trace_dir] if trace_dir.is_dir() and trace_dir.is_relative_to(out_dir) else []
    removed += [out_dir / "tilelang_cache"] if (out_dir / "tilelang_cache").is_dir() else []
    if status == trace_cli.EXIT_OK:
        removed.append(out_dir / "tilelang.log")
    return removed


def unsupported_row(spec, mode) -> passes_table.PassRow:
    return {
        "step": 0,
        "phase": spec.mode,
        "pass": spec.mode,
        "status": passes_table.STATUS_UNSUPPORTED,
        "error": f"this TileLang release has no {mode.requires}: mode {spec.mode} cannot run here",
    }


def step_line(row: dict) -> str:
    added = row.get("added") or 0
    deleted = row.get("deleted") or 0
    line = f"pass={row['pass']} changed={bool(row.get('changed'))} +{added} -{deleted}"
    if row["status"] == passes_table.STATUS_CODEGEN:
        line += "  [codegen: TIR -> source, not churn]"
    elif row["status"] == passes_table.STATUS_UNSUPPORTED:
        line += f"  [UNSUPPORTED: {row.get('error')}]"
    elif row["status"] == passes_table.STATUS_FAILED:
        line += f"  [FAILED: {row.get('error')}]"
    return line


def run_job(argv: list[str], served: tuple[list[str], str] | None = None) -> int:
    """The job of ARGV (the trace script's arguments), run, and its exit status; ``served``: an instrument job that
    its lowering records too (trace). With --release-env naming another interpreter, this process is replaced by
    the trace script run there."""
    release_python = trace_cli.release_env_python(argv)
    if release_python:  # run this very script in the release's own environment, before any check
        release_process.exec_release(release_python, [str(ENTRY), *argv], trace_cli.release_env_value(argv))
    args = trace_cli.parse_args(argv)
    try:
        if args.static_only:
            return static_only(args.tilelang_src)
        return trace(args, served)
    except NotRecorded as problem:
        print(f"{PROG}: error: {problem}", file=sys.stderr)
        return trace_cli.EXIT_NOT_RECORDED
