"""The package's layers: core < the lowering rooms (grid, batching, releases, trace, knockout, gpu) < tables <
figures; each folder is a room of one layer, named for what it holds. A module imports only from its own layer or one
below, no import closes a cycle, core needs nothing outside the standard library, and only the entry files in
scripts/ see the snakemake object. Imports inside functions count too: they run as surely as the others. Every
command line is an entry file's (its parser, its ``main``), and an entry holds no logic: that is the package's."""

from __future__ import annotations

import ast
import re
import sys
from importlib import metadata
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
PACKAGE = "tilelang_churn"
# lowest first; a layer's rooms (folders) may import each other
# batching is a lowering room: it cuts the grid's jobs (grid_job) by their kernels' cost (kernel/kernels.py) and the
# release data (releases), and the grid fills its batches with it, so it sits beside grid, not in core
LAYERS = (
    ("core",),
    ("kernel",),
    ("grid", "batching", "releases", "trace", "knockout", "gpu"),
    ("tables",),
    ("figures",),
    ("compat",),
)
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


# an entry file's functions: its parser (declarations only), its command (parse, then call the package) and the
# rule's face (unpack the snakemake object, then call the package or main)
ENTRY_FUNCTIONS = ("build_parser", "main", "_from_rule")
MAX_ENTRY_STATEMENTS = 12  # top-level statements of main or _from_rule
# what a parser's declaration holds: no branch, no loop, no error handling
DECLARATIONS = (ast.Expr, ast.Assign, ast.AnnAssign, ast.Return, ast.Import, ast.ImportFrom)
# the package module that is a command line: the trace script's parser, used in-process by the batch's children
COMMAND_LINE_MODULES = {"trace/trace_cli.py"}


def entry_problems(source: str, name: str) -> list[str]:
    """Why an entry file holds more than its command line: another function or a class, a parser that does more than
    declare options, a main or _from_rule of more than MAX_ENTRY_STATEMENTS statements, a loop anywhere."""
    tree = ast.parse(source)
    problems = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.AsyncFunctionDef) or (
            isinstance(node, ast.FunctionDef) and node.name not in ENTRY_FUNCTIONS
        ):
            problems.append(f"{name}: {node.name} (an entry defines only {', '.join(ENTRY_FUNCTIONS)})")
        elif isinstance(node, ast.FunctionDef) and node.name == "build_parser":
            problems += [
                f"{name}:{statement.lineno}: build_parser does more than declare options"
                for statement in node.body
                if not isinstance(statement, DECLARATIONS)
            ]
        elif isinstance(node, ast.FunctionDef) and len(node.body) > MAX_ENTRY_STATEMENTS:
            problems.append(f"{name}: {node.name} has {len(node.body)} statements (at most {MAX_ENTRY_STATEMENTS})")
    for node in ast.walk(tree):
        if isinstance(node, ast.For | ast.AsyncFor | ast.While):
            problems.append(f"{name}:{node.lineno}: a loop")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node not in tree.body:
            problems.append(f"{name}:{node.lineno}: {node.name} defined inside a function")
    return problems


def command_line_problems(source: str, name: str) -> list[str]:
    """Why a package module has a command line of its own: a top-level main, an argparse parser (ArgumentParser
    named other than as a type annotation: called, subclassed, passed) or subparsers, an ``if __name__ ==
    "__main__"`` block. A function that adds options to a parser it is given is no command line of its own."""
    tree = ast.parse(source)
    annotations = [getattr(node, "returns", None) or getattr(node, "annotation", None) for node in ast.walk(tree)]
    in_annotations = {id(n) for annotation in annotations if annotation for n in ast.walk(annotation)}
    found = [(node.lineno, "defines main") for node in tree.body if getattr(node, "name", None) == "main"]
    for node in ast.walk(tree):
        named = getattr(node, "attr", getattr(node, "id", None)) if isinstance(node, ast.Attribute | ast.Name) else None
        if named in ("ArgumentParser", "add_subparsers") and id(node) not in in_annotations:
            found.append((node.lineno, f"builds a command line ({named})"))
        elif isinstance(node, ast.If) and "__name__" in {n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)}:
            found.append((node.lineno, 'an `if __name__ == "__main__"` block'))
    return [f"{name}:{line}: {what}" for line, what in sorted(found)]


def test_entry_files_are_thin():
    """An entry parses its command line (build_parser, main) or unpacks the rule's object (_from_rule), then calls
    the package's functions: what loops, decides or handles errors is in the package."""
    problems = []
    for path in sorted(SCRIPTS.glob("*.py")):
        ours = {m for m in imports_of(path) if m.startswith(PACKAGE)}
        assert ours, f"{path.name} imports nothing of {PACKAGE}"
        problems += entry_problems(path.read_text(encoding="utf-8"), path.name)
    assert not problems, f"logic belongs in {PACKAGE}:\n" + "\n".join(problems)


