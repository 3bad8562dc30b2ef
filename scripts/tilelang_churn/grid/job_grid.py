"""The job grid: a validated config dict -> one record per trace job (releases x targets x shapes x modes).

The workflow's ``common.smk`` validates the config against its JSON schema (which fills defaults), then calls
``build_grid``; unit tests call it directly. Every problem raises ``ConfigError`` naming the config key and
the bad value, before any job runs.

    python scripts/job_grid.py config/config.yaml     # prints the jobs (needs PyYAML)
"""

from __future__ import annotations

import difflib
import functools
import json
import math
import re
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from tilelang_churn.core import files, job_cost, jobs, pass_configs, trace_modes
from tilelang_churn.core.job_spec import JobSpec
from tilelang_churn.grid import kernel_probe, kernel_source, kernels, pass_config_options
from tilelang_churn.releases import release_envs, tilelang_source
from tilelang_churn.trace import trace_cli

KERNEL_FIELDS = ("dtype", "accum_dtype", "threads", "stages")
REPO = Path(__file__).resolve().parents[3]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
REQUIREMENTS = REPO / "requirements.txt"
# the GPU stage's files of a configuration (workflow/rules/gpu.smk)
GPU_DIR = "results/gpu"
GPU_JOB = "{version}/{target}/{shape}"
# the pass knockout's files of a configuration (workflow/rules/knockout.smk)
KNOCKOUT_DIR = "results/knockout"
KNOCKOUT_JOB = "{version}/{target}/{shape}"
KNOCKOUT_RUN_DIR = f"{KNOCKOUT_DIR}/runs/{KNOCKOUT_JOB}"
KNOCKOUT_LOG = f"logs/knockout/{KNOCKOUT_JOB}.log"
KNOCKOUT_FIGURE = f"{KNOCKOUT_DIR}/figures/{KNOCKOUT_JOB}.png"
# Every path a grid value names ({kernel}: a kernel's name): the config check knows each file name's length.
NAMED_PATHS = (
    f"{KNOCKOUT_RUN_DIR}/knockout.csv",
    KNOCKOUT_LOG,
    KNOCKOUT_FIGURE,
    f"{jobs.RUN_DIR}/passes.csv",
    jobs.TRACE_LOG,
    jobs.JOB_FIGURE,
    f"{GPU_DIR}/runs/{GPU_JOB}/speed.json",
    f"logs/gpu/{GPU_JOB}.log",
    f"{GPU_DIR}/figures/{{kernel}}.png",
)
# bytes of one file name: NAME_MAX (255) less room for an atomic writer's temporary (".<name>.<pid>.tmp")
MAX_NAME_BYTES = 240


class ConfigError(ValueError):
    """A bad config value; the message starts with ``config <key>:``."""


@dataclass(frozen=True)
class Job:
    """One job of the grid: its wildcard values, which name its folders and files, and its spec, from which its
    arguments are made."""

    version: str
    target: str
    shape: str  # the configuration's folder id
    mode: str
    spec: JobSpec = field(compare=False)
    args: tuple[str, ...] = field(init=False, compare=False)  # the trace script's arguments (without --out)

    def __post_init__(self):
        object.__setattr__(self, "args", trace_cli.job_argv(self.spec))

    @classmethod
    def of(cls, spec: JobSpec, configuration: str) -> Job:
        return cls(spec.release, spec.target_name, configuration, spec.mode, spec)

    @property
    def release_env(self) -> str | None:
        """The release's own environment (release_envs.py); None: the release installed beside the workflow."""
        return self.spec.release_env

    @property
    def kernel_file(self) -> str | None:
        """A user's kernel file as configured (an input of the job's batch: editing it retraces its jobs); None:
        a shipped kernel."""
        return self.spec.source if self.spec.user_file else None

    @property
    def wildcards(self) -> dict:
        return {"version": self.version, "target": self.target, "shape": self.shape, "mode": self.mode}

    @property
    def command_args(self) -> str:
        """The arguments as one shell-quoted string (the trace rule's params)."""
        return shlex.join(self.args)

    @property
    def run_dir(self) -> str:
        return jobs.RUN_DIR.format(**self.wildcards)

    @property
    def trace_log(self) -> str:
        return jobs.TRACE_LOG.format(**self.wildcards)


