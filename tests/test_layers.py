"""The package's layers: core < the lowering rooms (grid, releases, trace, knockout, gpu) < tables < figures; each
folder is a room of one layer, named for what it holds. A module imports only from its own layer or one below,
no import closes a cycle, core needs nothing outside the standard library, and only the entry files in scripts/
see the snakemake object. Imports inside functions count too: they run as surely as the others."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
PACKAGE = "tilelang_churn"
# lowest first; a layer's rooms (folders) may import each other
LAYERS = (("core",), ("grid", "releases", "trace", "knockout", "gpu"), ("tables",), ("figures",))
LAYER_OF_ROOM = {room: k for k, rooms in enumerate(LAYERS) for room in rooms}
CORE_MAY_IMPORT = {"packaging"}  # release order: PEP 440 when packaging is there, else its own parser


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """Every module an import statement anywhere in the file names (``from a import b``: a.b when a is a
    package of ours, since b may be a module)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            if node.module.startswith(PACKAGE):
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def package_graph(root: Path) -> dict[str, set[str]]:
    """{module: the modules of the package it imports} for every module under root/tilelang_churn."""
    modules = {module_name(p, root): p for p in sorted((root / PACKAGE).rglob("*.py"))}
    return {name: {m for m in imports_of(path) if m in modules and m != name} for name, path in modules.items()}


def room_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 else None


def layer_of(module: str) -> int | None:
    return LAYER_OF_ROOM.get(room_of(module))


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    problems = []
    for module, targets in graph.items():
        for target in targets:
            mine, theirs = layer_of(module), layer_of(target)
            if mine is not None and theirs is not None and theirs > mine:
                problems.append(f"{module} ({room_of(module)}) imports {target} ({room_of(target)})")
    return sorted(problems)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_goes_up_a_layer():
    graph = package_graph(SCRIPTS)
    assert {room_of(m) for m in graph if m.count(".") >= 2} == set(LAYER_OF_ROOM)  # every room is there, no other
    assert upward_imports(graph) == []


def test_every_module_lives_in_a_room_with_a_face():
    """No module beside the rooms, and each room's __init__ says what it holds and lists its modules (__all__)."""
    package = SCRIPTS / PACKAGE
    assert sorted(p.name for p in package.glob("*.py")) == ["__init__.py"]
    for room in LAYER_OF_ROOM:
        init = package / room / "__init__.py"
        tree = ast.parse(init.read_text(encoding="utf-8"))
        assert ast.get_docstring(tree), f"{room}/__init__.py says nothing of what the room holds"
        (listed,) = [
            node.value for node in tree.body if isinstance(node, ast.Assign) and node.targets[0].id == "__all__"
        ]
        modules = sorted(p.stem for p in (package / room).glob("*.py") if p.stem != "__init__")
        assert sorted(ast.literal_eval(listed)) == modules, room


def test_no_import_closes_a_cycle():
    assert cycles(package_graph(SCRIPTS)) == []


def test_core_needs_only_the_standard_library():
    for path in sorted((SCRIPTS / PACKAGE / "core").glob("*.py")):
        outside = {
            name
            for name in imports_of(path)
            if name.split(".")[0] not in sys.stdlib_module_names
            and name.split(".")[0] not in CORE_MAY_IMPORT | {PACKAGE}
        }
        assert not outside, f"{path.name} imports {sorted(outside)}"


def test_only_entry_files_see_the_snakemake_object():
    for path in sorted((SCRIPTS / PACKAGE).rglob("*.py")):
        names = {n.id for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if isinstance(n, ast.Name)}
        assert "snakemake" not in names, f"{path} uses the snakemake object"
        assert "_from_rule" not in path.read_text(encoding="utf-8")


def test_entry_files_are_thin():
    """An entry parses its command line or unpacks the rule's object, then calls one module function."""
    for path in sorted(SCRIPTS.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        ours = {m for m in imports_of(path) if m.startswith(PACKAGE)}
        assert ours, f"{path.name} imports nothing of {PACKAGE}"
        functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
        assert [f.name for f in functions] in ([], ["_from_rule"]), path.name
        assert sum(len(f.body) for f in functions) <= 8, f"{path.name}: logic belongs in {PACKAGE}"


# the checks above must be able to fail: a package that breaks each rule


@pytest.fixture
def broken_tree(tmp_path):
    files = {
        "core/__init__.py": "",
        "core/rows.py": "from tilelang_churn.figures import plots\n",  # up two layers
        "trace/__init__.py": "",
        "trace/a.py": "def f():\n    from tilelang_churn.trace import b\n",  # a cycle through a function
        "trace/b.py": "from tilelang_churn.trace.a import f\n",
        "tables/__init__.py": "",
        "figures/__init__.py": "",
        "figures/plots.py": "import tilelang_churn.core.rows\n",
    }
    for name, text in files.items():
        path = tmp_path / PACKAGE / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (tmp_path / PACKAGE / "__init__.py").write_text("")
    return tmp_path


def test_the_checks_find_an_upward_import_and_cycles(broken_tree):
    graph = package_graph(broken_tree)
    assert upward_imports(graph) == ["tilelang_churn.core.rows (core) imports tilelang_churn.figures.plots (figures)"]
    assert cycles(graph) == [
        ["tilelang_churn.core.rows", "tilelang_churn.figures.plots"],
        ["tilelang_churn.trace.a", "tilelang_churn.trace.b"],
    ]
