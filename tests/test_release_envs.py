"""scripts/release_envs.py: the release data, the `versions` check, pip's find-links, and real uv builds."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from tilelang_churn.core import passes_table as pt
from tilelang_churn.kernel import tilelang_source
from tilelang_churn.releases import capabilities, release_envs, version_entries
from tilelang_churn.releases.release_envs import BuildError, ReleaseError, build_env, load_releases

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "release_envs.py"
RANGE = "0.1.6.post2 and newer"
OLDER = "is older than 0.1.6.post2, the oldest release the workflow supports"


def check_versions(values, installed, key="versions"):
    """The names of config KEY's entries, as the workflow checks them."""
    return [entry.name for entry in version_entries.resolve(values, installed, key)]


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        check=False,
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )


# ------------------------------------------------------------------------------------ release data


def test_supported_range_is_oldest_to_newest_entry():
    releases = load_releases()
    assert list(releases) == [
        "0.1.6.post2",
        "0.1.7.post3",
        "0.1.8",
        "0.1.9",
        "0.1.10",
        "0.1.11",
        "0.1.12",
        "0.1.13",
        "0.1.14",
        "0.1.15",
    ]
    assert release_envs.SUPPORTED_RANGE == RANGE


@pytest.mark.parametrize(
    "version,pins",
    [("0.1.8", ("apache-tvm-ffi==0.1.9",)), ("0.1.10", ("apache-tvm-ffi==0.1.11",)), ("0.1.12", ())],
)
def test_pins_as_in_the_data_file(version, pins):
    release = load_releases()[version]
    assert release.requirements == pins
    assert all(pin.found for pin in release.pins), "every pin says how it was found"


def test_pass_links_are_patterns_with_known_fields(tmp_path):
    links = release_envs.load_pass_links()
    assert links.url("0.1.15", "LowerTileOp", "tilelang/transform/__init__.py", 41) == (
        "https://github.com/tile-ai/tilelang/blob/v0.1.15/tilelang/transform/__init__.py#L41"
    )
    assert "LowerTileOp" in links.url("0.1.15", "LowerTileOp")  # without a file: the search pattern
    assert (
        links.url("0.1.15", 'a b&c#"<x>')
        == "https://github.com/search?q=repo%3Atile-ai%2Ftilelang+a%20b%26c%23%22%3Cx%3E&type=code"
    )
    data = yaml.safe_load(release_envs.RELEASES_FILE.read_text())
    for pass_links, message in (
        ({"source": "https://x/{tag}/{file}", "search": "s"}, r"pass_links\.source: .* names \{file\}"),
        ({"source": "https://x/{path}"}, "pass_links: expected exactly the keys source, search"),
        ({"source": "https://x/{path", "search": "s"}, r"pass_links\.source: 'https://x/\{path'"),
        ({"source": 7, "search": "s"}, r"pass_links\.source: expected a URL pattern, got 7"),
    ):
        bad = tmp_path / "releases.yaml"
        bad.write_text(yaml.safe_dump({**data, "pass_links": pass_links}))
        with pytest.raises(release_envs.ReleaseError, match=message):
            release_envs.load_pass_links(bad)


@pytest.mark.parametrize(
    "entry,complaint",
    [
        ("pins: [{requirement: apache-tvm-ffi>=0.1.9, found: x}]", "expected NAME==VERSION"),
        ("pins: [{requirement: apache-tvm-ffi==0.1.9}]", "requirement, found"),
        ("pins: [{requirement: torch==2.13.0, found: x}]", "set elsewhere"),
        ("pins: [{requirement: apache-tvm-ffi==0.1.9, found: ''}]", "how the pin was found"),
        ("pins: 'apache-tvm-ffi==0.1.9'", "expected a list"),
        ("pins: []\n    has_lower_trace: false", "expected the keys pins, and cuda_stub where needed (what a release"),
        ("pins: []\n    cuda_stub: 1", "cuda_stub: expected true or false, got 1"),
    ],
)
def test_bad_release_data_is_named(tmp_path, entry, complaint):
    data = tmp_path / "releases.yaml"
    data.write_text(f'releases:\n  "0.1.8":\n    {entry}\n')
    with pytest.raises(ReleaseError, match=re.escape(complaint)) as caught:
        load_releases(data)
    assert str(data) in str(caught.value) and "0.1.8" in str(caught.value)