@dataclass(frozen=True)
class Batch:
    """Trace jobs that one process runs (trace_batch.py): it imports TileLang once and forks a child per job.

    One release each, and TL_LOWER_TRACE (read when tilelang is imported) on for all or none: trace-env jobs
    get batches of their own. At most config trace_batch_size jobs, so that no Snakemake rule has more
    outputs than that (its lookup of a file's producer goes through every output of the rule).
    """

    name: str  # the Snakemake rule that runs it, from what it holds (batch_name), e.g. trace_env_0_1_15
    version: str
    lower_trace_env: bool
    jobs: tuple[Job, ...]
    job_seconds: tuple[float, ...] = ()  # each job's expected seconds (core/job_cost.py), in the order of jobs
    # the lowerings it runs, each in a child of its own: one per job, but one for a trace-env job and the instrument
    # job its lowering serves (share_lowering); None: one per job
    lowerings: int | None = None

    @property
    def expected_seconds(self) -> float:
        """Of lowering, one core, as make_batches cut it."""
        return sum(self.job_seconds)

    @property
    def children(self) -> int:
        """The children its process forks, at most ``threads`` at a time: so the most threads it can use."""
        return self.lowerings or len(self.jobs)

    @property
    def kernel_files(self) -> list[str]:
        """The user kernel files its jobs trace and the modules each imports from its folder (inputs of the batch's
        rule: editing any of them retraces the batch)."""
        return kernel_files_of(job.kernel_file for job in self.jobs if job.kernel_file)


def kernel_files_of(files) -> list[str]:
    """Each user kernel file, then the modules it imports from its own folder (kernels.local_modules), once each."""
    found: dict[str, None] = {}
    for file in files:
        found[file] = None
        found.update(dict.fromkeys(kernels.local_modules(file)))
    return list(found)


@dataclass(frozen=True)
class KernelConfig:
    """One parameter set of a kernel of config `kernels` (scripts/tilelang_churn/grid/kernels.py's contract)."""

    kernel: str
    source: str  # a shipped kernel's name (workflow/kernels/<source>.py), or the user's file as configured
    function: str
    params: dict
    user_file: bool  # source is a file of the user's (an input of its jobs), not a kernel shipped with the workflow
    pass_configs: dict = field(default_factory=dict)  # TileLang's PassConfigKey options ({}: its defaults)
    reference: str | None = None  # the GPU stage's reference: a function of the file, called (*inputs)

    @property
    def file(self) -> Path:
        return Path(self.source) if self.user_file else kernels.shipped(self.source)

    def kernel_fields(self) -> dict:
        """Its kernel's fields of a job spec (core/job_spec.py)."""
        fields = kernel_fields(self.kernel, self.source, self.file, self.function, self.params, self.user_file,
                               self.pass_configs)  # fmt: skip
        return fields | ({"reference": self.reference} if self.reference else {})


@dataclass(frozen=True)
class Grid:
    versions: tuple[str, ...]  # TileLang releases, config order
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
        """The environment folder of a release, None for the installed one."""
        if version == self.installed:
            return None
        return str(release_envs.env_dir(self.release_env_dir, version))


# ------------------------------------------------------------------------------------------------ schema


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
        raise ConfigError(schema_error_message(error, cfg)) from None
    return cfg


def coerce_booleans(cfg: dict, overrides: Mapping | None = None, schema: str | Path = SCHEMA) -> dict:
    """The command line's values as YAML means them, in place. Snakemake reads a --config value's scalars as
    strings (YAML's base loader) but for a top-level number: 'true' / 'false' (any case) -> True / False where
    the schema takes a boolean, a number's text -> the number where it takes a number (`defaults='{stages: 2}'`,
    `knockout='{timeout_s: 30}'`), and in a free-form mapping or list (a kernel's `params`) any scalar as YAML
    reads it (`params: [{N: 1152}]` -> 1152); where the schema takes only a string, the text stays. overrides:
    only the keys it holds (the --config values), so a string in a config file is still the schema's to refuse."""
    loaded = _schema(str(schema))
    properties, definitions = loaded.get("properties", {}), loaded.get("$defs", {})
    given = cfg if overrides is None else overrides
    for name, spec in properties.items():
        if isinstance(given, Mapping) and name in given and name in cfg:
            cfg[name] = _coerce(cfg[name], spec, definitions)
    return cfg


