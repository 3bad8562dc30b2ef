#!/usr/bin/env python3
"""Run many trace jobs in one process: TileLang is imported once, then each job runs in a child forked from it.

    python3 scripts/trace_batch.py --jobs JOBS.json [--workers N] [--release-env DIR]    # or --jobs - (stdin)

JOBS.json is a list of ``{"args": [gemm_lower_trace.py arguments, --out included], "log": PATH}``. Every job
writes exactly the files, log and exit status that ``gemm_lower_trace.py ARGS > LOG 2>&1`` would: the child
runs that script's job (``trace_job.run_job``). Only the fixed cost is shared: ``import tilelang`` (2-4 s, most
of a job's run) is paid once per process instead of once per job; the child inherits the imported modules,
copy-on-write.

TL_LOWER_TRACE is read when tilelang is imported, so one process runs either trace-env jobs or no trace-env job;
the grid's batches (batching/batches.py) are cut that way. A trace-env batch may also hold instrument jobs, each of
the same lowering as one of its trace-env jobs (its job spec but the mode and the files it keeps): one
child lowers once for both, TileLang writing its run record while the pass instrument watches, and each job gets
its own record and log (trace_job.serve; run.json's ``lowering`` names the job that lowered). Exit status: 0 when
every job exited 0
or a status given by --tolerate (e.g. 1, a recorded pass failure); otherwise the highest job status, with one
line per such job on stderr. A job killed by a signal (SIGBUS from a broken shared library, SIGKILL) is named
with its signal and environment on stderr and in its own log; the children die with the batch (SIGKILL on Linux),
so none writes after the batch is gone. Each child leads a process group of its own, killed when the job ends: no
process its kernel's code forked writes after it. A job that ends without its record (the kernel's code called
os._exit) or runs past --job-timeout (config job_timeout_s) is killed and recorded by the batch as a failed setup
row naming the kernel (status 1, data, as a build() that raises); a job failing before any pass is named on stderr.
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import argparse
import functools
import json
import os
import shlex
import shutil
import signal
import sys
import time
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from tilelang_churn.core import import_gc, interrupt, jobs, trace_modes  # noqa: E402
from tilelang_churn.releases import release_process  # noqa: E402
from tilelang_churn.trace import fork_pool, trace_cli  # noqa: E402
from tilelang_churn.trace.fork_pool import die_with_parent, load_prctl, signal_name  # noqa: E402

PROG = "trace_batch.py"
SCRIPTS_DIR = Path(__file__).resolve().parents[2]  # the entry files
SCRIPT = SCRIPTS_DIR / "trace_batch.py"
TRACE_SCRIPT = SCRIPTS_DIR / "gemm_lower_trace.py"


def job_mode(args: list) -> str:
    return args[args.index("--mode") + 1]


def check_jobs(jobs: list) -> bool:
    """Whether this process imports tilelang with TL_LOWER_TRACE on; every job must agree, or be an instrument job
    that a trace-env job's lowering serves (pair_jobs; ValueError if not)."""
    if not jobs:
        raise ValueError("no jobs given")
    for number, job in enumerate(jobs, start=1):
        args = job.get("args") if isinstance(job, dict) else None
        if not isinstance(args, list) or not job.get("log") or "--mode" not in args or "--out" not in args:
            raise ValueError(f"job {number} is not {{'args': [... --mode MODE ... --out DIR], 'log': PATH}}: {job!r}")
        if args[args.index("--mode") + 1 :][:1] not in ([mode] for mode in trace_modes.MODES):
            raise ValueError(f"job {number}: unknown --mode in {args!r}; modes are {', '.join(trace_modes.MODES)}")
    wants = {trace_modes.MODES[job_mode(jobs[unit[0]]["args"])].sets_lower_trace_env for unit in pair_jobs(jobs)}
    if len(wants) != 1:
        raise ValueError(
            "trace-env jobs need TL_LOWER_TRACE set when tilelang is imported: run them in a batch of their own, "
            "with only the instrument jobs of their configurations"
        )
    return wants.pop()


