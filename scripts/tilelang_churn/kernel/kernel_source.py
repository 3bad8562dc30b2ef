"""Every way TileLang defines a kernel, read from the file's source (``ast``: no import, no TileLang).

A kernel is a top-level function of a Python file in one of these styles (``STYLES``):

- ``builder``: a plain function, ``build(**params)`` returning a ``T.prim_func`` (the workflow's first contract);
- ``jit``: decorated with ``@tilelang.jit`` (``@tl.jit(out_idx=[-1], pass_configs={...})``, ``@jit``), lazy (it
  returns an inner ``@T.prim_func``) or eager (``T.const`` names, tensor annotations, ``T.empty`` outputs); its
  PrimFunc is ``get_tir(**params)``, as TileLang's own ``compile`` gets it;
- ``autotune``: ``@autotune(configs=...)`` over ``@tilelang.jit``; its PrimFunc is its ``jit_impl.get_tir``;
- ``prim_func``: a module-level ``@T.prim_func``, the PrimFunc itself (no parameters).

What a kernel takes (``KernelDef.params``) is what TileLang binds at compile time: every parameter of a builder;
of a jit function, the parameters without a TileLang type annotation (``A: T.Tensor(...)`` in the signature or
the body makes a runtime argument, as ``JITFunc.tensor_args``) plus the names of its ``T.const("M, N, K")``
calls. The decorator's ``pass_configs`` (and ``T.annotate_pass_configs``) and ``out_idx`` are read where the
source spells them as literals (``tilelang.PassConfigKey.TL_...`` keys included, through ``config_keys``);
where it does not, the field is ``UNREAD`` and the import probe (kernel_probe.py) reads them.

Standard library only.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

STYLES = ("builder", "jit", "autotune", "prim_func")
REQUIRED = object()  # a parameter without a default
UNREAD = "<not a literal>"  # a setting the source computes (a call, a name): the probe reads it


class SourceError(ValueError):
    """The kernel's source does not define a usable kernel; the message names the function and the line."""


@dataclass(frozen=True)
class KernelDef:
    function: str
    style: str  # one of STYLES
    line: int
    params: dict  # compile-time parameter name -> its default (a literal, or "<source>") or REQUIRED
    takes_any: bool  # **kwargs
    tensor_params: tuple[str, ...] = ()  # the jit function's runtime arguments (not given by the config)
    consts: tuple[str, ...] = ()  # its T.const names: required parameters
    pass_configs: dict | str = field(default_factory=dict)  # the kernel's own, or UNREAD
    out_idx: list | None | str = None  # the decorator's out_idx (None: none given), or UNREAD
    autotune_configs: list | str | None = None  # @autotune(configs=...): a literal list, UNREAD, None: no autotune


@dataclass(frozen=True)
class _Aliases:
    """How the file names TileLang: module aliases, and the decorators imported by name."""

    tilelang: frozenset = frozenset({"tilelang"})
    language: frozenset = frozenset()
    jit: frozenset = frozenset()
    autotune: frozenset = frozenset()
    prim_func: frozenset = frozenset()


def _aliases(tree: ast.Module) -> _Aliases:
    tilelang, language, jit, autotune, prim_func = {"tilelang"}, set(), set(), set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "tilelang":
                    tilelang.add(alias.asname or "tilelang")
                elif alias.name == "tilelang.language" and alias.asname:
                    language.add(alias.asname)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "tilelang":
            for alias in node.names:
                name = alias.asname or alias.name
                if name == "*":  # from tilelang.autotuner import *: the module's public names, autotune among them
                    jit.update({"jit"} if node.module in ("tilelang", "tilelang.jit") else set())
                    autotune.update({"autotune"} if node.module in ("tilelang", "tilelang.autotuner") else set())
                    continue
                if alias.name == "language":
                    language.add(name)
                elif alias.name in ("jit", "lazy_jit"):
                    jit.add(name)
                elif alias.name == "autotune":
                    autotune.add(name)
                elif alias.name == "prim_func":
                    prim_func.add(name)
    return _Aliases(frozenset(tilelang), frozenset(language), frozenset(jit), frozenset(autotune),
                    frozenset(prim_func))  # fmt: skip