@functools.cache
def _schema(path: str) -> dict:
    """The config schema as a mapping, read once per process (the coercion and the error messages read it)."""
    import yaml

    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def _resolved(branch: dict, definitions: dict) -> dict:
    """A schema branch, its ``$ref`` to ``#/$defs/NAME`` followed."""
    ref = branch.get("$ref", "")
    return definitions.get(ref.rsplit("/", 1)[-1], {}) if ref.startswith("#/$defs/") else branch


def _coerce(value, spec: dict, definitions: dict):
    """VALUE as its schema SPEC takes it (coerce_booleans); an empty spec is free-form."""
    spec = _resolved(spec, definitions)
    branches = [spec, *(_resolved(b, definitions) for b in [*spec.get("oneOf", []), *spec.get("anyOf", [])])]
    kinds: set[str] = set()
    for branch in branches:  # a branch's type: one name, or a list of them (type: [string, "null"])
        kind = branch.get("type")
        kinds.update(kind if isinstance(kind, list) else [kind] if kind else [])
    free = not kinds and not any("properties" in branch or "items" in branch for branch in branches)
    if isinstance(value, str):
        if free:
            return _yaml_scalar(value)
        if "boolean" in kinds and value.lower() in ("true", "false"):
            return value.lower() == "true"
        if kinds & {"number", "integer"}:
            try:
                return int(value) if value.strip().lstrip("+-").isdigit() else float(value)
            except ValueError:
                return value  # the schema's to refuse, naming the value
        return value
    if isinstance(value, dict):
        properties = next((b["properties"] for b in branches if "properties" in b), {})
        extra = next((b["additionalProperties"] for b in branches if isinstance(b.get("additionalProperties"), dict)),
                     None)  # fmt: skip
        taken_as_is = properties or any(b.get("additionalProperties") is False for b in branches)
        return {
            key: _coerce(item, properties[key] if key in properties else extra or {}, definitions)
            if key in properties or extra is not None or not taken_as_is
            else item
            for key, item in value.items()
        }
    if isinstance(value, list):
        items = next((b["items"] for b in branches if "items" in b), {})
        return [_coerce(item, items, definitions) for item in value]
    return value


def _yaml_scalar(text: str):
    """A free-form scalar as YAML reads it: a number, a boolean; any other text as it is."""
    import yaml

    try:
        read = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    return read if isinstance(read, (bool, int, float)) else text


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
        raise ConfigError(f"config {_key(list(path)) or '(top level)'}: {data!r} is not a finite number")
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for part, value in items:
        check_finite_numbers(value, (*path, part))


def schema_error_message(error, cfg: dict) -> str:
    """``config <key>: <message>`` for a jsonschema ValidationError, naming the key and, for a list item, the list."""
    import jsonschema

    while True:
        while (  # the leaf of a oneOf whose every alternative refuses the value itself: the oneOf says it better
            error.parent is not None
            and error.parent.validator in ("oneOf", "anyOf")
            and _refuses_its_kind(error.parent)
        ):
            error = error.parent
        if not error.context:
            break
        if _refuses_its_kind(error):
            # a value no alternative of the key takes at all (knockout: "yes", versions: 0.1.15): what it takes
            key = _key(list(error.absolute_path)) or "(top level)"
            return f"config {key}: {error.instance!r} is none of what it takes: " + _alternatives(
                error.validator_value, error.instance
            )
        # oneOf: report the branch of the value's own type, e.g. block: [1, 0, 1]
        same_type = [sub for sub in error.context if sub.validator != "type" or len(sub.relative_path) > 0]
        error = jsonschema.exceptions.best_match(same_type or error.context)
    path = list(error.absolute_path)
    message = f"config {_key(path) or '(top level)'}: {error.message}"
    if path and isinstance(path[-1], int):  # an item of a list of plain values: show the list
        items = _lookup(cfg, path[:-1])
        if not any(isinstance(item, (dict, list)) for item in items):
            message += f" ({_key(path[:-1])} = {items!r})"
    return message


def _refuses_its_kind(error) -> bool:
    """Whether every alternative of a oneOf/anyOf refuses the value for its kind (a type, an enum, a const), not for
    a bound or a pattern that a value of the right kind missed."""
    return bool(error.context) and all(
        len(sub.relative_path) == 0
        and (
            sub.validator in ("type", "enum", "const")
            or (sub.validator in ("oneOf", "anyOf") and _refuses_its_kind(sub))
        )
        for sub in error.context
    )


