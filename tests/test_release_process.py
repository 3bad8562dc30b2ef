"""releases/release_process.py: a release's process drops what locates another TileLang install, and names a
native library of another install it loaded anyway. Real runs of a release against another's variables: in
tests/test_release_envs.py (they need a built release environment)."""

from __future__ import annotations

import functools
import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import require_tilelang
from tilelang_churn.releases import release_process

EXPORTED = (
    "import json, os; before = dict(os.environ); import tilelang;"
    "print(json.dumps({k: v for k, v in os.environ.items() if before.get(k) != v}))"
)


def exported_by_tilelang() -> dict:
    """What the installed TileLang's import writes into os.environ, as its own process reports it."""
    require_tilelang()
    return dict(_exported_by_tilelang())


@functools.cache  # an import of TileLang in a child, the same for the whole session
def _exported_by_tilelang() -> dict:
    clean = {key: os.environ[key] for key in ("PATH", "HOME") if key in os.environ}
    proc = subprocess.run([sys.executable, "-c", EXPORTED], capture_output=True, text=True, env=clean, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_every_variable_tilelang_exports_is_dropped_for_a_release():
    exported = exported_by_tilelang()
    assert "TVM_LIBRARY_PATH" in exported and "PYTHONPATH" in exported, exported
    assert set(exported) <= set(release_process.INSTALL_VARIABLES), exported
    kept = release_process.release_environ({**exported, "PATH": "/usr/bin", "HOME": "/root", "CUDA_HOME": "/cuda"})
    assert kept == {"PATH": "/usr/bin", "HOME": "/root", "CUDA_HOME": "/cuda"}


def test_an_environments_gpu_job_imports_its_own_tilelang_not_one_on_the_workflows_pythonpath(tmp_path):
    # the lent H100, 2026-12-06: a `python:` entry of 0.1.14 under a workflow run with PYTHONPATH=<0.1.13's site>
    # imported 0.1.13 in all 55 GPU jobs, as the shell rule passed PYTHONPATH on
    other = tmp_path / "site" / "tilelang"
    other.mkdir(parents=True)
    (other / "__init__.py").write_text("__version__ = 'another install'\n")
    exported = exported_by_tilelang()  # what a workflow that imported its TileLang passes to every child
    environ = {**os.environ, **exported, "PYTHONPATH": str(other.parent)}
    report = "import json, os, sys; print(json.dumps([os.environ.get('PYTHONPATH'), sys.pycache_prefix]))"
    argv = [*release_process.environment_command(sys.executable), "-c", report]
    plain = subprocess.run([sys.executable, "-c", "import tilelang; print(tilelang.__version__)"], env=environ,
                           capture_output=True, text=True, check=True)  # fmt: skip
    assert plain.stdout.strip() == "another install"  # what the job imported before
    proc = subprocess.run(argv, env=environ, capture_output=True, text=True, check=True)
    assert json.loads(proc.stdout) == [None, str(release_process.PYCACHE)]
    code = "import tilelang; print(tilelang.__version__)"
    proc = subprocess.run([*release_process.environment_command(sys.executable), "-c", code], env=environ,
                          capture_output=True, text=True, check=True)  # fmt: skip
    assert proc.stdout.strip().splitlines()[-1] == importlib.metadata.version("tilelang")


def test_native_libraries_are_read_from_the_memory_map(tmp_path):
    maps = tmp_path / "maps"
    maps.write_text(
        "7f00-7f01 r-xp 00000000 08:01 11 /env/site-packages/tilelang/lib/libtvm_compiler.so\n"
        "7f01-7f02 r--p 00001000 08:01 11 /env/site-packages/tilelang/lib/libtvm_compiler.so\n"
        "7f02-7f03 r-xp 00000000 08:01 12 /other/site-packages/tvm_ffi/lib/libtvm_ffi.so (deleted)\n"
        "7f03-7f04 r-xp 00000000 08:01 13 /env/site-packages/tilelang/lib/libtilelang.so\n"
        "7f04-7f05 r-xp 00000000 08:01 14 /usr/lib/libc.so.6\n"
        "7f05-7f06 rw-p 00000000 00:00 0 \n"
        "7f06-7f07 rw-p 00000000 00:00 0 [heap]\n"
    )
    assert release_process.native_libraries(str(maps)) == [
        "/env/site-packages/tilelang/lib/libtilelang.so",
        "/env/site-packages/tilelang/lib/libtvm_compiler.so",
        "/other/site-packages/tvm_ffi/lib/libtvm_ffi.so",
    ]
    assert release_process.native_libraries(str(tmp_path / "absent")) == []


def test_a_library_reached_through_a_link_is_the_release_own(tmp_path):
    real = tmp_path / "real" / "tilelang"
    (real / "lib").mkdir(parents=True)
    (real / "lib" / "libtvm.so").write_bytes(b"")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    other = tmp_path / "other" / "libtvm.so"
    libraries = [str(tmp_path / "link" / "tilelang" / "lib" / "libtvm.so"), str(other)]
    assert release_process.foreign_libraries(libraries, [real.resolve()]) == [str(other)]


@pytest.mark.integration
def test_the_installed_tilelang_loads_only_its_own_libraries():
    require_tilelang()
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import tilelang;"
        "from tilelang_churn.releases import release_process as r;"
        "print(json.dumps([r.native_libraries(), [str(d) for d in r.own_directories()], "
        "r.foreign_library_problem('TileLang', r.native_libraries())]))"
    )
    scripts = str(Path(__file__).resolve().parents[1] / "scripts")
    proc = subprocess.run([sys.executable, "-c", code, scripts], capture_output=True, text=True, check=True)
    libraries, own, problem = json.loads(proc.stdout.strip().splitlines()[-1])
    import tilelang

    assert own[0] == str(Path(tilelang.__file__).resolve().parent)
    assert any(Path(lib).name.startswith("libtilelang") for lib in libraries), libraries
    assert problem is None