# ------------------------------------------------------------------------------------ check_versions


@pytest.mark.parametrize(
    "values,message",
    [
        (["0.1.14", "0.1.5"], f"config versions[1]: '0.1.5' {OLDER}"),
        (["0.1.6"], f"config versions[0]: '0.1.6' {OLDER}"),
        (["0.0.1"], f"config versions[0]: '0.0.1' {OLDER}"),
        (["v0.1.14"], "config versions[0]: 'v0.1.14' is not a release of the form X.Y.Z or X.Y.Z.postN"),
        (["0.1.14", "0.1"], "config versions[1]: '0.1' is not a release of the form X.Y.Z or X.Y.Z.postN"),
        (["0.1.14rc1"], "config versions[0]: '0.1.14rc1' is not a release of the form"),
        ([" 0.1.14"], "config versions[0]: ' 0.1.14' is not a release of the form"),
        (
            [0.1],
            (
                "config versions[0]: 0.1 is not a release of the form X.Y.Z or X.Y.Z.postN such as '0.1.14';"
                " quote it in YAML"
            ),
        ),
        (
            ["0.1.14", "0.1.15", "0.1.14"],
            f"config versions[2]: release '0.1.14' is a duplicate of versions[0]; give each entry a name of its own"
            f" (supported range {RANGE})",
        ),
        ("0.1.14", "config versions: '0.1.14' is not a list; give a list of TileLang releases such as ['0.1.14']"),
        ({"0.1.14": None}, "config versions: {'0.1.14': None} is not a list"),
        (None, "config versions: None is not a list"),
        ([], f"config versions: the list is empty; give at least one release (supported range {RANGE})"),
    ],
    ids=lambda case: repr(case)[:40],
)
def test_every_bad_value_names_key_value_and_range(values, message):
    with pytest.raises(ReleaseError) as caught:
        check_versions(values, installed=None)
    assert str(caught.value).startswith(message)


def test_a_release_the_data_does_not_list_gets_the_pins_of_the_nearest_older_one_and_a_warning():
    """No project file names 0.1.16 or 0.1.10.post1: accepted, with the pins of 0.1.15 and 0.1.10."""
    new, between, listed = version_entries.resolve(["0.1.16", "0.1.10.post1", "0.1.10"], installed=None)
    assert (new.listed, new.pins_from, new.pins) == (False, "0.1.15", load_releases()["0.1.15"].pins)
    assert (between.pins_from, between.pins) == ("0.1.10", load_releases()["0.1.10"].pins)
    assert (listed.listed, listed.pins_from, listed.warning) == (True, None, None)
    assert new.warning.startswith("config versions[0]: TileLang 0.1.16 is not in config/tilelang_releases.yaml")
    assert "gets the pins of 0.1.15 (none)" in new.warning


def test_the_key_name_is_the_one_given():
    with pytest.raises(ReleaseError, match=r"^config compare\.versions\[0\]: '0\.1\.5'"):
        check_versions(["0.1.5"], installed=None, key="compare.versions")


def test_valid_releases_come_back_in_the_given_order():
    assert check_versions(["0.1.15", "0.1.8", "0.1.12"], installed=None) == ["0.1.15", "0.1.8", "0.1.12"]
    assert check_versions(("0.1.10",), installed=None) == ["0.1.10"]


@pytest.mark.parametrize("installed", ["0.1.16", "0.1.5", "0.1.16.dev0+g1234abc"])
def test_the_installed_release_is_always_accepted(installed):
    assert check_versions([installed, "0.1.14"], installed=installed) == [installed, "0.1.14"]
    with pytest.raises(ReleaseError, match="duplicate"):
        check_versions([installed, installed], installed=installed)


def test_installed_release_reads_metadata_without_importing_tilelang():
    code = (
        "import sys; from tilelang_churn.releases import release_envs; "
        "print(release_envs.installed_release()); print('tilelang' in sys.modules)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO / "scripts", capture_output=True, text=True, check=True
    )
    installed, imported = proc.stdout.split()
    assert imported == "False"
    from importlib import metadata

    assert installed == metadata.version("tilelang")
    assert check_versions([installed], installed=installed) == [installed]


