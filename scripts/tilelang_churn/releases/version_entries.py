"""The entries of config ``versions``: any TileLang a user can point at, each checked before any job runs.

An entry is one of

- a release number, ``"0.1.14"``: from the package index, in its own uv environment (release_envs.build_env),
  with the pins of config/tilelang_releases.yaml; a release the file does not list (a newer one) gets the pins
  of the nearest older entry and a warning;
- the release installed beside the workflow (its number): traced in the workflow's own environment;
- ``{name: my-branch, wheel: dist/tilelang-0.1.15+mine-....whl, pins: [...]}``: a wheel a user built, in its own
  uv environment like a release (pins: those given, else the nearest listed release's);
- ``{name: dev, python: /path/to/venv/bin/python}``: an interpreter with its own TileLang (an editable build),
  used as it is: nothing is installed into it and nothing is written there.

Each entry's ``name`` is its label everywhere (results/runs/<name>/, the tables' ``version_name``, the pages).
What decides its traces beyond the jobs' arguments is its ``identity``: a wheel's sha256; an environment's
TileLang version, git commit (where its install records one) and the sha256 of its ``tilelang/`` Python sources.
A change of it retraces that entry's jobs and nothing else (the batch rules carry it as a param).

    entries = version_entries.resolve(config["versions"], release_envs.installed_release())
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from tilelang_churn.core import child_group, files, releases
from tilelang_churn.core.releases import release_sort_key
from tilelang_churn.kernel import tilelang_source
from tilelang_churn.releases import capabilities, release_envs, release_process
from tilelang_churn.releases.release_envs import Pin, Release, ReleaseError

# a name is a folder under results/runs and a Snakemake wildcard value
# (\A...\Z: "$" would match before a final newline)
NAME_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._+-]{0,63}\Z")
PROBE_TIMEOUT_S = 120  # an interpreter's answer to PROBE_CODE (seconds)
ENTRY_KEYS = {"wheel": ("name", "wheel", "pins"), "python": ("name", "python")}


@dataclass(frozen=True)
class VersionEntry:
    """One TileLang of config ``versions``."""

    name: str  # its label: results/runs/<name>/, the tables' version_name
    kind: str  # release | installed | wheel | python
    tilelang_version: str  # the version its jobs must import (a wheel's METADATA, an environment's distribution)
    pins: tuple[Pin, ...] = ()
    pins_from: str | None = None  # the listed release whose pins it gets; None: its own entry, or none installed
    listed: bool = True  # a release of config/tilelang_releases.yaml
    wheel: str | None = None  # as configured
    wheel_sha256: str | None = None
    python: str | None = None  # as configured
    commit: str | None = None  # the git commit its install records (direct_url.json) or its checkout is at
    source_sha256: str | None = None  # sha256 of its tilelang/ Python sources (an environment entry)
    capabilities: capabilities.Capabilities | None = field(default=None, compare=False)  # None: probed when built
    warning: str | None = field(default=None, compare=False)

    @property
    def builds_environment(self) -> bool:
        """Whether rule release_env builds it an environment (a release not installed, a wheel)."""
        return self.kind in ("release", "wheel")

    @property
    def identity(self) -> dict:
        """What decides its traces beyond the jobs' arguments (a param of its batches): a change retraces them."""
        if self.kind == "wheel":
            return {"wheel_sha256": self.wheel_sha256}
        if self.kind == "python":
            return {"tilelang_version": self.tilelang_version, "commit": self.commit,
                    "source_sha256": self.source_sha256}  # fmt: skip
        return {}

    def record(self) -> dict:
        """Its provenance, JSON-ready (results/versions.csv and .json)."""
        return {
            "version_name": self.name,
            "kind": self.kind,
            "tilelang_version": self.tilelang_version,
            "listed": self.listed,
            "pins": [pin.requirement for pin in self.pins],
            "pins_from": self.pins_from,
            "wheel": self.wheel,
            "wheel_sha256": self.wheel_sha256,
            "python": self.python,
            "commit": self.commit,
            "source_sha256": self.source_sha256,
        }


