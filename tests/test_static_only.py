"""--static-only: needs no TileLang; locates the book's entry points by parsing a TileLang source."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import make_workdir, run_script, snakemake

REPO = Path(__file__).resolve().parents[1]

ENTRY_FILES = (
    "tilelang/__init__.py",
    "tilelang/env.py",
    "tilelang/tools/lower_trace/__init__.py",
    "tilelang/tools/lower_trace/core.py",
    "tilelang/utils/pass_diff.py",
    "tilelang/transform/simplify.py",
)


def installed_tilelang() -> Path:
    spec = importlib.util.find_spec("tilelang")
    if spec is None:
        pytest.skip("tilelang is not installed")
    return Path(list(spec.submodule_search_locations)[0])


def line_of(path: Path, pattern: str) -> int:
    """1-based line of the first match, found by the test itself with a regular expression."""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if re.match(pattern, line):
            return number
    raise AssertionError(f"{pattern!r} not in {path}")


def printed_location(stdout: str, label: str) -> str:
    for line in stdout.splitlines():
        if line.strip().startswith(label):
            return line.strip()[len(label) :].strip()
    raise AssertionError(f"{label!r} not printed:\n{stdout}")


@pytest.mark.integration
def test_without_tilelang_it_exits_0_and_says_nothing_was_verified():
    # -S: no site-packages, so tilelang can neither be imported nor found
    proc = run_script("--static-only", python_flags=("-S",))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("py_compile: ok")
    assert "no entry point was verified" in proc.stdout
    assert "(not located)" in proc.stdout


def _check_all_five(stdout: str, root: Path) -> None:
    env_line = line_of(root / "env.py", r"\s*TL_LOWER_TRACE\s*=")
    assert printed_location(stdout, "TL_LOWER_TRACE / TL_LOWER_TRACE_DIR").startswith(f"tilelang/env.py:{env_line}-")
    span = printed_location(stdout, "enable() / disable()")
    core = root / "tools/lower_trace/core.py"
    first, last = re.fullmatch(r"tilelang/tools/lower_trace/core\.py:(\d+)-(\d+)", span).groups()
    assert int(first) == line_of(core, r"def enable\(")
    assert int(last) > line_of(core, r"def disable\(")
    singles = {
        "lower_trace()": ("tools/lower_trace/__init__.py", r"def lower_trace\("),
        "pass_diff()": ("utils/pass_diff.py", r"def pass_diff\("),
        "transform.Simplify": ("transform/simplify.py", r"def Simplify\("),
    }
    for label, (relpath, pattern) in singles.items():
        assert printed_location(stdout, label) == f"tilelang/{relpath}:{line_of(root / relpath, pattern)}"


@pytest.mark.integration
def test_with_the_installed_package_each_entry_is_printed_where_the_test_finds_it():
    root = installed_tilelang()
    proc = run_script("--static-only", "--tilelang-src", str(root))
    assert proc.returncode == 0, proc.stderr
    _check_all_five(proc.stdout, root)
    # with no --tilelang-src the same installed package is found without importing it
    plain = run_script("--static-only", python_flags=("-X", "importtime"))
    assert plain.returncode == 0
    assert plain.stdout.splitlines()[2:] == proc.stdout.splitlines()[2:]
    assert not re.search(r"\|\s+tilelang$", plain.stderr, re.M)


@pytest.mark.integration
def test_a_wheel_is_read_without_unpacking(tmp_path):
    root = installed_tilelang()
    wheel = tmp_path / "tilelang-0.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for relpath in ENTRY_FILES:
            archive.write(root.parent / relpath, relpath)
    proc = run_script("--static-only", "--tilelang-src", str(wheel))
    assert proc.returncode == 0, proc.stderr
    _check_all_five(proc.stdout, root)


def copy_with_pass_diff_renamed(dest: Path) -> Path:
    """The installed TileLang's entry files with pass_diff renamed: a source that lacks what pass-diff needs."""
    root = installed_tilelang()
    for relpath in ENTRY_FILES:
        (dest / relpath).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(root.parent / relpath, dest / relpath)
    pass_diff_py = dest / "tilelang/utils/pass_diff.py"
    pass_diff_py.write_text(pass_diff_py.read_text().replace("def pass_diff(", "def renamed_pass_diff("))
    return dest


