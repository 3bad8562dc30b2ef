"""tests/README.md and docs/failure-modes*.md name the test of each case: every name they give is a test that exists,
so a renamed or deleted test cannot leave its row pointing at nothing; README.md and docs/ hold together."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
# `test_file.py::test_name`, optionally with a parameter id ([...]) or a shared fixture (@...) after it
NODE = re.compile(r"`(test_\w+\.py)::(\w+)[^`]*`")


@functools.cache
def defined_tests(path: Path) -> frozenset[str]:
    """The names of the functions and fixtures defined anywhere in a test file (module level or in a class); each
    file parsed once, however many tests the pages name in it."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return frozenset(node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef))


def named_tests(text: str) -> list[tuple[str, str]]:
    return sorted(set(NODE.findall(text)))


def test_every_test_the_readme_names_exists():
    pages = (TESTS / "README.md", *(TESTS.parent / "docs").glob("failure-modes*.md"))
    named = named_tests("".join(page.read_text(encoding="utf-8") for page in pages))
    assert len(named) > 50  # the table is read, not an empty match
    missing = []
    for file, name in named:
        path = TESTS / file
        if not path.is_file() or name not in defined_tests(path):
            missing.append(f"{file}::{name}")
    assert not missing, "tests/README.md or docs/failure-modes*.md names tests that do not exist: " + ", ".join(missing)


def test_a_name_that_does_not_exist_is_caught(tmp_path):
    (tmp_path / "test_x.py").write_text("def test_here():\n    pass\n")
    named = named_tests("| a | b | `test_x.py::test_here[p]`, `test_x.py::test_gone@run` |")
    assert named == [("test_x.py", "test_gone"), ("test_x.py", "test_here")]
    assert [name for _, name in named if name not in defined_tests(tmp_path / "test_x.py")] == ["test_gone"]


