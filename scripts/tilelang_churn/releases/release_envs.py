"""TileLang environments: the release data, and one isolated uv environment per release or user's wheel.

config/tilelang_releases.yaml holds what cannot be probed: each listed release's extra pins, with how they were
found; its oldest entry is the oldest release the workflow accepts. A release it does not list, and a wheel, get the
pins of the nearest older entry (``nearest_release``). Each gets its own environment ROOT/tilelang-<name>/ with torch
(the pin of requirements.txt, CPU build), ml-dtypes (requirements.txt's pin, unless the pins name it) and
tilelang==<version> (or the wheel file) plus the pins, all in ONE install.
ROOT/tilelang-<name>/environment.json is the marker: written only after the environment imported the right tilelang,
with what it can do (capabilities.py), so it can be a Snakemake rule's output. A wheel's marker holds its sha256: a
rebuilt wheel makes the marker stale (``drop_stale_marker``).

Command line:

    python scripts/release_envs.py check 0.1.14 0.1.15                  (version_entries.print_checked_versions)
    python scripts/release_envs.py build --version 0.1.14 --root .envs [--requirements requirements.txt]
                                        [--log FILE] [--uv PATH]
    python scripts/release_envs.py build --version my-branch --wheel dist/tilelang-....whl --root .envs
                                        [--pin NAME==VERSION ...]

Exit status: 0 done (build prints the marker path); 2 a bad version, one line on stderr; 3 the build or
its verification failed, one line on stderr naming the step and the log file with uv's and Python's
output (default ROOT/tilelang-<name>.build.log, outside the environment so a rebuild keeps it).

From Python or a Snakefile (the project installed: make, environment.yml):

    from tilelang_churn.releases import release_envs
    release = release_envs.load_releases()["0.1.14"]      # .pins, .requirements
    marker = release_envs.build_env("0.1.14", ".envs")    # ROOT/tilelang-0.1.14/environment.json
    release_envs.stale_reason(marker)                     # why that environment needs a rebuild, or None

The entries of config versions are checked by version_entries.py. Standard library plus PyYAML (pinned in
requirements.txt). TileLang itself is never imported here.
"""

from __future__ import annotations

import ast
import fcntl
import functools
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import string
import subprocess
import sys
import time
import zipfile
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime
from email.parser import HeaderParser
from importlib import metadata
from pathlib import Path
from urllib.parse import quote

import yaml

from tilelang_churn.core import files, releases
from tilelang_churn.core.releases import release_sort_key
from tilelang_churn.kernel import tilelang_source
from tilelang_churn.releases import capabilities, cuda_stub, release_process

REPO = Path(__file__).resolve().parents[3]
# another release data file (a maintainer's, a test's) through TILELANG_CHURN_RELEASE_DATA
RELEASES_FILE = Path(os.environ.get("TILELANG_CHURN_RELEASE_DATA") or REPO / "config" / "tilelang_releases.yaml")
MARKER_NAME = "environment.json"
MARKER_SCHEMA = 1
CACHE_DIR_NAME = "tilelang_cache"

# X.Y.Z with an optional .postN: the form of every TileLang release on PyPI (0.1.7.post3, 0.1.15, ...). Patterns
# of whole values are anchored with \A...\Z: "$" also matches before a final newline ("0.1.14\n").
VERSION_RE = re.compile(r"\A(\d+)\.(\d+)\.(\d+)(?:\.post(\d+))?\Z")
# A pin is an exact requirement: anything looser re-opens the resolution the pin exists to close.
PIN_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9][A-Za-z0-9.+!]*\Z")
TORCH_PIN_RE = re.compile(r"^\s*torch\s*==\s*([A-Za-z0-9.+!]+)\s*(?:#.*)?$")
# TileLang and tvm_ffi import ml-dtypes unpinned: 0.7.0's extension takes 0.5 s to load in every process that imports
# TileLang, 0.6.0's 5 ms; every release environment gets requirements.txt's pin (base_requirements)
ML_DTYPES_PIN_RE = re.compile(r"^\s*ml[-_.]dtypes\s*==\s*([A-Za-z0-9.+!]+)\s*(?:#.*)?$", re.IGNORECASE)
RELEASE_FIELDS = ("pins",)
OPTIONAL_RELEASE_FIELDS = ("cuda_stub",)  # true: the release links CUDA and imports only with a stub (cuda_stub.py)

# Run inside the new environment, which holds no tilelang_churn: release_process (standard library only) is loaded
# from its file, after TileLang and torch, and nothing goes on sys.path. Imports may print to stdout, so the result
# is the line with the prefix.
VERIFY_PREFIX = "release_envs-verify: "
VERIFY_CODE = f"""
import importlib.util, json, sys
import tilelang
import torch
spec = importlib.util.spec_from_file_location("release_process", {str(Path(release_process.__file__).resolve())!r})
rp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rp)
print({VERIFY_PREFIX!r} + json.dumps({{
    "tilelang": tilelang.__version__, "torch": torch.__version__, "torch_cuda": torch.version.cuda,
    "python_version": sys.version.split()[0], "executable": sys.executable,
    "foreign_libraries": rp.foreign_libraries(rp.native_libraries(), rp.own_directories())}}))
"""


class ReleaseError(ValueError):
    """A bad release value (config key, command-line argument) or a bad release data file."""


