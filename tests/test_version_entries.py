"""config versions' entries checked before any job (releases/version_entries.py): each bad entry in one line that
names versions[i] and the value; a wheel's and an environment's identity, what retraces them."""

from __future__ import annotations

import hashlib
import sys
import venv
import zipfile
from pathlib import Path

import pytest
from conftest import REPO, make_workdir, snakemake
from test_job_grid import refused
from tilelang_churn.releases import release_envs, version_entries
from tilelang_churn.releases.release_envs import ReleaseError


def fake_wheel(path: Path, name: str = "tilelang", version: str = "0.1.15+mine", files: dict | None = None) -> Path:
    """A wheel archive whose .dist-info says NAME and VERSION, with FILES (relative path -> text)."""
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(
            f"{name}-{version}.dist-info/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        )
        for relpath, text in (files or {"tilelang/__init__.py": ""}).items():
            archive.writestr(relpath, text)
    return path


@pytest.fixture(scope="module")
def python_without_tilelang(tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("bare") / "venv"
    venv.create(folder, with_pip=False, symlinks=True)
    return str(folder / "bin" / "python")


def test_each_bad_entry_is_one_line_naming_its_index(tmp_path, python_without_tilelang):
    other = fake_wheel(tmp_path / "numpy-2.0-py3-none-any.whl", name="numpy", version="2.0")
    text = tmp_path / "notes.whl"
    text.write_text("not a zip")
    old = fake_wheel(tmp_path / "tilelang-0.1.7-py3-none-any.whl", version="0.1.7")
    wheel = fake_wheel(tmp_path / "tilelang-0.1.15+mine-py3-none-any.whl")
    gone, bare, first = str(tmp_path / "gone.whl"), python_without_tilelang, "config versions[1]"
    cases = [
        (f"{first}.wheel: '{gone}' does not exist", {"name": "a", "wheel": gone}),
        (f"{first}.wheel: '{text}' is not a wheel (a .whl zip archive)", {"name": "a", "wheel": str(text)}),
        (f"{first}.wheel: '{other}' is a wheel of 'numpy', not of tilelang", {"name": "a", "wheel": str(other)}),
        (
            f"{first}.wheel: '{old}' is TileLang 0.1.7, older than the supported range 0.1.8",
            {"name": "a", "wheel": str(old)},
        ),
        (f"{first}.python: '{bare}' has no TileLang", {"name": "a", "python": bare}),
        (f"{first}.python: '{tmp_path}' is not an executable interpreter", {"name": "a", "python": str(tmp_path)}),
        (f"{first}: {{'name': 'a'}} names neither wheel nor python", {"name": "a"}),
        (f"{first}: unknown key 'pins'; a python entry has name, python", {"name": "a", "python": bare, "pins": []}),
        (f"{first}.name: 'my branch' is not a name", {"name": "my branch", "wheel": str(wheel)}),
        (f"{first}.name: '0.1.16' reads as a TileLang release", {"name": "0.1.16", "wheel": str(wheel)}),
        (
            f"{first}.pins[0]: 'torch==2.0' is set elsewhere, not by a pin",
            {"name": "a", "wheel": str(wheel), "pins": ["torch==2.0"]},
        ),
        (
            f"{first}.pins[0]: expected NAME==VERSION, got 'ffi>=1'",
            {"name": "a", "wheel": str(wheel), "pins": ["ffi>=1"]},
        ),
    ]
    for message, entry in cases:
        error = refused(versions=["0.1.15", entry])
        assert error.startswith(message), (error, message)
        assert "\n" not in error
    twice = refused(versions=["0.1.15", {"name": "dev", "wheel": str(wheel)}, {"name": "dev", "wheel": str(wheel)}])
    assert twice.startswith("config versions[2]: name 'dev' is a duplicate of versions[1]")


def test_a_wheel_entry_is_its_file_and_its_content(tmp_path):
    wheel = fake_wheel(tmp_path / "tilelang-0.1.15+mine-py3-none-any.whl")
    (entry,) = version_entries.resolve([{"name": "my-branch", "wheel": str(wheel)}], installed=None)
    assert (entry.kind, entry.tilelang_version, entry.pins_from) == ("wheel", "0.1.15+mine", "0.1.15")
    assert entry.identity == {"wheel_sha256": hashlib.sha256(wheel.read_bytes()).hexdigest()}
    fake_wheel(wheel, files={"tilelang/__init__.py": "# rebuilt\n"})  # the same path, another content
    (again,) = version_entries.resolve([{"name": "my-branch", "wheel": str(wheel)}], installed=None)
    assert again.identity != entry.identity
    (pinned,) = version_entries.resolve(
        [{"name": "my-branch", "wheel": str(wheel), "pins": ["apache-tvm-ffi==0.1.11"]}], installed=None
    )
    assert ([pin.requirement for pin in pinned.pins], pinned.pins_from) == (["apache-tvm-ffi==0.1.11"], None)


def test_an_environment_entry_is_identified_by_its_tilelang_sources(tmp_path):
    """The installed TileLang as an environment entry: its version as its metadata says, and a sources' sha256 that
    follows the files of its tilelang/ package (recomputed here over a copy with one file changed)."""
    from importlib import metadata

    (entry,) = version_entries.resolve([{"name": "dev", "python": sys.executable}], installed=None)
    assert (entry.kind, entry.tilelang_version) == ("python", metadata.version("tilelang"))
    package = Path(metadata.distribution("tilelang").locate_file("tilelang"))
    assert entry.source_sha256 == version_entries.sources_sha256(package)
    copy = tmp_path / "tilelang"
    copy.mkdir()
    (copy / "__init__.py").write_text("a")
    first = version_entries.sources_sha256(copy)
    (copy / "__init__.py").write_text("b")
    assert version_entries.sources_sha256(copy) != first
    assert entry.capabilities is not None and "instrument" in entry.capabilities.modes


def test_a_bad_entry_stops_the_workflow_before_any_job(tmp_path):
    workdir = make_workdir(tmp_path / "work")
    (workdir / "results").mkdir()
    kept = workdir / "results" / "churn.csv"
    kept.write_text("produced before\n")
    proc = snakemake(workdir, "-n", "--config", f"versions=['0.1.15', {{name: a, wheel: {tmp_path}/gone.whl}}]")
    assert proc.returncode != 0
    assert f"config versions[1].wheel: '{tmp_path}/gone.whl' does not exist" in proc.stderr + proc.stdout
    assert kept.read_text() == "produced before\n"


def test_release_data_without_capabilities_is_what_the_workflow_reads():
    """The release data keeps what cannot be probed: pins, each with how it was found."""
    for release in release_envs.load_releases().values():
        assert all(pin.found for pin in release.pins)
    assert "has_lower_trace" not in release_envs.RELEASES_FILE.read_text()
    assert release_envs.RELEASES_FILE == REPO / "config" / "tilelang_releases.yaml"
    with pytest.raises(ReleaseError):
        version_entries.resolve([{"name": "x", "wheel": 7}], installed=None)