def resolve(
    values,
    installed: str | None,
    key: str = "versions",
    known: dict[str, Release] | None = None,
) -> list[VersionEntry]:
    """The entries of config KEY, in the given order. ReleaseError naming ``KEY[i]`` and the bad value for: a bad
    release number, a release older than the oldest listed, an entry of unknown keys, a wheel path that does not
    exist, a file that is not a wheel, a wheel of another package, an interpreter without TileLang, a name that is
    no folder name, two entries of one name."""
    known = known if known is not None else release_envs.load_releases()
    span = release_envs.supported_range(known)
    if not isinstance(values, (list, tuple)):
        raise ReleaseError(
            f"config {key}: {values!r} is not a list; give a list of TileLang releases such as ['0.1.14'], wheels"
            f" or environments (supported range {span})"
        )
    if not values:
        raise ReleaseError(f"config {key}: the list is empty; give at least one release (supported range {span})")
    entries: list[VersionEntry] = []
    first_index: dict[str, int] = {}
    for i, value in enumerate(values):
        where = f"config {key}[{i}]"
        if isinstance(value, dict):
            entry = _built_entry(value, where, known)
        elif installed is not None and value == installed:
            entry = VersionEntry(value, "installed", value)
        else:
            entry = _release_entry(value, where, known)
        if entry.name in first_index:
            what = "name" if isinstance(value, dict) else "release"
            raise ReleaseError(
                f"{where}: {what} {entry.name!r} is a duplicate of {key}[{first_index[entry.name]}]; give each entry"
                f" a name of its own (supported range {span})"
            )
        first_index[entry.name] = i
        entries.append(entry)
    return entries


def _release_entry(value, where: str, known: dict[str, Release]) -> VersionEntry:
    problem = release_envs.release_problem(value, known)
    if problem:
        raise ReleaseError(f"{where}: {problem}")
    if value in known:
        return VersionEntry(value, "release", value, known[value].pins)
    nearest = release_envs.nearest_release(value, known)
    warning = (
        f"{where}: TileLang {value} is not in {release_envs.display(release_envs.RELEASES_FILE)}: its environment"
        f" gets the pins of {nearest.version} ({', '.join(nearest.requirements) or 'none'}), and what it can do is"
        " probed from its package when it is built (results/versions.csv)"
    )
    return VersionEntry(value, "release", value, nearest.pins, nearest.version, listed=False, warning=warning)


def _check_name(value: dict, where: str) -> str:
    name = value.get("name")
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise ReleaseError(
            f"{where}.name: {name!r} is not a name: give the build a name of letters, digits, '.', '_', '+' or '-'"
            " (it names its folder under results/runs), e.g. 'my-branch'"
        )
    if release_envs.VERSION_RE.match(name):
        raise ReleaseError(
            f"{where}.name: {name!r} reads as a TileLang release; give the build a name of its own, e.g. 'my-branch'"
        )
    periodic = files.periodic_problem(name)
    if periodic:
        raise ReleaseError(f"{where}.name: {name!r} {periodic}; give another name")
    return name


def _built_entry(value: dict, where: str, known: dict[str, Release]) -> VersionEntry:
    kinds = [kind for kind in ENTRY_KEYS if kind in value]
    if len(kinds) != 1:
        raise ReleaseError(
            f"{where}: {value!r} names {'both wheel and python' if kinds else 'neither wheel nor python'}; an entry"
            " is a release number, {name: NAME, wheel: PATH} or {name: NAME, python: INTERPRETER}"
        )
    kind = kinds[0]
    unknown = sorted(set(value) - set(ENTRY_KEYS[kind]))
    if unknown:
        raise ReleaseError(f"{where}: unknown key {unknown[0]!r}; a {kind} entry has {', '.join(ENTRY_KEYS[kind])}")
    name = _check_name(value, where)
    if kind == "wheel":
        return _wheel_entry(name, value, where, known)
    return _python_entry(name, value["python"], where, known)


