"""config versions' entries checked before any job (releases/version_entries.py): each bad entry in one line that
names versions[i] and the value; a wheel's and an environment's identity, what retraces them."""

from __future__ import annotations

import hashlib
import json
import sys
import venv
import zipfile
from pathlib import Path

import pytest
from conftest import REPO, make_workdir, snakemake
from test_batch_signals import start_time
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
    old = fake_wheel(tmp_path / "tilelang-0.1.5-py3-none-any.whl", version="0.1.5")
    wheel = fake_wheel(tmp_path / "tilelang-0.1.15+mine-py3-none-any.whl")
    gone, bare, first = str(tmp_path / "gone.whl"), python_without_tilelang, "config versions[1]"
    cases = [
        (f"{first}.wheel: '{gone}' does not exist", {"name": "a", "wheel": gone}),
        (f"{first}.wheel: '{text}' is not a wheel (a .whl zip archive)", {"name": "a", "wheel": str(text)}),
        (f"{first}.wheel: '{other}' is a wheel of 'numpy', not of tilelang", {"name": "a", "wheel": str(other)}),
        (
            f"{first}.wheel: '{old}' is TileLang 0.1.5, older than the supported range 0.1.6.post2",
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


@pytest.mark.integration
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


def damaged_member(wheel: Path, member: str) -> Path:
    """WHEEL with one byte of MEMBER's stored content flipped: its CRC no longer matches (a damaged download)."""
    with zipfile.ZipFile(wheel) as archive:
        info = archive.getinfo(member)
        content = archive.read(member)
    data = bytearray(wheel.read_bytes())
    start = data.index(content, info.header_offset)
    data[start] ^= 0x01
    wheel.write_bytes(bytes(data))
    return wheel


def fake_interpreter(path: Path, script: str) -> str:
    """An executable that answers the version-entry probe with SCRIPT (a shell script's body)."""
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)
    return str(path)


def probe_line(**fields) -> str:
    found = {"python_version": "3.11.7", "prefix": "/x", "version": "0.1.15", "direct_url": None}
    found.update(fields)
    return f"echo 'version-entry-probe: {json.dumps(found)}'\n"


def test_a_wheel_read_from_outside_is_checked_before_it_is_trusted(tmp_path):
    """Round five: a damaged wheel, one without the package, a file name uv cannot read, METADATA without its
    version: each one line naming versions[1].wheel, never a traceback or an option the user never gave."""
    damaged = damaged_member(fake_wheel(tmp_path / "tilelang-0.1.15+bad-py3-none-any.whl", version="0.1.15+bad"),
                             "tilelang-0.1.15+bad.dist-info/METADATA")  # fmt: skip
    no_package = fake_wheel(tmp_path / "tilelang-0.1.15+np-py3-none-any.whl", version="0.1.15+np",
                            files={"tilelang/env.py": ""})  # fmt: skip
    untagged = fake_wheel(tmp_path / "tilelang-0.1.15.whl", version="0.1.15")
    other_version = fake_wheel(tmp_path / "tilelang-0.1.14-py3-none-any.whl", version="0.1.15")
    no_version = tmp_path / "tilelang-0.1.15-py3-none-any.whl"
    with zipfile.ZipFile(no_version, "w") as archive:
        archive.writestr("tilelang-0.1.15.dist-info/METADATA", "Metadata-Version: 2.1\nName: tilelang\n")
        archive.writestr("tilelang/__init__.py", "")
    where = "config versions[1].wheel"
    cases = [
        (damaged, f"{where}: '{damaged}' is damaged: tilelang-0.1.15+bad.dist-info/METADATA does not read"),
        (no_package, f"{where}: '{no_package}' holds no tilelang/__init__.py: it is no TileLang package"),
        (untagged, f"{where}: 'tilelang-0.1.15.whl' is not a wheel file name"),
        (other_version, f"{where}: 'tilelang-0.1.14-py3-none-any.whl' says version 0.1.14, its METADATA 0.1.15"),
        (no_version, f"{where}: '{no_version}' has no Version in its METADATA"),
    ]
    for wheel, message in cases:
        error = refused(versions=["0.1.15", {"name": "a", "wheel": str(wheel)}])
        assert error.startswith(message), (error, message)
        assert "\n" not in error and "--tilelang-src" not in error


def test_a_final_newline_or_a_leading_zero_is_no_release_and_a_periodic_name_no_name(tmp_path):
    wheel = fake_wheel(tmp_path / "tilelang-0.1.15+mine-py3-none-any.whl")
    assert refused(versions=["0.1.15", "0.1.14\n"]).startswith("config versions[1]: '0.1.14\\n' is not a release")
    assert refused(versions=["0.1.15", "00.1.15"]).startswith(
        "config versions[1]: '00.1.15' is 0.1.15 written with a leading zero; write '0.1.15'"
    )
    assert refused(versions=["0.1.15", {"name": "mine\n", "wheel": str(wheel)}]).startswith(
        "config versions[1].name: 'mine\\n' is not a name"
    )
    error = refused(versions=["0.1.15", {"name": "a" * 64, "wheel": str(wheel)}])
    assert error.startswith(
        f"config versions[1].name: '{'a' * 64}' ends in 'a' repeated 64 times, which Snakemake refuses"
    ), error
    assert "\n" not in error
    (entry,) = version_entries.resolve([{"name": "ab" * 9 + "c", "wheel": str(wheel)}], installed=None)
    assert entry.name == "ababababababababab" + "c"  # a name that repeats less than Snakemake's 20 times is a name


def test_an_interpreters_answer_is_checked_before_it_is_trusted(tmp_path, monkeypatch):
    """Round five: a python: entry whose probe answers no JSON, a JSON list, a package folder that does not exist, a
    TileLang older than the supported range, or nothing at all (it hangs): one line naming versions[1].python; the
    hanging interpreter and the child it started are gone when the line is given."""
    where = "config versions[1].python"
    pid_file = tmp_path / "child.pid"
    cases = [
        ("echo 'version-entry-probe: {not json'\n", "answered the probe with no JSON object"),
        ("echo 'version-entry-probe: [1, 2]'\n", "answered the probe with no JSON object"),
        (probe_line(package_dir=str(tmp_path / "gone")), f"names the TileLang package folder '{tmp_path}/gone'"),
        (probe_line(package_dir=str(tmp_path), version=7), "answered the probe with version 7"),
        (probe_line(package_dir=str(tmp_path), version="0.0.1"), "has TileLang 0.0.1, older than the supported"),
        (f"sleep 300 & echo $! > {pid_file}\nwait\n", "did not answer the probe in 2 s"),
    ]
    (tmp_path / "__init__.py").write_text("")
    monkeypatch.setattr(version_entries, "PROBE_TIMEOUT_S", 2)
    for i, (script, message) in enumerate(cases):
        python = fake_interpreter(tmp_path / f"python{i}", script)
        error = refused(versions=["0.1.15", {"name": "dev", "python": python}])
        assert error.startswith(f"{where}: '{python}' {message}"), (error, message)
        assert "\n" not in error and "--tilelang-src" not in error and "importlib" not in error  # not the probe program
    assert start_time(int(pid_file.read_text())) is None  # the hanging interpreter's child: gone, or a zombie