def _alternatives(branches: list, value) -> str:
    """The alternatives of a oneOf/anyOf in words ('true or false; a mapping of passes, occurrence, timeout_s'), and
    for a single value where a list is taken, the value as a list."""
    definitions = _schema(str(SCHEMA)).get("$defs", {})
    words = []
    takes_list = False
    flat: list[dict] = []
    pending = list(branches)
    while pending:  # a $ref resolved, a nested oneOf/anyOf (kernel_param_sets) opened
        branch = _resolved(pending.pop(0), definitions)
        nested = [*branch.get("oneOf", []), *branch.get("anyOf", [])]
        if nested and "type" not in branch:
            pending[:0] = nested
        else:
            flat.append(branch)
    for branch in flat:
        kinds = branch.get("type")
        kinds = kinds if isinstance(kinds, list) else [kinds] if kinds else []
        takes_list = takes_list or "array" in kinds
        if "const" in branch or "enum" in branch:  # its values say more than its type
            words.append(" or ".join(repr(choice) for choice in branch.get("enum", [branch.get("const")])))
            continue
        for kind in kinds:
            if kind == "object" and branch.get("properties"):
                words.append(f"a mapping of {', '.join(branch['properties'])}")
            else:
                words.append(_KIND_WORDS.get(kind, kind))
    said = "; ".join(dict.fromkeys(word for word in words if word))
    if takes_list and not isinstance(value, (list, dict)):
        said += f" (as a list: {[value]!r})"
    return said


_KIND_WORDS = {"boolean": "true or false", "null": "null", "array": "a list", "object": "a mapping",
               "string": "a string", "number": "a number", "integer": "an integer"}  # fmt: skip


def _key(path) -> str:
    """'shapes[2].block[1]' from a path such as ['shapes', 2, 'block', 1]."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def _lookup(data, path):
    for part in path:
        data = data[part]
    return data


# ------------------------------------------------------------------------------------------------ checks


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


def resolve_shapes(cfg: dict, origins: dict | None = None) -> dict[str, dict]:
    """Shape id -> kernel parameters (pass configs included: one configuration per set), in config order; ids
    and parameter sets must be unique. origins, when given, gets shape id -> the index of its config shape."""
    defaults = cfg["defaults"]
    _check_kernel_types(defaults, "defaults")
    shapes: dict[str, dict] = {}
    where: dict[str, str] = {}
    same_as: dict[str, str] = {}  # the parameters of a shape, as JSON -> its id
    for i, shape in enumerate(cfg["shapes"]):
        key = f"shapes[{i}]"
        _check_kernel_types(shape, key)
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


def _check_kernel_types(entry: dict, key: str) -> None:
    # the trace script's own lists (trace_cli) are the only copy of the allowed element types
    for name, allowed in (("dtype", trace_cli.DTYPES), ("accum_dtype", trace_cli.ACCUM_DTYPES)):
        value = entry.get(name)
        if value is not None and value not in allowed:
            raise ConfigError(f"config {key}.{name}: {value!r} is not one of {', '.join(allowed)}")


def _derived_shape_id(shape: dict, spec: dict) -> str:
    shape_id = f"{spec['M']}x{spec['N']}x{spec['K']}"
    if shape["block"] is not None:
        shape_id += "_b{}x{}x{}".format(*spec["block"])
    if shape["dtype"] is not None:
        shape_id += f"_{spec['dtype']}"
    return shape_id


def resolve_kernels(cfg: dict, shapes: dict) -> dict[str, KernelConfig]:
    """Folder id -> KernelConfig of every parameter set of config `kernels`, checked against the function's
    signature (read from its file, not imported): a missing or unparsable file, a missing function, a parameter
    it does not take, a name that is not unique, two parameter sets on one folder. An entry of several functions
    (``function: [a, b]`` or ``all``) is one kernel per function, named ``<name>.<function>``."""
    configs: dict[str, KernelConfig] = {}
    where: dict[str, str] = {shape: f"shapes[{i}]" for i, shape in enumerate(shapes)}
    full: dict[str, tuple] = {}  # folder id -> its parameter set, function defaults filled in, and pass configs
    names: dict[str, str] = {}
    for i, entry in enumerate(cfg["kernels"]):
        key = f"kernels[{i}]"
        file, user_file = _kernel_file(entry, key)
        found = _entry_kernels(entry, key, file)
        several = not _one_function(entry)
        if several:
            _check_shared_defaults(entry, key, file, [function for _, function, _, _ in found])
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
            fixed = signature.ordered(_entry_defaults(entry, key, function, signature, several))
            if param_sets == AUTOTUNE:
                param_sets = _autotune_sets(entry, key, name, signature, fixed)
            folders = entry.get("folders")
            if folders is not None and len(folders) != len(param_sets):
                raise ConfigError(
                    f"config {key}.folders: {len(folders)} folder names for {len(param_sets)} parameter sets; "
                    "give one per set of params, null for a derived folder"
                )
            own = _own_pass_configs(signature, key, name, fixed)
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
                    config_id = base_id + pass_configs.folder_suffix(pass_config_set)
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
                        name, source, function, params, user_file, pass_config_set, _reference(entry, key, function)
                    )
    return configs


def _reference(entry: dict, key: str, function: str) -> str | None:
    """The entry's ``reference`` for FUNCTION: one name for all its functions, or a mapping per function."""
    reference = entry.get("reference")
    if isinstance(reference, dict):
        reference = reference.get(function)
    if reference is not None and not (isinstance(reference, str) and reference.isidentifier()):
        raise ConfigError(f"config {key}.reference: {reference!r} is not a function name of the kernel's file")
    return reference