# --------------------------------------------------------------------------------- docs/architecture.md's layout
REPO = TESTS.parent
PACKAGE = REPO / "scripts" / "tilelang_churn"
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def layout_section() -> str:
    return (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")


def test_every_link_of_the_readme_and_the_docs_leads_to_a_file():
    """README.md and docs/*.md link each other, config/README.md and the repository's files by relative paths."""
    broken = []
    for doc in DOCS:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", doc.read_text(encoding="utf-8")):
            if "://" not in target and not (doc.parent / target).exists():
                broken.append(f"{doc.relative_to(REPO)}: {target}")
    assert not broken, broken
    assert len((REPO / "README.md").read_bytes()) < 10_000  # the front door: what, a figure, the commands, links


def layer_paragraphs(section: str) -> dict[str, str]:
    """{layer: its paragraph} of the package drawing: a line `    <layer>/  ...` and the lines indented under it."""
    found, layer = {}, None
    for line in section.splitlines():
        head = re.match(r"^    (\w+)/\s", line)
        if head:
            layer = head.group(1)
            found[layer] = line
        elif layer and re.match(r"^ {8,}\S", line):
            found[layer] += " " + line.strip()
        else:
            layer = None
    return found


def test_the_layout_names_every_module_entry_file_and_rule_file():
    section = layout_section()
    words = set(re.findall(r"[\w.]+", section))
    layers = layer_paragraphs(section)
    assert set(layers) == {path.name for path in PACKAGE.iterdir() if (path / "__init__.py").is_file()}
    unnamed = [
        f"{layer}/{module.stem}"
        for layer, paragraph in layers.items()
        for module in sorted((PACKAGE / layer).glob("*.py"))
        if module.stem != "__init__" and module.stem not in re.findall(r"\w+", paragraph)
    ]
    unnamed += [f"scripts/{p.name}" for p in sorted((REPO / "scripts").glob("*.py")) if p.name not in words]
    rules = {p.stem for p in (REPO / "workflow" / "rules").glob("*.smk")}
    unnamed += [
        f"workflow/rules/{stem}.smk" for stem in sorted(rules) if stem not in words and f"{stem}.smk" not in words
    ]
    assert not unnamed, "docs/architecture.md does not name: " + ", ".join(unnamed)
    drawing = section[section.index("scripts/\n") :]
    drawing = drawing[: drawing.index("```")]  # the package drawing: every .py it names is a file
    named_scripts = set(re.findall(r"\b(\w+\.py)\b", drawing))
    gone = sorted(name for name in named_scripts if not list((REPO / "scripts").rglob(name)))
    assert not gone, f"docs/architecture.md names files that do not exist: {gone}"


def test_the_short_target_names_of_the_docs_are_the_workflows():
    import json

    from tilelang_churn.core import targets

    text = (REPO / "docs" / "own-kernel.md").read_text(encoding="utf-8")
    section = text[text.index("### Which targets have short names?") :]
    rows = re.findall(r"^\| `([\w-]+)` \| `(\{.*\})` \|$", section.split("\n\n")[1], re.M)
    assert {name: json.loads(target) for name, target in rows} == targets.TARGETS


def _documented_columns(text: str, table_file: str) -> tuple[set, list]:
    """The columns docs/outputs-compare.md's table of TABLE_FILE names (each back-quoted name of a row's first cell;
    the row "configuration columns" names them in its second, or says "As above"), and that row's list."""
    start = text.index(f"`{table_file}`:")
    table = text[text.index("| Column | Meaning |", start) :].split("\n\n")[0]
    names, configuration = set(), []
    for line in table.splitlines()[2:]:
        first, second = line.split(" | ")[0], line.split(" | ")[1]
        if "configuration columns" in first:
            configuration = re.findall(r"`([a-z_A-Z0-9]+)`", second) if "As above" not in second else []
            names |= set(configuration)
        names |= set(re.findall(r"`([a-z_A-Z0-9]+)`", first))
    return names, configuration


def test_the_comparisons_column_tables_name_every_column_the_code_writes():
    from tilelang_churn.tables import release_tables

    text = (TESTS.parent / "docs" / "outputs-compare.md").read_text(encoding="utf-8")
    by_version, configuration = _documented_columns(text, "churn_by_version.csv")
    assert by_version == set(release_tables.BY_VERSION_COLUMNS)
    assert configuration  # the first table lists the configuration columns the later ones refer to
    for table_file, columns in (
        ("pass_alignment.csv", release_tables.ALIGNMENT_COLUMNS),
        ("divergence.csv", release_tables.DIVERGENCE_COLUMNS),
    ):
        named, _ = _documented_columns(text, table_file)
        assert named | set(configuration) == set(columns), table_file


# --------------------------------------------------------------------------------- the size and style of the docs
LIST_ITEM = re.compile(r"^([-*+]|\d+[.)])\s+")
SENTENCE_END = re.compile(r"(?<=[.?!])\s+(?=[A-Z`])")


def prose_sentences(text: str) -> list[str]:
    """The prose sentences of a Markdown page: fenced code blocks, table rows (`|`), headings (`#`) and HTML comments
    left out; a sentence ends at `. `, `? ` or `! ` before a capital letter or a backquote, at a paragraph's end
    and at a list item's end."""
    kept, fenced = [], False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            fenced = not fenced
            kept.append("")  # a code block ends the paragraph before it
            continue
        if fenced or stripped.startswith(("|", "#", "<!--")):
            kept.append("")
            continue
        if LIST_ITEM.match(stripped):
            kept.append("")  # a list item is a paragraph of its own
            stripped = LIST_ITEM.sub("", stripped)
        kept.append(stripped)
    sentences = []
    for paragraph in re.split(r"\n\s*\n", "\n".join(kept)):
        prose = " ".join(paragraph.split())
        sentences += [part for part in SENTENCE_END.split(prose) if re.search(r"\w", part)]
    return sentences


def test_a_sentence_ends_at_its_stop_a_paragraph_and_a_list_item():
    text = "# Title\n\nOne two. Three `four` five?\nSix\n\n- a list item\n- another one\n\n| a | b. C |\n"
    text += "```\nx. Y\n```\n"
    assert prose_sentences(text) == ["One two.", "Three `four` five?", "Six", "a list item", "another one"]
    assert prose_sentences("See 0.1.15. Then 1. 2 stay one.") == ["See 0.1.15.", "Then 1. 2 stay one."]


def test_the_docs_are_short_and_their_sentences_too():
    """README.md and docs/*.md: at most 120 KB together, no page over 25 KB, and sentences of under 25 words on
    average (issue #58: a reader finds the fact, the history is in git log and tests/data/gpu/PROVENANCE.md)."""
    sizes = {doc.relative_to(REPO).as_posix(): len(doc.read_bytes()) for doc in DOCS}
    assert sum(sizes.values()) <= 120_000, f"README.md and docs/ hold {sum(sizes.values())} bytes: {sizes}"
    assert not {page: size for page, size in sizes.items() if size >= 25_600}
    sentences = [sentence for doc in DOCS for sentence in prose_sentences(doc.read_text(encoding="utf-8"))]
    average = sum(len(sentence.split()) for sentence in sentences) / len(sentences)
    assert len(sentences) > 200  # the prose is read, not an empty match
    assert average < 25, f"{average:.1f} words a sentence on average over {len(sentences)} sentences"