def _wheel_entry(name: str, value: dict, where: str, known: dict[str, Release]) -> VersionEntry:
    path = value["wheel"]
    if not isinstance(path, str) or not path:
        raise ReleaseError(f"{where}.wheel: {path!r} is not a path to a .whl file")
    wheel = Path(path).expanduser()
    if not wheel.is_file():
        raise ReleaseError(f"{where}.wheel: {path!r} does not exist (relative paths are from {Path.cwd()})")
    metadata = release_envs.wheel_metadata(wheel, f"{where}.wheel")
    if release_envs.normalized_name(metadata.get("Name", "")) != "tilelang":
        raise ReleaseError(f"{where}.wheel: {path!r} is a wheel of {metadata.get('Name')!r}, not of tilelang")
    version = metadata.get("Version", "")
    if release_sort_key(releases.base_version(version)) < release_sort_key(next(iter(known))):
        raise ReleaseError(
            f"{where}.wheel: {path!r} is TileLang {version}, older than the supported range"
            f" {release_envs.supported_range(known)}"
        )
    if "pins" in value:
        pins = release_envs.given_pins(value["pins"], f"{where}.pins")
        pins_from = None
    else:
        nearest = release_envs.nearest_release(version, known)
        pins, pins_from = nearest.pins, nearest.version
    try:
        probed = capabilities.probe(tilelang_source.SourceTree.from_path(wheel))
    except (zipfile.BadZipFile, zlib.error, EOFError, UnicodeDecodeError) as exc:  # a member of its package
        raise ReleaseError(f"{where}.wheel: {path!r} is damaged: {exc}") from None
    return VersionEntry(
        name, "wheel", version, pins, pins_from, listed=False, wheel=str(wheel),
        wheel_sha256=release_envs.file_sha256(wheel), capabilities=probed,
    )  # fmt: skip


# Run by the entry's interpreter, isolated (-I: no user site, no working directory on the path), without writing
# bytecode (-B): where its TileLang is, by its distribution and importlib, without importing it.
PROBE_CODE = """
import importlib.util, json, sys
from importlib import metadata
out = {"python_version": sys.version.split()[0], "prefix": sys.prefix}
try:
    dist = metadata.distribution("tilelang")
    out["version"], out["direct_url"] = dist.version, dist.read_text("direct_url.json")
except metadata.PackageNotFoundError:
    out["version"] = out["direct_url"] = None
spec = importlib.util.find_spec("tilelang")
out["package_dir"] = list(spec.submodule_search_locations)[0] if spec and spec.submodule_search_locations else None
print("version-entry-probe: " + json.dumps(out))
"""


def probe_interpreter(python: str, where: str, known: dict[str, Release]) -> dict:
    """What PYTHON says of its TileLang (PROBE_CODE), each field checked; ReleaseError naming WHERE when it cannot
    run, does not answer in PROBE_TIMEOUT_S (it and what it started are killed), answers out of shape, has no
    TileLang, or one older than the supported range."""
    path = Path(python)
    if not path.is_file() or not os.access(path, os.X_OK):
        raise ReleaseError(f"{where}: {python!r} is not an executable interpreter")
    try:
        proc = child_group.run([python, "-I", "-B", "-c", PROBE_CODE], timeout=PROBE_TIMEOUT_S,
                               env=release_process.release_environ())  # fmt: skip
    except subprocess.TimeoutExpired:
        raise ReleaseError(
            f"{where}: {python!r} did not answer the probe in {PROBE_TIMEOUT_S} s (it prints where its TileLang is,"
            " importing nothing); it and what it started were stopped"
        ) from None
    except OSError as exc:
        raise ReleaseError(f"{where}: {python!r} cannot be run: {exc}") from None
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("version-entry-probe: ")), None)
    if proc.returncode != 0 or line is None:
        said = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise ReleaseError(f"{where}: {python!r} cannot be asked for its TileLang: {said}")
    return _checked_answer(line.split(": ", 1)[1], python, where, known)


