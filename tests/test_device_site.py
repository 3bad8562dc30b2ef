"""benchmarks/build_device_site.sh reads the venv's packages from `pip freeze` as name==version: in a venv made by
`make`, pip also prints the project's editable install (`-e PATH`, after a comment line), which the script split as
a package and failed on. Its --freeze prints what it reads, and stops."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from importlib import metadata

from conftest import REPO

SCRIPT = REPO / "benchmarks" / "build_device_site.sh"
NAME_VERSION = re.compile(r"^[a-z0-9][a-z0-9.-]*==\S+$")


def freeze(python: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "VENV_PYTHON": python}
    return subprocess.run(
        ["bash", str(SCRIPT), "--freeze"], cwd=REPO, env=environment, capture_output=True, text=True, timeout=120
    )


def test_every_package_of_this_venv_is_read_as_name_equals_version():
    proc = freeze(sys.executable)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines and all(NAME_VERSION.match(line) for line in lines), proc.stdout
    names = {line.split("==")[0] for line in lines}
    assert "tilelang-churn" not in names  # the project itself, installed editable, is no package of the site
    assert f"tilelang=={metadata.version('tilelang')}" in lines


def test_the_editable_install_and_comments_are_left_out_and_any_other_line_is_named(tmp_path):
    """What pip prints in a venv made by `make` (the project editable, with no version control), whatever its flags;
    a direct reference (`NAME @ URL`) is no name==version the script can download: it stops, naming the line."""
    printed = tmp_path / "freeze.txt"
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\ncat {printed}\n")
    python.chmod(0o755)
    printed.write_text(
        "Jinja2==3.1.6\n"
        "# Editable install with no version control (tilelang-churn==0.1.0)\n"
        "-e /home/user/tilelang-churn\n"
        "typing_extensions==4.15.0\n"
    )
    proc = freeze(str(python))
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "jinja2==3.1.6\ntyping-extensions==4.15.0\n", "")
    printed.write_text("jinja2==3.1.6\nmypkg @ file:///wheels/mypkg-1.0-py3-none-any.whl\n")
    proc = freeze(str(python))
    assert proc.returncode != 0
    assert proc.stderr == (
        "build_device_site.sh: not name==version in pip freeze: mypkg @ file:///wheels/mypkg-1.0-py3-none-any.whl\n"
    )
