"""One entry of config `kernels` read field by field: its kernel file (shipped or the user's), the functions it names
and their parameter sets, the defaults each function takes, its reference and the reference's argument names, its
own targets, the device profile it is built under. kernel_configs.resolve_kernels puts them together; every
problem raises ``ConfigError`` naming the key.
"""

from __future__ import annotations

from pathlib import Path

from tilelang_churn.core import devices
from tilelang_churn.grid.config_checks import ConfigError, check_path
from tilelang_churn.kernel import kernels


def entry_target_names(entry: dict) -> tuple[str, ...] | None:
    """The names of a kernel entry's own ``targets`` (a short name, or a JSON target's ``name``); None without."""
    own = entry.get("targets")
    return None if own is None else tuple(t if isinstance(t, str) else t["name"] for t in own)


def reference_name(entry: dict, key: str, function: str) -> str | None:
    """The entry's ``reference`` for FUNCTION: one name for all its functions, or a mapping per function."""
    reference = entry.get("reference")
    if isinstance(reference, dict):
        reference = reference.get(function)
    if reference is not None and not (isinstance(reference, str) and reference.isidentifier()):
        raise ConfigError(f"config {key}.reference: {reference!r} is not a function name of the kernel's file")
    return reference


def reference_args(entry: dict, key: str, function: str) -> dict:
    """The entry's ``reference_args`` for FUNCTION: one mapping {reference's parameter: kernel's parameter or input}
    for all its functions, or a mapping of function name to such a mapping."""
    mapping = entry.get("reference_args") or {}
    if mapping and all(isinstance(value, dict) for value in mapping.values()):
        mapping = mapping.get(function) or {}
    for name, source in mapping.items():
        if not (isinstance(source, str) and source.isidentifier() and name.isidentifier()):
            raise ConfigError(
                f"config {key}.reference_args.{name}: {source!r} is not the name of a kernel parameter or input"
            )
    return dict(mapping)


def entry_device(entry: dict, key: str, grid_device) -> str | None:
    """The device profile the entry's kernels are built under (core/devices.py Profile.to_json): its own
    ``device``, else config ``device``; None for none."""
    own = entry.get("device")
    value, where = (own, f"{key}.device") if own is not None else (grid_device, "device")
    try:
        profile = devices.read(value)
    except devices.ProfileError as error:
        raise ConfigError(f"config {where}: {error}") from None
    return profile.to_json() if profile else None


def entry_requirements(entry: dict, key: str) -> tuple[str, ...]:
    """The entry's ``requirements``: PEP 508 requirement strings (``einops``, ``triton==3.1.0``), checked."""
    from packaging.requirements import InvalidRequirement, Requirement

    found = []
    for j, text in enumerate(entry.get("requirements") or []):
        try:
            Requirement(text)
        except InvalidRequirement as error:
            raise ConfigError(f"config {key}.requirements[{j}]: {text!r} is not a requirement ({error})") from None
        found.append(text)
    return tuple(found)


AUTOTUNE = "autotune"  # params: autotune, the kernel's own @autotune configs as its parameter sets


def kernel_file(entry: dict, key: str) -> tuple[Path, bool]:
    """The entry's kernel file and whether it is the user's (not shipped); a ConfigError naming a missing one."""
    name = entry["name"]
    if entry.get("shipped") is not None:
        file = kernels.shipped(entry["shipped"])
        if not file.is_file():
            raise ConfigError(
                f"config {key}.shipped: kernel {name!r}: no shipped kernel {entry['shipped']!r}; shipped kernels "
                f"are {', '.join(kernels.shipped_names())} (workflow/kernels/)"
            )
        return file, False
    # braces would be read as wildcards in the batch rule's input
    check_path(entry["file"], f"{key}.file", "a kernel file path")
    file = Path(entry["file"])
    if not file.is_file():
        raise ConfigError(
            f"config {key}.file: kernel {name!r}: {entry['file']!r} is not a file "
            f"(relative to the working directory {Path.cwd()})"
        )
    return file, True


def entry_kernels(entry: dict, key: str, file: Path) -> list[tuple[str, str, list | str, str]]:
    """(kernel name, function, its parameter sets or AUTOTUNE, their config key) of each function the entry names:
    one function keeps the entry's name; several (a list, or ``all``: every kernel the file defines with
    TileLang's decorators) are ``<name>.<function>`` each, with ``params`` for all or a mapping per function."""
    function, params = entry["function"], entry["params"]
    if function == "all":
        try:
            functions = kernels.kernel_functions(file)
        except kernels.KernelError as error:
            raise ConfigError(f"config {key}: kernel {entry['name']!r}: {error}") from None
        if not functions:
            raise ConfigError(
                f"config {key}.function: kernel {entry['name']!r}: all, but {file} defines no kernel with "
                "@tilelang.jit, @autotune or @T.prim_func; name its function"
            )
    else:
        functions = [function] if isinstance(function, str) else list(function)
    if len(set(functions)) != len(functions):
        raise ConfigError(f"config {key}.function: {function!r} names a function twice")
    found = []
    for name in functions:
        kernel = entry["name"] if one_function(entry) else f"{entry['name']}.{name}"
        if isinstance(params, dict):
            unknown = sorted(set(params) - set(functions))
            if unknown:
                raise ConfigError(
                    f"config {key}.params: {unknown[0]!r} is not a function of this entry ({', '.join(functions)})"
                )
            sets, params_key = params.get(name, [{}]), f"{key}.params.{name}"
        else:
            sets, params_key = params, f"{key}.params"
        found.append((kernel, name, sets, params_key))
    return found


def one_function(entry: dict) -> bool:
    """Whether an entry names one function (its kernel keeps the entry's name), not a list or ``all``."""
    return isinstance(entry["function"], str) and entry["function"] != "all"


def entry_defaults(entry: dict, key: str, function: str, signature, several: bool) -> dict:
    """The entry's ``defaults`` for FUNCTION: all of them for an entry of one function; for an entry of several,
    those the function takes (an eager kernel's M, N, K and a lazy one's block sizes can share one entry)."""
    defaults = dict(entry["defaults"])
    if not several or signature.takes_any:
        return defaults
    return {name: value for name, value in defaults.items() if name in signature.params}


def check_shared_defaults(entry: dict, key: str, file: Path, functions: list[str]) -> None:
    """An entry of several functions: each of its defaults must be taken by one of them at least (a typo would
    otherwise reach none and say nothing)."""
    taken: set[str] = set()
    for function in functions:
        try:
            signature = kernels.read_signature(file, function)
        except kernels.KernelError as error:
            raise ConfigError(f"config {key}: kernel {entry['name']!r}: {error}") from None
        if signature.takes_any:
            return
        taken |= set(signature.params)
    unknown = [name for name in entry["defaults"] if name not in taken]
    if unknown:
        raise ConfigError(
            f"config {key}.defaults: {unknown[0]!r} is a parameter of none of {', '.join(functions)} in {file}"
        )