class BuildError(RuntimeError):
    """An environment build or its verification failed; `step` names what failed, `log` holds the output."""

    def __init__(self, version: str, step: str, detail: str, log: Path | None = None):
        self.version, self.step, self.detail, self.log = version, step, detail, log
        where = f"; output in {log}" if log else ""
        super().__init__(f"tilelang {version}: step '{step}' failed: {detail}{where}")


@dataclass(frozen=True)
class Pin:
    """An extra requirement installed with a release, and how it was found to be needed."""

    requirement: str
    found: str

    def __str__(self) -> str:
        return self.requirement


@dataclass(frozen=True)
class Release:
    """One listed TileLang release and its extra pins (what it can do is probed: capabilities.py)."""

    version: str
    pins: tuple[Pin, ...]
    cuda_stub: bool = False  # its environment gets a stub CUDA driver (releases/cuda_stub.py)

    @property
    def requirements(self) -> tuple[str, ...]:
        """The pins as requirement strings, as given to the installer."""
        return tuple(pin.requirement for pin in self.pins)


# ------------------------------------------------------------------------------------ release data


def _release_data(path: str | Path | None) -> tuple[Path, object]:
    """The release data file (default config/tilelang_releases.yaml) and its YAML; ReleaseError if unreadable."""
    path = Path(path) if path is not None else RELEASES_FILE
    try:
        return path, yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ReleaseError(f"{path}: cannot read the release data: {exc}") from None


def load_releases(path: str | Path | None = None) -> dict[str, Release]:
    """Version -> Release from the data file (default config/tilelang_releases.yaml), oldest first."""
    path, data = _release_data(path)
    entries = data.get("releases") if isinstance(data, dict) else None
    if not isinstance(entries, dict) or not entries:
        raise ReleaseError(f"{path}: expected a non-empty mapping 'releases: {{VERSION: {{...}}}}'")
    releases = []
    for version, entry in entries.items():
        where = f"{path}: releases[{version!r}]"
        if not isinstance(version, str) or not VERSION_RE.match(version):
            raise ReleaseError(f"{where}: the key must be a quoted X.Y.Z[.postN] release string")
        if not isinstance(entry, dict) or not set(RELEASE_FIELDS) <= set(entry) <= {
            *RELEASE_FIELDS,
            *OPTIONAL_RELEASE_FIELDS,
        }:
            raise ReleaseError(
                f"{where}: expected the keys {', '.join(RELEASE_FIELDS)}, and {', '.join(OPTIONAL_RELEASE_FIELDS)} "
                "where needed (what a release can do is probed, not listed)"
            )
        stub = entry.get("cuda_stub", False)
        if not isinstance(stub, bool):
            raise ReleaseError(f"{where}.cuda_stub: expected true or false, got {stub!r}")
        releases.append(Release(version, _load_pins(entry["pins"], f"{where}.pins"), stub))
    releases.sort(key=lambda release: release_sort_key(release.version))
    return {release.version: release for release in releases}


@dataclass(frozen=True)
class PassLinks:
    """URL patterns of the pages' pass links (``pass_links`` in the release data)."""

    source: str  # {tag} {release} {path} {line}
    search: str  # {pass} {tag} {release}

    def url(self, release: str, name: str, path: str | None = None, line: int | None = None) -> str:
        """The link of pass ``name`` of ``release``: its definition at ``path``:``line``, else the search; every
        field percent-encoded (a pass name may hold any character)."""
        fields = {
            "tag": quote(f"v{release}", safe=""),
            "release": quote(release, safe=""),
            "pass": quote(name, safe=""),
        }
        if path is None:
            return self.search.format(**fields)
        return self.source.format(**fields, path=quote(path, safe="/"), line=int(line))


PASS_LINK_FIELDS = {"source": ("tag", "release", "path", "line"), "search": ("pass", "tag", "release")}


def load_pass_links(path: str | Path | None = None) -> PassLinks:
    """The ``pass_links`` patterns of the release data; a missing key, or a pattern that names a field it may
    not use, raises ReleaseError naming the key."""
    path, data = _release_data(path)
    links = data.get("pass_links") if isinstance(data, dict) else None
    if not isinstance(links, dict) or set(links) != set(PASS_LINK_FIELDS):
        raise ReleaseError(f"{path}: pass_links: expected exactly the keys {', '.join(PASS_LINK_FIELDS)}")
    for key, allowed in PASS_LINK_FIELDS.items():
        pattern = links[key]
        if not isinstance(pattern, str):
            raise ReleaseError(f"{path}: pass_links.{key}: expected a URL pattern, got {pattern!r}")
        try:
            names = {name for _, name, _, _ in string.Formatter().parse(pattern) if name is not None}
        except ValueError as exc:
            raise ReleaseError(f"{path}: pass_links.{key}: {pattern!r}: {exc}") from None
        unknown = sorted(names - set(allowed))
        if unknown:
            raise ReleaseError(
                f"{path}: pass_links.{key}: {pattern!r} names {{{unknown[0]}}}; it may name {', '.join(allowed)}"
            )
    return PassLinks(links["source"], links["search"])


def _load_pins(pins, where: str) -> tuple[Pin, ...]:
    if not isinstance(pins, list):
        raise ReleaseError(f"{where}: expected a list (use [] for none), got {pins!r}")
    loaded = []
    for i, pin in enumerate(pins):
        if not isinstance(pin, dict) or set(pin) != {"requirement", "found"}:
            raise ReleaseError(f"{where}[{i}]: expected exactly the keys requirement, found")
        requirement, found = pin["requirement"], pin["found"]
        problem = pin_problem(requirement)
        if problem:
            raise ReleaseError(f"{where}[{i}].requirement: {problem}")
        if not isinstance(found, str) or not found.strip():
            raise ReleaseError(f"{where}[{i}].found: say how the pin was found")
        loaded.append(Pin(requirement, " ".join(found.split())))
    return tuple(loaded)


