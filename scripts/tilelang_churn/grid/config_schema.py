"""The config's JSON schema in words: a command line's values coerced to what the schema takes (YAML's meaning
of 'true' and '2'), and a schema error turned into one line that names the key, the value and what the key takes.
config_checks.validate_config uses both; nothing here raises.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"


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
            key = key_text(list(error.absolute_path)) or "(top level)"
            return f"config {key}: {error.instance!r} is none of what it takes: " + _alternatives(
                error.validator_value, error.instance
            )
        # oneOf: report the branch of the value's own type, e.g. block: [1, 0, 1]
        same_type = [sub for sub in error.context if sub.validator != "type" or len(sub.relative_path) > 0]
        error = jsonschema.exceptions.best_match(same_type or error.context)
    path = list(error.absolute_path)
    message = f"config {key_text(path) or '(top level)'}: {error.message}"
    if path and isinstance(path[-1], int):  # an item of a list of plain values: show the list
        items = _lookup(cfg, path[:-1])
        if not any(isinstance(item, (dict, list)) for item in items):
            message += f" ({key_text(path[:-1])} = {items!r})"
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


def key_text(path) -> str:
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