def test_cli_check_ok_and_bad():
    proc = run_cli("check", "0.1.14", "0.1.10")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[1].startswith("0.1.10: pins=apache-tvm-ffi==0.1.11")
    proc = run_cli("check", "0.1.14", "0.1.5")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [f"release_envs: error: config versions[1]: '0.1.5' {OLDER}"]


# ------------------------------------------------------------------------------------ pip's find-links


def _env_without_pip_find_links(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PIP_FIND_LINKS"}
    env.update(extra)
    return env


def test_disk_usage_counts_each_inode_once_across_paths_with_du_and_without(tmp_path, monkeypatch):
    """A build's disk_bytes_added: the blocks of every file and folder under the paths, a hard link (uv links an
    environment's files to its cache) counted once, as each inode's own lstat says."""
    cache, env = tmp_path / "cache", tmp_path / "env"
    (cache / "wheel").mkdir(parents=True)
    env.mkdir()
    (cache / "wheel" / "big.so").write_bytes(os.urandom(300_000))
    os.link(cache / "wheel" / "big.so", env / "big.so")
    (env / "own.pyc").write_bytes(os.urandom(5_000))
    inodes = {}
    for path in [cache, env, *cache.rglob("*"), *env.rglob("*")]:
        info = os.lstat(path)
        inodes[(info.st_dev, info.st_ino)] = info.st_blocks * 512
    expected = sum(inodes.values())
    assert release_envs.disk_usage([cache, env]) == expected  # du
    assert release_envs.walked_disk_usage([cache, env]) == expected
    monkeypatch.setattr(release_envs.shutil, "which", lambda name: None)
    assert release_envs.disk_usage([cache, env, tmp_path / "missing"]) == expected


def test_find_links_from_a_pip_config_file(tmp_path):
    config = tmp_path / "pip.conf"
    config.write_text("[global]\nfind-links =\n    /wheels/a\n    /wheels/b\n")
    env = _env_without_pip_find_links(PIP_CONFIG_FILE=str(config))
    assert release_envs.find_links(environ=env) == ["/wheels/a", "/wheels/b"]


def test_find_links_install_section_overrides_global(tmp_path):
    config = tmp_path / "pip.conf"
    config.write_text("[global]\nfind-links = /wheels/global\n[install]\nfind-links = /wheels/install\n")
    env = _env_without_pip_find_links(PIP_CONFIG_FILE=str(config))
    assert release_envs.find_links(environ=env) == ["/wheels/install"]


def test_find_links_pip_find_links_overrides_config(tmp_path):
    config = tmp_path / "pip.conf"
    config.write_text("[global]\nfind-links = /wheels/config\n")
    env = _env_without_pip_find_links(PIP_CONFIG_FILE=str(config), PIP_FIND_LINKS="/wheels/x /wheels/y")
    assert release_envs.find_links(environ=env) == ["/wheels/x", "/wheels/y"]


def test_find_links_none_configured():
    env = _env_without_pip_find_links(PIP_CONFIG_FILE=os.devnull)  # os.devnull: pip loads no config file
    assert release_envs.find_links(environ=env) == []


def test_find_links_falls_back_to_pip_find_links_without_pip(tmp_path):
    no_pip = tmp_path / "python-without-pip"
    no_pip.write_text("#!/bin/sh\nexit 1\n")
    no_pip.chmod(0o755)
    env = _env_without_pip_find_links(PIP_FIND_LINKS="/wheels/env")
    assert release_envs.find_links(python=no_pip, environ=env) == ["/wheels/env"]


@pytest.mark.skipif(not Path("/opt/wheels").is_dir(), reason="not this project's machine kind: no /opt/wheels")
def test_find_links_on_this_machine_names_the_cpu_torch_folder():
    assert "/opt/wheels" in release_envs.find_links()


def test_torch_pin_is_read_from_requirements(tmp_path):
    assert release_envs.torch_requirement(REPO / "requirements.txt") == "torch==2.13.0"
    bad = tmp_path / "requirements.txt"
    bad.write_text("torch>=2\ntilelang==0.1.15\n")
    with pytest.raises(ReleaseError, match="no 'torch==VERSION' line"):
        release_envs.torch_requirement(bad)


def test_ml_dtypes_is_pinned_as_in_requirements_unless_the_pins_name_it(tmp_path):
    """The venv's ml-dtypes (requirements.txt's pin, read here as pip reads the file) goes to every release
    environment, after torch; a release's or a user's pin of ml-dtypes wins; a file without one adds none."""
    pinned = {line.split("==")[0]: line for line in (REPO / "requirements.txt").read_text().split() if "==" in line}
    assert release_envs.base_requirements(REPO / "requirements.txt") == [pinned["torch"], pinned["ml-dtypes"]]
    assert release_envs.base_requirements(REPO / "requirements.txt", ("ML_Dtypes==0.5.1",)) == [pinned["torch"]]
    bare = tmp_path / "requirements.txt"
    bare.write_text("torch==2.13.0\n# ml-dtypes==0.6.0\n")
    assert release_envs.base_requirements(bare) == ["torch==2.13.0"]


# ------------------------------------------------------------------------------------ building


def test_build_rejects_a_bad_version_with_exit_2(tmp_path):
    proc = run_cli("build", "--version", "0.1.5", "--root", str(tmp_path / "envs"))
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"release_envs: error: release '0.1.5' {OLDER}"]
    assert not (tmp_path / "envs").exists(), "nothing is built for a bad version"


