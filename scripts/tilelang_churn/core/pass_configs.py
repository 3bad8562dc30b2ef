"""Pass configs: TileLang's ``PassConfigKey`` options (``{"tl.disable_warp_specialized": true}``) as a grid axis.

A job lowers (and the GPU stage compiles) under one set of pass configs, the ``pass_configs`` column: canonical
JSON, ``{}`` for TileLang's defaults. The configuration's folder and label name a non-empty set. ``SWITCHES``
names, per pass (as the run record names it), the official switch that turns it off, so that a pass knockout
can be read beside it.
Standard library only.
"""

from __future__ import annotations

import difflib
import json
import re

__all__ = [
    "DEFAULT",
    "KEY",
    "SWITCHES",
    "PassConfigError",
    "canonical",
    "check",
    "folder_suffix",
    "label",
    "parse",
    "shorter_option_error",
    "switch_of",
]

DEFAULT = "{}"  # the column's value for TileLang's own defaults (and of a table written before the column)
# a TVM config key: a namespace and a name ("tl.disable_tma_lower", "tir.disable_vectorize")
KEY = re.compile(r"[a-z][a-z0-9_]*\.[A-Za-z0-9_.]+")
_VALUE_TYPES = (bool, int, float, str)

# The official switch of each pass it turns off, read from TileLang 0.1.15's CUDA pipeline
# (tilelang/cuda/pipeline.py): `if allow_warp_specialized(...)` guards these passes, and
# allow_warp_specialized is false under tl.disable_warp_specialized. A pass not here has no switch of its own.
# Keyed by the pass's identity (core/pass_names.py).
SWITCHES: dict[str, dict] = {
    name: {"tl.disable_warp_specialized": True}
    for name in (
        "tl.AutoWarpSpecialization",
        "tl.MaterializeWSSchedule",
        "tl.ProducerConsumerWarpSpecialized",
        "tl.AnnotateWarpGroupRegAlloc",
    )
}
SWITCHES["tl.LegalizeSafeMemoryAccess"] = {"tl.disable_safe_memory_legalize": True}


class PassConfigError(ValueError):
    """A set of pass configs that TVM could not take: the message names the bad key or value."""


def check(configs) -> dict:
    """configs if it is a mapping of config keys (KEY) to JSON scalars or lists of them, else PassConfigError."""
    if not isinstance(configs, dict):
        raise PassConfigError(f"{configs!r} is not a mapping of pass config keys to values")
    for key, value in configs.items():
        if not isinstance(key, str) or not KEY.fullmatch(key):
            raise PassConfigError(
                f"{key!r} is not a pass config key (a namespace and a name, e.g. tl.disable_warp_specialized)"
            )
        values = value if isinstance(value, list) else [value]
        if not all(isinstance(item, _VALUE_TYPES) for item in values):
            raise PassConfigError(f"{key}: {value!r} is not a boolean, number, string or list of them")
    return configs


def parse(text: str) -> dict:
    """A JSON object of pass configs (the trace script's --pass-configs), checked."""
    try:
        configs = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PassConfigError(f"{text!r} is not valid JSON ({exc.msg} at column {exc.colno})") from None
    return check(configs)


def canonical(configs: dict) -> str:
    """The pass_configs column: canonical JSON (sorted keys, no spaces); ``{}`` for none."""
    return json.dumps(configs, sort_keys=True, separators=(",", ":"))


def _setting(key: str, value, sep: str) -> str:
    name = key.split(".", 1)[1]  # the namespace (tl., tirx.) is left out
    if value is True:
        return name
    shown = json.dumps(value, separators=(",", ":")) if not isinstance(value, str) else value
    return f"{name}{sep}{shown}"


def folder_suffix(configs: dict) -> str:
    """What a configuration's folder gets for a non-empty set (``+disable_warp_specialized``), '' for none.
    Characters a folder name does not allow are dropped."""
    if not configs:
        return ""
    parts = (_setting(key, configs[key], "-") for key in sorted(configs))
    return re.sub(r"[^A-Za-z0-9_.+-]", "", "".join(f"+{part}" for part in parts))


def label(configs: dict) -> str:
    """What a configuration's label gets for a non-empty set (`` [tl.disable_warp_specialized]``, a value other
    than true after ``=``), '' for none."""
    if not configs:
        return ""
    settings = [key if configs[key] is True else f"{key}={json.dumps(configs[key])}" for key in sorted(configs)]
    return f" [{', '.join(settings)}]"


def switch_of(pass_id: str) -> dict | None:
    """The pass configs that turn the pass PASS_ID off (SWITCHES), None when it has no switch of its own. A
    short name (a knockout row written before identities) finds the one switch of that name."""
    if pass_id in SWITCHES or "." in pass_id:
        return SWITCHES.get(pass_id)
    return next((switch for key, switch in SWITCHES.items() if key.rsplit(".", 1)[-1] == pass_id), None)


# TVM's word for a pass config key it does not know, followed by every key it knows (about 80, on one line)
_INVALID_OPTION = re.compile(r"Invalid config option '([^']*)' candidates are: ([^()]*?)(?=\s*(?:\(|$))")


def shorter_option_error(text: str) -> str:
    """TVM's "Invalid config option 'foo.bar' candidates are: <every key>" as the key, how many TVM knows and the
    closest few; any other text as it is."""
    match = _INVALID_OPTION.search(text)
    if not match:
        return text
    name = match.group(1)
    known = [key.strip() for key in match.group(2).split(",") if key.strip()]
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    said = f"Invalid config option {name!r}: TVM knows {len(known)} options, " + (
        f"the closest {', '.join(close)}" if close else "none close to it"
    )
    return text[: match.start()] + said + text[match.end() :]
