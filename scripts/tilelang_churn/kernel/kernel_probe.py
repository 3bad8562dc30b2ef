"""What a kernel's source computes instead of spelling: its decorator's ``pass_configs`` and ``out_idx`` and its
``@autotune`` configs, read by importing the file in a child process (``scripts/kernel_probe.py``) with the
workflow's TileLang.

The config check reads everything else from the source (kernel_source.py); the probe runs only for a setting the
source gives as a call or a name it cannot follow (``pass_configs=get_pass_configs()``,
``@autotune(configs=get_configs())``). One import answers for every kernel of the file (kernel_source's list and
the asked function); an @autotune ``configs`` that is a callable, which TileLang calls with the kernel's
arguments, is called in a second import with the entry's fixed parameters. At most ``autotune_max`` + 1 configs
are read (an endless generator ends there). A file whose import fails (it needs a GPU, a package) gives
``{"error": one line}``: its jobs then fail with the same line, as rows.

The child answers through a file, not its stdout: it is started in a session of its own, and once it has ended
(or run past config ``kernel_import_timeout_s``) that session's process group is killed, so a process the
kernel's import started (``subprocess.Popen``, ``os.fork``) neither holds the probe up nor outlives it.

Each answer is cached in memory and under ``.snakemake/tilelang-churn/kernel-probes/``, keyed by the kernel file
and the modules it imports from its folder (kernels.kernel_files_of, the rule of the trace cache's key), each by
content. The entry also holds every file under the kernel's folder that the import read (modules, data files:
seen by an audit hook on ``open``) with its sha256: a cached answer holds only while they all still match. An
import past its time limit is cached as failed, for that limit or a shorter one; other failures are not cached.
A cache file that does not read is a miss, said in one line.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tilelang_churn.core import child_group, devices, files
from tilelang_churn.kernel import device_profiles, kernels

ENTRY = Path(__file__).resolve().parents[2] / "kernel_probe.py"
TIMEOUT_KEY = "kernel_import_timeout_s"  # the config key of the probe's time limit
PROBE_TIMEOUT_S = 600.0  # its default: a file that imports for longer is taken as failing
AUTOTUNE_MAX = 64  # config kernels[i].autotune_max's default
CACHE_DIR = Path(".snakemake") / "tilelang-churn" / "kernel-probes"
CALLABLE = "<callable>"  # autotune_configs of a kernel whose configs TileLang calls with the kernel's arguments
SETTINGS = ("pass_configs", "out_idx", "autotune_configs")  # the fields of one kernel's answer
_probed: dict[Path, dict] = {}


def probe(
    file: str | Path,
    function: str,
    fixed: dict,
    autotune_max: int = AUTOTUNE_MAX,
    timeout_s: float = PROBE_TIMEOUT_S,
    device: str | None = None,
    pythonpath: tuple[str, ...] = (),
) -> dict:
    """{"pass_configs": {...}, "out_idx": ..., "autotune_configs": [...] | None} of FUNCTION in FILE, or
    {"error": "..."}; fixed: the parameters an @autotune configs callable is called with; autotune_configs holds
    at most autotune_max + 1 configs; timeout_s: how long one import may take (config kernel_import_timeout_s);
    device: the profile the file is imported under (core/devices.py Profile.to_json), part of the cache key;
    pythonpath: folders put first on the child's PYTHONPATH (the kernel's own requirements), part of it too."""
    path = Path(file).resolve()
    functions = sorted({function, *kernels.kernel_functions(path)})
    asked = (autotune_max, timeout_s, device, tuple(pythonpath))
    found = _probe_file(path, functions, None, *asked).get(function)
    found = found or {"error": f"{path}: no kernel {function!r}"}
    if found.get("autotune_configs") == CALLABLE:
        found = _probe_file(path, [function], fixed, *asked).get(function) or found
    return found


def _probe_file(
    path: Path,
    functions: list[str],
    fixed: dict | None,
    cap: int,
    timeout_s: float,
    device: str | None = None,
    pythonpath: tuple[str, ...] = (),
) -> dict:
    """{function: its settings} for FUNCTIONS of the file at PATH, one child process for all (cached)."""
    asked = [functions, fixed, sys.executable, cap] + ([device] if device else []) + list(pythonpath)
    sources = kernels.file_digests(kernels.kernel_files_of([str(path)]))  # as the trace cache keys a batch
    key = json.dumps([asked, sources], sort_keys=True, default=str).encode()
    cache = CACHE_DIR / f"{hashlib.sha256(key).hexdigest()}.json"
    if cache not in _probed:
        entry = _cached_entry(cache, path, functions, timeout_s)
        if entry is None:
            entry = _run_probe(path, functions, fixed, cap, timeout_s, device, pythonpath)
            if "timed_out_s" in entry or not any("error" in found for found in entry["answer"].values()):
                try:
                    cache.parent.mkdir(parents=True, exist_ok=True)
                    files.write_json(cache, entry)
                except OSError:
                    pass  # a folder that cannot be written only means the import runs again next time
        _probed[cache] = entry["answer"]
    return _probed[cache]


def _cached_entry(cache: Path, path: Path, functions: list[str], timeout_s: float) -> dict | None:
    """The cache's entry when it answers now: None when there is none, it does not read (said in one line), a file
    the import read has changed, or it timed out under a shorter limit than TIMEOUT_S."""
    try:
        entry = json.loads(cache.read_text(encoding="utf-8"))
        problem = entry_problem(entry, functions)
    except FileNotFoundError:
        return None
    except OSError as exc:
        problem = f"it cannot be read: {exc.strerror or exc}"
    except (ValueError, RecursionError) as exc:
        problem = f"not JSON: {exc}"
    if problem:
        print(f"job_grid: the import probe's cached answer {cache} does not read ({problem}); importing {path} again",
              file=sys.stderr)  # fmt: skip
        return None
    if entry.get("timed_out_s", timeout_s) < timeout_s:
        return None
    if _digests(entry["files"]) != entry["files"]:
        return None
    return entry


def entry_problem(entry, functions: list[str]) -> str | None:
    """Why ENTRY is no cache entry answering for FUNCTIONS ({"answer": {function: settings}, "files": {path:
    sha256}, "timed_out_s": seconds, only for an import stopped at its limit}), None when it is one."""
    if not isinstance(entry, dict):
        return f"not a mapping but {type(entry).__name__}"
    answer, read = entry.get("answer"), entry.get("files")
    if not isinstance(answer, dict):
        return "no answer" if answer is None else f"its answer is {type(answer).__name__}, not a mapping"
    if not isinstance(read, dict) or not all(isinstance(v, str) for v in [*read, *read.values()]):
        return "no files" if read is None else "its files are not a mapping of paths to sha256 digests"
    timed_out = entry.get("timed_out_s")
    if timed_out is not None and (not _is_number(timed_out) or timed_out <= 0):
        return f"its timed_out_s is {timed_out!r}, not a number of seconds"
    for function in functions:
        problem = _settings_problem(answer.get(function, "missing"))
        if problem:
            return f"the answer for {function}: {problem}"
    return None


def _settings_problem(found) -> str | None:
    if not isinstance(found, dict):
        return "missing" if found == "missing" else f"{type(found).__name__}, not a mapping"
    if "error" in found:
        return None if isinstance(found["error"], str) else "its error is not text"
    missing = [name for name in SETTINGS if name not in found]
    if missing:
        return f"no {missing[0]}"
    configs, out_idx = found["autotune_configs"], found["out_idx"]
    if not isinstance(found["pass_configs"], dict):
        return "its pass_configs are not a mapping"
    if not (out_idx is None or _is_int(out_idx) or (isinstance(out_idx, list) and all(map(_is_int, out_idx)))):
        return "its out_idx is not an index or a list of them"
    if not (configs in (None, CALLABLE) or (isinstance(configs, list) and all(isinstance(c, dict) for c in configs))):
        return "its autotune_configs are not a list of mappings"
    return None


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _digests(paths) -> dict[str, str | None]:
    """The sha256 of each file now (None: it is gone or cannot be read)."""
    found: dict[str, str | None] = {}
    for path in paths:
        try:
            found[path] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        except OSError:
            found[path] = None
    return found


def _run_probe(
    path: Path,
    functions: list[str],
    fixed: dict | None,
    cap: int,
    timeout_s: float,
    device: str | None,
    pythonpath: tuple[str, ...] = (),
) -> dict:
    """A cache entry: the child's answer and the files its import read, or each function's error."""
    print(f"job_grid: importing {path} to read what its source computes for {', '.join(functions)} (pass_configs, "
          f"out_idx, at most {cap + 1} @autotune configs; at most {timeout_s:g} s, config {TIMEOUT_KEY})",
          file=sys.stderr)  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="tlchurn-probe-") as folder:
        answer = Path(folder) / "answer.json"
        command = [sys.executable, str(ENTRY), str(path), ",".join(functions), "--answer", str(answer)]
        command += ["--autotune-max", str(cap)] + (["--fixed", json.dumps(fixed)] if fixed is not None else [])
        command += ["--device", device] if device else []
        try:  # in a group of its own: whatever the kernel's import started ends with it
            env = None
            if pythonpath:
                env = dict(os.environ)
                env["PYTHONPATH"] = os.pathsep.join([*pythonpath, *filter(None, [env.get("PYTHONPATH")])])
            proc = child_group.run(command, timeout=timeout_s, env=env)
        except subprocess.TimeoutExpired:
            proc = None
        status = None if proc is None else proc.returncode
        entry = _read_answer(answer, functions) if status == 0 else None
        said = "" if proc is None else (proc.stderr.strip() or proc.stdout.strip())
        last = (said.splitlines() or ["no output"])[-1]
    if status is None:
        error = (f"{path}: importing it to read its settings did not end in {timeout_s:g} s and was stopped "
                 f"(config {TIMEOUT_KEY}: {timeout_s:g}; raise it for an import that takes longer)")  # fmt: skip
        return {"answer": {name: {"error": error} for name in functions}, "files": {}, "timed_out_s": timeout_s}
    if entry is None:
        error = f"{path}: reading its kernels' settings failed (exit {status}: {last})"
        return {"answer": {name: {"error": error} for name in functions}, "files": {}}
    return entry


def _read_answer(answer: Path, functions: list[str]) -> dict | None:
    try:
        entry = json.loads(answer.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return entry if entry_problem(entry, functions) is None else None


def answer(
    file: Path, functions: list[str], fixed: dict | None, autotune_max: int, out: Path | None, device: str | None = None
) -> int:
    """The probe child's work: import FILE once (recording what it reads under its folder), write the settings of
    each of FUNCTIONS and the files read to OUT (a cache entry; stdout without OUT). A copy of this process that
    the kernel's import forked and that went on through the rest of it exits without a word."""
    pid = os.getpid()
    opened = _opened_files()
    with device_profiles.active(devices.from_json(device)):
        found = settings(file, functions, fixed, autotune_max)
    if os.getpid() != pid:
        os._exit(0)
    entry = {"answer": found, "files": _files_read(file.resolve(), opened)}
    if out is None:
        print(json.dumps(entry))
    else:
        files.write_json(out, entry)
    return 0