AUTOTUNE = "autotune"  # params: autotune, the kernel's own @autotune configs as its parameter sets


def _kernel_file(entry: dict, key: str) -> tuple[Path, bool]:
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


def _entry_kernels(entry: dict, key: str, file: Path) -> list[tuple[str, str, list | str, str]]:
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
        kernel = entry["name"] if _one_function(entry) else f"{entry['name']}.{name}"
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


def _one_function(entry: dict) -> bool:
    """Whether an entry names one function (its kernel keeps the entry's name), not a list or ``all``."""
    return isinstance(entry["function"], str) and entry["function"] != "all"


def _entry_defaults(entry: dict, key: str, function: str, signature, several: bool) -> dict:
    """The entry's ``defaults`` for FUNCTION: all of them for an entry of one function; for an entry of several,
    those the function takes (an eager kernel's M, N, K and a lazy one's block sizes can share one entry)."""
    defaults = dict(entry["defaults"])
    if not several or signature.takes_any:
        return defaults
    return {name: value for name, value in defaults.items() if name in signature.params}


def _check_shared_defaults(entry: dict, key: str, file: Path, functions: list[str]) -> None:
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


def _own_pass_configs(signature, key: str, name: str, fixed: dict) -> dict:
    """The pass configs the kernel brings (its @tilelang.jit decorator's, T.annotate_pass_configs): read from its
    source, else by the import probe; {} where the probe cannot import it (its jobs then fail saying why)."""
    own = signature.kernel_pass_configs
    if own == kernel_source.UNREAD:
        found = kernel_probe.probe(signature.file, signature.function, fixed)
        own = found.get("pass_configs", {})
        if "error" in found:
            print(f"job_grid: config {key}: kernel {name!r}: its pass_configs could not be read: {found['error']}",
                  file=sys.stderr)  # fmt: skip
    try:
        return pass_configs.check(own)
    except pass_configs.PassConfigError as error:
        raise ConfigError(f"config {key}: kernel {name!r}: its decorator's pass_configs: {error}") from None


def _autotune_sets(entry: dict, key: str, name: str, signature, fixed: dict) -> list[dict]:
    """``params: autotune``: the kernel's own @autotune configs, each a parameter set over the entry's
    ``defaults``, at most ``autotune_max``."""
    configs = signature.autotune_configs
    if configs is None:
        raise ConfigError(
            f"config {key}.params: kernel {name!r}: autotune, but {signature.function}() in {signature.file} has no "
            "@autotune decorator; give its parameter sets as a list"
        )
    if configs == kernel_source.UNREAD:
        found = kernel_probe.probe(signature.file, signature.function, fixed)
        if "error" in found:
            raise ConfigError(f"config {key}.params: kernel {name!r}: autotune: {found['error']}")
        configs = found["autotune_configs"]
    limit = entry["autotune_max"]
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