def _decorator_kind(node: ast.expr, aliases: _Aliases) -> str | None:
    """'jit', 'autotune', 'prim_func' or None for one decorator expression."""
    target = node.func if isinstance(node, ast.Call) else node
    name = ast.unparse(target)
    parts = name.split(".")
    if len(parts) == 1:
        for kind in ("jit", "autotune", "prim_func"):
            if name in getattr(aliases, kind):
                return kind
        return None
    root, last = parts[0], parts[-1]
    if last == "prim_func" and (root in aliases.language or root in aliases.tilelang or root == "T"):
        return "prim_func"
    if root in aliases.tilelang and last in ("jit", "lazy_jit"):
        return "jit"
    if root in aliases.tilelang and last == "autotune":
        return "autotune"
    return None


def kernel_functions(tree: ast.Module) -> list[str]:
    """The file's kernels: its top-level functions decorated with @tilelang.jit, @autotune or @T.prim_func, in
    file order (a plain builder is named, never guessed)."""
    aliases = _aliases(tree)
    found = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and any(_decorator_kind(d, aliases) for d in node.decorator_list):
            found.append(node.name)
    return found


def read_kernel(tree: ast.Module, function: str, config_keys: dict[str, str] | None = None) -> KernelDef:
    """The KernelDef of FUNCTION (its last top-level definition, as Python binds it). config_keys: TileLang's
    PassConfigKey member -> its string (tilelang_source.pass_config_members), to read keys the source spells so."""
    found = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == function]
    if not found:
        names = [node.name for node in tree.body if isinstance(node, ast.FunctionDef)]
        raise SourceError(f"no function {function!r} at its top level (functions: {', '.join(names) or 'none'})")
    node = found[-1]
    aliases = _aliases(tree)
    constants = _module_literals(tree)
    kinds = [(_decorator_kind(d, aliases), d) for d in node.decorator_list]
    jit = [d for kind, d in kinds if kind == "jit"]
    tune = [d for kind, d in kinds if kind == "autotune"]
    if any(kind == "prim_func" for kind, _ in kinds):
        return KernelDef(function, "prim_func", node.lineno, {}, False)
    if tune and not jit:
        raise SourceError(
            f"{function}() (line {node.lineno}) is decorated with @autotune but not with @tilelang.jit; TileLang's "
            "@autotune applies only to a @tilelang.jit function"
        )
    language = aliases.language | {"T"}
    params, takes_any = _signature(node, language)
    if not jit:
        return KernelDef(function, "builder", node.lineno, params, takes_any)
    tensors = tuple(name for name in params if _is_runtime_argument(node, name, language))
    consts = _const_names(node, language)
    # the T.const names first, as TileLang's examples call such a kernel: compile(M=..., N=..., block_M=...)
    compile_time = {name: REQUIRED for name in consts if name not in params}
    compile_time |= {name: default for name, default in params.items() if name not in tensors}
    settings = _keywords(jit[0])
    pass_configs = _pass_configs(settings.get("pass_configs"), constants, config_keys or {})
    annotated = _annotated_pass_configs(node, language, constants, config_keys or {})
    if UNREAD in (pass_configs, annotated):
        pass_configs = UNREAD
    else:  # the decorator's win over the body's, as tilelang.compile merges them
        pass_configs = {**annotated, **pass_configs}
    out_idx = _literal_or_unread(settings.get("out_idx"), constants)
    autotune_configs = None
    if tune:
        configs = _keywords(tune[0]).get("configs")
        autotune_configs = _literal_or_unread(configs, constants) if configs is not None else UNREAD
        if not (isinstance(autotune_configs, list) and all(isinstance(c, dict) for c in autotune_configs)):
            autotune_configs = UNREAD
    return KernelDef(
        function, "autotune" if tune else "jit", node.lineno, compile_time, takes_any, tensors, consts,
        pass_configs, out_idx, autotune_configs,
    )  # fmt: skip


def _signature(node: ast.FunctionDef, language) -> tuple[dict, bool]:
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    defaults = [REQUIRED] * (len(positional) - len(args.defaults)) + list(args.defaults)
    keyword = [REQUIRED if default is None else default for default in args.kw_defaults]
    params = {}
    for arg, default in [*zip(positional, defaults), *zip(args.kwonlyargs, keyword)]:
        params[arg.arg] = REQUIRED if default is REQUIRED else literal(default, language)
    return params, args.kwarg is not None


def literal(node, language=frozenset({"T"})):
    """A default's value where it is a literal; a TileLang language object (``T.float16``, ``T.GemmWarpPolicy.
    Square``) as the config spells it, ``"T.<name>"``; else its source in angle brackets, never equal to a value."""
    try:
        return ast.literal_eval(node)
    except ValueError:
        spelled = ast.unparse(node)
        root, _, rest = spelled.partition(".")
        if isinstance(node, ast.Attribute) and root in language and re.fullmatch(r"[A-Za-z_][\w.]*", rest):
            return f"T.{rest}"
        return f"<{spelled}>"


