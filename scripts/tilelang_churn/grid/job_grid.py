"""The job grid: a validated config dict -> one record per trace job (releases x targets x shapes x modes).

The workflow's ``common.smk`` validates the config against its JSON schema (config_checks.validate_config, which
fills defaults), then calls ``build_grid``; unit tests call it directly. ``build_grid`` resolves each config key
(grid_keys), config kernels (kernel_configs) into jobs (grid_job.Job) of a Grid (grid_model), checks them
(grid_checks) and cuts them into batches (batching/batches.py). Every problem raises ``ConfigError``
(config_checks.py) naming the config key and the bad value, before any job runs.

    python scripts/job_grid.py config/config.yaml     # prints the jobs (needs PyYAML)
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tilelang_churn.batching import batches
from tilelang_churn.core import releases
from tilelang_churn.core.job_spec import JobSpec
from tilelang_churn.grid.config_checks import ConfigError, check_installed_modes, check_path_key
from tilelang_churn.grid.grid_checks import check_job_arguments, check_pass_configs
from tilelang_churn.grid.grid_job import Job
from tilelang_churn.grid.grid_keys import (
    KERNEL_FIELDS,
    resolve_api_passes,
    resolve_knockout,
    resolve_modes,
    resolve_release_heatmap,
    resolve_shapes,
    resolve_targets,
    resolve_versions,
)
from tilelang_churn.grid.grid_model import Grid
from tilelang_churn.grid.kernel_configs import kernel_fields, resolve_kernels
from tilelang_churn.kernel import kernels, tilelang_source
from tilelang_churn.releases import capabilities, release_envs
from tilelang_churn.releases.capabilities import Capabilities


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


def read_config(path: str | Path) -> dict:
    """A config file as YAML reads it, schema-checked with its defaults filled (validate_config); ConfigError when
    it cannot be read."""
    import yaml

    from tilelang_churn.grid.config_checks import validate_config

    try:
        with open(path, encoding="utf-8") as handle:
            cfg = yaml.safe_load(handle)
    except (OSError, yaml.YAMLError) as error:
        raise ConfigError(f"job_grid.py: error: cannot read the config {str(path)!r}: {error}") from None
    return validate_config(cfg)


def job_lines(grid: Grid) -> list[str]:
    """One line per job: version/target/configuration/mode and its trace arguments."""
    return [f"{job.version}/{job.target}/{job.shape}/{job.mode}: {job.command_args}" for job in grid.jobs.values()]