@pytest.mark.integration
def test_a_missing_entry_point_is_named_with_the_modes_it_takes_away(tmp_path):
    proc = run_script("--static-only", "--tilelang-src", str(copy_with_pass_diff_renamed(tmp_path)))
    assert proc.returncode == 0, proc.stderr  # a finding: the config check stops a run whose modes need it
    assert "missing: pass_diff in tilelang/utils/pass_diff.py" in proc.stdout
    assert printed_location(proc.stdout, "pass-diff") == "not served: lacks pass_diff()"
    assert printed_location(proc.stdout, "instrument") == "served (needs none of these)"
    assert "lower_trace()" in proc.stdout  # the others are still listed


def test_the_config_check_stops_only_a_mode_that_needs_a_missing_entry_point(tmp_path):
    from tilelang_churn.grid import config_checks, job_grid
    from tilelang_churn.kernel import tilelang_source

    source = tilelang_source.SourceTree.from_path(copy_with_pass_diff_renamed(tmp_path))
    cfg = {"shapes": [{"M": 64, "N": 64, "K": 64}], "targets": ["cuda-sm90"]}

    def grid(modes, versions=None):
        config = config_checks.validate_config(dict(cfg, modes=modes, versions=versions))
        return job_grid.build_grid(config, installed="0.1.15", source=source)

    with pytest.raises(config_checks.ConfigError) as caught:
        grid(["instrument", "pass-diff"])
    assert str(caught.value) == (
        f"config modes[1]: mode 'pass-diff' needs what TileLang 0.1.15 installed beside the workflow ({tmp_path}) "
        "lacks: pass_diff in tilelang/utils/pass_diff.py; it serves trace-env, trace-api, instrument: drop the mode "
        "or install a release that has it (gemm_lower_trace.py --static-only lists what it has)"
    )
    assert len(grid(["instrument", "trace-env"]).jobs) == 2
    # no job imports the installed release: its source does not matter
    assert len(grid(["pass-diff"], versions=["0.1.14"]).jobs) == 1


def test_each_pass_links_to_the_line_that_defines_it_in_the_installed_release():
    """The pages' pass links (tilelang_source.pass_links) against the installed TileLang's own files: a TileLang
    pass at the line of its ``def``, a TVM pass (the 3rdparty submodule) and an unknown name to the search."""
    from tilelang_churn.kernel import tilelang_source
    from tilelang_churn.releases import release_envs

    source = tilelang_source.find_installed_source()
    if source is None:
        pytest.skip("no tilelang installed")
    links = release_envs.load_pass_links()
    release = source.release
    names = ["LowerTileOp", "Simplify", "LowerOpaqueBlock", "no_such_pass", "VerifyMemory"]
    got = tilelang_source.pass_links(source, release, names, links)
    root = installed_tilelang().parent
    for name in ("LowerTileOp", "Simplify", "LowerOpaqueBlock"):
        url, kind = got[name]
        path, line = re.fullmatch(rf".*/blob/v{re.escape(release)}/(.+)#L(\d+)", url).groups()
        assert kind == "definition" and (root / path).read_text().splitlines()[int(line) - 1].startswith(f"def {name}(")
    assert got["no_such_pass"] == (links.url(release, "no_such_pass"), "search")
    catalog = tilelang_source.pass_catalog(source)
    assert catalog["VerifyMemory"].relpath.startswith(tilelang_source.THIRD_PARTY)  # TVM's
    assert got["VerifyMemory"][1] == "search"


@pytest.mark.integration
def test_a_source_path_that_holds_no_tilelang_exits_2(tmp_path):
    proc = run_script("--static-only", "--tilelang-src", str(tmp_path / "nowhere"))
    assert proc.returncode == 2
    assert "--tilelang-src" in proc.stderr and "nowhere" in proc.stderr


def test_a_syntax_error_in_the_scripts_fails_py_compile(tmp_path):
    scripts = tmp_path / "scripts"
    shutil.copytree(
        Path(__file__).resolve().parents[1] / "scripts", scripts, ignore=shutil.ignore_patterns("__pycache__")
    )
    (scripts / "broken.py").write_text("def broken(:\n")
    proc = subprocess.run(
        [sys.executable, "-S", str(scripts / "gemm_lower_trace.py"), "--static-only"], capture_output=True, text=True
    )
    assert proc.returncode == 1
    assert "py_compile: FAILED" in proc.stdout and "broken.py" in proc.stdout


# ------------------------------------------------------------------ a real older release as the workflow's own


