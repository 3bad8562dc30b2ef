"""Read a TileLang source without importing it (standard library only).

A source is a directory (a checkout or a site-packages folder holding ``tilelang/``, or the ``tilelang``
package folder itself), a wheel, or the installed package found on sys.path. Locations come from parsing
the files with ``ast``, never from a table of line numbers.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

# The entry points the book names: label, file, the names to find in it, the trace modes that need it
# (core/trace_modes.py; instrument needs none of them, so every release serves it).
ENTRY_POINTS = (
    (
        "TL_LOWER_TRACE / TL_LOWER_TRACE_DIR",
        "tilelang/env.py",
        ("TL_LOWER_TRACE", "TL_LOWER_TRACE_DIR"),
        ("trace-env",),
    ),
    ("lower_trace()", "tilelang/tools/lower_trace/__init__.py", ("lower_trace",), ("trace-env", "trace-api")),
    ("enable() / disable()", "tilelang/tools/lower_trace/core.py", ("enable", "disable"), ("trace-env", "trace-api")),
    ("pass_diff()", "tilelang/utils/pass_diff.py", ("pass_diff",), ("pass-diff",)),
    # the default pass list of trace-api and pass-diff names it
    ("transform.Simplify", "tilelang/transform/simplify.py", ("Simplify",), ("trace-api", "pass-diff")),
)

# Modules whose pass factories --passes may name, in lookup order (the first match wins, so
# tilelang.transform.Simplify shadows TVM's). TVM ships inside the tilelang wheel; its IR namespace is
# ``tirx`` in recent releases and ``tir`` in older ones.
_TVM = "tilelang/3rdparty/tvm/python/tvm"
PASS_MODULES = (
    ("tilelang.transform", "tilelang/transform/__init__.py"),
    ("tvm.tirx.transform", f"{_TVM}/tirx/transform/transform.py"),
    ("tvm.tir.transform", f"{_TVM}/tir/transform/transform.py"),
    ("tvm.s_tir.transform", f"{_TVM}/s_tir/transform/transform.py"),
)


class SourceTree:
    """Files of one TileLang source, addressed by paths relative to the folder holding ``tilelang/``."""

    def __init__(self, description: str, reader, release: str | None = None, root: Path | None = None,
                 byte_reader=None):  # fmt: skip
        self.description = description
        self._reader = reader
        self._byte_reader = byte_reader
        self.release = release  # Version of the tilelang-*.dist-info beside tilelang/, None without one
        self.root = root  # the folder holding tilelang/, for a source of files; None for a wheel

    def read(self, relpath: str) -> str | None:
        return self._reader(relpath)

    def path_of(self, relpath: str) -> Path | None:
        """The file's path in a source of files (None in a wheel, or when it is absent)."""
        if self.root is None or not (self.root / relpath).is_file():
            return None
        return self.root / relpath

    def read_bytes(self, relpath: str) -> bytes | None:
        """The file's bytes (a wheel's member, a folder's file), None when it is absent."""
        if self._byte_reader is not None:
            return self._byte_reader(relpath)
        path = self.path_of(relpath)
        return path.read_bytes() if path is not None else None

    @classmethod
    def from_path(cls, path: str | Path) -> SourceTree:
        """A directory or a .whl; raises ValueError naming the path when it holds no TileLang (the caller names the
        option or key it came from)."""
        path = Path(path)
        if path.is_file() and path.suffix == ".whl":
            archive = zipfile.ZipFile(path)
            members = set(archive.namelist())

            def read_member(relpath: str) -> str | None:
                return archive.read(relpath).decode("utf-8") if relpath in members else None

            def read_member_bytes(relpath: str) -> bytes | None:
                return archive.read(relpath) if relpath in members else None

            metadata = sorted(m for m in members if re.fullmatch(r"tilelang-[^/]+\.dist-info/METADATA", m))
            release = _metadata_version(read_member(metadata[0])) if metadata else None
            tree = cls(str(path), read_member, release, byte_reader=read_member_bytes)
        elif path.is_dir():
            root = path.parent if (path / "env.py").is_file() and path.name == "tilelang" else path
            tree = cls(str(path), lambda relpath: _read_text(root / relpath), _dist_release(root), root)
        else:
            raise ValueError(f"{str(path)!r} is neither a directory nor a .whl file")
        if tree.read("tilelang/__init__.py") is None:
            raise ValueError(f"{str(path)!r} holds no tilelang/__init__.py")
        return tree


