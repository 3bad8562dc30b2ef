"""Config validation, the job grid and the input functions of the tilelang-churn workflow.

Everything here runs when the workflow is parsed: a bad config stops Snakemake before any job, with a
message naming the config key and the bad value.
"""

import json
import re
import shlex
import sys
from pathlib import Path

import jsonschema
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

# scripts/trace_cli.py is standard library only: the tables the trace script accepts (TARGETS, DTYPES,
# ACCUM_DTYPES, DEFAULT_PASSES) and its pass-name check, without importing TileLang.
sys.path.insert(0, str(Path(workflow.basedir) / "scripts"))
import trace_cli  # noqa: E402

# ------------------------------------------------------------------------------------ validation


def _key(path) -> str:
    """'shapes[2].block[1]' from a jsonschema path such as deque(['shapes', 2, 'block', 1])."""
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


def validate_config(cfg: dict) -> None:
    """JSON-schema validation (fills defaults); a schema error is re-raised naming key and value."""
    try:
        validate(cfg, "../schemas/config.schema.yaml")
    except WorkflowError as exc:
        error = exc.__context__  # validate() raises WorkflowError while handling the schema error
        if not isinstance(error, jsonschema.ValidationError):
            raise
        if error.context:  # oneOf: report the branch of the value's own type, e.g. block: [1, 0, 1]
            same_type = [
                sub
                for sub in error.context
                if sub.validator != "type" or len(sub.relative_path) > 0
            ]
            error = jsonschema.exceptions.best_match(same_type or error.context)
        path = list(error.absolute_path)
        message = f"config {_key(path) or '(top level)'}: {error.message}"
        if path and isinstance(path[-1], int):  # an item of a list of values: show the list
            items = _lookup(cfg, path[:-1])
            if not any(isinstance(item, (dict, list)) for item in items):
                message += f" ({_key(path[:-1])} = {items!r})"
        raise ValueError(message) from None


def resolve_shapes(cfg: dict) -> dict:
    """Shape id -> kernel parameters, in config order; ids and parameter sets must be unique."""
    defaults = cfg["defaults"]
    shapes = {}
    where = {}
    for i, shape in enumerate(cfg["shapes"]):
        key = f"shapes[{i}]"
        M, N, K = shape["M"], shape["N"], shape["K"]
        block = shape["block"] if shape["block"] is not None else defaults["block"]
        spec = {"M": M, "N": N, "K": K, "block": list(block)}
        for field in ("dtype", "accum_dtype", "threads", "stages"):
            spec[field] = shape[field] if shape[field] is not None else defaults[field]
        # the schema's enums are copies: trace_cli holds the lists the trace script accepts
        if spec["dtype"] not in trace_cli.DTYPES:
            raise ValueError(
                f"config {key}.dtype: {spec['dtype']!r} is not one of {', '.join(trace_cli.DTYPES)}"
            )
        if spec["accum_dtype"] not in trace_cli.ACCUM_DTYPES:
            raise ValueError(
                f"config {key}.accum_dtype: {spec['accum_dtype']!r} is not one of "
                f"{', '.join(trace_cli.ACCUM_DTYPES)}"
            )
        if shape["name"] is not None:
            shape_id = shape["name"]
        else:
            shape_id = f"{M}x{N}x{K}"
            if shape["block"] is not None:
                shape_id += "_b{}x{}x{}".format(*block)
            if shape["dtype"] is not None:
                shape_id += f"_{spec['dtype']}"
        if shape_id in shapes:
            raise ValueError(
                f"config {key}: shape id {shape_id!r} is also the id of {where[shape_id]}; "
                f"give one of them a distinct 'name'"
            )
        for other_id, other in shapes.items():
            if other == spec:
                set_keys = {name: value for name, value in shape.items() if value is not None}
                raise ValueError(
                    f"config {key}: {set_keys!r} has the same parameters as {where[other_id]} "
                    f"({other_id!r}); the two jobs would be identical"
                )
        shapes[shape_id] = spec
        where[shape_id] = key
    return shapes


