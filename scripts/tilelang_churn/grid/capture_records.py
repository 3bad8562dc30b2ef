"""The capture's records (kernel/capture_hook.py writes one JSON line per event of the program's processes) read
and checked, merged per kernel, and turned into ``kernels:`` entries that the config check reads as it would read
the user's own: an entry FILE already has is kept, a new one gets a name of its own. kernel_capture runs the
program and writes FILE; every bad record raises ``CaptureError`` naming the file, the line and what is wrong.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from tilelang_churn.core.job_spec import canonical
from tilelang_churn.kernel import kernels

KINDS = ("process", "kernel", "call", "ended", "hook")
NAME_VALUES = 3  # an entry's name: its function and the values of this many of the parameters it sets
AUTOTUNED = "the first config of its @autotune search space (no GPU to tune on)"


class CaptureError(ValueError):
    """Bad input (FILE, the record file) or a command that cannot start: one line naming the file and the value."""


@dataclass
class Kernel:
    """One distinct kernel of the records: its kernel record, how often processes asked for it, its first call's
    inputs."""

    record: dict
    processes: set = field(default_factory=set)
    inputs: dict | None = None


# ------------------------------------------------------------------------------------------------- the records

# a kernel record's fields and their types (None allowed where listed)
KERNEL_FIELDS = {
    "pid": (int,), "key": (str,), "file": (str, type(None)), "function": (str, type(None)),
    "qualname": (str, type(None)), "style": (str,), "params": (dict,), "problems": (list,),
    "pass_configs": (dict,), "own_pass_configs": (dict,), "out_idx": (list, type(None)),
    "target": (str, dict, type(None)), "where": (str, type(None)), "autotune": (bool,),
    "inputs": (dict, type(None)),
}  # fmt: skip
OTHER_FIELDS = {
    "process": {"pid": (int,), "gpu": (bool,), "argv": (list,)},
    "call": {"pid": (int,), "key": (str,), "inputs": (dict,)},
    "ended": {"pid": (int,), "error": (str,), "text": (str,), "frames": (list,)},
    "hook": {"pid": (int,), "error": (str,)},
}


def read_records(path: Path) -> list[dict]:
    """The record file's records, each checked; a CaptureError naming the file, the line and what is wrong."""
    if not path.exists():
        return []
    records = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, 1):
            try:
                record = json.loads(line)
            except ValueError as exc:
                raise CaptureError(f"{path}, line {number}: not a JSON record ({exc}): {line[:80]!r}") from None
            problem = record_problem(record)
            if problem:
                raise CaptureError(f"{path}, line {number}: {problem}")
            records.append(record)
    return records


def record_problem(record) -> str | None:
    """Why RECORD is no record of the hook's, None when it is one."""
    if not isinstance(record, dict):
        return f"a {type(record).__name__}, not a record"
    kind = record.get("kind")
    if kind not in KINDS:
        return f"its kind is {kind!r}, not one of {', '.join(KINDS)}"
    fields = KERNEL_FIELDS if kind == "kernel" else OTHER_FIELDS[kind]
    for name, types in fields.items():
        if name not in record:
            return f"a {kind} record without {name}"
        if not isinstance(record[name], types) or (types == (int,) and isinstance(record[name], bool)):
            return f"a {kind} record whose {name} is {record[name]!r}"
    if kind == "kernel" and not all(isinstance(problem, str) for problem in record["problems"]):
        return "a kernel record whose problems are not text"
    return None


def distinct_kernels(records: list[dict]) -> list[Kernel]:
    """One Kernel per distinct kernel record (the same key from several processes is one), in the order first
    asked for; its inputs from its first call (or the tensors it was built from)."""
    found: dict[str, Kernel] = {}
    for record in records:
        if record["kind"] == "kernel":
            kernel = found.setdefault(record["key"], Kernel(record))
            kernel.processes.add(record["pid"])
            if kernel.inputs is None and record["inputs"]:
                kernel.inputs = record["inputs"]
        elif record["kind"] == "call" and record["key"] in found:
            kernel = found[record["key"]]
            if kernel.inputs is None or not kernel.record["inputs"]:
                kernel.inputs = kernel.inputs or record["inputs"]
    return list(found.values())


# ------------------------------------------------------------------------------------------------- the entries


