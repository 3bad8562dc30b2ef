"""Checks of a grid once its jobs are made: every pass config key one the installed TileLang defines, every job's
arguments accepted by the trace script's own rules (its ArgumentProblem names the option: no message is parsed
here)."""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING

from tilelang_churn.grid.config_checks import (
    ConfigError,
    check_pass_config_options,
)
from tilelang_churn.kernel import tilelang_source
from tilelang_churn.trace import trace_cli

if TYPE_CHECKING:
    from tilelang_churn.grid.grid_model import Grid


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
        option = problem.option
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
