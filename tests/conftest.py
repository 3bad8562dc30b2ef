"""Shared helpers: run the trace script for real, in a subprocess, the way users and the workflow do."""

from __future__ import annotations

import functools
import gc
import importlib.util
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "scripts"
TRACE_SCRIPT = SCRIPTS / "gemm_lower_trace.py"


# Each test declares its tier with a marker (`slow`, `integration`; none: the base tier), on itself or its module
# (`pytestmark`). What it uses decides which tier that must be, and collection stops on a test that declares
# another (tier_problem): a new test of a slow kind cannot land in `make check` by accident.
# The top tier (marker `slow`): every test that needs a whole workflow run, a trace batch, a release environment,
# a cluster or a browser: these fixtures and modules.
SLOW_FIXTURES = {"finished_run", "compared_run", "book_run", "slurm_run", "cluster", "api_runs", "browser"}
SLOW_FIXTURES |= {"kernels_run"}
SLOW_FIXTURES |= {"built_0_1_14", "uv_bin"}
SLOW_FIXTURES |= {"no_gpu_run"}  # tests/test_gpu_stage.py: a real (one-job) workflow run with gpu: true
SLOW_FIXTURES |= {"knockout_run"}  # tests/test_knockout_workflow.py: a workflow run with config knockout
SLOW_FIXTURES |= {"two_checkouts"}  # tests/test_trace_cache.py: two workflow runs sharing a cache
SLOW_FIXTURES |= {"styles_run"}  # tests/test_kernel_styles.py: kernels in TileLang's styles, a workflow run
SLOW_FIXTURES |= {"maintainer_run", "environment_run"}  # tests/test_any_version.py: builds and workflow runs
SLOW_FIXTURES |= {"pass_configs_run"}  # test_pass_configs.py, test_book_figures.py: pass-config sets, a workflow run
SLOW_FIXTURES |= {"module_host"}  # tests/test_workflow.py: the workflow as a module of a project, a workflow run
SLOW_FIXTURES |= {"book_with_releases"}  # tests/test_book_figures.py: the whole book with figure 3, per language
SLOW_MODULES = {"test_workflow_failures", "test_trace_batch", "test_batch_signals", "test_release_mismatch"}
SLOW_MODULES |= {"test_shared_lowering"}
SLOW_MODULES |= {"test_capture_workflow"}  # a captured program traced by a real workflow run


# The tests run on three pytest-xdist workers (`-n 3 --dist loadgroup`, pyproject.toml): the tests that share an
# expensive fixture go to one worker, so it is built once, and the rest spread over all three. A module-scoped
# fixture counts too: each worker that runs a test of the module builds it again.
SHARED_FIXTURES = ("finished_run", "compared_run", "kernels_run", "trace_runs", "api_runs")
SHARED_FIXTURES += ("built_0_1_14", "knockout_run", "gemm_knockout", "shared_lowerings", "two_checkouts")
SHARED_FIXTURES += ("styles_run", "maintainer_run", "traced", "book_sets", "odd_batch")
SHARED_FIXTURES += ("pass_configs_run", "module_host", "mislabelled_env", "book_with_releases")
# a fixture whose tests also use another shared one, named by that one's group
SAME_WORKER_AS = {"instrument_runs": "trace_runs", "knocked": "traced", "cluster": "finished_run"}
SAME_WORKER_AS["environment_run"] = "compared_run"  # both run 0.1.14 from the worker's release_envs_dir: one build


# The middle tier (marker `integration`): a test that runs TileLang or Snakemake for real, itself or through a
# fixture it uses, and is not slow: one trace run, a batch, a dry run. Found from the calls in the test's and its
# fixtures' code, so a new test that lowers joins the tier by itself. `make check` runs the base (neither slow
# nor integration: tables, pages, figures, checks over data) and the one integration test marked `smoke`.
INTEGRATION_CALLS = ("require_tilelang(", "run_script(", "run_batch(", "run_knockout(", "snakemake(")
# fixtures that reach TileLang through code of their own (TraceRuns, a driver script): named here
INTEGRATION_FIXTURES = {"trace_runs", "instrument_runs"}


