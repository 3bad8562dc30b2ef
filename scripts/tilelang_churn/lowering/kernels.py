"""The kernel contract: a Python file whose function ``build(**params)`` returns a ``T.prim_func``.

The config check reads a kernel's signature from its source (``ast``: no import, so no TileLang, and a file
that does not parse is named before any job); the trace run imports the file and calls the function.

Optional GPU hooks (the GPU stage, config ``gpu: true``, lowering/gpu_bench.py), module-level in the same file;
each takes the parameter set as one dict (the params of ``build``, defaults filled in by the caller when given
in the config), and imports torch inside itself, so the file still imports without torch:

- ``OUT_IDX`` (list of ints; default ``[-1]``, the last parameter): the outputs, ``tilelang.compile``'s
  ``out_idx``; the compiled kernel allocates and returns them.
- ``inputs(params, device)`` -> list of torch tensors: the other parameters, in the prim_func's order, on
  ``device`` (``"cuda"``). Without it: random tensors of the parameters' shapes and element types.
- ``reference(params, inputs)`` -> tensor: what the outputs must equal, computed with torch (also timed, as the
  speed table's ``torch_*`` columns). Without it the kernel is compiled and launched, not checked: its rows
  say ``check = launch-only``.
- ``tolerance(params)`` -> float: the largest ``max|out - ref| / max|ref|`` accepted (default by ``dtype``:
  ``gpu_bench.DEFAULT_TOLERANCE``).
- ``work(params)`` -> ``{"flops": n}`` or ``{"bytes": n}``: the kernel's own work formula, for TFLOP/s or
  GB/s. Without it the rows have a latency and no rate.

    PYTHONPATH=scripts python -m tilelang_churn.lowering.kernels workflow/kernels/rmsnorm.py   # its parameters
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
SHIPPED_DIR = REPO / "workflow" / "kernels"
DEFAULT_FUNCTION = "build"
REQUIRED = object()  # a parameter without a default
SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")


class KernelError(ValueError):
    """A kernel file, function or parameter that cannot be used; the message names the file and the value."""


@dataclass(frozen=True)
class Signature:
    file: Path
    function: str
    params: dict  # name -> default (a literal) or REQUIRED
    takes_any: bool  # **kwargs: any parameter name is accepted

    def problem(self, params: dict) -> str | None:
        """Why build(**params) cannot be called, else None."""
        unknown = [name for name in params if name not in self.params]
        if unknown and not self.takes_any:
            return (
                f"{self.function}() in {self.file} takes no parameter {unknown[0]!r}; "
                f"its parameters are {', '.join(self.params) or '(none)'}"
            )
        missing = [name for name, default in self.params.items() if default is REQUIRED and name not in params]
        if missing:
            return f"{self.function}() in {self.file} needs {', '.join(missing)}, which the params do not give"
        return None

    def defaults(self) -> dict:
        return {name: default for name, default in self.params.items() if default is not REQUIRED}

    def ordered(self, params: dict) -> dict:
        """params in the function's parameter order (then any others, sorted): one spelling of a set however
        the config wrote it, for its label and its folder."""
        position = {name: i for i, name in enumerate(self.params)}
        return dict(sorted(params.items(), key=lambda item: (position.get(item[0], len(position)), item[0])))


def shipped(name: str) -> Path:
    """The file of a kernel shipped with the workflow (workflow/kernels/<name>.py)."""
    return SHIPPED_DIR / f"{name}.py"


def shipped_names() -> list[str]:
    return sorted(path.stem for path in SHIPPED_DIR.glob("*.py") if not path.name.startswith("_"))


def read_signature(file: str | Path, function: str = DEFAULT_FUNCTION) -> Signature:
    """The parameters of FUNCTION in FILE, read from its source without importing it (once per process: the
    config check asks for every configuration of a grid)."""
    return _read_signature(str(file), function)


@functools.cache
def _read_signature(file: str, function: str) -> Signature:
    path = Path(file)
    try:
        source = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise KernelError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise KernelError(f"{path}, line {exc.lineno}: does not parse ({exc.msg})") from None
    found = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == function]
    if not found:
        names = [node.name for node in tree.body if isinstance(node, ast.FunctionDef)]
        raise KernelError(
            f"{path}: no function {function!r} at its top level (functions: {', '.join(names) or 'none'})"
        )
    args = found[-1].args
    positional = [*args.posonlyargs, *args.args]
    defaults = [REQUIRED] * (len(positional) - len(args.defaults)) + list(args.defaults)
    # a keyword-only parameter without a default has None in kw_defaults
    keyword = [REQUIRED if default is None else default for default in args.kw_defaults]
    params = {}
    for arg, default in [*zip(positional, defaults), *zip(args.kwonlyargs, keyword)]:
        params[arg.arg] = REQUIRED if default is REQUIRED else _literal(default)
    return Signature(path, function, params, takes_any=args.kwarg is not None)


def _literal(node):
    try:
        return ast.literal_eval(node)
    except ValueError:
        return f"<{ast.unparse(node)}>"  # not a literal: shown as its source, never compared equal to a value


def canonical(params: dict) -> str:
    """The params column: canonical JSON, sorted keys, no spaces (one spelling per parameter set)."""
    return json.dumps(params, sort_keys=True, separators=(",", ":"))


def label(kernel: str, params: dict, defaults: dict) -> str:
    """A readable configuration label: the kernel and the parameters it sets away from the defaults, e.g.
    ``flash_attention(is_causal=True)``; ``rmsnorm`` when every parameter is the default."""
    changed = [f"{name}={params[name]}" for name in params if name not in defaults or defaults[name] != params[name]]
    return f"{kernel}({', '.join(changed)})" if changed else kernel


def folder_id(kernel: str, params: dict, defaults: dict) -> str:
    """The folder of a parameter set under results/runs/<version>/<target>/: the kernel's name, plus each
    parameter set away from the defaults (rmsnorm_N1152), reduced to the characters a folder name allows."""
    parts = [kernel] + [f"{name}{params[name]}" for name in params if defaults.get(name, REQUIRED) != params[name]]
    return re.sub(r"[^A-Za-z0-9_.+-]", "", "_".join(parts))


def load_function(file: str | Path, function: str = DEFAULT_FUNCTION):
    """Import the kernel file (as a module of its own name, not on sys.path) and return its function."""
    path = Path(file).resolve()
    built = getattr(load_module(path), function, None)
    if not callable(built):
        raise KernelError(f"{path}: no function {function!r}")
    return built


@dataclass(frozen=True)
class GpuHooks:
    """The optional GPU hooks of a kernel file (None where the file has none; see the module docstring)."""

    out_idx: tuple[int, ...]
    inputs: object = None
    reference: object = None
    tolerance: object = None
    work: object = None


def load_module(file: str | Path):
    """Import the kernel file as a module of its own name (not on sys.path)."""
    path = Path(file).resolve()
    spec = importlib.util.spec_from_file_location(f"tlchurn_kernel_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise KernelError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def gpu_hooks(module) -> GpuHooks:
    """The GPU hooks a kernel module defines."""
    out_idx = getattr(module, "OUT_IDX", [-1])
    hooks = {name: getattr(module, name, None) for name in ("inputs", "reference", "tolerance", "work")}
    return GpuHooks(tuple(out_idx), **{name: hook if callable(hook) else None for name, hook in hooks.items()})


def build(file: str | Path, function: str, params: dict):
    """FUNCTION(**params) of the kernel file; a KernelError unless it returns a PrimFunc."""
    func = load_function(file, function)(**params)
    if type(func).__name__ != "PrimFunc":
        raise KernelError(f"{function}() in {file} returned {type(func).__name__}, not a T.prim_func (PrimFunc)")
    return func


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) not in (1, 2):
        print("usage: kernels.py FILE [FUNCTION]", file=sys.stderr)
        return 2
    try:
        signature = read_signature(*argv)
    except KernelError as error:
        print(f"kernels.py: error: {error}", file=sys.stderr)
        return 2
    for name, default in signature.params.items():
        print(f"{name}" if default is REQUIRED else f"{name}={default!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