def _opened_files() -> set[str]:
    """The paths this process opens for reading from now on (an audit hook on ``open``: builtin open, io.open_code,
    os.open)."""
    opened: set[str] = set()
    writing = os.O_WRONLY | os.O_RDWR

    def hook(event: str, args: tuple) -> None:
        if event != "open":
            return
        try:  # an exception in an audit hook would fail the open itself
            path, mode, flags = args
            reads = not set(mode) & set("wax+") if isinstance(mode, str) else not (flags or 0) & writing
            if reads and isinstance(path, (str, bytes, os.PathLike)):
                opened.add(os.path.abspath(os.fsdecode(path)))
        except Exception:  # noqa: BLE001,S110 - an odd event is only not recorded
            pass

    sys.addaudithook(hook)
    return opened


def _files_read(kernel: Path, opened: set[str]) -> dict[str, str]:
    """{path: sha256} of every file under the kernel's folder that its import read (OPENED) or imported as a
    module, but the kernel itself, bytecode caches and an environment's own files (a venv inside the folder)."""
    folder = kernel.parent
    prefixes = {Path(p).resolve() for p in (sys.prefix, sys.exec_prefix, sys.base_prefix)}
    skip = [prefix for prefix in prefixes if not folder.is_relative_to(prefix)]
    modules = {getattr(module, "__file__", None) for module in list(sys.modules.values())}
    found: set[Path] = set()
    for raw in opened | {name for name in modules if isinstance(name, str)}:
        path = Path(os.path.realpath(raw))
        if path.is_relative_to(folder) and path != kernel and "__pycache__" not in path.parts and path.is_file():
            found |= set() if any(path.is_relative_to(prefix) for prefix in skip) else {path}
    return {k: v for k, v in sorted(_digests(str(path) for path in found).items()) if v is not None}