@functools.cache
def _calls_for_real(function) -> bool:
    try:
        source = inspect.getsource(function)
    except (OSError, TypeError):
        return False
    return any(call in source for call in INTEGRATION_CALLS)


def _runs_for_real(item) -> bool:
    if INTEGRATION_FIXTURES & set(item.fixturenames):
        return True
    functions = [item.function]
    for definitions in item._fixtureinfo.name2fixturedefs.values():
        functions += [definition.func for definition in definitions]
    return any(_calls_for_real(function) for function in functions)


def pytest_configure(config):
    config.addinivalue_line("markers", "integration: runs TileLang or Snakemake for real (INTEGRATION_CALLS); not slow")
    config.addinivalue_line("markers", "smoke: the integration test `make check` runs: one real TileLang lowering")


TIERS = ("slow", "integration")


def required_tier(item) -> str | None:
    """The tier what a test uses puts it in: slow, integration, or None (the base tier)."""
    if SLOW_FIXTURES & set(item.fixturenames) or item.module.__name__ in SLOW_MODULES:
        return "slow"
    return "integration" if _runs_for_real(item) else None


def tier_problem(item) -> str | None:
    """One line where a test declares (its marker, or its module's) a lower tier than what it uses needs, or two.
    A higher one is the author's call (a browser, nvcc per variant): slow where integration would do."""
    declared = sorted({marker.name for marker in item.iter_markers() if marker.name in TIERS})
    required = required_tier(item)
    rank = [None, "integration", "slow"]
    if len(declared) < 2 and rank.index(declared[0] if declared else None) >= rank.index(required):
        return None
    said = " and ".join(f"@pytest.mark.{name}" for name in declared) or "no tier marker (the base tier)"
    why = "its fixtures or module" if required == "slow" else "what it or a fixture calls (INTEGRATION_CALLS)"
    return f"{item.nodeid}: declares {said}, but {why} need @pytest.mark.{required}"


def pytest_itemcollected(item):
    """Checked as each test is collected; grouped for xdist, whose own collection hook reads the groups after."""
    problem = tier_problem(item)
    if problem:
        raise pytest.UsageError(f"test tiers (tests/conftest.py): {problem}")
    shared = next((name for name in SHARED_FIXTURES if name in item.fixturenames), None)
    shared = shared or next((group for name, group in SAME_WORKER_AS.items() if name in item.fixturenames), None)
    if shared:
        item.add_marker(pytest.mark.xdist_group(shared))


def pytest_collection_finish(session):
    """What collection imported lives as long as the worker: frozen, the tests' garbage collections skip it."""
    gc.freeze()


DESELECTED = []  # the tests -m or -k left out: test_tiers.py reads the whole suite's


def pytest_deselected(items):
    DESELECTED.extend(items)


