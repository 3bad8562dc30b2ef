"""The config check: a config dict against its JSON schema (which fills defaults; config_schema words its errors),
and every check of a config value that needs no job grid (numbers, paths, name lengths, element types, the
installed TileLang's modes and pass config options). Every problem raises ``ConfigError`` naming the config key and
the bad value, before any job runs; the grid (job_grid.py) resolves what passes.
"""

from __future__ import annotations

import difflib
import math
from pathlib import Path

from tilelang_churn.core import jobs, trace_modes
from tilelang_churn.grid import config_schema, pass_config_options
from tilelang_churn.kernel import tilelang_source
from tilelang_churn.trace import trace_cli

REPO, SCHEMA = config_schema.REPO, config_schema.SCHEMA
# Every path a grid value names ({kernel}: a kernel's name): the config check knows each file name's length.
NAMED_PATHS = (
    f"{jobs.KNOCKOUT_RUN_DIR}/knockout.csv",
    jobs.KNOCKOUT_LOG,
    jobs.KNOCKOUT_FIGURE,
    f"{jobs.RUN_DIR}/passes.csv",
    jobs.TRACE_LOG,
    jobs.JOB_FIGURE,
    f"{jobs.GPU_DIR}/runs/{jobs.GPU_JOB}/speed.json",
    f"logs/gpu/{jobs.GPU_JOB}.log",
    f"{jobs.GPU_DIR}/figures/{{kernel}}.png",
)
# bytes of one file name: NAME_MAX (255) less room for an atomic writer's temporary (".<name>.<pid>.tmp")
MAX_NAME_BYTES = 240


class ConfigError(ValueError):
    """A bad config value; the message starts with ``config <key>:``."""


def validate_config(cfg: dict, schema: str | Path = SCHEMA) -> dict:
    """Validate against the JSON schema and fill its defaults in place (Snakemake's validate); a schema error
    becomes a ConfigError naming the key and the value."""
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    check_finite_numbers(cfg)
    check_kernel_sources(cfg)
    try:
        validate(cfg, str(schema))
    except WorkflowError as exc:
        import jsonschema

        error = exc.__context__  # validate() raises WorkflowError while handling the schema error
        if not isinstance(error, jsonschema.ValidationError):
            raise
        raise ConfigError(config_schema.schema_error_message(error, cfg)) from None
    return cfg


def check_kernel_sources(cfg: dict) -> None:
    """file or shipped, exactly one, in words (jsonschema's oneOf says 'is valid under each of')."""
    entries = cfg.get("kernels")
    for i, entry in enumerate(entries if isinstance(entries, list) else ()):
        if not isinstance(entry, dict):
            continue
        given = [key for key in ("file", "shipped") if entry.get(key) is not None]
        if len(given) != 1:
            what = f"gives both ({entry['file']!r}, {entry['shipped']!r})" if given else "gives neither"
            raise ConfigError(f"config kernels[{i}]: {what}; give file or shipped, not both")


def check_finite_numbers(data, path=()) -> None:
    """NaN and infinity pass every schema bound (each comparison with NaN is false): refuse them by key."""
    if isinstance(data, float) and not math.isfinite(data):
        raise ConfigError(
            f"config {config_schema.key_text(list(path)) or '(top level)'}: {data!r} is not a finite number"
        )
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for part, value in items:
        check_finite_numbers(value, (*path, part))


def check_output_cache(cfg: dict, cache_rules, cache_dir: str | None) -> None:
    """`snakemake --cache` with config trace_cache needs SNAKEMAKE_OUTPUT_CACHE (Snakemake otherwise stops in a
    traceback when the first cached batch asks its cache): say so before any job. cache_rules: Snakemake's --cache
    setting (None: not given)."""
    if cache_rules is not None and cfg.get("trace_cache") and not cache_dir:
        raise ConfigError(
            "config trace_cache: true with --cache, but SNAKEMAKE_OUTPUT_CACHE is not set: set it to the folder of "
            "the cache the workflows share (e.g. export SNAKEMAKE_OUTPUT_CACHE=$HOME/.cache/tilelang-churn), or "
            "run without --cache"
        )


def check_path_key(cfg: dict, key: str) -> None:
    check_path(cfg[key], key)


def check_path(value: str, key: str, what: str = "a folder path") -> None:
    """A path named by the config: any characters a file name may hold (spaces and shell metacharacters
    included: rules quote every path), but no braces, which Snakemake reads as wildcards in a path pattern,
    and no control characters."""
    bad = sorted({char for char in value if char in "{}" or ord(char) < 32 or ord(char) == 127})
    if bad:
        raise ConfigError(
            f"config {key}: {value!r} holds {', '.join(repr(char) for char in bad)}; {what} here may not "
            "hold braces (Snakemake would read them as wildcards) or control characters"
        )