def test_no_package_module_has_a_command_line():
    """The command lines are the entry files' (scripts/*.py): no module of the package defines main, builds an
    argparse parser or runs as __main__, but the trace script's parser (trace_cli), which the batch's children use."""
    problems = []
    for path in sorted((SCRIPTS / PACKAGE).rglob("*.py")):
        name = path.relative_to(SCRIPTS / PACKAGE).as_posix()
        if name not in COMMAND_LINE_MODULES:
            problems += command_line_problems(path.read_text(encoding="utf-8"), name)
    assert not problems, "a command line belongs in its entry file, scripts/<name>.py:\n" + "\n".join(problems)
    for name in COMMAND_LINE_MODULES:  # the allowed one is still there, still a command line
        assert command_line_problems((SCRIPTS / PACKAGE / name).read_text(encoding="utf-8"), name), name


# The package is installed (pyproject.toml; make and environment.yml install it editable): what edits sys.path is a
# feature, not package finding: a release's GPU site first (gpu_bench --site), a kernel file's folder first (kernels)
SYS_PATH_EDITS = {"gpu/gpu_bench.py", "kernel/kernels.py", "releases/kernel_requirements.py"}
SYS_PATH_EDIT = re.compile(r"sys\.path\s*(\.\s*(insert|append|extend)\s*\(|\+=|=(?!=)|\[[^\]]*\]\s*=(?!=))")


def sys_path_edits(source: str, name: str) -> list[str]:
    return [f"{name}:{number}" for number, line in enumerate(source.splitlines(), 1) if SYS_PATH_EDIT.search(line)]


def test_the_package_is_installed_and_nothing_edits_sys_path_to_find_it():
    """`import tilelang_churn` finds this checkout's package through the install, and no entry file, module or rule
    file puts scripts/ on sys.path: Python puts a script's folder there, Snakemake's script: adds it."""
    import tilelang_churn

    assert metadata.version("tilelang-churn")
    where = Path(tilelang_churn.__file__).resolve()
    assert where == SCRIPTS / PACKAGE / "__init__.py", f"{where}: the environment's install is another checkout's"
    files = {path.name: path for path in SCRIPTS.glob("*.py")}
    files |= {path.relative_to(SCRIPTS / PACKAGE).as_posix(): path for path in (SCRIPTS / PACKAGE).rglob("*.py")}
    files |= {
        path.name: path
        for path in [*(SCRIPTS.parent / "workflow" / "rules").glob("*.smk"), SCRIPTS.parent / "Snakefile"]
    }
    edits = [
        edit
        for name, path in sorted(files.items())
        if name not in SYS_PATH_EDITS
        for edit in sys_path_edits(path.read_text(encoding="utf-8"), name)
    ]
    assert not edits, f"sys.path edited to find the package: {edits}"
    for name in sorted(SYS_PATH_EDITS):  # the features are still there, and found
        assert sys_path_edits((SCRIPTS / PACKAGE / name).read_text(encoding="utf-8"), name), name
    assert sys_path_edits("import sys\nsys.path.insert(0, 'x')\nsys.path[:0] = ['y']\n", "a.py") == ["a.py:2", "a.py:3"]


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


FAT_ENTRY = """
import argparse
from tilelang_churn.tables import churn_table


class Options:
    pass


def build_parser():
    parser = argparse.ArgumentParser()
    if True:
        parser.add_argument("--out")
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    for path in args.out:
        churn_table.build_tables([path], path, path)
    return 0


def _check(args):
    def inner():
        pass
"""
COMMAND_LINE_MODULE = """
import argparse


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_subparsers()
    return 0


class Parser(argparse.ArgumentParser):
    pass


if __name__ == "__main__":
    raise SystemExit(main())
"""
OPTIONS_MODULE = """
import argparse


def add_options(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--jobs")
    return parser
"""


def test_the_checks_find_a_fat_entry_and_a_command_line_in_the_package():
    assert entry_problems(FAT_ENTRY, "fat.py") == [
        "fat.py: Options (an entry defines only build_parser, main, _from_rule)",
        "fat.py:12: build_parser does more than declare options",
        "fat.py: _check (an entry defines only build_parser, main, _from_rule)",
        "fat.py:19: a loop",
        "fat.py:25: inner defined inside a function",
    ]
    long_main = "def main():\n" + "    x = 1\n" * (MAX_ENTRY_STATEMENTS + 1)
    assert entry_problems(long_main, "long.py") == [f"long.py: main has 13 statements (at most {MAX_ENTRY_STATEMENTS})"]
    assert entry_problems("def main(argv=None):\n    return 0\n", "thin.py") == []
    assert command_line_problems(COMMAND_LINE_MODULE, "room/cli.py") == [
        "room/cli.py:5: defines main",
        "room/cli.py:6: builds a command line (ArgumentParser)",
        "room/cli.py:7: builds a command line (add_subparsers)",
        "room/cli.py:11: builds a command line (ArgumentParser)",
        'room/cli.py:15: an `if __name__ == "__main__"` block',
    ]
    assert command_line_problems(OPTIONS_MODULE, "room/options.py") == []


def test_the_checks_find_an_upward_import_and_cycles(broken_tree):
    graph = package_graph(broken_tree)
    assert upward_imports(graph) == ["tilelang_churn.core.rows (core) imports tilelang_churn.figures.plots (figures)"]
    assert cycles(graph) == [
        ["tilelang_churn.core.rows", "tilelang_churn.figures.plots"],
        ["tilelang_churn.trace.a", "tilelang_churn.trace.b"],
    ]
