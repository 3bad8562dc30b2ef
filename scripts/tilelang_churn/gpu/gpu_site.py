"""A release's GPU site: TileLang and its pins installed without dependencies into a folder that a GPU job puts on
PYTHONPATH, in front of the GPU machine's own Python and its CUDA build of torch.

A release environment of the CPU part (release_envs.py) holds the CPU build of torch pinned in requirements.txt:
it lowers, but cannot launch a kernel. A GPU machine already has a CUDA torch that matches its driver (a
multi-GB install, not to be repeated per release), so the GPU stage layers each release onto it instead:

    python3 scripts/gpu_site.py --version 0.1.14 --dest .envs/gpu/tilelang-0.1.14 \\
        [--pip-args '--no-index --find-links WHEELS']

1. ``pip install --no-deps --target DEST tilelang==VERSION <the release's pins>`` (config/tilelang_releases.yaml);
2. every requirement of that TileLang (its METADATA, markers evaluated) except torch, the pins, and what the
   running Python already has at a version the requirement accepts, also ``--no-deps --target DEST``
   (0.1.15: apache-tvm-ffi, z3-solver, torch-c-dlpack-ext, ml-dtypes, cloudpickle);
3. ``import tilelang`` with PYTHONPATH=DEST must give the release; the marker ``DEST/gpu_site.json`` is last.

Run it with the Python of the GPU machine (or one of the same minor version: the site holds that version's
wheels). Rule gpu_release_site runs it on the submitting machine (pip needs the package index, which GPU nodes
often cannot reach). The H200 machine of this project had no index at all: its sites were the same wheels,
carried and unpacked by hand (docs/gpu-stage.md).
"""

from __future__ import annotations

import importlib.metadata
import json
import shlex
import subprocess
import sys
from pathlib import Path

from tilelang_churn.core import files
from tilelang_churn.releases import release_envs, release_process

MARKER = "gpu_site.json"
SKIPPED = ("torch",)  # the machine's own CUDA build


class SiteError(RuntimeError):
    """A step of the build failed: the message names the release and the step."""


def site_requirements(metadata_text: str, skip: set[str]) -> list[str]:
    """The Requires-Dist lines of a METADATA text that apply here (markers evaluated, extras left out), minus the
    names in skip and what the running Python has at an accepted version."""
    from packaging.requirements import Requirement

    wanted, seen = [], set()
    for line in metadata_text.splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        requirement = Requirement(line.split(":", 1)[1].strip())
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        name = requirement.name.lower().replace("_", "-")
        if name in skip or name in seen:  # a name already wanted (other extras, another line): once
            continue
        try:
            have = importlib.metadata.version(requirement.name)
        except importlib.metadata.PackageNotFoundError:
            have = None
        if have is not None and requirement.specifier.contains(have, prereleases=True):
            continue
        wanted.append(str(requirement).split(";")[0].strip())
        seen.add(name)
    return wanted


def build_site(
    version: str,
    dest: str | Path,
    pip_args: tuple[str, ...] = (),
    python: str = sys.executable,
    wheel: str | Path | None = None,
    pins: list[str] | None = None,
) -> Path:
    """The GPU site of release VERSION, or with ``wheel`` of that wheel (a user's build named VERSION), with the
    pins of its release data (release_envs.env_inputs: a release or wheel not listed gets the nearest older one's)."""
    try:
        inputs = release_envs.env_inputs(version, wheel, pins)
    except release_envs.ReleaseError as error:
        raise SiteError(f"TileLang {version}: {error}") from None
    dest = Path(dest).absolute()
    marker = dest / MARKER
    marker.unlink(missing_ok=True)
    pip = [python, "-m", "pip", "install", "--no-deps", "--no-compile", "--upgrade", "--target", str(dest)]
    pins = list(inputs.requirements)
    _run(version, "install tilelang", [*pip, *pip_args, inputs.install, *pins])
    metadata = next(dest.glob("tilelang-*.dist-info/METADATA"), None)
    if metadata is None:
        raise SiteError(f"TileLang {version}: install tilelang: no tilelang-*.dist-info in {dest}")
    skip = set(SKIPPED) | {pin.split("==")[0].lower().replace("_", "-") for pin in pins}
    extra = site_requirements(metadata.read_text(encoding="utf-8"), skip)
    if extra:
        _run(version, "install its requirements", [*pip, *pip_args, *extra])
    env = {**release_process.release_environ(), "PYTHONPATH": str(dest)}
    code = (
        "import json, tilelang, torch; print(json.dumps([tilelang.__version__, torch.__version__, torch.version.cuda]))"
    )
    said = _run(version, "verify import", [python, "-c", code], env=env).strip().splitlines()[-1]
    tilelang_version, torch_version, cuda = json.loads(said)
    if not inputs.imports(tilelang_version):
        raise SiteError(f"TileLang {version}: verify import: imported tilelang {tilelang_version}")
    files.write_json(
        marker,
        {"version": version, "tilelang_version": tilelang_version, "pins": pins, "requirements": extra,
         "base_python": python, "torch_version": torch_version, "torch_cuda": cuda},
    )  # fmt: skip
    print(f"gpu site of TileLang {tilelang_version}: {dest} (torch {torch_version}, CUDA {cuda})")
    return marker


def _run(version: str, step: str, command: list[str], env: dict | None = None) -> str:
    print(f"$ {shlex.join(command)}", flush=True)
    proc = subprocess.run(command, capture_output=True, text=True, env=env)
    sys.stdout.write(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        last = (proc.stderr.strip() or proc.stdout.strip() or "no output").splitlines()[-1]
        raise SiteError(f"TileLang {version}: {step} failed (exit status {proc.returncode}): {last}")
    return proc.stdout


def install_site(
    version: str, dest: str | Path, pip_args: str = "", wheel: str | None = None, pins: list[str] | None = None
) -> int:
    """``build_site`` (``pip_args``: more pip options, one string, split as a shell would), as an exit status: 0, or
    1 with one line on stderr."""
    try:
        build_site(version, dest, tuple(shlex.split(pip_args)), wheel=wheel, pins=pins)
    except SiteError as error:
        print(f"gpu_site.py: error: {error}", file=sys.stderr)
        return 1
    return 0