def test_build_never_clears_a_folder_that_is_not_an_environment(tmp_path):
    keep = tmp_path / "tilelang-0.1.14" / "notes.txt"
    keep.parent.mkdir()
    keep.write_text("mine")
    proc = run_cli("build", "--version", "0.1.14", "--root", str(tmp_path), "--uv", "/bin/true")
    assert proc.returncode == 3
    assert "step 'uv venv' failed" in proc.stderr and "is not a virtual environment" in proc.stderr
    assert keep.read_text() == "mine"


@pytest.fixture(scope="session")
def uv_bin() -> Path:
    found = release_envs.find_uv()
    if found is None:
        pytest.skip("uv is missing: no uv beside the interpreter, no `uv` package, none on PATH")
    return found


@pytest.mark.slow
def test_failed_install_exits_3_naming_the_step_and_the_log(tmp_path, uv_bin):
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("torch==0.0.0\n")  # no such torch: the install step fails after uv venv
    root = tmp_path / "envs"
    proc = run_cli("build", "--version", "0.1.14", "--root", str(root), "--requirements", str(requirements))
    assert proc.returncode == 3, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "tilelang 0.1.14: step 'uv pip install' failed: exit 1" in lines[0]
    log = root / "tilelang-0.1.14.build.log"
    assert lines[0].endswith(f"output in {log}")
    assert "torch==0.0.0" in log.read_text()
    assert not (root / "tilelang-0.1.14" / "environment.json").exists()


@pytest.fixture(scope="session")
def built_0_1_14(tmp_path_factory, uv_bin):
    """One real build of 0.1.14 through the command line, as a Snakemake rule would run it, over what a build that
    never finished left: an environment with a stray file and a marker cut short (test_an_invalid_marker_...)."""
    root = tmp_path_factory.mktemp("release_envs")
    left = root / "tilelang-0.1.14"
    (left / "lib").mkdir(parents=True)
    (left / "pyvenv.cfg").write_text(f"home = {Path(sys.executable).parent}\n")
    (left / "lib" / "stray.txt").write_text("left by a half-finished build")
    (left / "environment.json").write_text('{"schema": 1, "version": "0.1.14"')  # truncated: not a valid marker
    start = time.monotonic()
    proc = run_cli("build", "--version", "0.1.14", "--root", str(root))
    seconds = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr
    return root, Path(proc.stdout.strip()), seconds


@pytest.mark.slow
def test_real_build_of_0_1_14_imports_0_1_14_with_the_cpu_torch(built_0_1_14):
    root, marker, _ = built_0_1_14
    assert marker == root / "tilelang-0.1.14" / "environment.json"
    data = json.loads(marker.read_text())
    assert data["version"] == "0.1.14" and data["tilelang_version"] == "0.1.14"
    # the CPU build of the requirements.txt pin, never the multi-GB CUDA build from the index
    assert data["torch_version"] == "2.13.0+cpu" and data["torch_cuda"] is None
    assert data["packages"]["torch"] == "2.13.0+cpu"
    assert not [name for name in data["packages"] if name.startswith("nvidia")]
    assert data["packages"]["tilelang"] == "0.1.14" and data["pins"] == []
    # requirements.txt's ml-dtypes, as uv pip freeze found it installed
    assert data["base_requirements"] == release_envs.base_requirements(REPO / "requirements.txt")
    assert f"ml-dtypes=={data['packages']['ml-dtypes']}" == data["base_requirements"][1]
    assert data["python"] == str(root / "tilelang-0.1.14" / "bin" / "python")
    assert data["tilelang_cache_dir"] == str(root / "tilelang-0.1.14" / "tilelang_cache")
    assert (root / "tilelang-0.1.14" / "tilelang_cache").is_dir(), "the verifying import used the env's own cache"
    assert data["build_seconds"] > 0 and data["uv_version"] and isinstance(data["disk_bytes_added"], int)
    assert not list(marker.parent.glob(".environment.json.*")), "no temp file left beside the marker"


