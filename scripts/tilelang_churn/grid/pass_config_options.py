"""The pass config options the workflow's TileLang registers (TVM's ``PassContext.list_configs()``: every key, in
every namespace, with its type), so that the config check refuses a key or a value that TVM would refuse in every
job, before any job. Read by importing TileLang in a child process (2-3 s), cached per install under
``.snakemake/tilelang-churn/pass-config-options/``; None where TileLang cannot be imported (the jobs then say it).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

from tilelang_churn.core import files

CACHE_DIR = Path(".snakemake") / "tilelang-churn" / "pass-config-options"
PROBE_TIMEOUT_S = 300
_LIST = (
    "import json, tilelang\n"
    "from tilelang import tvm\n"
    "options = tvm.transform.PassContext.list_configs()\n"
    "print(json.dumps({str(k): str(dict(v).get('type', '')) for k, v in options.items()}))\n"
)
_registered: dict = {}


def registered(install_key: str) -> dict[str, str] | None:
    """{option: TVM's type name} of the TileLang this Python imports; INSTALL_KEY names that install (its
    release and where it lives: another key is another cache entry)."""
    digest = hashlib.sha256(json.dumps([install_key, sys.executable]).encode()).hexdigest()[:32]
    return files.cached_json(_registered, CACHE_DIR / f"{digest}.json", _list_options, keep=bool) or None


def _list_options() -> dict | None:
    try:
        done = subprocess.run([sys.executable, "-c", _LIST], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
        return json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else None
    except (subprocess.TimeoutExpired, ValueError, IndexError):
        return None


def value_problem(type_name: str, value) -> str | None:
    """What is wrong with VALUE for an option of TVM type TYPE_NAME, in words; None when TVM takes it."""
    if type_name == "ir.IntImm":
        ok, wanted = isinstance(value, (bool, int)), "true, false or an integer"
    elif type_name == "ir.FloatImm":
        ok, wanted = isinstance(value, (int, float)) and not isinstance(value, bool), "a number"
    elif type_name == "str":
        ok, wanted = isinstance(value, str), "a string"
    elif type_name == "ffi.Array":
        ok, wanted = isinstance(value, list), "a list"
    elif type_name.endswith("Config"):  # a config object: the schema takes no mapping to build it from
        return f"is TVM's config object {type_name}, which pass_configs cannot set"
    else:
        return None
    if ok:
        return None
    return f"takes {wanted}, not {json.dumps(value)}"