def pair_jobs(jobs: list) -> list[list[int]]:
    """The batch's jobs as units, each run in one child: [trace-env job, instrument job] where an instrument job
    lowers as a trace-env job of the batch does (their job specs' ``lowering``: core/job_spec.py), [job] for
    every other; in job order of their first job."""
    specs = [trace_cli.job_spec_or_none(job["args"]) for job in jobs]  # None: refused, by the job itself
    env_jobs: dict[tuple, list[int]] = {}
    for index, spec in enumerate(specs):
        if spec is not None and trace_modes.MODES[spec.mode].sets_lower_trace_env:
            env_jobs.setdefault(spec.lowering, []).append(index)
    units = {index: [index] for index in range(len(jobs))}
    for index, spec in enumerate(specs):
        free = env_jobs.get(spec.lowering) if spec is not None and spec.mode == trace_modes.SERVED_MODE else None
        if free:
            units[free.pop(0)].append(index)
            del units[index]
    return [unit for _, unit in sorted(units.items())]


def expected_releases(jobs: list) -> list[str]:
    """The releases the jobs ask for with --expect-release, in first-seen order."""
    found = []
    for job in jobs:
        args = job["args"]
        for i, arg in enumerate(args):
            value = args[i + 1] if arg == "--expect-release" and i + 1 < len(args) else None
            value = arg.split("=", 1)[1] if arg.startswith("--expect-release=") else value
            if value is not None and value not in found:
                found.append(value)
    return found


def cache_dir(jobs: list) -> Path:
    """TileLang's cache of the importing process, beside the jobs' folders (each job then sets its own, as the
    script alone does): the import must not write the user's ~/.tilelang."""
    outs = [os.path.dirname(os.path.abspath(job["args"][job["args"].index("--out") + 1])) for job in jobs]
    return Path(os.path.commonpath(outs)) / ".tilelang_cache"


def import_tilelang(lower_trace_env: bool) -> dict:
    """Import TileLang once for all jobs; its import time is the process's fixed cost, reported in each run.json.

    A failing import is not fatal here: each job imports again in its child and records the failure as the
    single job would (a failed setup row, exit 3)."""
    os.environ["TL_LOWER_TRACE"] = "1" if lower_trace_env else "0"
    started, cpu_started = time.perf_counter(), time.process_time()
    error = None
    try:
        with import_gc.collector_off():  # a fifth less CPU; the children's collections skip what it made
            from tilelang_churn.trace import tilelang_trace  # noqa: F401 - the import is the point: the children inherit it
    except Exception as exc:  # noqa: BLE001 - each child records it
        error = f"{type(exc).__name__}: {exc}"
    return {
        "import_seconds": round(time.perf_counter() - started, 4),
        "import_cpu_seconds": round(time.process_time() - cpu_started, 4),
        "import_error": error,
    }


