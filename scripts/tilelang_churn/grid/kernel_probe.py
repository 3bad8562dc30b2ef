"""What a kernel's source computes instead of spelling: its decorator's ``pass_configs`` and ``out_idx`` and its
``@autotune`` configs, read by importing the file in a child process (``scripts/kernel_probe.py``) with the
workflow's TileLang.

The config check reads everything else from the source (kernel_source.py); the probe runs only for a setting the
source gives as a call or a name it cannot follow (``pass_configs=get_pass_configs()``,
``@autotune(configs=get_configs())``). One import answers for every kernel of the file (kernel_source's list and
the asked function); an @autotune ``configs`` that is a callable, which TileLang calls with the kernel's
arguments, is called in a second import with the entry's fixed parameters. Each answer is cached per file content
in memory and under ``.snakemake/tilelang-churn/kernel-probes/``. A file whose import fails (it needs a GPU, a
package) gives ``{"error": one line}``: its jobs then fail with the same line, as rows.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

from tilelang_churn.core import files
from tilelang_churn.grid import kernels

ENTRY = Path(__file__).resolve().parents[2] / "kernel_probe.py"
PROBE_TIMEOUT_S = 600  # a file that imports for longer is taken as failing
CACHE_DIR = Path(".snakemake") / "tilelang-churn" / "kernel-probes"
CALLABLE = "<callable>"  # autotune_configs of a kernel whose configs TileLang calls with the kernel's arguments
_probed: dict[str, dict] = {}


def probe(file: str | Path, function: str, fixed: dict) -> dict:
    """{"pass_configs": {...}, "out_idx": ..., "autotune_configs": [...] | None} of FUNCTION in FILE, or
    {"error": "..."}; fixed: the parameters an @autotune configs callable is called with."""
    path = Path(file).resolve()
    functions = sorted({function, *kernels.kernel_functions(path)})
    found = _probe_file(path, functions, None).get(function) or {"error": f"{path}: no kernel {function!r}"}
    if found.get("autotune_configs") == CALLABLE:
        found = _probe_file(path, [function], fixed).get(function) or found
    return found


def _probe_file(path: Path, functions: list[str], fixed: dict | None) -> dict:
    """{function: its settings} for FUNCTIONS of the file at PATH, one child process for all (cached)."""
    key = json.dumps([functions, fixed, sys.executable], sort_keys=True, default=str).encode()
    digest = hashlib.sha256(path.read_bytes() + key).hexdigest()
    return files.cached_json(
        _probed,
        CACHE_DIR / f"{digest}.json",
        lambda: _run_probe(path, functions, fixed),
        keep=lambda answer: not any("error" in found for found in answer.values()),
    )


def _run_probe(path: Path, functions: list[str], fixed: dict | None) -> dict:
    command = [sys.executable, str(ENTRY), str(path), ",".join(functions)]
    command += [json.dumps(fixed)] if fixed is not None else []
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
        answer = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else None
    except subprocess.TimeoutExpired:
        answer = {name: {"error": f"{path}: importing it took more than {PROBE_TIMEOUT_S} s"} for name in functions}
    except (ValueError, IndexError):
        answer = None
    if answer is None:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        error = {"error": f"{path}: reading its kernels' settings failed (exit {done.returncode}: {last})"}
        answer = {name: error for name in functions}
    return answer


def settings(file: Path, functions: list[str], fixed: dict | None) -> dict:
    """The probe's work, in this process: import the file once, read each kernel object's settings. A callable
    @autotune configs is called with fixed, or left as CALLABLE when fixed is None."""
    try:
        module = kernels.load_module(file)
    except kernels.KernelError as error:
        return {name: {"error": str(error)} for name in functions}
    return {name: _settings_of(file, module, name, fixed) for name in functions}


def _settings_of(file: Path, module, function: str, fixed: dict | None) -> dict:
    built = getattr(module, function, None)
    if built is None:
        return {"error": f"{file}: no function {function!r}"}
    impl = kernels.jit_impl(built)
    own = kernels.own_pass_configs(built, None)  # the decorator's: no PrimFunc is built here
    out_idx = getattr(impl, "out_idx", None)
    configs = getattr(built, "configs", None) if hasattr(built, "jit_impl") else None
    if callable(configs):
        if fixed is None:
            configs = CALLABLE
        else:
            try:
                configs = configs(**kernels.call_values(fixed, jit=True))
            except Exception as exc:  # noqa: BLE001 - one line for the config check
                return {"error": kernels.import_problem(exc, file.resolve(), f"calling {function}'s @autotune configs")}
    if configs is not None and configs != CALLABLE:
        configs = [dict(config) for config in configs]
    found = {"pass_configs": own, "out_idx": list(out_idx) if isinstance(out_idx, (list, tuple)) else out_idx,
             "autotune_configs": configs}  # fmt: skip
    try:
        json.dumps(found)
    except TypeError as exc:
        return {"error": f"{file}: {function}()'s settings are not plain values ({exc})"}
    return found
