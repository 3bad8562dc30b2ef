"""A kernel's own requirements (config ``kernels[i].requirements``): the packages its file imports that the
environment tracing it lacks (a sibling ``utils`` that imports ``triton``, an ``einops`` import).

The config check installs them once per set of requirements and Python version, with uv, into a folder of their
own (``overlay``: ``uv pip install --target``) under ``.snakemake/tilelang-churn/kernel-requirements/``, for the
workflow's interpreter; nothing is written into an environment itself, a release's or the user's. The import
probe gets that folder on its path; a trace job puts it on its own ``sys.path`` before it imports the kernel
(``import_path``: a release environment of the same Python version finds it). A second process waits for the
first one's install (a file lock) and uses it. Standard library only until an install (release_envs: uv).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tilelang_churn.core import files

PYTHON_VERSION = ".".join(map(str, sys.version_info[:2]))  # the key of a folder: "3.11"
CACHE_DIR = Path(".snakemake") / "tilelang-churn" / "kernel-requirements"
INSTALL_TIMEOUT_S = 900.0
MARKER = "installed.json"


class RequirementsError(RuntimeError):
    """The requirements could not be installed: the message names them and uv's own last line."""


def folder_for(requirements, version: str | None = None) -> Path:
    """The folder of REQUIREMENTS installed for Python VERSION ("3.11"; default: this interpreter's), relative to
    the working directory."""
    key = json.dumps([sorted(requirements), version or PYTHON_VERSION])
    return CACHE_DIR / hashlib.sha256(key.encode()).hexdigest()[:16]


def overlay(requirements) -> Path:
    """The folder holding REQUIREMENTS installed for this interpreter, installed now when it is not there yet; a
    RequirementsError naming them otherwise."""
    folder = folder_for(requirements).resolve()
    if (folder / MARKER).is_file():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    with _locked(folder.with_suffix(".lock")):
        if not (folder / MARKER).is_file():  # another process may have installed it meanwhile
            _install(list(requirements), Path(sys.executable), folder)
    return folder


def import_path(requirements) -> Path:
    """The folder a job puts on sys.path for REQUIREMENTS: installed by the config check for this Python version;
    a RequirementsError naming the version otherwise (an environment of another Python than the workflow's)."""
    folder = folder_for(requirements).resolve()
    if not (folder / MARKER).is_file():
        raise RequirementsError(
            f"the kernel's requirements {', '.join(requirements)} are not installed for Python {PYTHON_VERSION} "
            f"({folder}): "
            "the config check installs them for the workflow's Python, and this environment runs another"
        )
    return folder


def put_first(requirements) -> None:
    """REQUIREMENTS' folder (``import_path``) first on sys.path, so that the kernel's import finds them; nothing
    for none."""
    if requirements:
        folder = str(import_path(requirements))
        if folder not in sys.path:
            sys.path.insert(0, folder)


def _install(requirements: list[str], python: Path, folder: Path) -> None:
    from tilelang_churn.releases import release_envs  # uv and pip's find-links; not needed by a job

    uv = release_envs.find_uv()
    if uv is None:
        raise RequirementsError(f"installing {', '.join(requirements)} needs uv, which is not found here")
    building = folder.with_suffix(".partial")
    shutil.rmtree(building, ignore_errors=True)
    links = [arg for link in release_envs.find_links(python) for arg in ("--find-links", link)]
    command = [str(uv), "pip", "install", "--quiet", "--python", str(python), "--target", str(building), *links]
    print(f"tilelang-churn: installing {', '.join(requirements)} for {python} into {folder}", file=sys.stderr)
    try:
        proc = subprocess.run([*command, *requirements], capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise RequirementsError(
            f"installing {', '.join(requirements)} did not end in {INSTALL_TIMEOUT_S:g} s and was stopped"
        ) from None
    if proc.returncode != 0:
        said = (proc.stderr.strip() or proc.stdout.strip() or "no output").splitlines()[-1]
        shutil.rmtree(building, ignore_errors=True)
        raise RequirementsError(f"installing {', '.join(requirements)} failed (uv, exit {proc.returncode}: {said})")
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(building, folder)
    files.write_json(folder / MARKER, {"requirements": requirements, "python": str(python)})


@contextlib.contextmanager
def _locked(path: Path):
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