@pytest.mark.slow
def test_the_environment_really_runs_0_1_14(built_0_1_14):
    root, _, _ = built_0_1_14
    python = root / "tilelang-0.1.14" / "bin" / "python"
    env = dict(os.environ, TILELANG_CACHE_DIR=str(root / "tilelang-0.1.14" / "tilelang_cache"))
    code = "import importlib.metadata as m; print(m.version('tilelang'), m.version('torch'))"
    proc = subprocess.run([str(python), "-c", code], capture_output=True, text=True, env=env, check=True)
    assert proc.stdout.split() == ["0.1.14", "2.13.0+cpu"]


# What TileLang itself says it has, asked in its own interpreter (imported, not read from files)
ASK_TILELANG = """
import importlib.util, json
import tilelang, tvm
from tilelang.transform import PassConfigKey
try:
    from tilelang import instrumentation
except ImportError:
    instrumentation = None
print(json.dumps({
    "lower_trace": importlib.util.find_spec("tilelang.tools.lower_trace") is not None,
    "pass_diff": importlib.util.find_spec("tilelang.utils.pass_diff") is not None,
    "hip_lowers": tvm.get_global_func("target.build.tilelang_hip_without_compile", allow_missing=True) is not None,
    "pass_configs": sorted(key.value for key in PassConfigKey),
    "knockout_compile_hook": "session" if hasattr(instrumentation, "compile_pass_instrumentation") else "pass_context",
}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("where", ["0.1.14 environment", "installed"])
def test_probed_capabilities_are_what_tilelang_reports_once_imported(built_0_1_14, where):
    """capabilities.probe reads files only; the same TileLang, imported, answers the same."""
    root, marker, _ = built_0_1_14
    if where == "installed":
        python, source = sys.executable, tilelang_source.find_installed_source()
    else:
        python, source = str(root / "tilelang-0.1.14" / "bin" / "python"), tilelang_source.env_source(marker.parent)
    proc = subprocess.run([python, "-c", ASK_TILELANG], capture_output=True, text=True, timeout=300,
                          env=release_process_environ(), check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    said = json.loads(proc.stdout.strip().splitlines()[-1])
    probed = capabilities.probe(source).as_record()
    assert {key: probed[key] for key in said} == said
    if where != "installed":  # the marker records the probe
        assert json.loads(marker.read_text())["capabilities"] == probed


def release_process_environ() -> dict:
    from tilelang_churn.releases import release_process

    return release_process.release_environ()


def another_install_environ() -> dict:
    """This process's environment after the installed TileLang's import: its TVM_LIBRARY_PATH, PYTHONPATH and
    template paths, as TileLang itself exports them (what a test or benchmark that imported it passes on)."""
    from test_release_process import exported_by_tilelang

    return {**os.environ, **exported_by_tilelang()}


def trace_0_1_14(root: Path, out: Path, python: str = sys.executable, batch: bool = False):
    args = ["--mode", "instrument", "--shape", "64,64,64", "--block", "32,32,32", "--expect-release", "0.1.14"]
    args += ["--release-env", str(root / "tilelang-0.1.14")]
    if batch:
        jobs = json.dumps([{"args": [*args, "--out", str(out)], "log": str(out) + ".log"}])
        command = [python, str(REPO / "scripts" / "trace_batch.py"), "--jobs", "-", "--release-env", args[-1]]
    else:
        jobs, command = None, [python, str(REPO / "scripts" / "gemm_lower_trace.py"), *args, "--out", str(out)]
    proc = subprocess.run(command, input=jobs, capture_output=True, text=True, env=another_install_environ())
    return proc, json.loads((out / "run.json").read_text())


@pytest.mark.slow
@pytest.mark.parametrize("batch", [False, True], ids=["job", "batch"])
def test_a_release_started_under_another_install_s_variables_runs_on_its_own_libraries(built_0_1_14, tmp_path, batch):
    root, _, _ = built_0_1_14
    proc, run = trace_0_1_14(root, tmp_path / "out", batch=batch)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert run["versions"]["tilelang"] == "0.1.14"
    env = (root / "tilelang-0.1.14").resolve()
    assert run["native_libraries"] and all(Path(lib).resolve().is_relative_to(env) for lib in run["native_libraries"])
    installed = Path(another_install_environ()["TVM_LIBRARY_PATH"]).resolve()
    assert not installed.is_relative_to(env)


@pytest.mark.slow
def test_a_release_that_loaded_another_install_s_libtvm_records_a_broken_setup(built_0_1_14, tmp_path):
    """Its own interpreter started directly, nothing drops the variables: 0.1.14 then loads the installed
    TileLang's libtvm_compiler.so (as measured here), and the run says so instead of lowering with it."""
    root, _, _ = built_0_1_14
    python = str(root / "tilelang-0.1.14" / "bin" / "python")
    proc, run = trace_0_1_14(root, tmp_path / "out", python=python)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    installed = another_install_environ()["TVM_LIBRARY_PATH"]
    foreign = [lib for lib in run["native_libraries"] if Path(lib).resolve().is_relative_to(Path(installed).resolve())]
    assert foreign, run["native_libraries"]
    (line,) = [line for line in proc.stderr.splitlines() if line.startswith("gemm_lower_trace.py: error:")]
    assert f"loaded {foreign[0]}" in line and f"TVM_LIBRARY_PATH={installed}" in line
    rows = pt.read_rows(tmp_path / "out" / "passes.csv")
    assert [(row["pass"], row["status"]) for row in rows] == [("setup", pt.STATUS_FAILED)]


