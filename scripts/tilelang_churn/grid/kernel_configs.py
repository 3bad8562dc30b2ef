"""Config `kernels` resolved: one ``KernelConfig`` per parameter set of each kernel (and each pass-config set),
its entry's fields read by kernel_entries and checked against the function's signature read from its file
(kernel/kernels.py's contract): a name or folder that is not unique, a parameter it does not take, an @autotune
search space too large. Also the pass-config sets of a config shape or kernel entry (``resolve_pass_configs``) and
a job spec's kernel fields (``kernel_fields``). Every problem raises ``ConfigError`` naming the key and the value.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from tilelang_churn.core import devices, pass_configs
from tilelang_churn.grid import kernel_entries
from tilelang_churn.grid.config_checks import ConfigError, check_name_length
from tilelang_churn.kernel import kernel_probe, kernel_source, kernels
from tilelang_churn.releases import kernel_requirements


@dataclass(frozen=True)
class KernelConfig:
    """One parameter set of a kernel of config `kernels` (scripts/tilelang_churn/kernel/kernels.py's contract)."""

    kernel: str
    source: str  # a shipped kernel's name (workflow/kernels/<source>.py), or the user's file as configured
    function: str
    params: dict
    user_file: bool  # source is a file of the user's (an input of its jobs), not a kernel shipped with the workflow
    pass_configs: dict = field(default_factory=dict)  # TileLang's PassConfigKey options ({}: its defaults)
    reference: str | None = None  # the GPU stage's reference: a function of the file, called (*inputs)
    reference_args: dict = field(default_factory=dict)  # its parameters named otherwise: {reference's: kernel's}
    targets: tuple[str, ...] | None = None  # its entry's own target names (job_grid resolves them); None: the grid's
    device: str | None = None  # the device profile it is built under (core/devices.py Profile.to_json); None: none
    requirements: tuple[str, ...] = ()  # packages its file imports beyond the environment's

    @property
    def file(self) -> Path:
        return Path(self.source) if self.user_file else kernels.shipped(self.source)

    def kernel_fields(self) -> dict:
        """Its kernel's fields of a job spec (core/job_spec.py)."""
        fields = kernel_fields(self.kernel, self.source, self.file, self.function, self.params, self.user_file,
                               self.pass_configs)  # fmt: skip
        fields |= {"reference": self.reference} if self.reference else {}
        fields |= {"device": self.device} if self.device else {}
        fields |= {"requirements": self.requirements} if self.requirements else {}
        return fields | ({"reference_args": self.reference_args} if self.reference_args else {})


def resolve_pass_configs(entry: dict, key: str, defaults: dict) -> list[tuple[dict, str]]:
    """The pass-config sets of a shape or kernel entry (its own ``pass_configs``, else ``defaults.pass_configs``),
    each with the config key it comes from; checked (pass_configs.check) and distinct."""
    own = entry.get("pass_configs")
    sets, where = (
        (own, f"{key}.pass_configs") if own is not None else (defaults["pass_configs"], "defaults.pass_configs")
    )
    resolved: list[tuple[dict, str]] = []
    seen: dict[str, str] = {}
    folders: dict[str, tuple[dict, str]] = {}  # folder suffix -> the set that has it
    for j, configs in enumerate(sets):
        set_key = f"{where}[{j}]"
        try:
            pass_configs.check(configs)
        except pass_configs.PassConfigError as error:
            raise ConfigError(f"config {set_key}: {error}") from None
        spelled = pass_configs.canonical(configs)
        if spelled in seen:
            raise ConfigError(f"config {set_key}: {configs!r} is also {seen[spelled]}; the jobs would be identical")
        seen[spelled] = set_key
        suffix = pass_configs.folder_suffix(configs)
        if suffix in folders:
            other, other_key = folders[suffix]
            raise ConfigError(
                f"config {set_key}: {configs!r} gets the folder of {other_key} ({other!r}): a folder names a key "
                "without its namespace (tir., tirx., tl.) and without the characters a folder cannot hold, so the "
                "two sets would share one; keep one of them"
            )
        folders[suffix] = (configs, set_key)
        resolved.append((configs, set_key))
    return resolved


def resolve_kernels(cfg: dict, shapes: dict) -> dict[str, KernelConfig]:
    """Folder id -> KernelConfig of every parameter set of config `kernels`, checked against the function's
    signature (read from its file, not imported): a missing or unparsable file, a missing function, a parameter
    it does not take, a name that is not unique, two parameter sets on one folder. An entry of several functions
    (``function: [a, b]`` or ``all``) is one kernel per function, named ``<name>.<function>``."""
    configs: dict[str, KernelConfig] = {}
    where: dict[str, str] = {shape: f"shapes[{i}]" for i, shape in enumerate(shapes)}
    full: dict[str, tuple] = {}  # folder id -> its parameter set, function defaults filled in, and pass configs
    names: dict[str, str] = {}
    profiles: dict[str, tuple[str, str]] = {}  # device label -> its profile and the key that gives it
    for i, entry in enumerate(cfg["kernels"]):
        key = f"kernels[{i}]"
        file, user_file = kernel_entries.kernel_file(entry, key)
        device = kernel_entries.entry_device(entry, key, cfg.get("device"))
        requirements = kernel_entries.entry_requirements(entry, key)
        paths = _requirements_paths(requirements, key)
        if device:
            label = devices.label_of(device)
            other, other_key = profiles.setdefault(label, (device, key))
            if other != device:
                raise ConfigError(f"config {key}.device: a profile named {label!r} with other numbers than "
                                  f"{other_key}'s; give the two their own names")  # fmt: skip
        found = kernel_entries.entry_kernels(entry, key, file)
        several = not kernel_entries.one_function(entry)
        if several:
            kernel_entries.check_shared_defaults(entry, key, file, [function for _, function, _, _ in found])
        for name, function, param_sets, params_key in found:
            if name in names or name == kernels.BOOK_KERNEL:
                also = names.get(name, "the GEMM of config shapes")
                raise ConfigError(f"config {key}.name: {name!r} is also the name of {also}; give each kernel its own")
            names[name] = key
            check_name_length(name, "kernel", f"{key}.name")
            try:
                signature = kernels.read_signature(file, function)
            except kernels.KernelError as error:
                raise ConfigError(f"config {key}: kernel {name!r}: {error}") from None
            fixed = signature.ordered(kernel_entries.entry_defaults(entry, key, function, signature, several))
            timeout_s = cfg.get(kernel_probe.TIMEOUT_KEY, kernel_probe.PROBE_TIMEOUT_S)
            if param_sets == kernel_entries.AUTOTUNE:
                param_sets = _autotune_sets(entry, key, name, signature, fixed, (timeout_s, device, paths))
            folders = entry.get("folders")
            if folders is not None and len(folders) != len(param_sets):
                raise ConfigError(
                    f"config {key}.folders: {len(folders)} folder names for {len(param_sets)} parameter sets; "
                    "give one per set of params, null for a derived folder"
                )
            own = _own_pass_configs(signature, key, name, fixed, entry, (timeout_s, device, paths))
            sets = resolve_pass_configs(entry, key, cfg["defaults"])
            for config_set, configs_key in sets:
                won = [k for k in config_set if k in own and config_set[k] != own[k]]
                if won:
                    print(f"job_grid: {configs_key} sets {', '.join(f'{k}={config_set[k]!r}' for k in won)} over "
                          f"kernel {name!r}'s own pass_configs ({signature.file}); the config's value wins",
                          file=sys.stderr)  # fmt: skip
            for j, params in enumerate(param_sets):
                params = signature.ordered({**fixed, **params})
                problem = signature.problem(params)
                if problem:
                    raise ConfigError(f"config {params_key}[{j}]: kernel {name!r}: {problem}")
                named = folders[j] if folders is not None else None
                base_id = named or kernels.folder_id(name, params, signature.defaults())
                filled = {**signature.defaults(), **params}
                for config_set, configs_key in sets:
                    pass_config_set = {**own, **config_set}
                    set_key = f"{key}.folders[{j}]" if named else f"{params_key}[{j}]"
                    set_key += f" with {configs_key}" if config_set else ""
                    config_id = base_id + pass_configs.folder_suffix(pass_config_set) + devices.folder_suffix(device)
                    check_name_length(config_id, "shape", set_key)
                    if config_id in where:
                        other = where[config_id]
                        if full.get(config_id) == (filled, pass_config_set):
                            raise ConfigError(
                                f"config {set_key}: kernel {name!r}: {params!r} is the same parameter set as {other} "
                                "(function defaults included); the two jobs would be identical"
                            )
                        raise ConfigError(
                            f"config {set_key}: kernel {name!r}: {params!r} gets the folder {config_id!r}, as "
                            f"{other} does; name one of them with {key}.folders (a folder name per parameter set, "
                            "null: the derived one)"
                        )
                    where[config_id] = f"{params_key}[{j}]" + (f" with {configs_key}" if config_set else "")
                    full[config_id] = (filled, pass_config_set)
                    source = entry["file"] if user_file else entry["shipped"]
                    configs[config_id] = KernelConfig(
                        name,
                        source,
                        function,
                        params,
                        user_file,
                        pass_config_set,
                        kernel_entries.reference_name(entry, key, function),
                        kernel_entries.reference_args(entry, key, function),
                        kernel_entries.entry_target_names(entry),
                        device,
                        requirements,
                    )
    return configs


def _requirements_paths(requirements: tuple[str, ...], key: str) -> tuple[str, ...]:
    """The folder of the entry's requirements, installed now when it is not yet (for the import probe)."""
    if not requirements:
        return ()
    try:
        return (str(kernel_requirements.overlay(requirements)),)
    except kernel_requirements.RequirementsError as error:
        raise ConfigError(f"config {key}.requirements: {error}") from None


def _own_pass_configs(signature, key: str, name: str, fixed: dict, entry: dict, probing: tuple) -> dict:
    """The pass configs the kernel brings (its @tilelang.jit decorator's, T.annotate_pass_configs): read from its
    source, else by the import probe (stopped after TIMEOUT_S); {} where the probe cannot import it (its jobs
    then fail saying why)."""
    own = signature.kernel_pass_configs
    if own == kernel_source.UNREAD:
        found = kernel_probe.probe(signature.file, signature.function, fixed, _autotune_max(entry), *probing)
        own = found.get("pass_configs", {})
        if "error" in found:
            print(f"job_grid: config {key}: kernel {name!r}: its pass_configs could not be read: {found['error']}",
                  file=sys.stderr)  # fmt: skip
    try:
        return pass_configs.check(own)
    except pass_configs.PassConfigError as error:
        raise ConfigError(f"config {key}: kernel {name!r}: its decorator's pass_configs: {error}") from None


def _autotune_max(entry: dict) -> int:
    return entry.get("autotune_max", kernel_probe.AUTOTUNE_MAX)


def _autotune_sets(entry: dict, key: str, name: str, signature, fixed: dict, probing: tuple) -> list[dict]:
    """``params: autotune``: the kernel's own @autotune configs, each a parameter set over the entry's
    ``defaults``, at most ``autotune_max`` (the import probe reads one more at most: a generator may not end)."""
    configs = signature.autotune_configs
    if configs is None:
        raise ConfigError(
            f"config {key}.params: kernel {name!r}: autotune, but {signature.function}() in {signature.file} has no "
            "@autotune decorator; give its parameter sets as a list"
        )
    limit = _autotune_max(entry)
    if configs == kernel_source.UNREAD:
        found = kernel_probe.probe(signature.file, signature.function, fixed, limit, *probing)
        if "error" in found:
            raise ConfigError(f"config {key}.params: kernel {name!r}: autotune: {found['error']}")
        configs = found["autotune_configs"]
        if not isinstance(configs, list):
            raise ConfigError(
                f"config {key}.params: kernel {name!r}: autotune, but importing {signature.file} gives "
                f"{signature.function}() no @autotune configs; give its parameter sets as a list"
            )
        if len(configs) > limit:
            raise ConfigError(
                f"config {key}.params: kernel {name!r}: its @autotune configs, read by importing "
                f"{Path(signature.file).resolve()}, go on past {limit}: more than {key}.autotune_max ({limit}); "
                "raise autotune_max to trace them all, or list the sets to trace"
            )
    if len(configs) > limit:
        raise ConfigError(
            f"config {key}.params: kernel {name!r}: its @autotune search space has {len(configs)} configs, more "
            f"than {key}.autotune_max ({limit}); raise autotune_max to trace them all, or list the sets to trace"
        )
    if not configs:
        raise ConfigError(f"config {key}.params: kernel {name!r}: its @autotune configs are empty")
    sets: list[dict] = []
    for config in configs:  # a fixed parameter wins over the config's, as when a caller of @autotune gives it
        params = {k: v for k, v in config.items() if k not in fixed}
        if params not in sets:
            sets.append(params)
    return sets


def kernel_fields(
    name: str, source: str, file: Path, function: str, params: dict, user_file: bool, configs: dict
) -> dict:
    """A job spec's kernel fields as the trace script derives them (the function's defaults and declarations read
    from its file, once per file): a kernel whose parameters fill columns of their own holds every one of them."""
    signature = kernels.read_signature(file, function)
    if signature.columns:
        params = {**signature.defaults(), **params}
    return {
        "kernel": name,
        "source": source,
        "kernel_file": str(file.resolve()),
        "function": function,
        "params": params,
        "kernel_label": kernels.label(name, signature.ordered(params), signature.defaults()),
        "user_file": user_file,
        "columns": signature.columns,
        "pass_configs": configs,
    }
