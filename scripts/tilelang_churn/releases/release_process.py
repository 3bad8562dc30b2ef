"""A TileLang release's own process: the variables that locate another install are dropped, and the native
libraries it loaded are checked to be its own.

``import tilelang`` exports where its install lies (TVM_LIBRARY_PATH, PYTHONPATH and the template paths), and
every later child inherits them. A release started from such a process (a test or a benchmark that imported
the installed TileLang, a shell with a TVM build's variables) loads the other install's libtvm: two copies abort
at import ("Global Function ... is already registered", 0.1.8 and 0.1.9 under 0.1.15's), one replaces the
release's own compiler without a word (0.1.10 to 0.1.14 under 0.1.15's). Standard library only; it never imports
TileLang itself.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# what TileLang's import exports (tilelang/env.py, every release 0.1.8-0.1.15) or reads to find an install
TILELANG_VARIABLES = (
    "TVM_LIBRARY_PATH",
    "TVM_IMPORT_PYTHON_PATH",
    "TL_CUTLASS_PATH",
    "TL_COMPOSABLE_KERNEL_PATH",
    "TL_TEMPLATE_PATH",
)
# what can make a process load another install's libraries: named in the error that reports one
LIBRARY_VARIABLES = (*TILELANG_VARIABLES, "LD_LIBRARY_PATH", "LD_PRELOAD")
# and, for a release's own interpreter, what would put another install's modules before the release's own
INSTALL_VARIABLES = (*TILELANG_VARIABLES, "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
NATIVE_PREFIXES = ("libtvm", "libtilelang")  # libtvm.so, libtvm_runtime.so, libtvm_compiler.so, libtvm_ffi.so
MAPS = "/proc/self/maps"


# set in a process started in another environment: the --release-env value it runs for (no second re-run)
RUNNING_IN = "TILELANG_CHURN_RELEASE_ENV"
# bytecode of a user's environment (an interpreter named in config versions) goes here, not into its site-packages
PYCACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tilelang-churn" / "pycache"


def release_environ(environ=None) -> dict:
    """ENVIRON (default os.environ) without INSTALL_VARIABLES: what a release's own process starts with."""
    environ = os.environ if environ is None else environ
    return {key: value for key, value in environ.items() if key not in INSTALL_VARIABLES}


def exec_release(python: str, argv: list[str], release_env: str | None = None) -> None:
    """Replace this process by PYTHON running ARGV (its script and arguments) with release_environ(). For an
    interpreter of a user's environment (``release_env`` names the interpreter itself), bytecode is written under
    PYCACHE: the environment is used as it is, nothing written into it."""
    environ = release_environ()
    if release_env:
        environ[RUNNING_IN] = release_env
        if Path(release_env).is_file():
            environ["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    os.execve(python, [python, *argv], environ)


def environment_command(python: str) -> list[str]:
    """The command that runs PYTHON of a user's environment as exec_release does, for a shell rule: ``env`` without
    INSTALL_VARIABLES (a PYTHONPATH of the workflow's own install would import its TileLang), bytecode under
    PYCACHE."""
    unset = [arg for name in INSTALL_VARIABLES for arg in ("-u", name)]
    return ["env", *unset, f"PYTHONPYCACHEPREFIX={PYCACHE}", python]


def native_libraries(maps: str = MAPS) -> list[str]:
    """The TVM and TileLang shared libraries mapped into this process, sorted; [] where /proc is absent."""
    try:
        with open(maps, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return []
    found = set()
    for line in lines:
        fields = line.split(maxsplit=5)
        path = fields[5].strip() if len(fields) == 6 else ""
        if path.startswith("/") and os.path.basename(path).startswith(NATIVE_PREFIXES):
            found.add(path.removesuffix(" (deleted)"))
    return sorted(found)


def own_directories() -> list[Path]:
    """The folders of the imported tilelang and tvm_ffi packages (resolved): where the release's libraries lie."""
    found = []
    for name in ("tilelang", "tvm_ffi"):
        path = getattr(sys.modules.get(name), "__file__", None)
        if path:
            found.append(Path(path).resolve().parent)
    return found


def foreign_libraries(libraries: list[str], own: list[Path]) -> list[str]:
    """Those of LIBRARIES (resolved) that lie in none of the folders OWN."""
    return [path for path in libraries if not any(Path(path).resolve().is_relative_to(base) for base in own)]


def _names_another_install(value: str, own: list[Path]) -> bool:
    """Whether a path list (os.pathsep or, as LD_PRELOAD allows, spaces between entries) names a place outside OWN."""
    return bool(foreign_libraries([entry for entry in value.replace(" ", os.pathsep).split(os.pathsep) if entry], own))


def foreign_library_problem(what: str, libraries: list[str]) -> str | None:
    """Why WHAT, the imported TileLang, runs native code from another install (LIBRARIES: native_libraries()),
    naming the first such library and the variables that point away, or None: rows traced with another install's
    compiler would be wrong data."""
    own = own_directories()
    foreign = foreign_libraries(libraries, own)
    if not foreign or not own:
        return None
    pointing_away = [
        f"{key}={os.environ[key]}" for key in LIBRARY_VARIABLES if _names_another_install(os.environ.get(key, ""), own)
    ]
    why = f" ({', '.join(pointing_away)})" if pointing_away else ""
    more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
    return f"{what} (from {own[0]}) loaded {foreign[0]}{more}, a library of another install{why}"