@pytest.fixture(scope="module")
def old_release(release_envs_dir):
    """A real release without lower_trace: tilelang-0.1.12 in the session's release_envs_dir, built there with uv
    when it is missing or unsound, where the comparison run (test_workflow.compared_run, the same xdist group: never
    both at once) finds it and builds it no second time. Returns (its python, its site-packages)."""
    from tilelang_churn.releases import release_envs

    version = "0.1.12"
    marker = release_envs_dir / f"tilelang-{version}" / "environment.json"
    if not marker.is_file() or release_envs.stale_reason(marker):
        if release_envs.find_uv() is None:
            pytest.skip("uv is missing: no release environment can be built")
        root = release_envs_dir
        proc = subprocess.run(
            [sys.executable, str(REPO / "scripts" / "release_envs.py"), "build", "--version", version]
            + ["--root", str(root)],
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert proc.returncode == 0, proc.stderr
        marker = Path(proc.stdout.strip())
    # the environment's own folder: the marker records the path it was built at, which may have been a link
    python = marker.parent / "bin" / "python"
    site = next(marker.parent.glob("lib/python*/site-packages"))
    assert (site / f"tilelang-{version}.dist-info").is_dir()
    return version, python, site


# a release environment: slow, and one build for both tests and the comparison run (its xdist group)
@pytest.mark.slow
@pytest.mark.xdist_group("compared_run")
def test_an_older_release_is_checked_mode_by_mode_and_passes(old_release):
    import json

    from tilelang_churn.core import trace_modes

    version, python, site = old_release
    # what the release itself finds once imported: the module each mode needs
    modules = sorted({mode.requires for mode in trace_modes.MODES.values() if mode.requires})
    ask = "import importlib.util as u, json, sys; print(json.dumps({m: bool(u.find_spec(m)) for m in sys.argv[1:]}))"
    found = json.loads(subprocess.run([str(python), "-c", ask, *modules], capture_output=True, text=True,
                                      check=True).stdout.splitlines()[-1])  # fmt: skip
    own = subprocess.run(
        [str(python), str(REPO / "scripts" / "gemm_lower_trace.py"), "--static-only"], capture_output=True, text=True
    )
    given = run_script("--static-only", "--tilelang-src", str(site))
    for proc in (own, given):
        assert proc.returncode == 0, proc.stderr
        assert f"release {version}):" in proc.stdout
        for mode in trace_modes.MODES.values():  # what the release has, mode by mode
            served = printed_location(proc.stdout, f"{mode.name} ").startswith("served")
            assert served == (mode.requires is None or found[mode.requires]), (mode.name, proc.stdout)
    assert "missing: TL_LOWER_TRACE, TL_LOWER_TRACE_DIR in tilelang/env.py" in own.stdout


def old_release_as_the_workflows_own(tmp_path: Path, site: Path, version: str) -> dict:
    """PYTHONPATH holding only the old release's tilelang (and its metadata) in front of the venv's 0.1.15."""
    front = tmp_path / "front"
    front.mkdir()
    (front / "tilelang").symlink_to(site / "tilelang", target_is_directory=True)
    (front / f"tilelang-{version}.dist-info").symlink_to(site / f"tilelang-{version}.dist-info")
    return dict(os.environ, PYTHONPATH=str(front))


# a release environment: slow, and one build for both tests and the comparison run (its xdist group)
@pytest.mark.slow
@pytest.mark.xdist_group("compared_run")
def test_the_workflow_on_an_older_release_fails_before_any_job_only_for_a_mode_it_lacks(old_release, tmp_path):
    version, _, site = old_release
    env = old_release_as_the_workflows_own(tmp_path, site, version)
    workdir = make_workdir(tmp_path / "wf")
    config = ("--configfile", "config/test_config.yaml")
    proc = snakemake(workdir, "-n", *config, "--config", "modes=[instrument,trace-env]", env=env)
    assert proc.returncode != 0
    lines = [line for line in (proc.stdout + proc.stderr).splitlines() if line.startswith("config modes[")]
    assert len(lines) == 1, proc.stdout + proc.stderr
    assert lines[0].startswith(f"config modes[1]: mode 'trace-env' needs what TileLang {version} installed beside")
    assert "TL_LOWER_TRACE, TL_LOWER_TRACE_DIR in tilelang/env.py" in lines[0]
    assert "rule " not in proc.stdout and not (workdir / "results").exists()
    # instrument needs none of the entry points: the static check runs and passes (booleans as --config strings)
    args = ("--cores", "1", "static", *config, "--config", "modes=[instrument]", "job_figures=false")
    proc = snakemake(workdir, *args, "fail_on_pass_error=true", env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = (workdir / "results" / "static" / "static_check.txt").read_text()
    assert f"release {version}):" in report
    assert printed_location(report, "instrument ") == "served (needs none of these)"
    assert printed_location(report, "trace-env ").startswith("not served: lacks TL_LOWER_TRACE")
