"""Which pass a TVM callback is about: its identity (core/pass_names.py), found in the running lowering.

    from tilelang_churn.trace import pass_identity
    with pass_identity.watching():                 # around tilelang.lower or tilelang.compile
        ... pass_identity.identity(info) ...       # in an instrument's should_run / run_before_pass

A named pass is TVM's full name (``info.name``: ``tl.Simplify``). A function pass made from a nested ``def
pass_fn(func, mod, ctx)`` without ``name=`` is named ``pass_fn`` by TVM, whoever made it. Its factory is found from
the release's own code: while ``watching`` is open, TVM's Python constructors of function passes
(``CreatePrimFuncPass``, ``MakeModulePass``) are wrapped, so every pass the pipeline makes is known by its
``PassInfo`` (the object TVM hands each callback) with the Python function it runs; a nested function's
``__qualname__`` (``HoistBroadcastValues.<locals>.pass_fn``) names its factory. TileLang's pipelines call the
factories while they lower, so their passes are made inside the block. An anonymous pass made before it (none
in 0.1.8-0.1.15's pipelines) is named by where it was applied: ``pass_fn@tilelang.engine.lower:95``.
"""

from __future__ import annotations

import contextlib
import importlib
import sys

from tilelang_churn.core import statuses

# (module, attribute holding the FFI functions, the constructors of a Python function pass there); a module a
# release lacks is left out (tvm.tir became tvm.tirx)
_CONSTRUCTORS = (
    ("tvm.tir.transform.function_pass", "_ffi_api", ("CreatePrimFuncPass",)),
    ("tvm.tirx.transform.function_pass", "_ffi_api", ("CreatePrimFuncPass",)),
    ("tvm.ir.transform", "_ffi_transform_api", ("MakeModulePass",)),
)
_LOCALS = ".<locals>."
# frames that stand between a pass's callback and the code that applied the pass
_PLUMBING_FILES = ("/tvm/ir/transform.py", "/tvm/ir/instrument.py", "/tilelang_churn/")

_made: dict[int, tuple[object, object]] = {}  # PassInfo handle -> (the PassInfo, held; the Python function)
_depth = 0  # nested watching() blocks (the knockout's compile inside a traced lowering)


@contextlib.contextmanager
def watching():
    """Record each Python function pass made inside the block (re-entrant; the record is dropped at the end of
    the outermost block, with the wrapped constructors)."""
    global _depth
    patched = _wrap_constructors() if _depth == 0 else []
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0:
            for api, name, original in reversed(patched):
                setattr(api, name, original)
            _made.clear()


def _wrap_constructors() -> list[tuple[object, str, object]]:
    from tilelang import tvm  # noqa: F401 - TileLang's TVM on sys.path, as the tracer's own imports have it

    patched, seen = [], set()
    for module_name, attribute, names in _CONSTRUCTORS:
        try:
            api = getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError):
            continue
        for name in names:
            original = getattr(api, name, None)
            if original is None or (id(api), name) in seen:
                continue
            seen.add((id(api), name))
            setattr(api, name, _recording(original))
            patched.append((api, name, original))
    return patched


def _recording(constructor):
    def construct(pass_function, info, *args, **kwargs):
        made = constructor(pass_function, info, *args, **kwargs)
        _made[info.__chandle__()] = (info, pass_function)
        return made

    return construct


def identity(info) -> str:
    """The identity of the pass ``info`` (a TVM PassInfo) describes; never a bare ``pass_fn``."""
    name = str(info.name)
    if "." in name:
        return name
    made = _made.get(info.__chandle__())
    if made is not None:
        function = made[1]
        qualname = str(getattr(function, "__qualname__", ""))
        if _LOCALS not in qualname or getattr(function, "__name__", None) != name:
            return name  # named after a function of its own, or given a name without a namespace
        return factory_path(str(getattr(function, "__module__", "")), qualname.split(_LOCALS, 1)[0])
    return f"{name}@{applied_at()}"


def factory_path(module: str, factory: str) -> str:
    """MODULE.FACTORY by the shortest package that exports the very function (``tilelang.transform``'s
    ``HoistBroadcastValues`` is ``tilelang.transform.hoist_broadcast_values.HoistBroadcastValues``)."""
    parts = module.split(".")
    for length in range(1, len(parts)):
        package = sys.modules.get(".".join(parts[:length]))
        exported = getattr(package, factory, None) if package is not None else None
        if getattr(exported, "__module__", None) == module and getattr(exported, "__qualname__", None) == factory:
            return f"{'.'.join(parts[:length])}.{factory}"
    return f"{module}.{factory}" if module else factory


def applied_at() -> str:
    """``module:line`` of the Python code that applied the pass now being asked or run (the caller of TVM's
    ``Pass.__call__``, past TVM's and this package's own frames)."""
    frame = sys._getframe(1)
    while frame is not None and any(part in frame.f_code.co_filename.replace("\\", "/") for part in _PLUMBING_FILES):
        frame = frame.f_back
    return f"{frame.f_globals.get('__name__', '?')}:{frame.f_lineno}" if frame is not None else "?"


def recording_instrument(sink: list):
    """A TVM pass instrument that appends (TVM's name, identity) of every pass run to SINK, in the order the runs
    start (the order of a trace's steps), inside ``watching()``; it prints nothing, so it costs next to nothing."""
    from tilelang import tvm

    class IdentityRecorder:
        def run_before_pass(self, mod, info):
            try:
                sink.append((str(info.name), identity(info)))
            except Exception as exc:  # noqa: BLE001 - an identity must never break compilation
                sink.append((str(info.name), f"{info.name}@? ({type(exc).__name__})"))

    return tvm.ir.instrument.pass_instrument(IdentityRecorder)()


def assign(rows: list[dict], identities: list[tuple[str, str]], spelling) -> int:
    """Give each row of a trace (step, pass) the identity of the pass run with its step, where that run has the
    row's name (SPELLING(TVM name) == row's pass); the number of rows whose run disagreed or was missing (they keep
    no pass_id: the writer gives them their name)."""
    disagreed = 0
    for row in rows:
        step = row.get("step")
        if row.get("status") == statuses.STATUS_CODEGEN or row.get("phase") == "tilelang.lower":
            continue  # no pass run: the writer gives it its name
        if isinstance(step, int) and step < len(identities) and spelling(identities[step][0]) == row["pass"]:
            row["pass_id"] = identities[step][1]
        else:
            disagreed += 1
    return disagreed
