"""Each config key of the grid resolved on its own: shapes, targets (config's and kernel entries'), versions,
modes, api_passes, release_heatmap and the knockout's settings (with its jobs' paths). Every problem is a
ConfigError naming the key and the value."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

from tilelang_churn.core import jobs, pass_configs, trace_modes
from tilelang_churn.grid.config_checks import (
    REPO,
    ConfigError,
    check_kernel_types,
    check_name_length,
    some,
)
from tilelang_churn.grid.grid_job import Job
from tilelang_churn.grid.kernel_configs import resolve_pass_configs
from tilelang_churn.releases import release_envs, version_entries
from tilelang_churn.releases.version_entries import VersionEntry
from tilelang_churn.trace import trace_cli

if TYPE_CHECKING:
    from tilelang_churn.grid.grid_model import Grid


KERNEL_FIELDS = ("dtype", "accum_dtype", "threads", "stages")


REQUIREMENTS = REPO / "requirements.txt"


def resolve_shapes(cfg: dict, origins: dict | None = None) -> dict[str, dict]:
    """Shape id -> kernel parameters (pass configs included: one configuration per set), in config order; ids
    and parameter sets must be unique. origins, when given, gets shape id -> the index of its config shape."""
    defaults = cfg["defaults"]
    check_kernel_types(defaults, "defaults")
    shapes: dict[str, dict] = {}
    where: dict[str, str] = {}
    same_as: dict[str, str] = {}  # the parameters of a shape, as JSON -> its id
    for i, shape in enumerate(cfg["shapes"]):
        key = f"shapes[{i}]"
        check_kernel_types(shape, key)
        block = shape["block"] if shape["block"] is not None else defaults["block"]
        base = {"M": shape["M"], "N": shape["N"], "K": shape["K"], "block": list(block)}
        for name in KERNEL_FIELDS:
            base[name] = shape[name] if shape[name] is not None else defaults[name]
        base_id = shape["name"] or _derived_shape_id(shape, base)
        for configs, configs_key in resolve_pass_configs(shape, key, defaults):
            spec = {**base, "pass_configs": configs}
            shape_id = base_id + pass_configs.folder_suffix(configs)
            check_name_length(shape_id, "shape", f"{key}.name" if shape["name"] else key)
            here = key if not configs else f"{key} with {configs_key}"
            if shape_id in shapes:
                raise ConfigError(
                    f"config {here}: shape id {shape_id!r} is also the id of {where[shape_id]}; "
                    "give one of them a distinct 'name'"
                )
            parameters = json.dumps(spec, sort_keys=True)  # one dict lookup per shape: 10,000 shapes in milliseconds
            if parameters in same_as:
                other_id = same_as[parameters]
                set_keys = {name: value for name, value in shape.items() if value is not None}
                raise ConfigError(
                    f"config {here}: {set_keys!r} has the same parameters as {where[other_id]} "
                    f"({other_id!r}); the two jobs would be identical"
                )
            shapes[shape_id] = spec
            where[shape_id] = here
            same_as[parameters] = shape_id
            if origins is not None:
                origins[shape_id] = i
    return shapes


def _derived_shape_id(shape: dict, spec: dict) -> str:
    shape_id = f"{spec['M']}x{spec['N']}x{spec['K']}"
    if shape["block"] is not None:
        shape_id += "_b{}x{}x{}".format(*spec["block"])
    if shape["dtype"] is not None:
        shape_id += f"_{spec['dtype']}"
    return shape_id


def resolve_targets(cfg: dict) -> tuple[dict[str, dict], dict[str, str]]:
    """Target folder name -> its TVM target dict, in config order: config targets, then the targets of kernel
    entries that name their own (a name both use is the same target); and name -> the config key that defines it.
    A named JSON target is called by its config name in the tables (the job's --target-name), so renaming it
    reaches them."""
    targets: dict[str, dict] = {}
    where: dict[str, str] = {}
    same_dict: dict[str, str] = {}  # the target dict, as JSON -> its config key
    lists = [("targets", cfg["targets"])]
    lists += [
        (f"kernels[{i}].targets", entry["targets"]) for i, entry in enumerate(cfg["kernels"]) if entry.get("targets")
    ]
    for list_key, entries in lists:
        seen: set[str] = set()
        for i, entry in enumerate(entries):
            key = f"{list_key}[{i}]"
            name, target = _target_entry(entry, key)
            if name in seen:
                raise ConfigError(f"config {key}: duplicate target name {name!r} (also {where[name]})")
            seen.add(name)
            text = json.dumps(target, sort_keys=True)
            if name in targets:
                if targets[name] != target:
                    raise ConfigError(
                        f"config {key}: target {name!r} is {target!r} here and {targets[name]!r} in {where[name]}; "
                        "one name, one target"
                    )
                continue
            check_name_length(name, "target", f"{key}.name" if isinstance(entry, dict) else key)
            if text in same_dict:
                raise ConfigError(
                    f"config {key}: target {target!r} is also {same_dict[text]}; the two targets' jobs would be "
                    "identical"
                )
            same_dict[text] = key
            targets[name] = target
            where[name] = key
    return targets, where


def _target_entry(entry, key: str) -> tuple[str, dict]:
    """One entry of a targets list: its name and TVM target dict, checked."""
    if isinstance(entry, str):
        if entry not in trace_cli.TARGETS:
            raise ConfigError(
                f"config {key}: unknown target {entry!r}; short names are {', '.join(trace_cli.TARGETS)}, "
                'or give a mapping {name: NAME, target: {"kind": ..., ...}}'
            )
        return entry, dict(trace_cli.TARGETS[entry])
    name, target = entry["name"], entry["target"]
    if not isinstance(target.get("kind"), str) or not target["kind"]:
        raise ConfigError(
            f'config {key}.target: {target!r} has no "kind"; a JSON target needs a string "kind" such as "cuda" or '
            '"hip"'
        )
    problem = trace_cli.target_kind_problem(target)
    if problem:
        raise ConfigError(f"config {key}.target.kind: {problem}")
    known = trace_cli.TARGETS.get(name)
    if known is not None and known != target:
        raise ConfigError(
            f"config {key}.name: {name!r} is the short name of {known!r}, not of {target!r}; choose another name"
        )
    return name, target


def resolve_versions(cfg: dict, installed: str | None) -> list[VersionEntry]:
    """The entries of config versions (version_entries.resolve: releases, wheels, environments), each checked;
    default: the installed release (or, with none installed, the release requirements.txt pins, which then gets an
    environment of its own)."""
    values = cfg.get("versions")
    if values is None:
        values = [installed or pinned_release()]
    try:
        return version_entries.resolve(values, installed)
    except release_envs.ReleaseError as error:
        raise ConfigError(str(error)) from None


def pinned_release(requirements: Path = REQUIREMENTS) -> str:
    for line in requirements.read_text(encoding="utf-8").splitlines():
        if line.strip().startswith("tilelang=="):
            return line.split("==", 1)[1].split("#")[0].strip()
    raise ConfigError(f"config versions: not set, no tilelang installed and no tilelang== pin in {requirements}")


def resolve_modes(cfg: dict) -> tuple[str, ...]:
    for i, mode in enumerate(cfg["modes"]):
        if mode not in trace_modes.MODES:
            raise ConfigError(f"config modes[{i}]: unknown mode {mode!r}; modes are {', '.join(trace_modes.MODES)}")
    return tuple(cfg["modes"])


def resolve_release_heatmap(cfg: dict, grid: Grid) -> tuple[str, str, str] | None:
    """(target, configuration folder, mode) of config release_heatmap, its nulls from book_reference and mode
    instrument (else the first mode). A value given and not in the grid is a ConfigError; book_reference's
    default when the grid lacks it is None (the comparison picks one itself)."""
    given = cfg.get("release_heatmap") or {}
    reference = cfg.get("book_reference") or {}
    default_mode = "instrument" if "instrument" in grid.modes else grid.modes[0]
    chosen = (
        given.get("target") or reference.get("target"),
        given.get("shape") or reference.get("shape"),
        given.get("mode") or default_mode,
    )
    known = (list(grid.targets), grid.configurations, list(grid.modes))
    checks = list(zip(("target", "shape", "mode"), chosen, known))
    for key, value, values in checks:
        if given.get(key) is not None and value not in values:
            raise ConfigError(f"config release_heatmap.{key}: {value!r} is not in the grid; it has {some(values, key)}")
    if not all(value in values for _, value, values in checks):
        return None
    if not any((target, shape) == chosen[:2] for _, target, shape in grid.lowerings):
        if given.get("target") is not None or given.get("shape") is not None:  # a kernel's own targets lack it
            raise ConfigError(f"config release_heatmap: {chosen[1]!r} has no job on target {chosen[0]!r}")
        return None
    return chosen


def resolve_api_passes(cfg: dict, modes: tuple[str, ...]) -> tuple[str, ...]:
    """The pass list of the modes that take one (config api_passes, else trace_cli.DEFAULT_PASSES)."""
    passes = tuple(cfg.get("api_passes") or trace_cli.DEFAULT_PASSES)
    if any(trace_modes.MODES[mode].takes_passes for mode in modes):
        problem = trace_cli.check_pass_names(passes)
        if problem:
            raise ConfigError(f"config api_passes: {problem}")
    return passes


KNOCKOUT_DEFAULTS = {"passes": "changed", "occurrence": "all", "timeout_s": 120}


# a short name, a full name, a factory's path, or an identity by place (pass_fn@tilelang.engine.lower:95)
_PASS_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*(@[A-Za-z_][A-Za-z0-9_.]*:[0-9]+)?")


def resolve_knockout(cfg: dict) -> dict | None:
    """config knockout with its defaults filled: None when off (false, the default); true is every default."""
    value = cfg.get("knockout")
    if value is None or value is False:
        return None
    settings = {**KNOCKOUT_DEFAULTS, **({} if value is True else value)}
    if isinstance(settings["passes"], list):
        for i, name in enumerate(settings["passes"]):
            if not _PASS_NAME.fullmatch(name):
                raise ConfigError(
                    f"config knockout.passes[{i}]: {name!r} is not a pass name (a TVM or TileLang pass as "
                    "passes.csv's pass or pass_id names it, e.g. LowerTileOp, tl.LowerTileOp or "
                    "tilelang.transform.HoistBroadcastValues)"
                )
        settings["passes"] = list(dict.fromkeys(settings["passes"]))
    return settings


def knockout_options(settings: dict) -> tuple[str, ...]:
    """knockout_batch.py's options for config knockout."""
    passes = settings["passes"]
    return (
        "--passes", passes if isinstance(passes, str) else ",".join(passes),
        "--occurrence", settings["occurrence"],
        "--timeout", str(settings["timeout_s"]),
    )  # fmt: skip


def knockout_dir(job: Job) -> str:
    """A knockout job's folder (knockout.csv, knockout.json, sources.json.gz)."""
    return jobs.KNOCKOUT_RUN_DIR.format(**job.wildcards)


def knockout_log(job: Job) -> str:
    return jobs.KNOCKOUT_LOG.format(**job.wildcards)