def pin_problem(requirement) -> str | None:
    """Why REQUIREMENT cannot be a pin, or None: an exact NAME==VERSION of neither tilelang nor torch."""
    if not isinstance(requirement, str) or not PIN_RE.match(requirement):
        return f"expected NAME==VERSION, got {requirement!r}"
    # tilelang and torch come from the release and requirements.txt: a pin of either would conflict
    if re.split(r"[=\s]", requirement)[0].lower() in ("tilelang", "torch"):
        return f"{requirement!r} is set elsewhere, not by a pin"
    return None


def given_pins(values, where: str) -> tuple[Pin, ...]:
    """Pins given by a user (a wheel entry's ``pins``, ``release_envs.py build --pin``), each checked as the release
    data's are (pin_problem); ReleaseError naming WHERE[i]."""
    if not isinstance(values, (list, tuple)):
        raise ReleaseError(f"{where}: {values!r} is not a list of requirements NAME==VERSION")
    for i, requirement in enumerate(values):
        problem = pin_problem(requirement)
        if problem:
            raise ReleaseError(f"{where}[{i}]: {problem}")
    return tuple(Pin(requirement, "given") for requirement in values)


def supported_range(releases: dict[str, Release]) -> str:
    """'OLDEST and newer' of the release data: the oldest entry is the oldest release the workflow accepts."""
    return f"{next(iter(releases))} and newer"


SUPPORTED_RANGE = supported_range(load_releases())


def installed_release() -> str | None:
    """Version of the `tilelang` distribution of the running interpreter (metadata only, no import)."""
    try:
        return metadata.version("tilelang")
    except metadata.PackageNotFoundError:
        return None


def release_problem(value, releases: dict[str, Release]) -> str | None:
    """Why VALUE is not a release the workflow can build, as '<value> is ...', or None when it is one: any release
    number from the oldest listed on (a newer one than the list knows is built with the pins of the newest)."""
    span = supported_range(releases)
    if not isinstance(value, str) or not VERSION_RE.match(value):
        hint = "; quote it in YAML" if isinstance(value, (int, float)) else ""
        return (
            f"{value!r} is not a release of the form X.Y.Z or X.Y.Z.postN such as '0.1.14'{hint}"
            f" (supported range {span}), nor a wheel or environment entry {{name: ..., wheel: ...}}"
        )
    canonical = ".".join(str(int(part)) if part.isdigit() else part for part in value.split("."))
    if canonical != value:  # 00.1.15 is 0.1.15 to the package index: one release, not two entries
        return f"{value!r} is {canonical} written with a leading zero; write {canonical!r}"
    if release_sort_key(value) < release_sort_key(next(iter(releases))):
        return f"{value!r} is older than {next(iter(releases))}, the oldest release the workflow supports"
    return None


def nearest_release(version: str, known: dict[str, Release]) -> Release:
    """The listed release a version gets its pins from: its own release, else the newest listed one older."""
    base = releases.base_version(version)
    if base in known:
        return known[base]
    older = [release for number, release in known.items() if release_sort_key(number) < release_sort_key(base)]
    return older[-1] if older else next(iter(known.values()))


def wheel_metadata(wheel: Path, where: str) -> dict[str, str]:
    """Name and Version of a wheel's .dist-info/METADATA; ReleaseError naming WHERE when it is no wheel: no zip
    archive, a file name uv cannot read (no python, abi and platform tags, or another version than its METADATA), a
    damaged member (a bad CRC), METADATA without Name or Version, no tilelang/__init__.py."""
    if wheel.suffix != ".whl" or not zipfile.is_zipfile(wheel):
        raise ReleaseError(f"{where}: {str(wheel)!r} is not a wheel (a .whl zip archive)")
    try:
        with zipfile.ZipFile(wheel) as archive:
            members = archive.namelist()
            names = [n for n in members if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)]
            if len(names) != 1:
                raise ReleaseError(f"{where}: {str(wheel)!r} is not a wheel: it holds no single .dist-info/METADATA")
            text = _read_member(archive, names[0], wheel, where).decode("utf-8", errors="replace")
            package = "tilelang/__init__.py" in members
            if package:  # its CRC too: the one member of the package every import reads
                _read_member(archive, "tilelang/__init__.py", wheel, where)
    except (zipfile.BadZipFile, OSError) as exc:
        raise ReleaseError(f"{where}: {str(wheel)!r} is damaged: {exc}") from None
    headers = HeaderParser().parsestr(text)
    found = {"Name": (headers.get("Name") or "").strip(), "Version": (headers.get("Version") or "").strip()}
    for field_name in ("Name", "Version"):
        if not found[field_name]:
            raise ReleaseError(f"{where}: {str(wheel)!r} has no {field_name} in its METADATA ({names[0]})")
    # the wheel file name's form (PEP 427): uv refuses any other, after the whole check has passed
    parts = wheel.name[: -len(".whl")].split("-")
    if len(parts) not in (5, 6):
        raise ReleaseError(
            f"{where}: {wheel.name!r} is not a wheel file name: NAME-VERSION-PYTHON-ABI-PLATFORM.whl, e.g."
            " tilelang-0.1.15-cp38-abi3-manylinux_2_27_x86_64.whl (uv reads the tags from the name)"
        )
    if normalized_name(found["Name"]) == "tilelang" and parts[1] != found["Version"]:
        raise ReleaseError(
            f"{where}: {wheel.name!r} says version {parts[1]}, its METADATA {found['Version']}: uv refuses such a"
            " wheel; name the file after its METADATA's version"
        )
    if normalized_name(found["Name"]) == "tilelang" and not package:
        raise ReleaseError(f"{where}: {str(wheel)!r} holds no tilelang/__init__.py: it is no TileLang package")
    return found


