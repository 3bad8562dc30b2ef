"""The job grid: a validated config dict -> one record per trace job (releases x targets x shapes x modes).

The workflow's ``common.smk`` validates the config against its JSON schema (config_checks.validate_config, which
fills defaults), then calls ``build_grid``; unit tests call it directly. The grid resolves config shapes, targets,
releases, modes, the API modes' passes, the knockout's settings and (kernel_configs.py) config kernels into jobs
(grid_job.Job), checks each configuration's arguments with the trace script's own rules and cuts the jobs into
batches (batching/batches.py). Every problem raises ``ConfigError`` (config_checks.py) naming the config key and
the bad value, before any job runs.

    python scripts/job_grid.py config/config.yaml     # prints the jobs (needs PyYAML)
"""

from __future__ import annotations

import difflib
import json
import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

from tilelang_churn.batching import batches
from tilelang_churn.batching.batches import Batch
from tilelang_churn.core import jobs, pass_configs, releases, trace_modes
from tilelang_churn.core.job_spec import JobSpec
from tilelang_churn.grid.config_checks import (
    REPO,
    ConfigError,
    check_installed_modes,
    check_kernel_types,
    check_name_length,
    check_pass_config_options,
    check_path_key,
    some,
    validate_config,
)
from tilelang_churn.grid.grid_job import Job
from tilelang_churn.grid.kernel_configs import KernelConfig, kernel_fields, resolve_kernels, resolve_pass_configs
from tilelang_churn.kernel import kernels, tilelang_source
from tilelang_churn.releases import capabilities, release_envs, version_entries
from tilelang_churn.releases.capabilities import Capabilities
from tilelang_churn.releases.version_entries import VersionEntry
from tilelang_churn.trace import trace_cli

KERNEL_FIELDS = ("dtype", "accum_dtype", "threads", "stages")
REQUIREMENTS = REPO / "requirements.txt"


@dataclass(frozen=True)
class Grid:
    versions: tuple[str, ...]  # the names of config versions' entries (a release's is its number), config order
    installed: str | None  # the release installed beside the workflow (needs no environment of its own)
    release_env_dir: str  # where the other releases' environments live
    shapes: dict[str, dict]  # the GEMM's configurations: shape id -> its parameters, config order
    targets: dict[str, dict]  # target folder name -> its TVM target dict, config order
    modes: tuple[str, ...]
    # (version, target, shape, mode) -> job, in versions x targets x shapes x modes order
    jobs: dict[tuple[str, str, str, str], Job]
    batches: list[Batch] = field(default_factory=list)
    # every other kernel's configurations: folder id -> KernelConfig, config order
    kernel_configs: dict[str, KernelConfig] = field(default_factory=dict)
    # (version, target, configuration) -> its lowering as a job spec of no mode (a GPU job's), grid order
    lowerings: dict[tuple[str, str, str], JobSpec] = field(default_factory=dict)
    # config knockout, defaults filled (None: off) and its batches: one job per configuration x target x release
    knockout: dict | None = None
    knockout_batches: list[Batch] = field(default_factory=list)
    # (target, configuration folder, mode) that results/compare/release_heatmap shows; None: the script's default
    release_heatmap: tuple[str, str, str] | None = None
    # name -> its entry of config versions (a release, the installed one, a wheel, an environment); config order
    entries: dict[str, VersionEntry] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # what the workflow tells before it runs (a release not listed)
    # what each version can do, where known before any environment is built (probed_before_build)
    probed: dict[str, Capabilities] = field(default_factory=dict)
    # target name -> the config key that defines it (targets[i], or a kernel entry's kernels[i].targets[j])
    target_keys: dict[str, str] = field(default_factory=dict)

    @property
    def configurations(self) -> list[str]:
        """Every configuration's folder id: the GEMM's shapes, then the other kernels' parameter sets."""
        return [*self.shapes, *self.kernel_configs]

    def job(self, version: str, target: str, shape: str, mode: str) -> Job:
        return self.jobs[(version, target, shape, mode)]

    @property
    def compares_releases(self) -> bool:
        return len(self.versions) > 1

    def release_env(self, version: str) -> str | None:
        """Where the jobs of version entry VERSION run: the environment folder of a release or a wheel, the
        interpreter of an environment entry, None for the release installed beside the workflow."""
        entry = self.entries.get(version)
        if entry is not None and entry.kind == "python":
            return entry.python
        if version == self.installed or (entry is not None and entry.kind == "installed"):
            return None
        return str(release_envs.env_dir(self.release_env_dir, version))

    def builds_environment(self, version: str) -> bool:
        """Whether rule release_env builds the environment of VERSION (a release not installed, a wheel)."""
        entry = self.entries.get(version)
        return entry.builds_environment if entry is not None else self.release_env(version) is not None


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