def resolve_targets(cfg: dict) -> dict:
    """Target name -> (--target argument, target dict), in config order."""
    targets = {}
    where = {}
    provenance_names = {}
    for i, entry in enumerate(cfg["targets"]):
        key = f"targets[{i}]"
        if isinstance(entry, str):
            if entry not in trace_cli.TARGETS:
                raise ValueError(
                    f"config {key}: unknown target {entry!r}; short names are "
                    f"{', '.join(trace_cli.TARGETS)}, or give a mapping "
                    '{name: NAME, target: {"kind": ..., ...}}'
                )
            name, target, argument = entry, dict(trace_cli.TARGETS[entry]), entry
        else:
            name, target = entry["name"], entry["target"]
            if not isinstance(target.get("kind"), str) or not target["kind"]:
                raise ValueError(
                    f"config {key}.target: {target!r} has no \"kind\"; a JSON target needs a "
                    'string "kind" such as "cuda" or "hip"'
                )
            known = trace_cli.TARGETS.get(name)
            if known is not None and known != target:
                raise ValueError(
                    f"config {key}.name: {name!r} is the short name of {known!r}, not of "
                    f"{target!r}; choose another name"
                )
            argument = json.dumps(target, sort_keys=True)
        if name in targets:
            raise ValueError(
                f"config {key}: duplicate target name {name!r} (also {where[name]})"
            )
        # passes.csv names a target by trace_cli.target_name_for(); churn_table.py tells jobs apart by it
        provenance = trace_cli.target_name_for(target)
        if provenance in provenance_names:
            raise ValueError(
                f"config {key}: target {target!r} gets target_name {provenance!r} in passes.csv, "
                f"as {provenance_names[provenance]} does; the churn table could not tell them apart"
            )
        provenance_names[provenance] = key
        targets[name] = (argument, target)
        where[name] = key
    return targets


def check_passes(cfg: dict) -> None:
    problem = trace_cli.check_pass_names(tuple(cfg["api_passes"]))
    if problem:
        raise ValueError(f"config api_passes: {problem}")


def python_executable() -> str:
    """The interpreter of the jobs: this Snakemake's own (its venv), or the rule's env with --sdm conda."""
    methods = getattr(workflow.deployment_settings, "deployment_method", None) or ()
    if any(getattr(method, "name", str(method)).upper() == "CONDA" for method in methods):
        return "python"
    return shlex.quote(sys.executable)


try:
    validate_config(config)
    SHAPES = resolve_shapes(config)
    TARGETS = resolve_targets(config)
    check_passes(config)
except ValueError as error:  # say where the config came from: config.yaml and any --configfile
    sources = ", ".join(str(path) for path in getattr(workflow, "configfiles", [])) or "--config"
    raise ValueError(f"{error} (config read from {sources})") from None
MODES = list(config["modes"])
# The heatmap shows one mode: trace-env (every pass of tilelang.lower) when configured, else the first.
HEATMAP_MODE = "trace-env" if "trace-env" in MODES else MODES[0]
PYTHON = python_executable()

STATIC_CHECK = "results/static/static_check.txt"
RUN_DIR = "results/runs/{target}/{shape}/{mode}"
FIGURE_DIR = "results/figures"


def _alternatives(values) -> str:
    return "|".join(re.escape(value) for value in values)


wildcard_constraints:
    shape=_alternatives(SHAPES),
    target=_alternatives(TARGETS),
    mode=_alternatives(MODES),


# ------------------------------------------------------------------------------ input functions


def get_final_output() -> list:
    """Everything `snakemake` builds by default."""
    return [
        STATIC_CHECK,
        "results/churn.csv",
        "results/churn_summary.csv",
        *get_job_churn_figures(),
        *get_heatmap_paths(),
    ]


def _per_job(pattern: str) -> list:
    """pattern filled for every trace job, targets x shapes x modes in config order."""
    return expand(pattern, target=list(TARGETS), shape=list(SHAPES), mode=MODES)


def get_all_passes_csv(wildcards=None) -> list:
    return _per_job(f"{RUN_DIR}/passes.csv")


def get_job_churn_figures() -> list:
    return _per_job(f"{FIGURE_DIR}/churn/{{target}}/{{shape}}/{{mode}}.png")


def get_heatmap_paths() -> list:
    return [f"{FIGURE_DIR}/churn_heatmap.{ext}" for ext in config["heatmap_formats"]]


def get_heatmap_outputs() -> list:
    """Heatmap files; the png goes into the report (captions resolve from workflow/rules/)."""
    return [
        _heatmap_report(path) if path.endswith(".png") else path
        for path in get_heatmap_paths()
    ]


def _heatmap_report(path: str):
    return report(path, caption="../report/heatmap.rst", category="Churn heatmap")


def trace_param(field: str):
    """An input function giving one argument of gemm_lower_trace.py for the job's wildcards."""

    def param(wildcards) -> str:
        spec = SHAPES[wildcards.shape]
        if field == "shape":
            return f"{spec['M']},{spec['N']},{spec['K']}"
        if field == "block":
            return ",".join(str(size) for size in spec["block"])
        if field == "target":
            return shlex.quote(TARGETS[wildcards.target][0])
        if field == "passes":  # only the API modes take a pass list; trace-env runs every pass
            if wildcards.mode == "trace-env":
                return ""
            passes = ",".join(config["api_passes"])
            return f"--passes {shlex.quote(passes)}"
        return shlex.quote(str(spec[field]))

    param.__name__ = f"trace_param_{field}"
    return param


def get_trace_out_dir(wildcards, output) -> str:
    """--out of a trace job: the folder of its passes.csv (TileLang's trace files land there too)."""
    return str(Path(output.passes).parent)