@functools.cache
def entry(name: str):
    """The entry file scripts/NAME.py as a module (its ``main``, ``build_parser``; its ``__main__`` block not run),
    loaded once, under a name of its own: ``entry("churn_table").main([...])`` is the command line, in-process."""
    spec = importlib.util.spec_from_file_location(f"entry_{name}", SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_script(*args: str, cwd: Path | None = None, python_flags: tuple[str, ...] = (), env: dict | None = None):
    return subprocess.run(
        [sys.executable, *python_flags, str(TRACE_SCRIPT), *args],
        cwd=cwd or REPO,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


SNAKEMAKE = Path(sys.executable).parent / "snakemake"

# what the core tests import of TileLang: a module named tilelang that is not TileLang fails here
TILELANG_MODULES = ("tilelang", "tilelang.language")


def require_tilelang():
    """The tilelang module; when it is missing or broken (any error importing it, or another module named
    tilelang), skip with the error as the reason, or fail under CI=true (as system_packages.require does), so
    that a CI run never passes with the core tests unchecked. Works at module level too."""
    import importlib

    from system_packages import under_ci
    from tilelang_churn.core import import_gc

    try:
        with import_gc.collector_off():  # as a trace job imports it: what it made is frozen, the worker's GC skips it
            for name in TILELANG_MODULES:
                importlib.import_module(name)
        return sys.modules["tilelang"]
    except Exception as exc:  # noqa: BLE001 - a broken install raises anything (OSError from a libtvm, ...)
        found = getattr(sys.modules.get("tilelang"), "__file__", None)
        reason = f"TileLang cannot be imported ({type(exc).__name__}: {exc}; tilelang found at {found})"
    if under_ci():
        pytest.fail(f"CI=true: {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def make_workdir(dest: Path) -> Path:
    """A working directory with only the config: no Snakefile, no scripts."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copytree(REPO / "config", dest / "config")
    return dest


def snakemake_command(workdir: Path, *args: str, python: str | None = None, own_snakefile: bool = False) -> list[str]:
    """`snakemake -s REPO/Snakefile --directory WORKDIR ARGS`: the workflow run from another folder; with
    own_snakefile, `snakemake ARGS` as a user types it in WORKDIR (a checkout, a project using the workflow)."""
    command = [python, "-m", "snakemake"] if python else [str(SNAKEMAKE)]
    if not own_snakefile:
        command += ["-s", str(REPO / "Snakefile"), "--directory", str(workdir)]
    return [*command, *args]


def snakemake(
    workdir: Path,
    *args: str,
    env: dict | None = None,
    python: str | None = None,
    timeout: int = 1800,
    own_snakefile: bool = False,
) -> subprocess.CompletedProcess:
    """The one way the tests run Snakemake to its end (snakemake_command), in WORKDIR, its output captured."""
    command = snakemake_command(workdir, *args, python=python, own_snakefile=own_snakefile)
    return subprocess.run(command, cwd=workdir, capture_output=True, text=True, env=env, timeout=timeout)


def checkout_copy(dest: Path) -> Path:
    """The project as a fresh clone of this working tree would hold it (tracked and untracked files that git does
    not ignore: what CI's clean clone has, plus uncommitted work), at dest."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


@pytest.fixture(scope="session")
def release_envs_dir(tmp_path_factory) -> Path:
    """Where the tests build the release environments (uv, from its cache): this worker's session folder, never the
    checkout's .envs. The comparison run and the tests of older releases share it (one xdist group, compared_run)."""
    root = tmp_path_factory.getbasetemp() / "release_envs"
    root.mkdir(exist_ok=True)
    return root


def checkout_environ(checkout: Path) -> dict[str, str]:
    """The environment for a copy of the project run with this venv, whose editable install is this checkout's:
    the copy's own package first (PYTHONPATH), as docs/running.md says for a second checkout sharing one venv."""
    return {**os.environ, "PYTHONPATH": str(checkout / "scripts")}


def version_of(workdir: Path) -> str:
    """The TileLang release of a finished run of one release (its folder under results/runs)."""
    return next((workdir / "results" / "runs").iterdir()).name


def rule_counts(output: str) -> dict[str, int]:
    """Snakemake's job table (`--quiet rules`): rule -> number of jobs."""
    return {rule: int(n) for rule, n in re.findall(r"^(\w+)\s+(\d+)$", output, re.M) if rule != "total"}


def trace_batch_counts(output: str) -> dict[str, int]:
    """Jobs of the trace batch rules (trace_..., batches.batch_name) in Snakemake's job table."""
    return {rule: n for rule, n in rule_counts(output).items() if rule.startswith("trace_")}


@pytest.fixture(scope="session")
def finished_run(tmp_path_factory):
    """The small test grid (config/test_config.yaml), run once for the session. Tests that change its files
    work on a copy (copy_of_finished_run)."""
    require_tilelang()
    workdir = make_workdir(tmp_path_factory.mktemp("workflow"))
    proc = snakemake(workdir, "--cores", "2", "--configfile", "config/test_config.yaml")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return workdir


def copy_of_finished_run(finished_run: Path, dest: Path) -> Path:
    """A copy with file times kept (Snakemake's metadata included), so the copy is as up to date."""
    shutil.copytree(finished_run, dest, symlinks=True)
    return dest


class TraceRuns:
    """Runs of the trace script, each in its own --out folder, cached for the test session."""

    def __init__(self, root: Path):
        self.root = root
        self._done: dict[tuple[str, ...], tuple] = {}

    def get(self, *args: str):
        """(completed process, out dir) of `gemm_lower_trace.py ARGS --out DIR`."""
        if args not in self._done:
            out = self.root / f"run{len(self._done)}"
            proc = run_script(*args, "--out", str(out))
            self._done[args] = (proc, out)
        return self._done[args]

    @staticmethod
    def run_info(out: Path) -> dict:
        return json.loads((out / "run.json").read_text())


@pytest.fixture(scope="session")
def trace_runs(tmp_path_factory) -> TraceRuns:
    return TraceRuns(tmp_path_factory.mktemp("trace_runs"))


def run_batch(root: Path, jobs: list[tuple[str, ...]], workers: int = 2) -> dict[tuple[str, ...], tuple]:
    """The jobs (trace script arguments, without --out) run as the workflow runs them: one trace_batch.py process,
    TileLang imported once, a forked child per job. Job args -> (CompletedProcess, out dir); the job's log (its
    stdout and stderr, in one file as the workflow keeps them) stands for both of its streams."""
    specs = []
    for number, args in enumerate(jobs):
        out = root / f"job{number}"
        specs.append({"args": [*args, "--out", str(out)], "log": str(root / f"job{number}.log")})
    batch = subprocess.run(
        [sys.executable, str(SCRIPTS / "trace_batch.py"), "--jobs", "-", "--workers", str(workers)] + ["--tolerate=1"],
        input=json.dumps(specs),
        capture_output=True,
        text=True,
        timeout=1800,
    )
    statuses = {
        log: int(status) for status, log in re.findall(r": exit (-?\d+)\S*: .* \(log: (.+)\)$", batch.stdout, re.M)
    }
    assert len(statuses) == len(jobs), batch.stdout + batch.stderr
    done = {}
    for args, spec in zip(jobs, specs):
        log = Path(spec["log"]).read_text()
        proc = subprocess.CompletedProcess(spec["args"], statuses[spec["log"]], stdout=log, stderr=log)
        done[args] = (proc, Path(spec["args"][-1]))
    return done


# ------------------------------------------------------------------------------------- hand-made rows
# Provenance of a hand-made job, spelled as the trace script writes it (trace_cli.TARGETS, trace_modes).


def job_provenance(
    target_name: str = "cuda-sm90",
    mode: str = "trace-env",
    tilelang_version: str = "0.1.15",
    pass_configs: str = "{}",
    **kernel,
) -> dict:
    from tilelang_churn.core import trace_modes
    from tilelang_churn.kernel import kernels
    from tilelang_churn.trace import trace_cli

    GEMM = kernels.BOOK_KERNEL
    gemm = kernels.read_signature(kernels.shipped(GEMM))
    spec = {"M": 1024, "N": 1024, "K": 512, **gemm.defaults(), **kernel}  # the shipped GEMM's defaults
    return dict(
        tilelang_version=tilelang_version,
        target_name=target_name,
        target=json.dumps(trace_cli.TARGETS[target_name], sort_keys=True),
        **spec,
        mode=mode,
        source=trace_modes.source_of(mode),
        kernel=GEMM,
        params=kernels.canonical(spec),
        kernel_label=kernels.label(GEMM, gemm.ordered(spec), gemm.defaults()),
        pass_configs=pass_configs,
    )


def other_kernel(kernel: str, params: str, kernel_label: str) -> dict:
    """The provenance of a kernel whose file declares no COLUMNS (kernel/kernels.py): its parameter columns empty,
    as the trace script leaves them."""
    from tilelang_churn.core import passes_table as pt

    return {
        **{column: None for column in pt.PARAM_COLUMNS},
        "kernel": kernel,
        "params": params,
        "kernel_label": kernel_label,
    }


def make_row(
    step: int,
    name: str,
    status: str,
    added=None,
    deleted=None,
    *,
    job: dict | None = None,
    error: str = "",
    phase: str = "pipeline_cuda",
    depth: int = 1,
) -> dict:
    """One passes.csv row; changed follows the status as the trace script sets it."""
    from tilelang_churn.core import passes_table as pt

    changed = {pt.STATUS_CHANGED: True, pt.STATUS_NOOP: False, pt.STATUS_CODEGEN: True}.get(status)
    return dict(
        job or job_provenance(),
        step=step,
        phase=phase,
        status=status,
        changed=changed,
        added=added,
        deleted=deleted,
        depth=depth,
        error=error,
        **{"pass": name},
    )


def write_passes(directory: Path, name: str, rows: list[dict]) -> Path:
    """rows written as DIRECTORY/NAME/passes.csv by the project's one writer."""
    from tilelang_churn.core import passes_table as pt

    path = directory / name / "passes.csv"
    pt.write_rows(path, rows)
    return path


# ------------------------------------------------------------------------------ a small run of the book
# Shared by test_book_figures.py and test_reports_in_browser.py: the test grid in mode trace-env only (4 trace
# jobs), run as a user would: `snakemake book_figures`, then the rest of rule all, then the report.


class WorkflowRun:
    """The repository's Snakefile run in its own working directory, which holds only a copy of config/."""

    def __init__(self, workdir: Path, configfiles: list[str]):
        self.workdir = workdir
        self.configfiles = configfiles

    def snakemake(self, *args: str) -> subprocess.CompletedProcess:
        return snakemake(self.workdir, "--configfile", *self.configfiles, *args)

    def job_dir(self, target: str, shape: str, mode: str = "trace-env") -> Path:
        (found,) = (self.workdir / "results" / "runs").glob(f"*/{target}/{shape}/{mode}")
        return found


@pytest.fixture(scope="session")
def book_run(finished_run, tmp_path_factory) -> WorkflowRun:
    """The finished test grid (its rule all draws the book), copied, with the Snakemake report made from it: the
    book's tests change its files, the session's run stays as it is. Grouped with finished_run on one worker
    (SHARED_FIXTURES lists finished_run first), so that the grid is traced once."""
    workdir = copy_of_finished_run(finished_run, tmp_path_factory.mktemp("book_run") / "wf")
    run = WorkflowRun(workdir, ["config/test_config.yaml"])
    proc = run.snakemake("--report", "results/report.html")
    assert proc.returncode == 0, f"snakemake --report:\n{proc.stdout[-3000:]}{proc.stderr[-5000:]}"
    return run


# ------------------------------------------------------------------------------- pass-config sets, one run
# Read by test_pass_configs.py (each set traced and knocked out beside TileLang's switch) and test_book_figures.py
# (a set that fails at setup drawn in figure 4).

NO_WS = {"tl.disable_warp_specialized": True}  # TileLang's own switch: the warp-specialization passes never run
WS_PASSES = ["ProducerConsumerWarpSpecialized", "AnnotateWarpGroupRegAlloc"]
# an integer past 64 bits for an integer option: the config check passes it, TVM refuses it at setup in every job
FAILS_AT_SETUP = {"tl.config_index_bitwidth": 10**30}


@pytest.fixture(scope="session")
def pass_configs_run(tmp_path_factory) -> Path:
    """`snakemake --cores 2` of the book's reference GEMM (256^3, cuda-sm90) under three pass-config sets (none,
    NO_WS, FAILS_AT_SETUP) in modes trace-env and instrument, the warp-specialization passes knocked out of each
    configuration: its working directory."""
    import yaml

    require_tilelang()
    workdir = make_workdir(tmp_path_factory.mktemp("pass_configs_run"))
    config = {
        "shapes": [{"M": 256, "N": 256, "K": 256, "block": [64, 64, 32]}],
        "defaults": {"pass_configs": [{}, NO_WS, FAILS_AT_SETUP]},
        "targets": ["cuda-sm90"],
        "modes": ["trace-env", "instrument"],
        "kernels": [],  # the GEMM alone: the default config's kernels would be 12 more configurations to knock out
        "job_figures": False,
        "heatmap_formats": ["png"],
        "knockout": {"passes": WS_PASSES},
    }
    (workdir / "config" / "pass_configs.yaml").write_text(yaml.safe_dump(config))
    proc = snakemake(workdir, "--cores", "2", "--configfile", "config/test_config.yaml", "config/pass_configs.yaml")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return workdir