def _name_components(wildcard: str) -> tuple[str, ...]:
    """The file-name patterns of NAMED_PATHS that hold {wildcard}."""
    marker = "{" + wildcard + "}"
    parts = (part for path in NAMED_PATHS for part in path.split("/") if marker in part)
    return tuple(dict.fromkeys(parts))


def check_name_length(value: str, wildcard: str, key: str) -> None:
    """Refuse a value whose longest file name (a folder, a log, a figure) exceeds MAX_NAME_BYTES, naming the key,
    so that it fails here and not at its first job."""
    for pattern in _name_components(wildcard):
        name = pattern.replace("{" + wildcard + "}", value)
        if len(name.encode("utf-8")) > MAX_NAME_BYTES:
            raise ConfigError(
                f"config {key}: {_short(value)} ({len(value)} characters) makes the file name {_short(name)} of "
                f"{len(name.encode('utf-8'))} bytes; file names may have at most {MAX_NAME_BYTES}: give a shorter one"
            )


def _short(text: str, keep: int = 40) -> str:
    return repr(text) if len(text) <= 2 * keep else f"{text[:keep]!r}...{text[-keep // 2 :]!r}"


def some(values, noun: str, shown: int = 5) -> str:
    """'3 shapes: a, b, c', or the count and the first few of a long list (a 10,000-job grid's warning)."""
    values = list(values)
    if len(values) <= shown:
        return f"{noun} {values!r}"
    return f"{len(values)} {noun}, the first {shown} {values[:shown]!r}"


def check_pass_config_options(specs: list, source, installed: str) -> None:
    """Every pass config key, in any namespace (``tir.``, ``tirx.``, ``foo.``), must be an option TVM registers in
    the installed TileLang, and its value of the option's type: otherwise every job of the configuration would fail
    with TVM's list of all options. Checked before any job, naming the key, the closest options and the value."""
    init = Path(source.description) / "__init__.py"
    stamp = init.stat().st_mtime_ns if init.is_file() else None
    options = pass_config_options.registered(f"{source.description}|{source.release}|{stamp}")
    if not options:
        return
    release = source.release or installed
    for config_id, configs in specs:
        for name, value in configs.items():
            where = f"config pass_configs (configuration {config_id!r}): {name!r}"
            if name not in options:
                close = difflib.get_close_matches(name, sorted(options), n=3)
                hint = f"; did you mean {', '.join(close)}?" if close else ""
                raise ConfigError(f"{where} is not a pass config option of TileLang {release}'s TVM{hint}")
            problem = pass_config_options.value_problem(options[name], value)
            if problem:
                raise ConfigError(f"{where} {problem} (TVM's type {options[name]} in TileLang {release})")


def check_kernel_types(entry: dict, key: str) -> None:
    # the trace script's own lists (trace_cli) are the only copy of the allowed element types
    for name, allowed in (("dtype", trace_cli.DTYPES), ("accum_dtype", trace_cli.ACCUM_DTYPES)):
        value = entry.get(name)
        if value is not None and value not in allowed:
            raise ConfigError(f"config {key}.{name}: {value!r} is not one of {', '.join(allowed)}")


def check_installed_modes(
    modes: tuple[str, ...], versions: tuple[str, ...], installed: str | None, source=None
) -> None:
    """Each configured mode must find its entry points (tilelang_source.ENTRY_POINTS) in the TileLang installed
    beside the workflow, when jobs run with it: a release without them stops the run here, in one line, and a
    release that lacks only what no configured mode needs runs (0.1.10 with modes [instrument]). A release
    traced in its own environment gives such a job one unsupported row instead. source: that TileLang's
    source (default: found on sys.path without importing it; none found: nothing to check)."""
    if not installed or installed not in versions:
        return
    source = source if source is not None else tilelang_source.find_installed_source()
    if source is None:
        return
    missing = tilelang_source.missing_for_modes(tilelang_source.locate_entry_points(source), trace_modes.MODES)
    for i, mode in enumerate(modes):
        if mode in missing:
            served = [name for name in trace_modes.MODES if name not in missing]
            lacks = "; ".join(f"{', '.join(loc.missing)} in {loc.relpath}" for loc in missing[mode])
            raise ConfigError(
                f"config modes[{i}]: mode {mode!r} needs what TileLang {source.release or installed} installed beside "
                f"the workflow ({source.description}) lacks: {lacks}; it serves {', '.join(served)}: drop the mode "
                "or install a release that has it (gemm_lower_trace.py --static-only lists what it has)"
            )