def check_pass_configs(grid: Grid, installed: str | None, source=None) -> None:
    """Every ``tl.*`` pass config key of the grid must be one that the installed TileLang defines (its
    PassConfigKey, read from its source), when jobs run with it: a typo stops the run here, naming the key and
    the closest keys. Another release's keys, and other namespaces (``tir.*``), are TVM's to refuse: the job
    records that as a failed row."""
    if not installed or installed not in grid.versions:
        return
    source = source if source is not None else tilelang_source.find_installed_source()
    known = tilelang_source.pass_config_keys(source) if source is not None else None
    if not known:
        return
    specs = [(shape, spec["pass_configs"]) for shape, spec in grid.shapes.items()]
    specs += [(config_id, config.pass_configs) for config_id, config in grid.kernel_configs.items()]
    for config_id, configs in specs:
        for name in configs:
            if name.startswith("tl.") and name not in known:
                close = difflib.get_close_matches(name, sorted(known), n=3)
                hint = f"; did you mean {', '.join(close)}?" if close else ""
                raise ConfigError(
                    f"config pass_configs (configuration {config_id!r}): {name!r} is not a pass config of TileLang "
                    f"{source.release or installed} installed beside the workflow (its PassConfigKey in "
                    f"{source.description}){hint}"
                )
    if any(configs for _, configs in specs):
        check_pass_config_options(specs, source, installed)


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


def gemm_fields(shape: dict) -> dict:
    """The kernel fields of a job spec (core/job_spec.py) of one configuration of config `shapes`: the book's
    kernel (kernels.BOOK_KERNEL) with the shape's parameters, an ordinary kernel from here on."""
    params = {"M": shape["M"], "N": shape["N"], "K": shape["K"]}
    params |= dict(zip(("block_M", "block_N", "block_K"), shape["block"]))
    params |= {name: shape[name] for name in KERNEL_FIELDS}
    book = kernels.BOOK_KERNEL
    return kernel_fields(book, book, kernels.shipped(book), kernels.DEFAULT_FUNCTION, params, False,
                         shape.get("pass_configs") or {})  # fmt: skip


def build_grid(cfg: dict, installed: str | None = None, source=None) -> Grid:
    """Every trace job of a schema-validated config: releases x targets x shapes x modes, in config order.

    installed: the TileLang release beside the workflow (default: read from the package metadata); source: its
    tilelang_source.SourceTree (default: found on sys.path).
    """
    installed = installed if installed is not None else release_envs.installed_release()
    entries = {entry.name: entry for entry in resolve_versions(cfg, installed)}
    versions = tuple(entries)
    if source is None and installed in versions:  # found once for the checks and the probe below
        source = tilelang_source.find_installed_source()
    shape_origins: dict[str, int] = {}
    shapes = resolve_shapes(cfg, shape_origins)
    targets, target_keys = resolve_targets(cfg)
    modes = resolve_modes(cfg)
    check_installed_modes(modes, versions, installed, source)
    api_passes = resolve_api_passes(cfg, modes)
    check_path_key(cfg, "release_env_dir")
    kernel_configs = resolve_kernels(cfg, shapes)
    if not shapes and not kernel_configs:
        raise ConfigError(
            "config shapes and kernels: the grid is empty (no GEMM shape, no kernel): nothing would be traced; give "
            "a shape or a kernel"
        )
    # (folder id, its kernel's fields of a job spec, its target names) of every configuration, the GEMM's first; a
    # kernel entry's own targets replace config targets
    grid_targets = [name for name in targets if target_keys[name].startswith("targets[")]
    configurations = [(shape, gemm_fields(spec), grid_targets) for shape, spec in shapes.items()]
    configurations += [
        (config_id, config_.kernel_fields(), config_.targets or grid_targets)
        for config_id, config_ in kernel_configs.items()
    ]
    used = {name for _, _, names in configurations for name in names}
    targets = {name: target for name, target in targets.items() if name in used}  # a target no job has is left out
    grid = Grid(versions, installed, cfg["release_env_dir"], shapes, targets, modes, jobs={},
                knockout=resolve_knockout(cfg), entries=entries, target_keys=target_keys)  # fmt: skip
    grid.warnings.extend(entry.warning for entry in entries.values() if entry.warning)
    grid.kernel_configs.update(kernel_configs)
    # the comparison of releases needs the IR after every pass; a single release does not
    keep_ir = grid.compares_releases
    for version, entry in entries.items():
        env = grid.release_env(version)
        own = {"release": version, "version_name": None}
        if entry.kind == "wheel":  # its own version exactly (0.1.15+mine); an environment's without a local tag
            own = {"release": entry.tilelang_version, "version_name": version}
        elif entry.kind == "python":
            own = {"release": releases.base_version(entry.tilelang_version), "version_name": version}
        for target_name, target in targets.items():
            for config_id, kernel, names in configurations:
                if target_name not in names:
                    continue
                lowering = JobSpec(**kernel, target_name=target_name, target=target, mode=None, release_env=env,
                                   **own)  # fmt: skip
                grid.lowerings[(version, target_name, config_id)] = lowering
                for mode in modes:
                    spec = lowering.with_mode(mode, api_passes, keep_ir, cfg["job_files"])
                    grid.jobs[(version, target_name, config_id, mode)] = Job.of(spec, config_id)
    check_pass_configs(grid, installed, source)
    grid = replace(grid, release_heatmap=resolve_release_heatmap(cfg, grid))
    check_job_arguments(cfg, grid, shape_origins)
    grid.probed.update(probed_before_build(grid, source))
    grid.batches.extend(
        batches.make_batches(
            grid.versions,
            grid.jobs,
            cfg["trace_batch_size"],
            cfg["trace_batch_seconds"],
            cfg["share_lowering"],
            grid.probed,
        )  # fmt: skip
    )
    if grid.knockout is not None:  # the instrument tracer's lowering of each configuration, every file kept
        knockout_jobs = [
            Job.of(lowering.with_mode("instrument"), config_id)
            for (_, _, config_id), lowering in grid.lowerings.items()
        ]
        grid.knockout_batches.extend(
            batches.make_knockout_batches(grid.versions, knockout_jobs, cfg["trace_batch_size"])
        )
    return grid