def resolve_targets(cfg: dict) -> dict[str, dict]:
    """Target folder name -> its TVM target dict, in config order. A named JSON target is called by its config
    name in the tables (the job's --target-name), so renaming it reaches them."""
    targets: dict[str, dict] = {}
    where: dict[str, str] = {}
    same_dict: dict[str, str] = {}  # the target dict, as JSON -> its config key
    for i, entry in enumerate(cfg["targets"]):
        key = f"targets[{i}]"
        if isinstance(entry, str):
            if entry not in trace_cli.TARGETS:
                raise ConfigError(
                    f"config {key}: unknown target {entry!r}; short names are {', '.join(trace_cli.TARGETS)}, "
                    'or give a mapping {name: NAME, target: {"kind": ..., ...}}'
                )
            name, target = entry, dict(trace_cli.TARGETS[entry])
        else:
            name, target = entry["name"], entry["target"]
            if not isinstance(target.get("kind"), str) or not target["kind"]:
                raise ConfigError(
                    f'config {key}.target: {target!r} has no "kind"; a JSON target needs a string "kind" '
                    'such as "cuda" or "hip"'
                )
            problem = trace_cli.target_kind_problem(target)
            if problem:
                raise ConfigError(f"config {key}.target.kind: {problem}")
            known = trace_cli.TARGETS.get(name)
            if known is not None and known != target:
                raise ConfigError(
                    f"config {key}.name: {name!r} is the short name of {known!r}, not of {target!r}; "
                    "choose another name"
                )
        if name in targets:
            raise ConfigError(f"config {key}: duplicate target name {name!r} (also {where[name]})")
        check_name_length(name, "target", f"{key}.name" if isinstance(entry, dict) else key)
        text = json.dumps(target, sort_keys=True)
        if text in same_dict:
            raise ConfigError(
                f"config {key}: target {target!r} is also {same_dict[text]}; the two targets' jobs would be identical"
            )
        same_dict[text] = key
        targets[name] = target
        where[name] = key
    return targets


def resolve_versions(cfg: dict, installed: str | None) -> tuple[str, ...]:
    """config versions, checked against the release data; default: the installed release (or, with none
    installed, the release requirements.txt pins, which then gets an environment of its own)."""
    if cfg.get("versions") is None:
        return (installed or pinned_release(),)
    try:
        return tuple(release_envs.check_versions(cfg["versions"], installed))
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
    return chosen if all(value in values for _, value, values in checks) else None


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
    return KNOCKOUT_RUN_DIR.format(**job.wildcards)


def knockout_log(job: Job) -> str:
    return KNOCKOUT_LOG.format(**job.wildcards)


# -------------------------------------------------------------------------------------------------- grid


def gemm_fields(shape: dict) -> dict:
    """The kernel fields of a job spec (core/job_spec.py) of one configuration of config `shapes`: the book's
    kernel (kernels.BOOK_KERNEL) with the shape's parameters, an ordinary kernel from here on."""
    params = {"M": shape["M"], "N": shape["N"], "K": shape["K"]}
    params |= dict(zip(("block_M", "block_N", "block_K"), shape["block"]))
    params |= {name: shape[name] for name in KERNEL_FIELDS}
    book = kernels.BOOK_KERNEL
    return kernel_fields(book, book, kernels.shipped(book), kernels.DEFAULT_FUNCTION, params, False,
                         shape.get("pass_configs") or {})  # fmt: skip


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