def _read_member(archive: zipfile.ZipFile, member: str, wheel: Path, where: str) -> bytes:
    """MEMBER's bytes, its CRC checked; ReleaseError naming WHERE and the member when they do not read."""
    try:
        return archive.read(member)
    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
        raise ReleaseError(f"{where}: {str(wheel)!r} is damaged: {member} does not read ({exc})") from None


@functools.cache
def _digest(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def file_sha256(path: str | Path) -> str:
    """sha256 of a file, computed once per content (path, size, mtime) in a process."""
    info = Path(path).stat()
    return _digest(str(Path(path).resolve()), info.st_size, info.st_mtime_ns)


@dataclass(frozen=True)
class EnvInputs:
    """What an environment is built from: a release from the package index, or a wheel file."""

    name: str  # its folder ROOT/tilelang-<name>
    install: str  # the requirement given to uv: tilelang==X, or the wheel's absolute path
    tilelang_version: str  # the version it must import
    pins: tuple[Pin, ...]
    pins_from: str | None  # the listed release whose pins it has; None: its own entry, or pins given
    listed: bool
    wheel_sha256: str | None = None
    cuda_stub: bool = False  # the nearest listed release's (releases/cuda_stub.py)

    @property
    def requirements(self) -> tuple[str, ...]:
        return tuple(pin.requirement for pin in self.pins)

    def imports(self, version: str | None) -> bool:
        """Whether an imported or installed tilelang VERSION is this environment's: a wheel's exactly, a release
        without its local build tag (0.1.14+cu128 is 0.1.14)."""
        if version is None:
            return False
        if self.wheel_sha256:
            return version == self.tilelang_version
        return releases.base_version(version) == self.tilelang_version


def env_inputs(name: str, wheel: str | Path | None = None, pins: list[str] | None = None,
               known: dict[str, Release] | None = None) -> EnvInputs:  # fmt: skip
    """The inputs of environment NAME: release NAME, or the wheel file WHEEL; ``pins`` (NAME==VERSION) replace the
    pins of the nearest listed release. ReleaseError for a bad release or wheel."""
    known = known if known is not None else load_releases()
    given = given_pins(pins, "--pin") if pins else None
    if wheel is not None:
        wheel = Path(wheel).absolute()
        if not wheel.is_file():
            raise ReleaseError(f"--wheel {str(wheel)!r} does not exist")
        version = wheel_metadata(wheel, "--wheel")["Version"]
        nearest = nearest_release(version, known)
        return EnvInputs(name, str(wheel), version, given or nearest.pins, None if given else nearest.version,
                         False, file_sha256(wheel), nearest.cuda_stub)  # fmt: skip
    problem = release_problem(name, known)
    if problem:
        raise ReleaseError(f"release {problem}")
    nearest = nearest_release(name, known)
    pins_from = None if given or name in known else nearest.version
    return EnvInputs(name, f"tilelang=={name}", name, given or nearest.pins, pins_from, name in known, None,
                     nearest.cuda_stub)  # fmt: skip


# ------------------------------------------------------------------------------------ tools


def find_uv(uv: str | Path | None = None) -> Path | None:
    """The uv executable: UV argument, the one next to the running interpreter, the uv package's, PATH."""
    if uv is not None:
        return Path(uv)
    # not resolved: sys.executable of a venv is a symlink whose directory also holds the venv's uv
    beside_python = Path(sys.executable).parent / "uv"
    if beside_python.is_file() and os.access(beside_python, os.X_OK):
        return beside_python
    try:
        import uv as uv_package  # the PyPI `uv` package ships the binary

        return Path(uv_package.find_uv_bin())
    except (ImportError, FileNotFoundError):
        pass
    from shutil import which

    found = which("uv")
    return Path(found) if found else None


def find_links(python: str | Path | None = None, environ: dict[str, str] | None = None) -> list[str]:
    """pip's find-links locations, for uv, which does not read pip's configuration.

    From `python -m pip config list` (PIP_FIND_LINKS, then an [install], then a [global] setting, as pip
    ranks them); PIP_FIND_LINKS alone when that python has no pip. Values are whitespace-separated.
    """
    environ = dict(os.environ if environ is None else environ)
    by_section: dict[str, str] = {}
    try:
        proc = subprocess.run(
            [str(python or sys.executable), "-m", "pip", "config", "list"],
            check=False,
            capture_output=True,
            text=True,
            env=environ,
            timeout=120,
        )
    except (OSError, subprocess.TimeoutExpired):
        proc = None
    if proc is not None and proc.returncode == 0:
        for line in proc.stdout.splitlines():  # lines such as  global.find-links='/opt/wheels'
            name, _, raw = line.partition("=")
            section, _, option = name.rpartition(".")
            if option != "find-links":
                continue
            try:
                by_section[section] = str(ast.literal_eval(raw))
            except (ValueError, SyntaxError):
                by_section[section] = raw.strip("'\"")
    chosen = next((by_section[s] for s in (":env:", "install", "global") if s in by_section), None)
    if chosen is None:
        chosen = environ.get("PIP_FIND_LINKS", "")
    return chosen.split()


def torch_requirement(requirements: str | Path) -> str:
    """'torch==X' from the requirements file: the torch every release environment gets."""
    path = Path(requirements)
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise ReleaseError(f"{path}: cannot read the requirements: {exc}") from None
    for line in lines:
        match = TORCH_PIN_RE.match(line)
        if match:
            return f"torch=={match.group(1)}"
    raise ReleaseError(f"{path}: no 'torch==VERSION' line; torch must be pinned (an unpinned torch is a CUDA build)")


def base_requirements(requirements: str | Path, pins: tuple[str, ...] = ()) -> list[str]:
    """What a release environment gets from the requirements file besides TileLang and its ``pins``: torch
    (torch_requirement), then ml-dtypes where the file pins it and the pins do not name it."""
    base = [torch_requirement(requirements)]
    pinned = {normalized_name(pin.split("==", 1)[0]) for pin in pins}
    for line in Path(requirements).read_text().splitlines():
        match = ML_DTYPES_PIN_RE.match(line)
        if match and "ml-dtypes" not in pinned:
            base.append(f"ml-dtypes=={match.group(1)}")
    return base


def disk_usage(paths) -> int:
    """Bytes allocated under PATHS, each inode counted once: `du -s -k PATHS` in one call, which walks uv's cache
    (some 250,000 files) in half the CPU of a walk in Python (0.5 against 1.0 s, twice a build); the walk where du
    is missing or fails."""
    existing = [str(p) for p in paths if os.path.lexists(p)]
    du = shutil.which("du")
    if existing and du:
        proc = subprocess.run([du, "-s", "-k", *existing], capture_output=True, text=True, check=False)
        if proc.returncode == 0:
            return sum(int(line.split("\t", 1)[0]) for line in proc.stdout.splitlines()) * 1024
    return walked_disk_usage(existing)


def walked_disk_usage(paths) -> int:
    """disk_usage without du: each inode's allocated blocks, once."""
    seen: set[tuple[int, int]] = set()
    total = 0
    stack = [str(p) for p in paths]
    while stack:
        path = stack.pop()
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if (info.st_dev, info.st_ino) in seen:
            continue
        seen.add((info.st_dev, info.st_ino))
        total += info.st_blocks * 512
        if stat.S_ISDIR(info.st_mode):
            try:
                with os.scandir(path) as entries:
                    stack.extend(entry.path for entry in entries)
            except OSError:
                pass
    return total


def display(path: Path) -> str:
    try:
        return str(path.relative_to(REPO))
    except ValueError:
        return str(path)


def normalized_name(name: str) -> str:
    """PEP 503 form of a distribution name, as uv pip freeze prints it (apache_tvm_ffi -> apache-tvm-ffi)."""
    return re.sub(r"[-_.]+", "-", name).lower()


# ------------------------------------------------------------------------------------ environments


def env_dir(root: str | Path, version: str) -> Path:
    """The environment folder of a release under ROOT."""
    return Path(root) / f"tilelang-{version}"


def read_marker(marker: Path) -> dict | None:
    try:
        data = json.loads(marker.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def marker_matches(data: dict | None, inputs: EnvInputs, base: list[str]) -> bool:
    """A marker stands for an environment built from the same inputs (``base``: base_requirements), whose python
    still exists."""
    if not data or data.get("schema") != MARKER_SCHEMA:
        return False
    return (
        data.get("version") == inputs.name
        and inputs.imports(str(data.get("tilelang_version")))
        and data.get("pins") == list(inputs.requirements)
        and data.get("base_requirements") == base  # torch's pin first
        and data.get("wheel_sha256") == inputs.wheel_sha256
        and data.get("cuda_stub", False) == inputs.cuda_stub
        and Path(str(data.get("python"))).is_file()
    )


def installed_tilelang(env: str | Path) -> list[str]:
    """Versions of the tilelang distributions in ENV's site-packages, from their METADATA: no import, no
    interpreter started (a broken environment can crash on import)."""
    versions = []
    for dist_info in sorted(Path(env).glob("lib/python*/site-packages/tilelang-*.dist-info")):
        version = None
        try:
            with open(dist_info / "METADATA", encoding="utf-8", errors="replace") as metadata_file:
                for line in metadata_file:
                    if line.startswith("Version:"):
                        version = line.split(":", 1)[1].strip()
                        break
                    if not line.strip():  # the headers end at the first blank line
                        break
        except OSError:
            pass
        versions.append(version or dist_info.name[len("tilelang-") : -len(".dist-info")])
    return versions


def stale_reason(marker_path: str | Path) -> str | None:
    """Why the environment of MARKER_PATH (ROOT/tilelang-<version>/environment.json) cannot be used any more,
    or None while it can: the marker unreadable, the environment's bin/python missing or not executable, or its
    installed tilelang (read from the package metadata) not the marker's release. A missing marker has a
    reason too. Fast (a few file checks, no interpreter started): Snakemake calls it for every release each
    time it builds the DAG, and drop_stale_marker deletes a stale marker so that rule release_env rebuilds it."""
    marker = Path(marker_path)
    env = marker.parent
    if not marker.exists():
        return f"{marker} does not exist"
    data = read_marker(marker)
    if data is None:
        return f"{marker} cannot be read as a JSON object"
    if data.get("schema") != MARKER_SCHEMA or not isinstance(data.get("version"), str):
        return f"{marker} is not a marker of schema {MARKER_SCHEMA} with a version"
    version = data["version"]
    if env.name != f"tilelang-{version}":
        return f"{marker} is the marker of release {version}, not of its folder {env.name}"
    python = env / "bin" / "python"
    if not python.exists():  # a symlink to a removed interpreter does not exist either
        gone = f" (a link to {os.readlink(python)}, which is gone)" if python.is_symlink() else ""
        return f"{python} is missing{gone}"
    if not python.is_file() or not os.access(python, os.X_OK):
        return f"{python} is not an executable file"
    installed = installed_tilelang(env)
    if not installed:
        return f"{env} has no tilelang installed (no tilelang-*.dist-info in its site-packages)"
    if len(installed) > 1:
        return f"{env} has several tilelang installs ({', '.join(installed)}); the marker says {version}"
    wanted = data.get("tilelang_version") if data.get("wheel_sha256") else version
    if installed[0] != wanted and (data.get("wheel_sha256") or releases.base_version(installed[0]) != version):
        what = "the wheel's" if data.get("wheel_sha256") else "the release"
        return f"{env} holds tilelang {installed[0]}, not {what} {wanted} of its marker"
    return None


def drop_stale_marker(
    marker_path: str | Path, version: str, dry_run: bool, wheel_sha256: str | None = None
) -> str | None:
    """The warning for the environment of an existing but stale marker (stale_reason), else None; unless
    dry_run, the marker is removed, so that rule release_env rebuilds the environment instead of trace jobs
    running in it. The workflow calls it as it builds the DAG (the trace batches' input function)."""
    marker = Path(marker_path)
    reason = stale_reason(marker) if marker.exists() else None
    if reason is None and wheel_sha256 is not None and marker.exists():
        built = (read_marker(marker) or {}).get("wheel_sha256")
        if built != wheel_sha256:  # the wheel was rebuilt since
            reason = f"{marker} is of a wheel of sha256 {built}; the wheel now has {wheel_sha256}"
    if reason is None:
        return None
    if dry_run:
        return f"The environment of TileLang {version} will be rebuilt: {reason}"
    marker.unlink(missing_ok=True)
    return f"Rebuilding the environment of TileLang {version}: {reason}"


class _StepRunner:
    """Runs the build's commands, appending their output to the log and timing each step."""

    def __init__(self, version: str, log_path: Path, log):
        self.version, self.log_path, self.log = version, log_path, log
        self.seconds: dict[str, float] = {}

    def note(self, text: str) -> None:
        self.log.write(text.rstrip("\n") + "\n")
        self.log.flush()

    def run(self, step: str, argv: list[str], env: dict | None = None, timeout: int = 1800) -> str:
        """stdout of ARGV; stdout and stderr go to the log; BuildError naming STEP when it fails."""
        self.note(f"\n### {step}\n$ {' '.join(argv)}")
        start = time.monotonic()
        try:
            proc = subprocess.run(argv, check=False, capture_output=True, text=True, env=env, timeout=timeout)
        except OSError as exc:
            raise BuildError(self.version, step, f"cannot run {argv[0]}: {exc}", self.log_path) from None
        except subprocess.TimeoutExpired:
            raise BuildError(self.version, step, f"no result after {timeout} s", self.log_path) from None
        finally:
            self.seconds[step] = round(time.monotonic() - start, 3)
        self.note(proc.stdout)
        self.note(proc.stderr)
        self.note(f"(exit {proc.returncode}, {self.seconds[step]:.1f} s)")
        if proc.returncode != 0:
            if proc.returncode < 0:
                how = f"killed by {signal.Signals(-proc.returncode).name}"
            else:
                how = f"exit {proc.returncode}"
            raise BuildError(self.version, step, f"{how}: {_gist(proc.stdout + proc.stderr)}", self.log_path)
        return proc.stdout


def snapshot_wheel(wheel: Path, folder: Path, sha256: str) -> Path:
    """A copy of WHEEL in FOLDER under its own file name (uv reads the tags from it), its bytes hashed: ValueError
    when they are not SHA256, the wheel the workflow checked (it was rebuilt or switched since)."""
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / wheel.name
    digest = hashlib.sha256()
    with open(wheel, "rb") as source, open(copy, "wb") as target:
        for block in iter(lambda: source.read(1 << 20), b""):
            digest.update(block)
            target.write(block)
    if digest.hexdigest() != sha256:
        raise ValueError(changed_wheel(wheel, digest.hexdigest(), sha256))
    return copy


def changed_wheel(wheel, found: str, checked: str) -> str:
    return f"{wheel} changed after it was checked: sha256 {found[:16]}..., checked {checked[:16]}...; run again"


def _gist(output: str) -> str:
    """The line of a failed command's output that says why: uv's error line, else the last line (a traceback's)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    uv_error = next((line for line in lines if line.startswith(("error:", "×"))), None)
    return (uv_error or (lines[-1] if lines else "no output"))[:300]


def build_env(
    version: str,
    root: str | Path,
    *,
    wheel: str | Path | None = None,
    pins: list[str] | None = None,
    requirements: str | Path = "requirements.txt",
    uv: str | Path | None = None,
    log: str | Path | None = None,
    python: str | Path | None = None,
    wheel_sha256: str | None = None,
) -> Path:
    """Build (or keep) ROOT/tilelang-VERSION with uv; return the path of its environment.json marker.

    VERSION is a release (from the package index), or, with ``wheel``, the name of a user's wheel installed from
    that file. With a marker of the same inputs (release or wheel sha256, pins, torch and ml-dtypes pins) the
    environment is kept as it is. Otherwise it is rebuilt from scratch: `uv venv --clear`, one `uv pip install` of
    torch, ml-dtypes, tilelang (or the wheel) and the pins (with pip's find-links, so torch is the local CPU
    build), an import of tilelang with TILELANG_CACHE_DIR inside the environment, `uv pip freeze` (each pin
    checked), a probe of what it can do (capabilities.py); the marker is written last. ReleaseError for a bad
    release or wheel; BuildError naming the failed step. ``wheel_sha256``: the wheel's sha256 when the workflow checked
    config versions (the rule's param); a wheel that has another is refused, and so is one that changes while it is
    copied for its install.
    """
    inputs = env_inputs(version, wheel, pins)
    if wheel is not None and wheel_sha256 is not None and inputs.wheel_sha256 != wheel_sha256:
        raise BuildError(version, "read wheel", changed_wheel(inputs.install, inputs.wheel_sha256, wheel_sha256))
    try:
        base = base_requirements(requirements, inputs.requirements)
    except (ReleaseError, OSError) as exc:  # not a bad version: the build's own input is missing
        raise BuildError(version, "read requirements", str(exc)) from None
    root = Path(root).absolute()
    dest = env_dir(root, version)
    marker = dest / MARKER_NAME

    def usable() -> bool:  # built from the same inputs, and still sound
        return marker_matches(read_marker(marker), inputs, base) and not stale_reason(marker)

    if usable():
        return marker
    root.mkdir(parents=True, exist_ok=True)
    # two processes building one release (two workflow runs, a test and a run) must not interleave
    with open(root / f".tilelang-{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if usable():
            return marker  # built by the process that held the lock
        return _build(inputs, dest, base, uv=uv, log=log, python=python)


def _build(
    inputs: EnvInputs,
    dest: Path,
    base: list[str],
    *,
    uv: str | Path | None,
    log: str | Path | None,
    python: str | Path | None,
) -> Path:
    """build_env's work, under its lock: rebuild DEST from scratch, verify it, write the marker last."""
    version, root = inputs.name, dest.parent
    marker = dest / MARKER_NAME
    torch_pin = base[0]
    env_python = dest / "bin" / "python"
    log_path = Path(log).absolute() if log else root / f"tilelang-{version}.build.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    # a stale marker must not outlive a failed rebuild
    marker.unlink(missing_ok=True)
    with open(log_path, "w") as log_file:
        steps = _StepRunner(version, log_path, log_file)
        uv_bin = find_uv(uv)
        if uv_bin is None:
            raise BuildError(version, "find uv", "no uv executable (pass --uv, or pip install uv)", log_path)
        if dest.exists() and any(dest.iterdir()) and not (dest / "pyvenv.cfg").exists():
            # uv venv --clear refuses such a folder; never delete what is not an environment of ours
            raise BuildError(version, "uv venv", f"{dest} exists and is not a virtual environment", log_path)

        uv_said = steps.run("uv version", [str(uv_bin), "--version"]).split()  # "uv 0.13.9 (...)"
        if len(uv_said) < 2 or uv_said[0] != "uv":
            raise BuildError(version, "uv version", f"{uv_bin} is not uv: {' '.join(uv_said)!r}", log_path)
        uv_version = uv_said[1]
        cache_dir = Path(steps.run("uv cache dir", [str(uv_bin), "cache", "dir"]).strip())
        links = find_links(python)
        steps.note(f"find-links from pip's configuration: {links or 'none'}")
        cache_dir.mkdir(parents=True, exist_ok=True)
        # uv hardlinks from its cache only on the same filesystem; elsewhere every env is a full copy
        same_filesystem = os.stat(cache_dir).st_dev == os.stat(root).st_dev
        if not same_filesystem:
            steps.note(f"warning: uv cache {cache_dir} and {root} are on different filesystems: files are copied")
        start = time.monotonic()
        bytes_before = disk_usage([cache_dir, dest])
        disk_seconds = time.monotonic() - start

        base_python = str(python or sys.executable)
        steps.run("uv venv", [str(uv_bin), "venv", "--clear", "--no-python-downloads", "-p", base_python, str(dest)])
        install = [str(uv_bin), "pip", "install", "--python", str(env_python)]
        for link in links:
            install += ["--find-links", link]
        # a wheel is installed from a private copy whose bytes were hashed: the marker's sha256 is what was installed,
        # whatever the user's path (a symlink switched to another build) points at meanwhile
        snapshot = root / f".tilelang-{version}.wheel"
        try:
            wheel = snapshot_wheel(Path(inputs.install), snapshot, inputs.wheel_sha256) if inputs.wheel_sha256 else None
        except (OSError, ValueError) as exc:
            raise BuildError(version, "copy wheel", str(exc), log_path) from None
        install += [*base, str(wheel or inputs.install), *inputs.requirements]
        try:
            steps.run("uv pip install", install)
        finally:
            shutil.rmtree(snapshot, ignore_errors=True)
        if inputs.cuda_stub:  # 0.1.6, 0.1.7: their libraries link CUDA, which this machine may lack
            defined = cuda_stub.install(dest, steps.run)
            steps.note(f"stub CUDA driver: {len(defined)} functions ({', '.join(defined)})")

        # verify in a clean child, as the trace jobs run: this release's own tilelang cache, no other install's paths
        verify_env = release_process.release_environ()
        verify_env["TILELANG_CACHE_DIR"] = str(dest / CACHE_DIR_NAME)
        output = steps.run("verify import", [str(env_python), "-c", VERIFY_CODE], env=verify_env)
        line = next((ln for ln in output.splitlines() if ln.startswith(VERIFY_PREFIX)), None)
        if line is None:
            raise BuildError(version, "verify import", "the check printed no versions", log_path)
        imported = json.loads(line[len(VERIFY_PREFIX) :])
        if not inputs.imports(imported["tilelang"]):
            raise BuildError(version, "verify import", f"imported tilelang {imported['tilelang']}", log_path)
        if releases.base_version(imported["torch"]) != torch_pin.split("==", 1)[1]:
            raise BuildError(version, "verify import", f"imported torch {imported['torch']} ({torch_pin})", log_path)
        if imported["foreign_libraries"]:
            foreign = ", ".join(imported["foreign_libraries"])
            raise BuildError(version, "verify import", f"loaded another install's libraries: {foreign}", log_path)

        freeze = steps.run("uv pip freeze", [str(uv_bin), "pip", "freeze", "--python", str(env_python)])
        packages = {normalized_name(name): v for name, _, v in (ln.partition("==") for ln in freeze.splitlines()) if v}
        for requirement in [*base[1:], *inputs.requirements]:
            name, wanted = requirement.split("==", 1)
            got = packages.get(normalized_name(name))
            if got != wanted:
                raise BuildError(version, "check pins", f"{name} is {got}, the pin is {wanted}", log_path)
        if "+cpu" not in imported["torch"] or imported["torch_cuda"]:
            steps.note(f"warning: torch {imported['torch']} is not the CPU build (find-links: {links or 'none'})")
        probed = capabilities.probe(tilelang_source.env_source(dest))
        steps.note(f"probed: {probed.summary()}")
        if not inputs.listed and not inputs.wheel_sha256:
            warning = (
                f"TileLang {version} is not in {display(RELEASES_FILE)}: built with the pins of {inputs.pins_from}"
                f" ({', '.join(inputs.requirements) or 'none'}); probed: {probed.summary()}"
            )
            steps.note(f"warning: {warning}")
            print(f"release_envs: warning: {warning}", file=sys.stderr)

        start = time.monotonic()
        bytes_added = disk_usage([cache_dir, dest]) - bytes_before
        # walking the uv cache twice is not part of the build: kept apart from build_seconds
        steps.seconds["measure disk"] = round(disk_seconds + time.monotonic() - start, 3)
        build_seconds = round(sum(s for step, s in steps.seconds.items() if step != "measure disk"), 3)
        data = {
            "schema": MARKER_SCHEMA,
            "version": version,
            "kind": "wheel" if inputs.wheel_sha256 else "release",
            "install": inputs.install,
            "wheel_sha256": inputs.wheel_sha256,
            "listed": inputs.listed,
            "python": str(env_python),
            "base_python": base_python,
            "python_version": imported["python_version"],
            "pins": list(inputs.requirements),
            "pins_found": {pin.requirement: pin.found for pin in inputs.pins},
            "pins_from": inputs.pins_from,
            "cuda_stub": inputs.cuda_stub,
            "torch_requirement": torch_pin,
            "base_requirements": base,
            "torch_version": imported["torch"],
            "torch_cuda": imported["torch_cuda"],
            "tilelang_version": imported["tilelang"],
            "tilelang_cache_dir": str(dest / CACHE_DIR_NAME),
            "capabilities": probed.as_record(),
            "build_seconds": build_seconds,
            "step_seconds": steps.seconds,
            "uv": str(uv_bin),
            "uv_version": uv_version,
            "uv_cache_dir": str(cache_dir),
            "same_filesystem_as_uv_cache": same_filesystem,
            "find_links": links,
            "disk_bytes_added": bytes_added,
            "packages": packages,
            "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "log": str(log_path),
        }
        steps.note(
            f"\nverified tilelang {imported['tilelang']}, torch {imported['torch']}; {build_seconds} s, "
            f"{bytes_added} bytes added; marker {marker}"
        )
        files.write_json(marker, data)
    return marker


# ---------------------------------------------------- the commands' work (scripts/release_envs.py)


def print_built_env(version: str, root: Path, requirements: Path, uv: Path | None, log: Path | None,
                    wheel: Path | None = None, pins: list[str] | None = None,
                    wheel_sha256: str | None = None) -> int:  # fmt: skip
    """``build_env``, then its marker path printed; the exit status of ``exit_status``."""
    built = functools.partial(build_env, version, root, wheel=wheel, pins=pins, requirements=requirements, uv=uv,
                              log=log, wheel_sha256=wheel_sha256)  # fmt: skip
    return exit_status(lambda: print(built()))


def exit_status(command) -> int:
    """0 when ``command()`` returns; 2 for a bad release (ReleaseError), 3 for a failed build or an unreadable or
    unwritable file (BuildError, OSError), each with one line on stderr."""
    try:
        command()
    except ReleaseError as exc:
        print(f"release_envs: error: {exc}", file=sys.stderr)
        return 2
    except (BuildError, OSError) as exc:
        print(f"release_envs: error: {exc}", file=sys.stderr)
        return 3
    return 0