def settings(file: Path, functions: list[str], fixed: dict | None, autotune_max: int = AUTOTUNE_MAX) -> dict:
    """The probe's work, in this process: import the file once, read each kernel object's settings. A callable
    @autotune configs is called with fixed, or left as CALLABLE when fixed is None; at most autotune_max + 1
    configs are read."""
    try:
        module = kernels.load_module(file)
    except kernels.KernelError as error:
        return {name: {"error": str(error)} for name in functions}
    return {name: _settings_of(file, module, name, fixed, autotune_max) for name in functions}


def _settings_of(file: Path, module, function: str, fixed: dict | None, autotune_max: int) -> dict:
    built = getattr(module, function, None)
    if built is None:
        return {"error": f"{file}: no function {function!r}"}
    impl = kernels.jit_impl(built)
    own = kernels.own_pass_configs(built, None)  # the decorator's: no PrimFunc is built here
    out_idx = getattr(impl, "out_idx", None)
    configs = getattr(built, "configs", None) if hasattr(built, "jit_impl") else None
    doing = (
        f"calling {function}'s @autotune configs" if callable(configs) else f"reading {function}'s @autotune configs"
    )
    try:
        if callable(configs):
            configs = CALLABLE if fixed is None else configs(**kernels.call_values(fixed, jit=True))
        if configs is not None and configs != CALLABLE:  # an endless generator ends at the cap
            configs = [dict(config) for config in itertools.islice(configs, autotune_max + 1)]
    except Exception as exc:  # noqa: BLE001 - one line for the config check
        return {"error": kernels.import_problem(exc, file.resolve(), doing)}
    found = {"pass_configs": own, "out_idx": list(out_idx) if isinstance(out_idx, (list, tuple)) else out_idx,
             "autotune_configs": configs}  # fmt: skip
    try:
        json.dumps(found)
    except (TypeError, ValueError) as exc:
        return {"error": f"{file}: {function}()'s settings are not plain values ({exc})"}
    return found
