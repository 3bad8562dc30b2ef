"""Any TileLang as a version (config versions): a maintainer's own wheel beside the release it was made from, an
environment used as it is, a release the data file does not list. Real builds, real lowerings, real workflow runs."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO, make_workdir, require_tilelang, rule_counts, snakemake, trace_batch_counts
from maintainer_build import wheel_of_installed
from tilelang_churn.core import passes_table as pt
from tilelang_churn.grid import config_checks, job_grid
from tilelang_churn.releases import release_envs, release_process

pytestmark = pytest.mark.slow  # tier: tests/conftest.py checks it against what the tests use

DROPPED = "DecoupleTypeCast"  # a pass of 0.1.15's CUDA pipeline that changes the 200^3 GEMM's IR
PIPELINE = "tilelang/cuda/pipeline.py"
SHAPE = "200x200x200_b64x64x32"


def drop_line(text: str, pass_name: str) -> str:
    line = f"    mod = tilelang.transform.{pass_name}()(mod)\n"
    assert text.count(line) == 1, f"{pass_name} is not called once in {PIPELINE}"
    return text.replace(line, "", 1)


def small_config(workdir: Path, versions: list, **more) -> Path:
    """The 200^3 GEMM on cuda-sm90 in mode instrument, for VERSIONS."""
    config = {
        "versions": versions,
        "shapes": [{"M": 200, "N": 200, "K": 200, "block": [64, 64, 32]}],
        "targets": ["cuda-sm90"],
        "modes": ["instrument"],
        "kernels": [],
        # what these tests read: the tables, the comparison, versions.csv; not the figures of jobs or the book (a
        # reference shape not in the grid leaves the book out, with a warning)
        "job_figures": False,
        "heatmap_formats": ["png"],
        "book_reference": {"target": "cuda-sm90", "shape": "no-book"},
        **more,
    }
    path = workdir / "versions.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def run(workdir: Path, config: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    proc = snakemake(workdir, "--cores", "2", "--configfile", str(config), env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return proc


# What TileLang itself runs: every pass TVM's instrument sees while tilelang.lower lowers the GEMM, in order
ASK_PASSES = """
import importlib.util, json, sys
import tilelang, tvm
spec = importlib.util.spec_from_file_location("gemm", sys.argv[1])
gemm = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gemm)
names = []

@tvm.instrument.pass_instrument
class Names:
    def run_before_pass(self, mod, info):
        names.append(info.name)

func = gemm.build(M=200, N=200, K=200, block_M=64, block_N=64, block_K=32)
target = tvm.target.Target({"kind": "cuda", "arch": "sm_90"})
with target, tvm.transform.PassContext(instruments=[Names()]):
    tilelang.lower(func, target=target)