def _module_literals(tree: ast.Module) -> dict[str, ast.expr]:
    """Module-level NAME = <expression> (the last binding), to follow a decorator argument given by name."""
    bound = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            bound[node.targets[0].id] = node.value
    return bound


def _keywords(decorator: ast.expr) -> dict[str, ast.expr]:
    return {kw.arg: kw.value for kw in decorator.keywords if kw.arg} if isinstance(decorator, ast.Call) else {}


def _literal_or_unread(node: ast.expr | None, constants: dict):
    if node is None:
        return None
    if isinstance(node, ast.Name) and node.id in constants:
        node = constants[node.id]
    try:
        return ast.literal_eval(node)
    except ValueError:
        return UNREAD


def _pass_configs(node: ast.expr | None, constants: dict, config_keys: dict[str, str]) -> dict | str:
    """A pass_configs mapping written as a literal whose keys are strings or PassConfigKey members; UNREAD
    for anything else (a call, a comprehension, an unknown member)."""
    if node is None or (isinstance(node, ast.Constant) and node.value is None):
        return {}
    if isinstance(node, ast.Name) and node.id in constants:
        node = constants[node.id]
    if not isinstance(node, ast.Dict) or None in node.keys:
        return UNREAD
    configs = {}
    for key, value in zip(node.keys, node.values):
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            name = key.value
        elif isinstance(key, ast.Attribute) and ast.unparse(key.value).split(".")[-1] == "PassConfigKey":
            name = config_keys.get(key.attr)
            if name is None:
                return UNREAD
        else:
            return UNREAD
        try:
            configs[name] = ast.literal_eval(value)
        except ValueError:
            return UNREAD
    return configs


def _annotated_pass_configs(node: ast.FunctionDef, language, constants: dict, config_keys: dict) -> dict | str:
    """The body's T.annotate_pass_configs({...}) (the last one), {} without one."""
    calls = [
        call
        for call in ast.walk(node)
        if isinstance(call, ast.Call) and ast.unparse(call.func).split(".")[-1] == "annotate_pass_configs" and call.args
    ]
    return _pass_configs(calls[-1].args[0], constants, config_keys) if calls else {}


def _is_runtime_argument(node: ast.FunctionDef, name: str, language) -> bool:
    """Whether a jit function's parameter is a runtime argument (a tensor or scalar var: TileLang's
    ``JITFunc.tensor_args``): annotated, in the signature or in the body, with a TileLang type (T.Tensor,
    T.Buffer, T.int32, ...), T.dtype excepted."""
    annotations = [arg.annotation for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
                   if arg.arg == name and arg.annotation is not None]  # fmt: skip
    annotations += [
        statement.annotation
        for statement in ast.walk(node)
        if isinstance(statement, ast.AnnAssign)
        and isinstance(statement.target, ast.Name)
        and statement.target.id == name
    ]
    for annotation in annotations:
        spelled = ast.unparse(annotation)
        root = spelled.split(".")[0].split("[")[0].split("(")[0]
        if root in language and not re.fullmatch(r"\w+\.dtype", spelled):
            return True
    return False


def _const_names(node: ast.FunctionDef, language) -> tuple[str, ...]:
    """The names of the body's T.const("M, N, K") calls, in order."""
    names: list[str] = []
    for call in ast.walk(node):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "const"):
            continue
        if ast.unparse(call.func.value) not in language or not call.args:
            continue
        first = call.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            names += [name for name in re.split(r"[,\s]+", first.value) if name and name not in names]
    return tuple(names)


def imported_modules(tree: ast.Module, package: str = "") -> list[str]:
    """Every module the source imports, anywhere in it, by absolute dotted name: ``import a.b``, ``from a import
    b`` (a and a.b: b may be a module), a relative import resolved against PACKAGE (the module's own package,
    '' for a top-level file), and ``importlib.import_module("a")`` / ``__import__("a")`` with a literal name."""
    found: list[str] = []

    def add(name: str) -> None:
        if name and name not in found:
            found.append(name)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".") if package else []
                parts = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
                base = ".".join([*parts, *([node.module] if node.module else [])])
            add(base)
            for alias in node.names:
                if alias.name != "*":
                    add(f"{base}.{alias.name}" if base else alias.name)
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            called = ast.unparse(node.func)
            if called in ("importlib.import_module", "import_module", "__import__") and isinstance(
                node.args[0].value, str
            ):
                add(node.args[0].value)
    return found
