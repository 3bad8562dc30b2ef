"""What a kernel's source computes instead of spelling: its decorator's ``pass_configs`` and ``out_idx`` and its
``@autotune`` configs, read by importing the file in a child process (``scripts/kernel_probe.py``) with the
workflow's TileLang.

The config check reads everything else from the source (kernel_source.py); the probe runs only for a setting the
source gives as a call or a name it cannot follow (``pass_configs=get_pass_configs()``,
``@autotune(configs=get_configs())``), once per file content, function and fixed parameters (cached in memory and
under ``.snakemake/tilelang-churn/kernel-probes/``). A file whose import fails (it needs a GPU, a package) gives
``{"error": one line}``: its jobs then fail with the same line, as rows.
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
_probed: dict[str, dict] = {}


def probe(file: str | Path, function: str, fixed: dict) -> dict:
    """{"pass_configs": {...}, "out_idx": ..., "autotune_configs": [...] | None} of FUNCTION in FILE, or
    {"error": "..."}; fixed: the parameters an @autotune configs callable is called with."""
    path = Path(file).resolve()
    digest = hashlib.sha256(
        path.read_bytes() + json.dumps([function, fixed, sys.executable], sort_keys=True, default=str).encode()
    ).hexdigest()
    if digest in _probed:
        return _probed[digest]
    cached = CACHE_DIR / f"{digest}.json"
    try:
        _probed[digest] = json.loads(cached.read_text(encoding="utf-8"))
        return _probed[digest]
    except (OSError, ValueError):
        pass
    command = [sys.executable, str(ENTRY), str(path), function, json.dumps(fixed)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
        found = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else None
    except subprocess.TimeoutExpired:
        found = {"error": f"{path}: importing it took more than {PROBE_TIMEOUT_S} s"}
    except (ValueError, IndexError):
        found = None
    if found is None:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        found = {"error": f"{path}: reading {function}()'s settings failed (exit {done.returncode}: {last})"}
    _probed[digest] = found
    if "error" not in found:
        try:
            CACHE_DIR.mkdir(parents=True, exist_ok=True)
            files.write_json(cached, found)
        except OSError:
            pass  # a read-only folder: probed again next time
    return found


def settings(file: Path, function: str, fixed: dict) -> dict:
    """The probe's work, in this process: import the file, read the kernel object's settings."""
    try:
        built = kernels.load_function(file, function)
    except kernels.KernelError as error:
        return {"error": str(error)}
    impl = kernels.jit_impl(built)
    own = {}
    for key, value in (getattr(impl, "pass_configs", None) or {}).items():
        own[getattr(key, "value", str(key))] = kernels._plain(value)
    out_idx = getattr(impl, "out_idx", None)
    configs = getattr(built, "configs", None) if hasattr(built, "jit_impl") else None
    if callable(configs):
        try:
            configs = configs(**kernels.call_values(fixed, jit=True))
        except Exception as exc:  # noqa: BLE001 - one line for the config check
            return {"error": kernels.import_problem(exc, file.resolve(), f"calling {function}'s @autotune configs")}
    if configs is not None:
        configs = [dict(config) for config in configs]
    found = {"pass_configs": own, "out_idx": list(out_idx) if isinstance(out_idx, (list, tuple)) else out_idx,
             "autotune_configs": configs}  # fmt: skip
    try:
        json.dumps(found)
    except TypeError as exc:
        return {"error": f"{file}: {function}()'s settings are not plain values ({exc})"}
    return found