def probed_before_build(grid: Grid, source=None) -> dict[str, Capabilities]:
    """What each version can do where that is known before any environment is built: the release installed beside
    the workflow (from its source, ``source`` or found on sys.path), a wheel, an environment (probed as their entries
    were checked). A release from the package index is probed when its environment is built (release_envs)."""
    probed = {name: entry.capabilities for name, entry in grid.entries.items() if entry.capabilities is not None}
    if grid.installed in grid.versions:
        source = source if source is not None else tilelang_source.find_installed_source()
        if source is not None:
            probed[grid.installed] = capabilities.probe(source)
    return probed


# which config fields each trace-script option comes from
_OPTION_FIELDS = {
    "--shape": ("M", "N", "K"),
    "--block": ("block",),
    "--dtype": ("dtype",),
    "--accum-dtype": ("accum_dtype",),
    "--threads": ("threads",),
    "--stages": ("stages",),
}


def check_job_arguments(cfg: dict, grid: Grid, shape_origins: dict[str, int]) -> None:
    """Run each configuration's arguments through the trace script's own argument rules
    (trace_cli.job_argument_problem), so that no job the check accepts exits 2 later (M: 256.0, threads:
    128.0, sizes beyond int64). The modes only add arguments the grid makes itself: one mode per
    configuration is enough."""
    shape_index = shape_origins  # shape id -> its config shape (resolve_shapes)
    checked = set()
    for job in grid.jobs.values():
        if (job.target, job.shape) in checked:
            continue
        checked.add((job.target, job.shape))
        problem = trace_cli.job_argument_problem(job.args)
        if problem is None:
            continue
        option = re.fullmatch(r"argument (--[\w-]+).*", problem, re.S)
        option = option.group(1) if option else None
        if job.shape in grid.kernel_configs:
            key = f"kernels (kernel {grid.kernel_configs[job.shape].kernel!r}, folder {job.shape!r})"
        elif option in _OPTION_FIELDS:
            i = shape_index[job.shape]
            own = [f for f in _OPTION_FIELDS[option] if cfg["shapes"][i].get(f) is not None]
            key = (
                f"shapes[{i}]"
                if len(own) > 1
                else f"shapes[{i}].{own[0]}"
                if own
                else f"defaults.{_OPTION_FIELDS[option][0]}"
            )
        else:
            key = grid.target_keys[job.target]
        raise ConfigError(f"config {key}: {problem} (the job of shape {job.shape!r} on target {job.target!r})")


def print_jobs(config_path: str | Path) -> int:
    """The config file checked (``validate_config``, ``build_grid``), then one line per job; 2 with the error on
    stderr when it cannot be read or is refused."""
    import yaml

    try:
        with open(config_path, encoding="utf-8") as handle:
            cfg = yaml.safe_load(handle)
    except (OSError, yaml.YAMLError) as error:
        print(f"job_grid.py: error: cannot read the config {str(config_path)!r}: {error}", file=sys.stderr)
        return 2
    try:
        grid = build_grid(validate_config(cfg))
    except ConfigError as error:
        print(error, file=sys.stderr)
        return 2
    for job in grid.jobs.values():
        print(f"{job.version}/{job.target}/{job.shape}/{job.mode}: {job.command_args}")
    return 0