def build_grid(cfg: dict, installed: str | None = None, source=None) -> Grid:
    """Every trace job of a schema-validated config: releases x targets x shapes x modes, in config order.

    installed: the TileLang release beside the workflow (default: read from the package metadata); source: its
    tilelang_source.SourceTree (default: found on sys.path).
    """
    installed = installed if installed is not None else release_envs.installed_release()
    versions = resolve_versions(cfg, installed)
    shape_origins: dict[str, int] = {}
    shapes = resolve_shapes(cfg, shape_origins)
    targets = resolve_targets(cfg)
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
    grid = Grid(versions, installed, cfg["release_env_dir"], shapes, targets, modes, jobs={},
                knockout=resolve_knockout(cfg))  # fmt: skip
    grid.kernel_configs.update(kernel_configs)
    # (folder id, its kernel's fields of a job spec) of every configuration, the GEMM's first
    configurations = [(shape, gemm_fields(spec)) for shape, spec in shapes.items()]
    configurations += [(config_id, config_.kernel_fields()) for config_id, config_ in kernel_configs.items()]
    # the comparison of releases needs the IR after every pass; a single release does not
    keep_ir = grid.compares_releases
    for version in versions:
        env = grid.release_env(version)
        for target_name, target in targets.items():
            for config_id, kernel in configurations:
                lowering = JobSpec(**kernel, target_name=target_name, target=target, mode=None, release=version,
                                   release_env=env)  # fmt: skip
                grid.lowerings[(version, target_name, config_id)] = lowering
                for mode in modes:
                    spec = lowering.with_mode(mode, api_passes, keep_ir, cfg["job_files"])
                    grid.jobs[(version, target_name, config_id, mode)] = Job.of(spec, config_id)
    check_pass_configs(grid, installed, source)
    grid = replace(grid, release_heatmap=resolve_release_heatmap(cfg, grid))
    check_job_arguments(cfg, grid, shape_origins)
    grid.batches.extend(make_batches(grid, cfg["trace_batch_size"], cfg["trace_batch_seconds"], cfg["share_lowering"]))
    if grid.knockout is not None:  # the instrument tracer's lowering of each configuration, every file kept
        knockout_jobs = [
            Job.of(lowering.with_mode("instrument"), config_id)
            for (_, _, config_id), lowering in grid.lowerings.items()
        ]
        grid.knockout_batches.extend(make_knockout_batches(grid, knockout_jobs, cfg["trace_batch_size"]))
    return grid


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
    target_index = {target: i for i, target in enumerate(grid.targets)}
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
            key = f"targets[{target_index[job.target]}]"
        raise ConfigError(f"config {key}: {problem} (the job of shape {job.shape!r} on target {job.target!r})")


# a batch name's part longer than this is cut and given a hash of the whole, so names stay short (Slurm, file names)
MAX_NAME_PART = 24


def name_part(text: str) -> str:
    """A release, mode, kernel or target as part of a Snakemake rule name: letters, digits and _ only."""
    return files.short_name(re.sub(r"[^A-Za-z0-9]", "_", text), MAX_NAME_PART, text, digits=8)


def batch_name(
    grid: Grid, version: str, lower_trace_env: bool, jobs: list[Job], user_file: bool, kind: str = "trace"
) -> str:
    """trace_<mode>_<release>[_<kernel>][_<target>] from what the batch holds: the mode is env for trace-env
    batches (env_instrument when they also hold the instrument jobs their lowerings serve), the mode itself when
    the batch holds one only, else none; the kernel and the target when it holds one only (a user's kernel file:
    its kernels, always). Nothing positional, so the name stays when other parts of the grid change (another
    kernel, the shapes reordered)."""
    modes = list(dict.fromkeys(job.mode for job in jobs))
    mode = modes[0].removeprefix("trace-") if len(modes) == 1 else None
    mode = ("env_instrument" if trace_modes.SERVED_MODE in modes else "env") if lower_trace_env else mode
    mode = mode if kind == "trace" else None  # a knockout batch: its kind says what it does
    kernels_ = list(dict.fromkeys(job.spec.kernel for job in jobs))
    targets = list(dict.fromkeys(job.target for job in jobs))
    kernel = "_".join(kernels_) if len(kernels_) == 1 or user_file else None
    target = targets[0] if len(targets) == 1 else None
    parts = [kind, mode, version, kernel, target]
    return "_".join(name_part(part) for part in parts if part)


def served_jobs(grid: Grid, releases: dict[str, release_envs.Release] | None = None) -> dict[Job, Job]:
    """{instrument job: the trace-env job whose lowering also records it} for every configuration x target of a
    release that has lower_trace (release data, read here unless given): one lowering writes both records
    (trace_batch.pair_jobs)."""
    releases = release_envs.load_releases() if releases is None else releases
    served = {}
    for (version, target, config_id, mode), job in grid.jobs.items():
        release = releases.get(version)
        env_job = grid.jobs.get((version, target, config_id, "trace-env"))
        if mode == trace_modes.SERVED_MODE and env_job is not None and release is not None and release.has_lower_trace:
            served[job] = env_job
    return served


def lowering_cost(spec: JobSpec) -> float:
    """The LOWERING_COST its kernel's file declares (grid/kernels.py; read once per file)."""
    return kernels.read_signature(spec.kernel_file, spec.function).lowering_cost


