"""config/README.md is checked against the config schema: it has a section for every key that
workflow/schemas/config.schema.yaml defines and a bullet for every sub-key of an object-valued key, names no key the
schema lacks, and does not copy the schema's descriptions."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
README = REPO / "config" / "README.md"
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"

# A key's section starts with a heading `### `key``; its sub-keys are bullets that start with one or more of them:
# "- `M`, `N`, `K`: the problem size".
KEY_HEADING = re.compile(r"\A### `(\w+)`\s*$", re.M)
SUB_KEY_BULLET = re.compile(r"^- ((?:`\w+`(?:, )?)+)[:\s]", re.M)
COPIED_WORDS = 12  # this many words in a row from a schema description count as a copy


def schema_keys(schema: dict) -> dict[str, set[str]]:
    """{top-level key: its sub-keys}: the properties of an object value, of a list's items, or of an object among
    the alternatives (oneOf, anyOf) a key takes; a $ref of the schema's $defs read as what it names."""

    def sub_keys(node: dict) -> set[str]:
        if "$ref" in node:
            node = {**schema["$defs"][node["$ref"].removeprefix("#/$defs/")], **node}
        found = set(node.get("properties", {}))
        for branch in node.get("oneOf", []) + node.get("anyOf", []):
            found |= sub_keys(branch)
        if isinstance(node.get("items"), dict):
            found |= sub_keys(node["items"])
        return found

    return {key: sub_keys(node) for key, node in schema["properties"].items()}


def readme_keys(text: str) -> dict[str, set[str]]:
    """{key: the sub-keys its section's bullets name} for every `### `key`` section of the README."""
    found: dict[str, set[str]] = {}
    for section in re.split(r"^(?=#{1,3} )", text, flags=re.M):
        heading = KEY_HEADING.match(section)
        if heading:
            bullets = SUB_KEY_BULLET.findall(section)
            found.setdefault(heading.group(1), set()).update(
                name for names in bullets for name in re.findall(r"`(\w+)`", names)
            )
    return found


def key_problems(text: str, schema: dict) -> list[str]:
    """What the README leaves out of the schema's keys, and what it names that the schema does not define."""
    want, have = schema_keys(schema), readme_keys(text)
    problems = [f"no section for the key {key}" for key in sorted(want.keys() - have.keys())]
    problems += [f"a section for {key}, which the schema does not define" for key in sorted(have.keys() - want.keys())]
    for key in sorted(want.keys() & have.keys()):
        problems += [f"{key}: no bullet for its sub-key {sub}" for sub in sorted(want[key] - have[key])]
        extra = sorted(have[key] - want[key])
        problems += [f"{key}: a bullet for {sub}, which the schema does not define" for sub in extra]
    return problems


def descriptions(node) -> list[str]:
    """Every description of the schema, at any depth."""
    if isinstance(node, dict):
        own = [node["description"]] if isinstance(node.get("description"), str) else []
        return own + [text for value in node.values() for text in descriptions(value)]
    if isinstance(node, list):
        return [text for value in node for text in descriptions(value)]
    return []


def copied_passages(text: str, schema: dict) -> list[str]:
    """Runs of COPIED_WORDS words of a schema description that the README repeats word for word."""
    readme = " ".join(text.split())
    copied = set()
    for description in descriptions(schema):
        words = description.split()
        for start in range(len(words) - COPIED_WORDS + 1):
            passage = " ".join(words[start : start + COPIED_WORDS])
            if passage in readme:
                copied.add(passage)
    return sorted(copied)


def read_schema() -> dict:
    return yaml.safe_load(SCHEMA.read_text(encoding="utf-8"))


def test_the_config_readme_documents_every_schema_key_and_no_other():
    schema, text = read_schema(), README.read_text(encoding="utf-8")
    keys = schema_keys(schema)
    assert len(keys) > 20 and {"M", "N", "K", "block"} <= keys["shapes"]  # the schema is read, not an empty match
    assert len(readme_keys(text)) > 20
    assert key_problems(text, schema) == []


def test_a_key_left_out_or_not_in_the_schema_is_caught():
    schema, text = read_schema(), README.read_text(encoding="utf-8")
    assert "### `job_figures`" in text and "- `occurrence`:" in text
    edited = text.replace("### `job_figures`", "### `job_pictures`").replace("- `occurrence`:", "- `occurence`:")
    edited = edited.replace("- `M`, `N`, `K`:", "- `M`, `N`:")
    assert key_problems(edited, schema) == [
        "no section for the key job_figures",
        "a section for job_pictures, which the schema does not define",
        "knockout: no bullet for its sub-key occurrence",
        "knockout: a bullet for occurence, which the schema does not define",
        "shapes: no bullet for its sub-key K",
    ]


def test_the_config_readme_does_not_copy_the_schema():
    schema = read_schema()
    assert len(descriptions(schema)) > 50
    assert copied_passages(README.read_text(encoding="utf-8"), schema) == []
    first = descriptions(schema)[0]
    assert copied_passages("Intro. " + first, schema)  # a copied description is found


def test_the_config_readme_is_short_and_its_links_lead_to_files():
    text = README.read_text(encoding="utf-8")
    assert len(text.encode("utf-8")) < 15_000  # the keys and the short how-tos; the long explanations are in docs/
    headings = {  # GitHub's anchors: lower case, punctuation dropped, spaces as dashes
        "-".join(re.sub(r"[^\w\s-]", "", line.lstrip("#").lower()).split())
        for line in text.splitlines()
        if line.startswith("#")
    }
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        path, _, anchor = target.partition("#")
        if path and "://" not in path and not (README.parent / path).exists():
            broken.append(target)
        if not path and anchor not in headings:
            broken.append(target)
    assert not broken, broken