def entries_of(found: list[Kernel], existing: list[dict], device=None) -> tuple[list[dict], list[str]]:
    """The new entries of FOUND (those FILE already has left out) and a line per kernel that cannot be replayed.
    DEVICE: the device profile the program ran under (config device's value), each entry's own."""
    known = {identity for entry in existing if (identity := entry_identity(entry)) is not None}
    names = {entry["name"] for entry in existing}
    entries, problems = [], []
    for kernel in found:
        record = kernel.record
        where = _where(record)
        problem = "; ".join(record["problems"]) or _signature_problem(record)
        if problem:
            problems.append(f"cannot be replayed: {record['function'] or 'a kernel'}{where}: {problem}")
            continue
        signature = kernels.read_signature(record["file"], record["function"])
        defaults = signature.defaults()
        params = signature.ordered(
            {k: v for k, v in record["params"].items() if not kernels.same_value(defaults.get(k, kernels.REQUIRED), v)}
        )
        configs = record["pass_configs"] if record["pass_configs"] != record["own_pass_configs"] else {}
        identity = _identity(record["file"], record["function"], {**defaults, **params}, configs, device)
        if identity in known:
            continue
        known.add(identity)
        name = _name(record, params, names)
        names.add(name)
        entry = {"name": name, "file": str(Path(record["file"]).resolve()), "function": record["function"],
                 "params": [params], "folders": [name]}  # fmt: skip
        if configs:
            entry["pass_configs"] = [configs]
        if device:
            entry["device"] = device
        entry["captured"] = _captured(kernel, signature)
        entries.append(entry)
    return entries, problems


def _where(record: dict) -> str:
    file = record["file"]
    shown = f" in {shown_path(file)}" if file else ""
    asked = record["where"]
    if asked:
        path, _, line = asked.rpartition(":")
        shown += f" (asked for at {shown_path(path)}, line {line})"
    return shown


def shown_path(path: str) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return path


def _signature_problem(record: dict) -> str | None:
    """Why the config could not name the kernel the way the program built it: its file or function not readable
    at the top level, a style the source does not have, a parameter its signature does not take."""
    try:
        signature = kernels.read_signature(record["file"], record["function"])
    except kernels.KernelError as error:
        return str(error).replace(f"{record['file']}: ", "")
    if record["style"] == "prim_func" and signature.style != "prim_func":
        return f"{record['function']} at the top level of its file is no T.prim_func (it is bound to another object)"
    if record["style"] != "prim_func" and signature.style == "prim_func":
        return f"{record['function']} at the top level of its file is a T.prim_func, not the function that built it"
    return signature.problem(record["params"])


def _identity(file: str, function: str, params: dict, configs: dict, device=None) -> str:
    return canonical([str(Path(file).resolve()), function, params, configs] + ([device] if device else []))


def entry_identity(entry: dict) -> str | None:
    """An entry of FILE as a kernel (its file, function, one parameter set and pass-config set, the function's
    defaults filled in), None for an entry of another shape (several functions or sets: kept, never matched)."""
    file, function, params = entry.get("file"), entry.get("function"), entry.get("params")
    sets = entry.get("pass_configs") or [{}]
    if not (isinstance(file, str) and isinstance(function, str) and isinstance(params, list) and len(params) == 1):
        return None
    if not (isinstance(params[0], dict) and len(sets) == 1 and isinstance(sets[0], dict)):
        return None
    try:
        defaults = kernels.read_signature(file, function).defaults()
    except kernels.KernelError:
        return None
    return _identity(file, function, {**defaults, **params[0]}, sets[0], entry.get("device"))


def _name(record: dict, params: dict, taken: set) -> str:
    """The function and a short label of its arguments, the values of its first NAME_VALUES parameters away from
    its defaults (``matmul_1024_1024_1024``), reduced to the characters a folder name allows; a hash of the file,
    the function and all its parameters after it where another kernel has that name."""
    values = [re.sub(r"[^A-Za-z0-9_.+-]", "", str(value))[:16] for value in params.values()][:NAME_VALUES]
    base = "_".join([record["function"], *[value for value in values if value]])
    if base not in taken:
        return base
    digest = hashlib.sha256(canonical([record["file"], record["function"], params]).encode()).hexdigest()[:8]
    name, number = f"{base}_{digest}", 2
    while name in taken:
        name, number = f"{base}_{digest}-{number}", number + 1
    return name


def _captured(kernel: Kernel, signature) -> dict:
    """What the capture saw beside the config: where the program asked for it, the target it named, its outputs,
    the pass configs it brought itself (its decorator's, T.annotate_pass_configs), the shapes and dtypes of its
    first call's inputs."""
    record = kernel.record
    found = {"where": record["where"], "style": record["style"]}
    if record["target"] is not None:
        found["target"] = record["target"]
    if record["out_idx"] is not None:
        found["out_idx"] = record["out_idx"]
    if record["own_pass_configs"]:
        found["pass_configs"] = record["own_pass_configs"]
    if kernel.inputs:
        found["inputs"] = kernel.inputs
    if record["autotune"]:
        found["autotune"] = AUTOTUNED
    return found