GPU_JOB_CODE = """
import json, sys
sys.path.insert(0, sys.argv[1])
from tilelang_churn.gpu import gpu_bench
from tilelang_churn.trace import trace_cli
spec = trace_cli.parse_args(["--mode", "instrument", "--shape", "64,64,64", "--block", "32,32,32"]).spec
print(json.dumps(gpu_bench.run_job(spec, {}, cache_dir=None)))
"""


@pytest.mark.slow
def test_a_gpu_job_whose_tilelang_loaded_another_install_s_libtvm_is_a_failed_row(built_0_1_14):
    """The GPU stage's job in the same state as above: a build_failed row naming the library, before any compile
    (so no GPU is needed to get there)."""
    root, _, _ = built_0_1_14
    python = str(root / "tilelang-0.1.14" / "bin" / "python")
    command = [python, "-c", GPU_JOB_CODE, str(REPO / "scripts")]
    proc = subprocess.run(command, capture_output=True, text=True, env=another_install_environ())
    assert proc.returncode == 0, proc.stderr
    row = json.loads(proc.stdout.splitlines()[-1])
    installed = Path(another_install_environ()["TVM_LIBRARY_PATH"]).resolve()
    assert row["status"] == "build_failed" and row["tilelang_version"] == "0.1.14" and not row["compiled"], row
    (library,) = re.findall(r"loaded (\S+\.so)(?:\s|$)", row["error"])  # a folder may hold ".so" (tmp.soXYZ)
    assert Path(library).resolve().is_relative_to(installed), row["error"]


@pytest.mark.slow
def test_a_second_build_with_a_valid_marker_returns_at_once(built_0_1_14):
    root, marker, first_seconds = built_0_1_14
    log = root / "tilelang-0.1.14.build.log"
    before = (marker.stat().st_mtime_ns, log.stat().st_mtime_ns, (marker.parent / "bin" / "python").lstat().st_ino)
    start = time.monotonic()
    assert build_env("0.1.14", root, requirements=REPO / "requirements.txt") == marker
    assert time.monotonic() - start < 1.0 < first_seconds
    after = (marker.stat().st_mtime_ns, log.stat().st_mtime_ns, (marker.parent / "bin" / "python").lstat().st_ino)
    assert after == before, "nothing was reinstalled, not even the log rewritten"