def run_child(job: dict, process: dict, served: dict | None = None) -> int:
    """In the forked child: the job's stdout and stderr go to its log, then trace_job.run_job runs (with the
    instrument job ``served`` by the same lowering, which writes its own log)."""
    from tilelang_churn.trace import trace_job

    fork_pool.output_to(job["log"])
    sys.argv = [str(TRACE_SCRIPT), *job["args"]]  # run.json records the job's stand-alone command
    trace_job.PROCESS.update(process)
    try:
        return trace_job.run_job(list(job["args"]), served=served and (list(served["args"]), served["log"]))
    except SystemExit as exc:  # argparse errors: exit 2, its message already on stderr
        return exc.code if isinstance(exc.code, int) else 2
    except BaseException as exc:  # noqa: BLE001 - one line, as the script alone would give
        print(f"{PROG}: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return trace_cli.EXIT_NOT_RECORDED


# Signals by which a lowering's own process dies: a crash in the kernel's code or in TileLang (a segfault, an abort,
# a bus error), or the kernel's out-of-memory killer (SIGKILL). The job's failed row names it, and the run goes on;
# any other signal is a stop from outside (SIGTERM, SIGINT, SIGHUP): nothing recorded, the batch reruns it.
CRASH_SIGNALS = frozenset({signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGFPE, signal.SIGILL, signal.SIGKILL})


def crash_words(number: int) -> str:
    """What a job's failed row says of a crash signal (CRASH_SIGNALS)."""
    said = f"the lowering's process was killed by {signal_name(number)} (signal {number})"
    if number == signal.SIGKILL:
        return f"{said}: out of memory? (the kernel's out-of-memory killer sends SIGKILL)"
    return f"{said}: a crash in the kernel's code or in TileLang"


def report_signal(jobs: list, index: int, number: int, environment: str) -> None:
    """A child killed by a signal recorded nothing and its log may be empty: say which signal, job and
    environment on stderr (the batch log) and at the end of the job's log."""
    job = jobs[index]
    what = f"was killed by {signal_name(number)} (signal {number}) in the environment {environment}"
    print(
        f"{PROG}: error: job {index + 1} of {len(jobs)} {what}, nothing recorded: "
        f"{shlex.join(['gemm_lower_trace.py', *job['args']])} (log: {job['log']})",
        file=sys.stderr,
        flush=True,
    )
    append_to_log(job, f"error: this job {what}; nothing was recorded")


def append_to_log(job: dict, line: str) -> None:
    """A line of the batch's at the end of a job's own log (said on stderr when the log cannot take it)."""
    try:
        Path(job["log"]).parent.mkdir(parents=True, exist_ok=True)
        with open(job["log"], "a", encoding="utf-8") as log:
            log.write(f"{PROG}: {line}\n")
    except OSError as exc:
        print(f"{PROG}: error: cannot append to {job['log']}: {exc}", file=sys.stderr, flush=True)


def job_out(job: dict) -> Path:
    return Path(os.path.abspath(job["args"][job["args"].index("--out") + 1]))


def kernel_of(args: list) -> str:
    """The job's kernel in words, from its spec: the console line names it (and its file when the user's)."""
    spec = trace_cli.job_spec_or_none(args)
    if spec is None:
        return "arguments the trace script refuses"
    return f"kernel {spec.kernel!r}" + (f" ({spec.source})" if spec.user_file else "")


def say(jobs: list, index: int, line: str) -> None:
    """A line about one job on stderr (the batch log and Snakemake's console) and at the end of its own log."""
    job = jobs[index]
    print(f"{PROG}: {line} (log: {job['log']})", file=sys.stderr, flush=True)
    append_to_log(job, line)


def no_space_words(job: dict) -> str:
    """One line for a job whose files a full file system refused, naming where, with the space left there."""
    out = job_out(job)
    where = next((folder for folder in (out, *out.parents) if folder.exists()), out)
    try:
        free = shutil.disk_usage(where).free
    except OSError:
        free = None
    left = f" ({free // 1024} KiB free)" if free is not None else ""
    return f"no space left on the file system of {where}{left}: its files were not written; free space and rerun"


def record_unfinished(jobs: list, index: int, what: str, process: dict) -> int:
    """A job that ended without its record (the kernel's code called os._exit, or it ran past its time limit):
    the batch writes its failed setup row and run.json and names it. Recorded, it is the kernel's failure, data
    like a build() that raises (exit 1: the other jobs' results stay); unrecorded, the batch fails (exit 3)."""
    from tilelang_churn.trace import trace_job

    job = jobs[index]
    where = f"job {index + 1} of {len(jobs)}, {kernel_of(job['args'])}"
    out = trace_job.record_unfinished(
        job["args"], what, trace_cli.EXIT_PASS_FAILED, {**process, "job_in_process": index + 1}
    )
    recorded = f"a failed setup row in {out / 'passes.csv'}" if out else "nothing recorded"
    say(jobs, index, f"error: {where}: {what}; {recorded}")
    return trace_cli.EXIT_PASS_FAILED if out else trace_cli.EXIT_NOT_RECORDED


def warn_setup_failure(jobs: list, index: int) -> None:
    """A job that failed before any pass (its kernel not importable, raising, no PrimFunc): its row is data, but
    the console hears of it, since no pass ran at all."""
    try:
        failure = json.loads((job_out(jobs[index]) / "run.json").read_text(encoding="utf-8")).get("failure") or {}
    except (OSError, ValueError):
        return
    if failure.get("pass") == "setup":
        where = f"job {index + 1} of {len(jobs)}, {kernel_of(jobs[index]['args'])}"
        print(
            f"{PROG}: warning: {where}: failed before any pass: {failure.get('error')} (a failed setup row in "
            f"{job_out(jobs[index]) / 'passes.csv'}; log: {jobs[index]['log']})",
            file=sys.stderr,
            flush=True,
        )


def run_jobs(
    jobs: list, workers: int, process: dict, environment: str | None = None, timeout: float | None = None
) -> list:
    """Fork one child per unit of jobs (pair_jobs: a job, or a trace-env job and the instrument job its lowering
    serves), at most ``workers`` at a time; the exit status of each job, in job order.

    Each child leads a process group of its own: when it ends (or runs past ``timeout`` seconds) the group is
    killed, so no process its kernel's code forked writes after the job (fork_pool.py)."""
    environment = environment or sys.prefix
    statuses = [None] * len(jobs)
    units = pair_jobs(jobs)
    pending = list(range(len(units)))
    started: dict[int, float] = {}
    with fork_pool.ForkPool(workers) as pool:
        while pending or pool.running:
            while pending and pool.has_room:
                number = pending.pop(0)
                first, *served = units[number]
                child = functools.partial(run_child, jobs[first], {**process, "job_in_process": first + 1},
                                          jobs[served[0]] if served else None)  # fmt: skip
                started[number] = time.time()
                pool.start(number, child, timeout)
            number, ended = pool.wait()
            for index in units[number]:
                own = index == units[number][0]
                statuses[index] = ended.status if own else served_status(jobs[index], started[number], ended)
                if ended.timed_out:
                    what = f"timed out after {timeout:g} s (config job_timeout_s) and was killed"
                    statuses[index] = record_unfinished(jobs, index, what, process)
                elif -ended.status in CRASH_SIGNALS:  # the kernel's code or TileLang crashed it: data
                    statuses[index] = record_unfinished(jobs, index, crash_words(-ended.status), process)
                elif ended.status < 0:  # stopped from outside: nothing recorded, so a rerun traces it again
                    report_signal(jobs, index, -ended.status, environment)
                elif fork_pool.EXIT_NO_SPACE in (ended.status, ended.reported):  # not the kernel's doing: no row
                    say(jobs, index, f"error: job {index + 1} of {len(jobs)}: {no_space_words(jobs[index])}")
                    statuses[index] = trace_cli.EXIT_NOT_RECORDED
                elif ended.reported is None or statuses[index] is None:
                    what = (
                        f"the kernel's code ended the process (exit status {ended.status}: os._exit or the like) "
                        "before the job recorded its run"
                    )
                    statuses[index] = record_unfinished(jobs, index, what, process)
                elif statuses[index] == trace_cli.EXIT_PASS_FAILED:
                    warn_setup_failure(jobs, index)
                elif not own and statuses[index] == trace_cli.EXIT_BAD_ARGUMENTS:
                    refused = jobs[units[number][0]]["log"]
                    append_to_log(jobs[index], f"error: its arguments were refused: see {refused}")
    return statuses


def served_status(job: dict, since: float, ended) -> int | None:
    """The exit status of an instrument job recorded by another job's child (its run.json's, written after
    SINCE); the child's when it stopped at bad arguments, which both jobs share; None: no record."""
    if ended.status < 0 or ended.timed_out:
        return ended.status
    run_json = job_out(job) / "run.json"
    try:
        if run_json.stat().st_mtime >= since - 0.05:  # the file system's clock is coarser
            return int(json.loads(run_json.read_text(encoding="utf-8"))["exit_status"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return ended.status if ended.status == trace_cli.EXIT_BAD_ARGUMENTS else None


def release_problems(jobs: list, environment: str | None) -> list[str]:
    """Why the imported TileLang cannot give the jobs' rows: not the release a job asks for (--expect-release),
    or, in a release's environment, native libraries of another install."""
    from tilelang_churn.trace import trace_job

    problems = [trace_job.release_mismatch(expected, environment) for expected in expected_releases(jobs)]
    if environment:
        problems.append(trace_job.foreign_libraries(environment, release_process.native_libraries()))
    return [problem for problem in problems if problem]


def check_release(jobs: list, environment: str | None) -> None:
    """The jobs' own check, once for the batch: one line when the imported TileLang is not the release asked
    for (each job then records it as a failed setup row, exit 3)."""
    if "tilelang" not in sys.modules:
        return  # not importable: each job records why
    for problem in release_problems(jobs, environment):
        print(f"{PROG}: error: {problem}", file=sys.stderr, flush=True)


def run_batch(
    jobs: list, workers: int, tolerate: tuple = (), release_env: str | None = None, job_timeout: float | None = None
) -> int:
    lower_trace_env = check_jobs(jobs)
    started = time.perf_counter()
    os.environ["TILELANG_CACHE_DIR"] = str(cache_dir(jobs))
    process = {"pid": os.getpid(), "jobs_in_process": len(jobs), "tilelang_cache_dir": os.environ["TILELANG_CACHE_DIR"]}
    process.update(import_tilelang(lower_trace_env))
    print(
        f"{PROG}: {len(jobs)} job(s), {min(workers, len(jobs))} at a time, TL_LOWER_TRACE="
        f"{os.environ['TL_LOWER_TRACE']}; import {process['import_seconds']} s"
        + (f", failed ({process['import_error']})" if process["import_error"] else "")
    )
    check_release(jobs, release_env)
    statuses = run_jobs(jobs, max(1, workers), process, release_env, job_timeout)
    bad = [(job, status) for job, status in zip(jobs, statuses) if status != 0 and status not in tolerate]
    for job, status in zip(jobs, statuses):
        how = f"{status} ({signal_name(-status)})" if status < 0 else status
        print(f"{PROG}: exit {how}: {shlex.join(['gemm_lower_trace.py', *job['args']])} (log: {job['log']})")
    print(f"{PROG}: {len(jobs)} job(s) in {time.perf_counter() - started:.1f} s, {len(bad)} failed")
    for job, status in bad:
        how = f"was killed by {signal_name(-status)}" if status < 0 else f"exited {status}"
        print(f"{PROG}: error: job {how}; see {job['log']}", file=sys.stderr)
    # a job killed by a signal recorded nothing: the batch says so as the script does, with status 3
    return max((status if status > 0 else trace_cli.EXIT_NOT_RECORDED for _, status in bad), default=0)


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds above 0")
    if value > jobs.LONGEST_TIMEOUT_S:
        raise argparse.ArgumentTypeError(f"{text!r} is longer than the longest time limit, {jobs.LONGEST_TIMEOUT_S} s")
    return value


def in_release_env(argv: list[str], script: Path) -> None:
    """A batch command (SCRIPT ARGV) run again in the release's own environment when --release-env names another
    interpreter: this process is replaced, before its arguments are parsed; nothing otherwise."""
    release_python = trace_cli.release_env_python(argv)
    if release_python:
        release_process.exec_release(release_python, [str(script), *argv], trace_cli.release_env_value(argv))


def add_batch_options(parser: argparse.ArgumentParser, what: str) -> argparse.ArgumentParser:
    """The options every batch command takes (--jobs, --workers, --release-env); ``what``: what --workers counts."""
    parser.add_argument("--jobs", required=True, help="JSON list of {args, log}; - reads standard input")
    parser.add_argument("--workers", type=int, default=1, help=f"{what} at the same time (default 1)")
    parser.add_argument("--release-env", help="run in this TileLang release environment (release_envs.py)")
    return parser


def run_jobs_file(jobs_path: str, run: Callable[[list], int], prog: str = PROG) -> int:
    """``run(jobs)``'s exit status for the jobs of the JSON file JOBS_PATH (``-``: standard input); 2 with one line
    on stderr when the jobs are no JSON or ``run`` refuses them (ValueError). SIGINT or SIGTERM stop it in one line
    with status 128 + the signal (the entry file's interrupt.run), the pool's children with it."""
    text = sys.stdin.read() if jobs_path == "-" else Path(jobs_path).read_text(encoding="utf-8")
    interrupt.stop_when_orphaned()  # Snakemake SIGKILLed: the batch and its children stop (SIGTERM)
    try:
        return run(json.loads(text))
    except ValueError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return trace_cli.EXIT_BAD_ARGUMENTS


def run_batch_file(
    jobs_path: str, workers: int, tolerate: tuple = (), release_env: str | None = None, job_timeout: float | None = None
) -> int:
    """``run_batch`` of the jobs in JOBS_PATH (``run_jobs_file``)."""
    return run_jobs_file(jobs_path, lambda jobs: run_batch(jobs, workers, tolerate, release_env, job_timeout))


def _tee(source, log, console, stopping) -> None:
    for line in source:
        for sink in (log,) if stopping.is_set() else (log, console):
            sink.write(line)
            sink.flush()


def _batch_process(prctl, parent: int) -> None:
    """In the batch process, before it runs: it dies with PARENT, this wrapper, and ignores SIGINT (a Ctrl-C reaches the
    whole process group; the wrapper stops it)."""
    die_with_parent(prctl, parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def run_in_own_process(
    job_specs,
    workers: int,
    tolerate,
    release_env: str | None,
    batch_log: str,
    job_timeout: float | None = None,
    script: Path = SCRIPT,
    extra_args: tuple = (),
) -> int:
    """The trace rules' batch (or, with ``script``, the knockout's: knockout_batch.py and its ``extra_args``),
    run in a process of its own (in the release's environment
    when the version has one), reading its jobs from standard input: no command line is long enough for 10,000.
    Its stdout goes to the batch log, its stderr (the error lines) to the batch log and to Snakemake's console.
    A batch killed by a signal (SIGBUS while importing a broken release, SIGKILL) is named there too, and the
    rule fails with status 3 instead of Snakemake's bare 'exit status 249'. A Ctrl-C (which reaches the whole
    process group) or SIGTERM stops this process in one line (the entry's interrupt.run): the batch ignores SIGINT
    and gets SIGTERM from here, its own line going to the batch log only."""
    import subprocess
    import threading

    jobs = [{"args": [*args, "--out", out], "log": log} for args, out, log in job_specs]
    command = [sys.executable, str(script), "--jobs", "-", "--workers", str(workers), *extra_args]
    command += [f"--tolerate={status}" for status in tolerate]
    command += ["--release-env", release_env] if release_env else []
    command += ["--job-timeout", str(job_timeout)] if job_timeout else []
    environment = release_env or sys.prefix
    console = sys.stderr
    prctl, parent = load_prctl(), os.getpid()
    interrupt.stop_when_orphaned()  # Snakemake SIGKILLed: this wrapper ends, the batch with it (die_with_parent)
    stopping = threading.Event()  # this wrapper was stopped: the batch's last lines go to its log only
    with open(batch_log, "w", encoding="utf-8") as log, redirect_stdout(log), redirect_stderr(log):
        print(shlex.join(command), flush=True)
        batch = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=log,
            stderr=subprocess.PIPE,
            encoding="utf-8",
            errors="replace",
            preexec_fn=lambda: _batch_process(prctl, parent),
        )
        # a thread, not a loop here: a process the batch leaves behind may hold its stderr open
        tee = threading.Thread(target=_tee, args=(batch.stderr, log, console, stopping), daemon=True)
        tee.start()
        try:
            try:
                batch.stdin.write(json.dumps(jobs))
                batch.stdin.close()
            except BrokenPipeError:  # it died before reading its jobs: its status says how
                pass
            status = batch.wait()
        except BaseException:  # stopped: the batch stops too, its pool's children with it
            stopping.set()
            batch.terminate()
            raise
        tee.join(timeout=10)
        if status >= 0:
            return status
        line = (
            f"{PROG}: error: the batch process (pid {batch.pid}) of {len(jobs)} job(s) was killed by "
            f"{signal_name(-status)} (signal {-status}) in the environment {environment}; first job's log: "
            f"{jobs[0]['log'] if jobs else '-'}; batch log: {batch_log}"
        )
        for sink in (log, console):
            print(line, file=sink, flush=True)
        return trace_cli.EXIT_NOT_RECORDED