def shadowing_module() -> str | None:
    """Where a module named tilelang that is not the TileLang package sits first on sys.path, else None.

    A tilelang.py (or a folder without __init__.py) in the working directory hides the installed package:
    that is a broken environment, not a machine without TileLang.
    """
    try:
        spec = importlib.util.find_spec("tilelang")
    except (ImportError, ValueError):  # nothing to be found: TileLang is absent, not shadowed
        return None
    if spec is None:
        return None
    locations = list(spec.submodule_search_locations or [])
    if not locations:
        return spec.origin or "a module without a file"
    if not (Path(locations[0]) / "__init__.py").is_file():
        return f"{locations[0]} (a folder without __init__.py)"
    return None


def has_module(source: SourceTree, dotted: str) -> bool:
    """Whether the source holds module ``dotted`` (a .py file or a package), read without importing it."""
    relpath = dotted.replace(".", "/")
    return source.read(f"{relpath}.py") is not None or source.read(f"{relpath}/__init__.py") is not None


def _read_text(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.is_file() else None


def _metadata_version(text: str | None) -> str | None:
    found = re.search(r"^Version:[ \t]*(\S+)[ \t]*$", text or "", re.M)
    return found.group(1) if found else None


def _dist_release(root: Path) -> str | None:
    """The release of the tilelang distribution installed in root (a site-packages folder), from its METADATA."""
    for metadata in sorted(root.glob("tilelang-*.dist-info/METADATA")):
        return _metadata_version(_read_text(metadata))
    return None


def find_installed_source() -> SourceTree | None:
    """The tilelang package on sys.path, located by importlib without running its __init__."""
    try:
        spec = importlib.util.find_spec("tilelang")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    package_dir = Path(list(spec.submodule_search_locations)[0])
    if not (package_dir / "__init__.py").is_file():
        return None
    root = package_dir.parent
    return SourceTree(str(package_dir), lambda relpath: _read_text(root / relpath), _dist_release(root), root)


@dataclass(frozen=True)
class Location:
    label: str
    relpath: str
    first_line: int | None  # None: not found
    last_line: int | None
    missing: tuple[str, ...]
    modes: tuple[str, ...] = ()  # the trace modes that need it

    @property
    def found(self) -> bool:
        return not self.missing

    def where(self) -> str:
        if not self.found:
            return f"{self.relpath}: not found: {', '.join(self.missing)}"
        lines = str(self.first_line) if self.first_line == self.last_line else f"{self.first_line}-{self.last_line}"
        return f"{self.relpath}:{lines}"


def _definitions(tree: ast.AST) -> dict[str, ast.AST]:
    """Functions, classes and assigned names anywhere in a module (class bodies included), first wins."""
    found: dict[str, ast.AST] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.setdefault(node.name, node)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found.setdefault(target.id, node)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found.setdefault(node.target.id, node)
    return found


def locate_entry_points(source: SourceTree) -> list[Location]:
    locations = []
    for label, relpath, names, modes in ENTRY_POINTS:
        text = source.read(relpath)
        if text is None:
            locations.append(Location(label, relpath, None, None, names, modes))
            continue
        defs = _definitions(ast.parse(text, filename=relpath))
        missing = tuple(name for name in names if name not in defs)
        if missing:
            locations.append(Location(label, relpath, None, None, missing, modes))
            continue
        nodes = [defs[name] for name in names]
        # one name: its "def" (or assignment) line, as the book prints it; several: the span covering them
        last_line = nodes[0].lineno if len(nodes) == 1 else max(n.end_lineno for n in nodes)
        locations.append(Location(label, relpath, nodes[0].lineno, last_line, (), modes))
    return locations


def missing_for_modes(locations: list[Location], modes) -> dict[str, list[Location]]:
    """Mode -> the entry points it needs that the source lacks, for each of modes that lacks any."""
    missing = {mode: [loc for loc in locations if not loc.found and mode in loc.modes] for mode in modes}
    return {mode: locs for mode, locs in missing.items() if locs}


@dataclass(frozen=True)
class PassFactory:
    name: str
    module: str
    relpath: str
    line: int
    params: tuple[str, ...]
    required_params: tuple[str, ...]


def _factory(name: str, module: str, relpath: str, node: ast.FunctionDef) -> PassFactory:
    args = node.args
    positional = args.posonlyargs + args.args
    first_default = len(positional) - len(args.defaults)
    required = [a.arg for i, a in enumerate(positional) if i < first_default]
    required += [a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is None]
    params = [a.arg for a in positional + args.kwonlyargs]
    return PassFactory(name, module, relpath, node.lineno, tuple(params), tuple(required))


def _public_factories(text: str, relpath: str) -> tuple[dict[str, ast.FunctionDef], list[ast.ImportFrom]]:
    module = ast.parse(text, filename=relpath)
    defs = {node.name: node for node in module.body if isinstance(node, ast.FunctionDef) and node.name[:1].isupper()}
    relative_imports = [
        node for node in module.body if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module
    ]
    return defs, relative_imports


def pass_catalog(source: SourceTree) -> dict[str, PassFactory]:
    """Pass factories (capitalised module-level functions) that --passes can name, by name."""
    catalog: dict[str, PassFactory] = {}
    for module, relpath in PASS_MODULES:
        text = source.read(relpath)
        if text is None:
            continue
        defs, imports = _public_factories(text, relpath)
        found = {name: _factory(name, module, relpath, node) for name, node in defs.items()}
        # names re-exported with "from .simplify import Simplify" live in sibling files
        for node in imports:
            sibling = str(Path(relpath).parent / (node.module.replace(".", "/") + ".py"))
            sibling_text = source.read(sibling)
            if sibling_text is None:
                continue
            sibling_defs, _ = _public_factories(sibling_text, sibling)
            for alias in node.names:
                if alias.name in sibling_defs:
                    found.setdefault(
                        alias.asname or alias.name, _factory(alias.name, module, sibling, sibling_defs[alias.name])
                    )
        for name, factory in found.items():
            catalog.setdefault(name, factory)
    return catalog


PASS_CONFIG_FILE = "tilelang/transform/pass_config.py"


def pass_config_keys(source: SourceTree) -> frozenset[str] | None:
    """The string values of TileLang's ``PassConfigKey`` enum in the source (the ``tl.*`` options TileLang
    registers), None when the source has no such class."""
    members = pass_config_members(source)
    return frozenset(members.values()) if members is not None else None


def pass_config_members(source: SourceTree) -> dict[str, str] | None:
    """TileLang's ``PassConfigKey`` enum in the source, member name -> its string (``TL_ENABLE_FAST_MATH`` ->
    ``tl.enable_fast_math``), None when the source has no such class."""
    text = source.read(PASS_CONFIG_FILE)
    if text is None:
        return None
    enum = _definitions(ast.parse(text)).get("PassConfigKey")
    if not isinstance(enum, ast.ClassDef):
        return None
    return {
        node.targets[0].id: node.value.value
        for node in enum.body
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }


def env_source(env: str | Path) -> SourceTree | None:
    """The TileLang source of a release environment (its site-packages), None where it holds none."""
    for site in sorted(Path(env).glob("lib/python*/site-packages")):
        if (site / "tilelang" / "__init__.py").is_file():
            return SourceTree.from_path(site)
    return None


THIRD_PARTY = "tilelang/3rdparty/"  # TVM's files inside the wheel: a submodule in TileLang's repository


def pass_links(source: SourceTree | None, release: str, names, links) -> dict[str, tuple[str, str]]:
    """{pass name: (URL, "definition")} of its factory's definition at the release's tag (``links``:
    release_envs.PassLinks); (search URL, "search") for a name without a factory in TileLang's own tree, and for
    every name without ``source``."""
    catalog = pass_catalog(source) if source is not None else {}
    out = {}
    for name in names:
        factory = catalog.get(name)
        if factory is None or factory.relpath.startswith(THIRD_PARTY):
            out[name] = (links.url(release, name), "search")
        else:
            out[name] = (links.url(release, name, factory.relpath, factory.line), "definition")
    return out
