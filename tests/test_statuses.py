"""One status vocabulary (core/statuses.py): no module spells a status as a literal, and the vocabulary is what
docs/outputs.md and docs/outputs-gpu.md document for passes.csv's and kernel_speed.csv's ``status``."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tilelang_churn.core import statuses

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
PACKAGE = SCRIPTS / "tilelang_churn"
VOCABULARY_MODULE = PACKAGE / "core" / "statuses.py"
DOCS = Path(__file__).resolve().parents[1] / "docs"
VOCABULARY = frozenset(statuses.STATUSES + statuses.GPU_STATUSES + statuses.KNOCKOUT_STATUSES)


def _literals(node: ast.AST) -> list[ast.Constant]:
    """The status literals in an expression: a string constant equal to a status, anywhere in it (a tuple of
    them, a conditional expression choosing one) but not inside a call or a subscript (``f("failed")``,
    ``row["changed"]``: an argument or a column, not the value itself)."""
    found, stack = [], [node]
    while stack:
        item = stack.pop()
        if isinstance(item, ast.Constant):
            if isinstance(item.value, str) and item.value in VOCABULARY:
                found.append(item)
        elif not isinstance(item, (ast.Call, ast.Subscript, ast.JoinedStr)):
            stack.extend(ast.iter_child_nodes(item))
    return found


def _names_a_status(target: ast.AST) -> bool:
    """An assignment target that holds a status: ``status``, ``x.status``, ``STATUS_*``, ``row["status"]``."""
    if isinstance(target, ast.Name):
        return "status" in target.id.lower()
    if isinstance(target, ast.Attribute):
        return "status" in target.attr.lower()
    if isinstance(target, ast.Subscript):
        key = target.slice
        return isinstance(key, ast.Constant) and isinstance(key.value, str) and "status" in key.value
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_names_a_status(element) for element in target.elts)
    return False


def _constant_name(name: ast.Name) -> str:
    """The status a constant's name spells: FAILED and STATUS_FAILED both spell failed."""
    return name.id.lower().removeprefix("status_")


def status_literals(source: str, filename: str = "<source>") -> list[str]:
    """'file:line: how' for each status spelled as a literal: compared with, given as the value of a "status"
    key or a ``status=`` keyword, or assigned to a name that holds a status. Docstrings and other free text
    are none of these."""
    problems = []

    def report(nodes, how):
        problems.extend(f"{filename}:{node.lineno}: {node.value!r} {how}" for node in nodes)

    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Compare):
            report([c for operand in (node.left, *node.comparators) for c in _literals(operand)], "compared")
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and key.value == "status":
                    report(_literals(value), 'as a "status" value')
        elif isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg is not None and "status" in keyword.arg.lower():
                    report(_literals(keyword.value), f"as {keyword.arg}=")
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if node.value is None:
                continue
            if any(_names_a_status(t) for t in targets):
                report(_literals(node.value), "assigned to a status")
            else:  # a constant of its own for a status: FAILED = "failed", CHANGED, NOOP = "changed", "noop"
                names = {
                    _constant_name(n)
                    for t in targets
                    for n in ast.walk(t)
                    if isinstance(n, ast.Name) and n.id.isupper()
                }
                report([c for c in _literals(node.value) if c.value in names], "redefined")
    return problems


def test_no_module_spells_a_status_literal():
    problems = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path != VOCABULARY_MODULE:
            problems += status_literals(path.read_text(encoding="utf-8"), str(path.relative_to(SCRIPTS)))
    assert not problems, "use the constants of core/statuses.py:\n" + "\n".join(problems)


def test_the_guard_finds_each_kind_of_literal_and_no_free_text():
    source = '''
"""A docstring may say failed, "noop" and 'ok'."""
def f(row, run, df):
    """Rows whose status is "changed"."""
    print("failed")
    label = {"failed": "it failed"}
    if row["status"] == "failed":
        pass
    if row.get("status") in ("changed", "noop"):
        pass
    done = [r for r in df if r["status"] != "wrong"]
    row = {"status": "codegen", "pass": "codegen"}
    run.update(status="changed" if run else "noop")
    row["status"] = "unsupported"
    status = "build_failed"
    NOOP, CODEGEN_PHASE = "noop", "codegen"
    failed = row["status"] is not None and "failed"
    return row["changed"], f"{row['status']} failed"
'''
    found = sorted(status_literals(source), key=lambda line: (int(line.split(":")[1]), line))
    assert found == [
        "<source>:7: 'failed' compared",
        "<source>:9: 'changed' compared",
        "<source>:9: 'noop' compared",
        "<source>:11: 'wrong' compared",
        "<source>:12: 'codegen' as a \"status\" value",
        "<source>:13: 'changed' as status=",
        "<source>:13: 'noop' as status=",
        "<source>:14: 'unsupported' assigned to a status",
        "<source>:15: 'build_failed' assigned to a status",
        "<source>:16: 'noop' redefined",
    ]


def _documented_values(section_heading: str, page: str = "outputs.md") -> list[str]:
    """The back-quoted words of the ``status`` row's leading value list in a table of docs/PAGE: each value the
    cell names, as ``x`` followed by ':' or '(' or ',' or 'or'."""
    text = (DOCS / page).read_text(encoding="utf-8")
    section = text[text.index(section_heading) :]
    section = section[: section.index("\n## ", 1)] if "\n## " in section[1:] else section
    row = next(line for line in section.splitlines() if line.startswith("| `status` |"))
    cell = row.split("|")[2]
    return re.findall(r"`([a-z_]+)`(?=\s*(?::|\(|,|or\b))", cell)


def test_the_vocabulary_is_what_config_readme_documents():
    assert sorted(_documented_values("## passes.csv and churn.csv")) == sorted(statuses.STATUSES)
    assert sorted(_documented_values("## kernel_speed.csv", "outputs-gpu.md")) == sorted(statuses.SPEED_STATUSES)
    assert sorted(_documented_values("## knockout.csv", "outputs-knockout.md")) == sorted(statuses.KNOCKOUT_STATUSES)