print(json.dumps(names))
"""


def passes_tilelang_runs(python: str) -> list[str]:
    proc = subprocess.run([python, "-c", ASK_PASSES, str(REPO / "workflow" / "kernels" / "gemm.py")],
                          capture_output=True, text=True, timeout=600, env=release_process.release_environ(),
                          check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="session")
def maintainer_run(tmp_path_factory):
    """0.1.15 (installed) beside my-branch: 0.1.15's files with DecoupleTypeCast dropped from its CUDA
    pipeline, re-zipped as the wheel 0.1.15+test."""
    require_tilelang()
    root = tmp_path_factory.mktemp("maintainer")
    wheels = root / "dist"
    wheels.mkdir()
    wheel = wheel_of_installed(wheels, "test", {PIPELINE: lambda text: drop_line(text, DROPPED)})
    workdir = make_workdir(root / "work")
    installed = release_envs.installed_release()
    config = small_config(workdir, [installed, {"name": "my-branch", "wheel": str(wheel)}],
                          release_env_dir=str(root / "envs"))  # fmt: skip
    run(workdir, config)
    return workdir, wheel, config


@pytest.fixture(scope="session")
def maintainer_rerun(maintainer_run):
    """The wheel rebuilt with another edit (a new sha256, the same path): Snakemake's dry run of the run, before
    and after. The run itself is left as it was: the other tests read it."""
    workdir, wheel, config = maintainer_run
    before = snakemake(workdir, "-n", "--quiet", "rules", "--configfile", str(config))
    saved = wheel.with_suffix(".saved")
    wheel.rename(saved)

    def edit(text: str) -> str:
        return drop_line(text, DROPPED).replace("def ", "# rebuilt\ndef ", 1)

    try:
        rebuilt = wheel_of_installed(wheel.parent, "test", {PIPELINE: edit})
        assert rebuilt == wheel
        after = snakemake(workdir, "-n", "--quiet", "rules", "--configfile", str(config))
    finally:
        wheel.unlink(missing_ok=True)
        saved.rename(wheel)
    return before, after


def test_the_dropped_pass_is_where_the_comparison_says_the_build_diverges(maintainer_run):
    """TileLang's own pass sequences (each interpreter asked) differ by the dropped pass; the tables say so: a
    removed row for it, and the first divergent edit in its neighbourhood (it, or the pass after it)."""
    workdir, _, config = maintainer_run
    release_passes = passes_tilelang_runs(sys.executable)
    branch_python = str(workdir.parent / "envs" / "tilelang-my-branch" / "bin" / "python")
    branch_passes = passes_tilelang_runs(branch_python)
    dropped_at = [i for i, name in enumerate(release_passes) if name.endswith(DROPPED)]
    assert len(dropped_at) == 1 and not any(name.endswith(DROPPED) for name in branch_passes)
    assert release_passes[: dropped_at[0]] + release_passes[dropped_at[0] + 1 :] == branch_passes
    after = release_passes[dropped_at[0] + 1].rsplit(".", 1)[-1]

    # the rows of each version are TileLang's passes, in its order (column pass: TVM's name's last part)
    rows = pt.read_rows(workdir / "results" / "churn.csv")
    for name, passes in (("my-branch", branch_passes), (release_envs.installed_release(), release_passes)):
        traced = [row["pass"] for row in rows if row["version_name"] == name and row["status"] != pt.STATUS_CODEGEN]
        assert traced == [p.rsplit(".", 1)[-1] for p in passes], name
    assert {row["tilelang_version"] for row in rows if row["version_name"] == "my-branch"} == {"0.1.15+test"}

    alignment = read_csv(workdir / "results" / "compare" / "pass_alignment.csv")
    assert [row["pass_old"] for row in alignment if row["op"] != "kept"] == [DROPPED]
    (divergence,) = read_csv(workdir / "results" / "compare" / "divergence.csv")
    assert (divergence["release_old"], divergence["release_new"]) == (release_envs.installed_release(), "my-branch")
    # equal IR up to the gap; the dropped pass is where it starts to differ, the pass after it the first kept one
    assert divergence["initial_ir_differs"] == "False"
    assert divergence["differs_from"] == DROPPED, divergence
    assert divergence["first_divergent_pass"] == after, divergence


def test_the_build_is_recorded_by_name_with_its_wheel(maintainer_run):
    workdir, wheel, _ = maintainer_run
    rows = {row["version_name"]: row for row in read_csv(workdir / "results" / "versions.csv")}
    branch = rows["my-branch"]
    assert branch["kind"] == "wheel" and branch["tilelang_version"] == "0.1.15+test"
    assert branch["wheel_sha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert branch["pins_from"] == "0.1.15" and branch["probed_from"] == "package"
    assert "instrument" in branch["modes"].split()
    assert rows[release_envs.installed_release()]["kind"] == "installed"
    runs = workdir / "results" / "runs" / "my-branch"
    info = json.loads(next(runs.glob("*/*/instrument/run.json")).read_text())
    assert info["tilelang_install"]["distribution_version"] == "0.1.15+test"
    assert info["tilelang_install"]["url"].endswith(wheel.name)


def test_a_rebuilt_wheel_retraces_that_version_and_nothing_else(maintainer_rerun):
    """Its environment is built again and its batches traced again; no job of 0.1.15."""
    before, after = maintainer_rerun
    assert before.returncode == 0 and not trace_batch_counts(before.stdout), before.stdout
    assert after.returncode == 0, after.stderr[-3000:]
    traced = trace_batch_counts(after.stdout)
    assert traced and all("_my_branch_" in name for name in traced), traced
    assert rule_counts(after.stdout).get("release_env") == 1, after.stdout


def test_the_index_reads_like_a_code_review(maintainer_run):
    workdir, _, _ = maintainer_run
    index = (workdir / "results" / "compare" / "index.html").read_text(encoding="utf-8")
    (divergence,) = read_csv(workdir / "results" / "compare" / "divergence.csv")
    assert f"my-branch differs from {release_envs.installed_release()} from pass" in index
    assert divergence["first_divergent_edit"] in index


@pytest.fixture(scope="session")
def environment_run(tmp_path_factory, release_envs_dir):
    """0.1.14 twice: as a release the data file does not list (a copy of it without 0.1.14's entry), and as an
    environment entry, a venv a user made with uv (`uv venv`, `uv pip install torch tilelang==0.1.14`), used
    through `python:`; the venv's files before and after. The release's environment is compared_run's (one worker:
    built once for both)."""
    require_tilelang()
    root = tmp_path_factory.mktemp("environment")
    venv = root / "venvs" / "dev"
    python = venv / "bin" / "python"
    uv = str(release_envs.find_uv())
    subprocess.run([uv, "venv", "-p", sys.executable, str(venv)], check=True, capture_output=True)
    links = [arg for link in release_envs.find_links() for arg in ("--find-links", link)]  # the CPU torch
    torch = release_envs.torch_requirement(REPO / "requirements.txt")
    install = [uv, "pip", "install", "--python", str(python), *links, torch, "tilelang==0.1.14"]
    subprocess.run(install, check=True, capture_output=True)
    assert not list(venv.rglob("__pycache__")), "uv compiled bytecode: the workflow's own would not show"
    venv_files = {path: (path.stat().st_size, path.stat().st_mtime_ns) for path in venv.rglob("*")}
    data = yaml.safe_load(release_envs.RELEASES_FILE.read_text())
    del data["releases"]["0.1.14"]
    release_data = root / "releases_without_0.1.14.yaml"
    release_data.write_text(yaml.safe_dump(data))
    workdir = make_workdir(root / "work")
    config = small_config(workdir, ["0.1.14", {"name": "dev", "python": str(python)}],
                          release_env_dir=str(release_envs_dir))  # fmt: skip
    # bytecode written as a user's shell writes it (a developer's may say PYTHONDONTWRITEBYTECODE)
    environ = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    proc = run(workdir, config, env={**environ, "TILELANG_CHURN_RELEASE_DATA": str(release_data)})
    after = {path: (path.stat().st_size, path.stat().st_mtime_ns) for path in venv.rglob("*")}
    yield workdir, proc, venv_files, after
    # the bytecode its jobs wrote for it under the user's cache (release_process.PYCACHE): a new venv path each session
    shutil.rmtree(release_process.PYCACHE / root.relative_to(root.anchor), ignore_errors=True)


def test_an_environment_entry_is_used_as_it_is(environment_run):
    workdir, _, before, after = environment_run
    assert after == before, "the workflow wrote into the environment"
    rows = pt.read_rows(workdir / "results" / "churn.csv")
    assert {row["tilelang_version"] for row in rows if row["version_name"] == "dev"} == {"0.1.14"}


def test_an_edited_environment_retraces_its_own_jobs_only(environment_run):
    """The environment's TileLang changed (one of its Python files): a dry run reruns its batches, not 0.1.14's."""
    workdir, _, before, _ = environment_run
    init = next(path for path in before if path.name == "__init__.py" and path.parent.name == "tilelang")
    text = init.read_text()
    config = workdir / "versions.yaml"
    release_data = workdir.parent / "releases_without_0.1.14.yaml"
    env = {**os.environ, "TILELANG_CHURN_RELEASE_DATA": str(release_data)}
    try:
        init.write_text(text + "\n# edited\n")
        proc = snakemake(workdir, "-n", "--quiet", "rules", "--configfile", str(config), env=env)
    finally:
        init.write_text(text)
    assert proc.returncode == 0, proc.stderr[-3000:]
    traced = trace_batch_counts(proc.stdout)
    assert traced and all("_dev_" in name for name in traced), traced
    unchanged = snakemake(workdir, "-n", "--quiet", "rules", "--configfile", str(config), env=env)
    assert not trace_batch_counts(unchanged.stdout), unchanged.stdout


def test_an_unlisted_release_is_probed_recorded_and_traced_as_the_listed_one(environment_run):
    """0.1.14 without its entry: a warning, its capabilities in versions.csv, and the job the listed 0.1.14 gets (the
    command the grid of the release data makes: the same arguments in the same environment), whose rows the other
    install of 0.1.14 gives too."""
    workdir, proc, _, _ = environment_run
    # the grid of the same config where the release data lists 0.1.14 (this process reads the repository's)
    cfg = yaml.safe_load((workdir / "versions.yaml").read_text())
    grid = job_grid.build_grid(config_checks.validate_config(cfg))
    (job,) = [job for job in grid.jobs.values() if job.version == "0.1.14"]
    assert "TileLang 0.1.14 is not in" in proc.stdout + proc.stderr
    rows = {row["version_name"]: row for row in read_csv(workdir / "results" / "versions.csv")}
    assert rows["0.1.14"]["listed"] == "false" and rows["0.1.14"]["pins_from"] == "0.1.13"
    assert rows["0.1.14"]["probed_from"] == "environment" and rows["0.1.14"]["lower_trace"] == "true"

    def job_dir(version: str) -> Path:
        return workdir / "results" / "runs" / version / "cuda-sm90" / SHAPE / "instrument"

    command = json.loads((job_dir("0.1.14") / "run.json").read_text())["command"]
    out = command.index("--out")
    assert command[2:out] + command[out + 2 :] == list(job.args)

    def traced(version: str, but: tuple[str, ...] = ()) -> list[tuple]:
        rows = pt.read_rows(job_dir(version) / "passes.csv")
        return [tuple(v for k, v in row.items() if k not in ("seconds", *but)) for row in rows]

    # the environment entry lowered with the same TileLang: the same rows but for its name
    assert traced("dev", ("version_name",)) == traced("0.1.14", ("version_name",))


@pytest.mark.slow
def test_a_wheel_gets_a_gpu_site_of_its_own(maintainer_run, tmp_path):
    """The GPU stage layers a user's wheel (the maintainer's) onto the machine's torch as it layers a release: its
    files without dependencies in a folder, whose import gives the wheel's own version (no GPU needed to build and
    check it)."""
    from tilelang_churn.gpu import gpu_site

    _, wheel, _ = maintainer_run
    marker = gpu_site.build_site("my-branch", tmp_path / "site", wheel=wheel)
    record = json.loads(marker.read_text())
    assert record["tilelang_version"] == f"{release_envs.installed_release()}+test" and record["pins"] == []
    env = {**release_process.release_environ(), "PYTHONPATH": str(marker.parent)}
    said = subprocess.run([sys.executable, "-c", "import tilelang; print(tilelang.__file__)"], env=env,
                          capture_output=True, text=True, check=True)  # fmt: skip
    assert Path(said.stdout.strip()).is_relative_to(marker.parent)