def make_batches(grid: Grid, size: int, seconds: float = float("inf"), share_lowering: bool = True) -> list[Batch]:
    """The jobs of each release, trace-env jobs apart, in grid order, cut into batches of at most size jobs and
    at most ``seconds`` of expected lowering, as evenly as the jobs allow (core/job_cost.py; not the cores given,
    so that a run with other --cores finds the same batches and reruns nothing). With ``share_lowering`` each
    instrument job a trace-env job's lowering can serve (served_jobs) follows that job in its batch, never cut
    from it.

    Each is named from what it holds (batch_name), then _<part> where its group needs several batches."""
    releases = release_envs.load_releases()
    served = served_jobs(grid, releases) if share_lowering else {}
    serving: dict[Job, Job] = {env_job: job for job, env_job in served.items()}

    def seconds_of(job: Job) -> float:
        release = releases.get(job.version)  # unknown: assumed to have the mode's tool
        supported = release is None or release.supports(job.mode)
        return job_cost.expected_seconds(
            job.mode, lowering_cost(job.spec), job in served, job.target, job.version, supported
        )

    batches = []
    for version in grid.versions:
        for lower_trace_env in (True, False):
            units = [
                [job, *([serving[job]] if job in serving else [])]
                for job in grid.jobs.values()
                if job.version == version
                and trace_modes.MODES[job.mode].sets_lower_trace_env == lower_trace_env
                and job not in served
            ]
            # the shipped kernels' jobs share batches; each user kernel file gets its own, so that editing it
            # retraces its jobs and no other
            by_file: dict[str | None, list[list[Job]]] = {}
            for unit in units:
                by_file.setdefault(unit[0].kernel_file, []).append(unit)
            for kernel_file, group in by_file.items():
                unit_seconds = [[seconds_of(job) for job in unit] for unit in group]
                costs = [sum(each) for each in unit_seconds]
                runs = job_cost.cut(costs, seconds, size, sizes=[len(unit) for unit in group])
                for number, run in enumerate(runs, 1):
                    part = [job for unit in group[run.start : run.stop] for job in unit]
                    name = batch_name(grid, version, lower_trace_env, part, kernel_file is not None)
                    name += f"_{number}" if len(runs) > 1 else ""
                    job_seconds = tuple(each for unit in unit_seconds[run.start : run.stop] for each in unit)
                    lowerings = run.stop - run.start  # its units: a job, or a trace-env job and the one it serves
                    batches.append(Batch(name, version, lower_trace_env, tuple(part), job_seconds, lowerings))
    return distinct_names(batches)


def learned_seconds(batch: Batch, records: Sequence[str | Path]) -> float:
    """The batch's seconds as an earlier run recorded them: each job's run.json (``records``, in the order of its
    jobs; core/job_cost.recorded_seconds), the expected seconds of a job without a readable one. What orders the
    batches that run again, the longest first. Not what cuts them: a cut that followed each run's timings would
    move jobs between batches, and so rerun them."""
    total = 0.0
    for expected, path in zip(batch.job_seconds, records, strict=True):
        try:
            recorded = job_cost.recorded_seconds(json.loads(Path(path).read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError, ValueError):
            recorded = None
        total += expected if recorded is None else recorded
    return total


def distinct_names(batches: list[Batch]) -> list[Batch]:
    """Two names alike (kernel names that differ only in . + -, or a kernel named like another's kernel and
    target together): the later ones numbered, so that every rule has a name of its own."""
    seen: dict[str, int] = {}
    for i, batch in enumerate(batches):
        seen[batch.name] = seen.get(batch.name, 0) + 1
        if seen[batch.name] > 1:
            batches[i] = replace(batch, name=f"{batch.name}_b{seen[batch.name]}")
    return batches


def make_knockout_batches(grid: Grid, knockout_jobs: list[Job], size: int) -> list[Batch]:
    """The knockout jobs (one per configuration x target x release) of each release, a user's kernel file's
    apart, cut into batches of at most size configurations: knockout_<release>[_<kernel>][_<target>][_<n>]."""
    batches = []
    for version in grid.versions:
        by_file: dict[str | None, list[Job]] = {}
        for job in knockout_jobs:
            if job.version == version:
                by_file.setdefault(job.kernel_file, []).append(job)
        for kernel_file, group in by_file.items():
            parts = [group[start : start + size] for start in range(0, len(group), size)]
            for number, part in enumerate(parts, 1):
                name = batch_name(grid, version, False, part, kernel_file is not None, kind="knockout")
                name += f"_{number}" if len(parts) > 1 else ""
                batches.append(Batch(name, version, False, tuple(part)))
    return distinct_names(batches)


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