def _checked_answer(text: str, python: str, where: str, known: dict[str, Release]) -> dict:
    """The probe's JSON answer, its shape and every field checked (it comes from another program)."""
    try:
        found = json.loads(text)
    except ValueError:
        found = None
    if not isinstance(found, dict):
        raise ReleaseError(f"{where}: {python!r} answered the probe with no JSON object: {text[:80]!r}")
    version, package_dir, direct_url = found.get("version"), found.get("package_dir"), found.get("direct_url")
    if version is None or package_dir is None:
        raise ReleaseError(
            f"{where}: {python!r} has no TileLang (no tilelang distribution and package on its path); install one"
            " in that environment or point at another interpreter"
        )
    for field_name, value in (("version", version), ("package_dir", package_dir)):
        if not isinstance(value, str) or not value:
            raise ReleaseError(f"{where}: {python!r} answered the probe with {field_name} {value!r}, not a string")
    if direct_url is not None and not isinstance(direct_url, str):
        raise ReleaseError(f"{where}: {python!r} answered the probe with direct_url {direct_url!r}, not a string")
    if not (Path(package_dir) / "__init__.py").is_file():
        raise ReleaseError(
            f"{where}: {python!r} names the TileLang package folder {package_dir!r}, which holds no __init__.py"
        )
    if release_sort_key(releases.base_version(version)) < release_sort_key(next(iter(known))):
        raise ReleaseError(
            f"{where}: {python!r} has TileLang {version}, older than the supported range"
            f" {release_envs.supported_range(known)}"
        )
    return found


def _python_entry(name: str, python, where: str, known: dict[str, Release]) -> VersionEntry:
    if not isinstance(python, str) or not python:
        raise ReleaseError(f"{where}.python: {python!r} is not a path to an interpreter")
    python = str(Path(python).expanduser())
    found = probe_interpreter(python, f"{where}.python", known)
    package = Path(found["package_dir"])
    try:
        probed = capabilities.probe(tilelang_source.SourceTree.from_path(package))
    except (ValueError, OSError) as exc:  # its package folder, as the interpreter named it, does not read
        raise ReleaseError(f"{where}.python: {python!r} names the TileLang package {exc}") from None
    return VersionEntry(
        name, "python", found["version"], listed=False, python=python, commit=install_commit(found.get("direct_url")),
        source_sha256=sources_sha256(package), capabilities=probed,
    )  # fmt: skip


def install_commit(direct_url: str | None) -> str | None:
    """The git commit of an install: the one direct_url.json records (pip install git+...), else the HEAD of the
    local checkout an editable install points at; None when neither is known."""
    try:
        data = json.loads(direct_url) if direct_url else {}
    except ValueError:
        return None
    if not isinstance(data, dict):  # the install's own file, read as input: a shape it should not have is no commit
        return None
    vcs_info = data.get("vcs_info")
    commit = vcs_info.get("commit_id") if isinstance(vcs_info, dict) else None
    if isinstance(commit, str) and commit:
        return commit
    url = data.get("url", "")
    if not isinstance(url, str) or not url.startswith("file://"):
        return None
    try:
        proc = subprocess.run(["git", "-C", url[len("file://") :], "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=30, check=False)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 and proc.stdout.strip() else None


def sources_sha256(package_dir: Path) -> str:
    """sha256 over the tilelang package's Python files (relative path and content, in path order)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in package_dir.rglob("*.py") if "__pycache__" not in p.parts):
        digest.update(str(path.relative_to(package_dir)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def print_checked_versions(values: list[str]) -> int:
    """Each release checked as the config key `versions` checks it (version_entries.resolve), then described in
    one line (its pins and where they come from); the exit status of ``release_envs.exit_status``."""

    def check() -> None:
        for entry in resolve(values, release_envs.installed_release()):
            if entry.kind == "installed":
                print(f"{entry.name}: the installed release (no environment of its own)")
                continue
            pins = ",".join(pin.requirement for pin in entry.pins) or "-"
            origin = f" (pins of {entry.pins_from}: not listed)" if entry.pins_from else ""
            print(f"{entry.name}: pins={pins}{origin}")

    return release_envs.exit_status(check)