@pytest.mark.slow
def test_an_invalid_marker_rebuilds_from_scratch(built_0_1_14):
    """The fixture built over a truncated marker and a stray file."""
    _, marker, _ = built_0_1_14
    assert json.loads(marker.read_text())["tilelang_version"] == "0.1.14"
    assert not (marker.parent / "lib" / "stray.txt").exists(), "uv venv --clear started from an empty folder"


def test_a_build_of_a_bad_release_or_a_missing_wheel_is_refused(tmp_path):
    with pytest.raises(ReleaseError, match=re.escape(f"'0.1.5' {OLDER}")):
        build_env("0.1.5", tmp_path)
    with pytest.raises(ReleaseError, match="--wheel .*missing.whl' does not exist"):
        build_env("my-branch", tmp_path, wheel=tmp_path / "missing.whl")
    with pytest.raises(BuildError, match="step 'read requirements' failed"):
        build_env("0.1.14", tmp_path, requirements=tmp_path / "missing.txt")


# ------------------------------------------------------------------------------------ stale markers


def fake_env(root: Path, version: str = "0.1.14", installed: tuple[str, ...] = ("0.1.14",)) -> Path:
    """A release environment's files as uv lays them out: the marker, bin/python, tilelang's dist-info."""
    env = root / f"tilelang-{version}"
    (env / "bin").mkdir(parents=True)
    python = env / "bin" / "python"
    python.write_text("#!/bin/sh\nexit 0\n")
    python.chmod(0o755)
    site = env / "lib" / "python3.11" / "site-packages"
    for number in installed:
        dist_info = site / f"tilelang-{number}.dist-info"
        dist_info.mkdir(parents=True)
        (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: tilelang\nVersion: {number}\n\nText\n")
    marker = env / release_envs.MARKER_NAME
    marker.write_text(json.dumps({"schema": release_envs.MARKER_SCHEMA, "version": version, "python": str(python)}))
    return marker


def test_a_sound_environment_has_no_stale_reason(tmp_path):
    marker = fake_env(tmp_path)
    assert release_envs.stale_reason(marker) is None
    assert release_envs.installed_tilelang(marker.parent) == ["0.1.14"]


def _remove_python(marker: Path) -> None:
    (marker.parent / "bin" / "python").unlink()


def _python_not_executable(marker: Path) -> None:
    (marker.parent / "bin" / "python").chmod(0o644)


def _python_a_dangling_link(marker: Path) -> None:
    python = marker.parent / "bin" / "python"
    python.unlink()
    python.symlink_to(marker.parent / "removed-base-python")


def _another_release_installed(marker: Path) -> None:
    site = marker.parent / "lib" / "python3.11" / "site-packages"
    (site / "tilelang-0.1.14.dist-info").rename(site / "tilelang-0.1.13.dist-info")
    (site / "tilelang-0.1.13.dist-info" / "METADATA").write_text("Name: tilelang\nVersion: 0.1.13\n")


def _tilelang_uninstalled(marker: Path) -> None:
    site = marker.parent / "lib" / "python3.11" / "site-packages"
    (site / "tilelang-0.1.14.dist-info" / "METADATA").unlink()
    (site / "tilelang-0.1.14.dist-info").rmdir()


def _marker_truncated(marker: Path) -> None:
    marker.write_text(marker.read_text()[:20])


def _marker_of_another_folder(marker: Path) -> None:
    marker.write_text(json.dumps({**json.loads(marker.read_text()), "version": "0.1.13"}))


@pytest.mark.parametrize(
    "damage,reason",
    [
        (_remove_python, r"tilelang-0\.1\.14/bin/python is missing$"),
        (_python_not_executable, r"tilelang-0\.1\.14/bin/python is not an executable file$"),
        (_python_a_dangling_link, r"bin/python is missing \(a link to .*/removed-base-python, which is gone\)$"),
        (_another_release_installed, r"tilelang-0\.1\.14 holds tilelang 0\.1\.13, not the release 0\.1\.14 of its"),
        (_tilelang_uninstalled, r"tilelang-0\.1\.14 has no tilelang installed"),
        (_marker_truncated, r"environment\.json cannot be read as a JSON object$"),
        (_marker_of_another_folder, r"the marker of release 0\.1\.13, not of its folder tilelang-0\.1\.14$"),
        (lambda marker: marker.unlink(), r"environment\.json does not exist$"),
    ],
    ids=lambda case: getattr(case, "__name__", None),
)
def test_a_damaged_environment_says_why_its_marker_is_stale(tmp_path, damage, reason):
    marker = fake_env(tmp_path)
    damage(marker)
    assert re.search(reason, release_envs.stale_reason(marker) or ""), release_envs.stale_reason(marker)


def test_two_tilelang_installs_are_stale_and_named(tmp_path):
    marker = fake_env(tmp_path, installed=("0.1.13", "0.1.14"))
    assert release_envs.stale_reason(marker) == (
        f"{marker.parent} has several tilelang installs (0.1.13, 0.1.14); the marker says 0.1.14"
    )


def test_a_stale_marker_is_dropped_with_its_warning_but_kept_in_a_dry_run(tmp_path):
    marker = fake_env(tmp_path)
    assert release_envs.drop_stale_marker(marker, "0.1.14", dry_run=False) is None and marker.exists()  # sound
    python = marker.parent / "bin" / "python"
    python.unlink()
    assert release_envs.drop_stale_marker(marker, "0.1.14", dry_run=True) == (
        f"The environment of TileLang 0.1.14 will be rebuilt: {python} is missing"
    )
    assert marker.exists()  # a dry run changes nothing
    assert release_envs.drop_stale_marker(marker, "0.1.14", dry_run=False) == (
        f"Rebuilding the environment of TileLang 0.1.14: {python} is missing"
    )
    assert not marker.exists()  # so that rule release_env rebuilds the environment
    assert release_envs.drop_stale_marker(marker, "0.1.14", dry_run=False) is None  # none yet: nothing to say


def test_the_stale_check_is_cheap_enough_for_every_parse(tmp_path):
    marker = fake_env(tmp_path)
    start = time.perf_counter()
    for _ in range(200):
        assert release_envs.stale_reason(marker) is None
    assert (time.perf_counter() - start) / 200 < 0.005  # seconds per call; Snakemake parses once per release


@pytest.mark.slow
def test_the_real_environment_is_stale_once_its_python_is_removed_and_sound_once_it_is_back(built_0_1_14):
    """The check on the real build. Its rebuild, as the workflow makes it:
    test_workflow.py::test_an_environment_that_lost_its_python_is_rebuilt."""
    root, marker, _ = built_0_1_14
    assert release_envs.stale_reason(marker) is None
    assert release_envs.installed_tilelang(marker.parent) == [json.loads(marker.read_text())["tilelang_version"]]
    python = marker.parent / "bin" / "python"
    target = os.readlink(python)  # uv's venv links its python to the base interpreter
    python.unlink()
    try:
        assert release_envs.stale_reason(marker) == f"{python} is missing"
        assert marker.exists(), "the marker alone cannot tell: the workflow must ask stale_reason"
    finally:
        python.symlink_to(target)
    assert release_envs.stale_reason(marker) is None


def test_a_wheel_switched_after_its_check_is_refused_and_the_install_is_of_hashed_bytes(tmp_path):
    """Round five: a wheel path that is a symlink switched to another build. The build refuses a wheel whose sha256
    is not the one the workflow checked, and installs from a private copy whose own bytes were hashed."""
    from test_version_entries import fake_wheel

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    build_a = fake_wheel(tmp_path / "a" / "tilelang-0.1.15+mine-py3-none-any.whl")
    build_b = fake_wheel(tmp_path / "b" / build_a.name, files={"tilelang/__init__.py": "# build B\n"})
    link = tmp_path / build_a.name
    link.symlink_to(build_a)
    checked = release_envs.file_sha256(link)
    link.unlink()
    link.symlink_to(build_b)
    with pytest.raises(BuildError, match=r"step 'read wheel' failed: .* changed after it was checked: sha256 "):
        build_env("my-branch", tmp_path / "envs", wheel=link, wheel_sha256=checked)
    assert not (tmp_path / "envs").exists()  # refused before anything was built
    copy = release_envs.snapshot_wheel(link, tmp_path / "copy", release_envs.file_sha256(build_b))
    assert (copy.name, copy.read_bytes()) == (link.name, build_b.read_bytes())
    with pytest.raises(ValueError, match="changed after it was checked"):
        release_envs.snapshot_wheel(link, tmp_path / "copy", checked)
