"""A release environment holding another TileLang than the release it is named after: exit 3, not wrong rows.

The environment is real: a venv named tilelang-<another release> whose site-packages are this venv's, so its
interpreter really imports the installed TileLang (the issue's 0.1.13 in .envs/tilelang-0.1.14).
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from importlib import metadata
from pathlib import Path

import pytest
from conftest import SCRIPTS, require_tilelang, run_script
from tilelang_churn.core import passes_table as pt
from tilelang_churn.releases import release_envs

pytestmark = pytest.mark.slow  # tier: tests/conftest.py checks it against what the tests use

KERNEL = ("--shape", "64,64,64", "--block", "32,32,32")


@pytest.fixture(scope="module")
def installed() -> str:
    require_tilelang()
    return metadata.version("tilelang")


@pytest.fixture(scope="module")
def other_release(installed) -> str:
    """A supported release that is not the installed one: what the environment is named after."""
    return next(version for version in reversed(release_envs.load_releases()) if version != installed)


@pytest.fixture(scope="module")
def mislabelled_env(tmp_path_factory, other_release) -> Path:
    """ROOT/tilelang-<other release>: a venv whose interpreter imports the installed TileLang."""
    env = tmp_path_factory.mktemp("envs") / f"tilelang-{other_release}"
    base = Path(sys._base_executable).resolve()
    (env / "bin").mkdir(parents=True)
    (env / "bin" / "python").symlink_to(base)
    (env / "pyvenv.cfg").write_text(
        f"home = {base.parent}\ninclude-system-site-packages = false\nversion = {sys.version.split()[0]}\n"
    )
    site = env / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    site.parent.mkdir(parents=True)
    site.symlink_to(sysconfig.get_paths()["purelib"])
    probe = "import sys, tilelang; print(sys.prefix, tilelang.__version__)"
    said = subprocess.run([str(env / "bin" / "python"), "-c", probe], capture_output=True, text=True, check=True)
    assert said.stdout.split()[-2:] == [str(env), metadata.version("tilelang")]
    return env


def error_lines(stderr: str, prog: str) -> list[str]:
    assert "Traceback" not in stderr, stderr
    return [line for line in stderr.splitlines() if line.startswith(f"{prog}: error:")]


@pytest.mark.parametrize("where", ["release_env", "running_interpreter"])
def test_another_release_than_expected_exits_3_naming_env_and_both_versions(
    tmp_path, where, installed, other_release, mislabelled_env
):
    env_args = ("--release-env", str(mislabelled_env)) if where == "release_env" else ()
    out = tmp_path / "out"
    proc = run_script("--mode", "instrument", *KERNEL, *env_args, "--expect-release", other_release, "--out", str(out))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    (line,) = error_lines(proc.stderr, "gemm_lower_trace.py")
    env = str(mislabelled_env) if where == "release_env" else sys.prefix
    assert f"the environment {env} holds TileLang {installed} " in line
    assert f"not release {other_release} (--expect-release)" in line
    if where == "release_env":
        assert f"remove {env} and run snakemake again: rule release_env rebuilds it" in line
    else:
        assert f"install tilelang=={other_release} in it" in line
    # the failed setup row, as for any broken environment; nothing lowered under the wrong release's name
    rows = pt.read_rows(out / "passes.csv")
    assert [(row["pass"], row["status"]) for row in rows] == [("setup", pt.STATUS_FAILED)]
    assert rows[0]["error"].startswith("ReleaseMismatch: ") and rows[0]["tilelang_version"] == installed
    run = json.loads((out / "run.json").read_text())
    assert run["exit_status"] == 3 and run["versions"]["tilelang"] == installed
    assert run["command"][-4:-2] == ["--expect-release", other_release]


def test_a_batch_checks_the_release_once_and_each_job_records_it(tmp_path, installed, other_release, mislabelled_env):
    jobs = [
        {"args": ["--mode", "instrument", *KERNEL, "--expect-release", release, "--out", str(tmp_path / name)],
         "log": str(tmp_path / "logs" / f"{name}.log")}
        for name, release in (("right", installed), ("wrong", other_release))
    ]  # fmt: skip
    proc = subprocess.run(
        [sys.executable, str(SCRIPTS / "trace_batch.py"), "--jobs", "-", "--release-env", str(mislabelled_env)],
        input=json.dumps(jobs),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 3, proc.stdout + proc.stderr
    mismatch = [line for line in error_lines(proc.stderr, "trace_batch.py") if "holds TileLang" in line]
    assert len(mismatch) == 1, proc.stderr
    assert f"the environment {mislabelled_env} holds TileLang {installed} " in mismatch[0]
    assert f"not release {other_release} (--expect-release)" in mismatch[0]
    assert f"job exited 3; see {jobs[1]['log']}" in proc.stderr
    # the job that asked for the imported release lowered; the other recorded its failed setup
    right = pt.read_rows(tmp_path / "right" / "passes.csv")
    assert len(right) > 1 and {row["tilelang_version"] for row in right} == {installed}
    wrong = pt.read_rows(tmp_path / "wrong" / "passes.csv")
    assert [(row["pass"], row["status"]) for row in wrong] == [("setup", pt.STATUS_FAILED)]
    (logged,) = error_lines(Path(jobs[1]["log"]).read_text(), "gemm_lower_trace.py")
    assert f"the environment {mislabelled_env} holds TileLang {installed} " in logged
