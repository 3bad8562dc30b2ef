"""A kernel file's kernel: its signature read from the source, its module imported, its PrimFunc built.

A kernel is a top-level function of a Python file in any style TileLang defines kernels in (kernel_source.py: a
plain builder ``build(**params)`` returning a ``T.prim_func``, ``@tilelang.jit`` lazy or eager, ``@autotune`` over
it, a module-level ``@T.prim_func``). The config check reads its signature from the source (``ast``: no import, so
no TileLang, and a file that does not parse is named before any job); the trace run imports the file and gets the
PrimFunc as TileLang itself does (``build``). Both read the file as Python does (its coding line, a BOM); the import
puts its folder first on ``sys.path``, as for a script.

Optional declarations, module-level literals read from the source like the signature:

- ``COLUMNS`` (tuple of parameter names; default none): the parameters that fill table columns of their own
  (``passes_table.PARAM_COLUMNS``: ``M``, ``N``, ``K``, ``block_M``, ...), which keep their names and meaning in
  every table; a kernel that fills every one is labelled by them (``jobs.config_label``). Its jobs' params
  then hold every parameter, defaults included. The book's GEMM (``gemm.py``) declares all of them.
- ``LOWERING_COST`` (a positive number; default 1): what one lowering of the kernel costs against the book's
  GEMM's, for cutting batches (core/job_cost.py).

Optional GPU hooks (the GPU stage, config ``gpu: true``, gpu/gpu_bench.py), module-level in the same file;
each takes the parameter set as one dict (the params of ``build``, defaults filled in by the caller when given
in the config), and imports torch inside itself, so the file still imports without torch:

- ``OUT_IDX`` (list of ints; default ``[-1]``, the last parameter): the outputs, ``tilelang.compile``'s
  ``out_idx``; the compiled kernel allocates and returns them.
- ``inputs(params, device)`` -> list of torch tensors: the other parameters, in the prim_func's order, on
  ``device`` (``"cuda"``). Without it: random tensors of the parameters' shapes and element types.
- ``reference(params, inputs)`` -> tensor or tuple: what the outputs must equal, in order, computed with torch
  (also timed, as the speed table's ``torch_*`` columns). Without it (and without a config ``reference``) the
  outputs are compared with a knockout's baseline or the previous version, else ``check = launch-only``.
- ``tolerance(params)`` -> float: the largest ``max|out - ref| / max|ref|`` accepted (default by each output's
  dtype: ``output_check.TOLERANCES``).
- ``work(params)`` -> ``{"flops": n}`` or ``{"bytes": n}``: the kernel's own work formula, for TFLOP/s or
  GB/s. Without it the rows have a latency and no rate.

    python3 scripts/kernel_params.py workflow/kernels/rmsnorm.py   # its parameters (print_signature)
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import importlib.util
import json
import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

from tilelang_churn.core import files, passes_table
from tilelang_churn.core.job_spec import DEFAULT_FUNCTION, canonical  # noqa: F401 (canonical: the params column, named here too)
from tilelang_churn.kernel import capture_hook, kernel_source, tilelang_source

REPO = Path(__file__).resolve().parents[3]
SHIPPED_DIR = REPO / "workflow" / "kernels"
REQUIRED = kernel_source.REQUIRED  # a parameter without a default
# what a kernel file may declare at its top level (a literal each), read without importing it
DECLARATIONS = ("COLUMNS", "LOWERING_COST")
BOOK_KERNEL = "gemm"  # the book's kernel: what gemm_lower_trace.py traces by default, config shapes' kernel
SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")


class KernelError(ValueError):
    """A kernel file, function or parameter that cannot be used; the message names the file and the value."""


@dataclass(frozen=True)
class Signature:
    file: Path
    function: str
    params: dict  # name -> default (a literal) or REQUIRED
    takes_any: bool  # **kwargs: any parameter name is accepted
    columns: tuple[str, ...] = ()  # the file's COLUMNS: its parameters that are table columns of their own
    lowering_cost: float = 1.0  # the file's LOWERING_COST: its lowering's cost against the book's GEMM's
    style: str = "builder"  # kernel_source.STYLES
    line: int = 0  # the line of its def
    tensor_params: tuple[str, ...] = ()  # a jit function's runtime arguments: never parameters of the config
    kernel_pass_configs: dict | str = field(default_factory=dict)  # its decorator's, or kernel_source.UNREAD
    out_idx: list | int | None | str = None  # its decorator's out_idx, or kernel_source.UNREAD
    autotune_configs: list | str | None = None  # @autotune's configs (a literal list, UNREAD), None: no autotune

    def problem(self, params: dict) -> str | None:
        """Why build(**params) cannot be called, else None."""
        unknown = [name for name in params if name not in self.params]
        if unknown and unknown[0] in self.tensor_params:
            return (
                f"{self.function}() in {self.file} takes {unknown[0]!r} as a tensor at run time, not as a parameter "
                f"of the config; its parameters are {', '.join(self.params) or '(none)'}"
            )
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
    tree = parse(path)
    try:
        found = kernel_source.read_kernel(tree, function, pass_config_members())
    except kernel_source.SourceError as error:
        raise KernelError(f"{path}: {error}") from None
    signature = Signature(
        path, function, found.params, found.takes_any, style=found.style, line=found.line,
        tensor_params=found.tensor_params, kernel_pass_configs=found.pass_configs, out_idx=found.out_idx,
        autotune_configs=found.autotune_configs,
    )  # fmt: skip
    return _with_declarations(signature, tree)


def kernel_functions(file: str | Path) -> list[str]:
    """The kernels a file defines with TileLang's decorators (@tilelang.jit, @autotune, @T.prim_func), in file
    order: what ``function: all`` names."""
    return kernel_source.kernel_functions(parse(Path(file)))


def parse(path: Path) -> ast.Module:
    """The file's syntax tree, read as Python reads it (read_source); a KernelError naming the line where it does
    not parse."""
    try:
        return ast.parse(read_source(path), filename=str(path))
    except SyntaxError as exc:
        raise KernelError(f"{path}, line {exc.lineno}: does not parse ({exc.msg})") from None


@functools.cache
def pass_config_members() -> dict[str, str]:
    """TileLang's PassConfigKey member -> its string, read from the installed source (no import); {} without it."""
    source = tilelang_source.find_installed_source()
    return (tilelang_source.pass_config_members(source) or {}) if source is not None else {}


def _with_declarations(signature: Signature, tree: ast.Module) -> Signature:
    """The signature with what its file declares at its top level (COLUMNS, LOWERING_COST), each checked."""
    declared = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if node.targets[0].id in DECLARATIONS:
                declared[node.targets[0].id] = node
    columns, cost = signature.columns, signature.lowering_cost
    if "COLUMNS" in declared:
        columns = tuple(_declared(signature, declared["COLUMNS"], "a tuple of parameter names"))
        where = f"{signature.file}, line {declared['COLUMNS'].lineno}: COLUMNS names"
        for name in columns:
            if name not in passes_table.PARAM_COLUMNS:
                raise KernelError(
                    f"{where} {name!r}, which is not a table column of kernel parameters; they are "
                    f"{', '.join(passes_table.PARAM_COLUMNS)}"
                )
            if name not in signature.params:
                raise KernelError(f"{where} {name!r}, which {signature.function}() does not take")
    if "LOWERING_COST" in declared:
        cost = float(_declared(signature, declared["LOWERING_COST"], "a positive number"))
    return replace(signature, columns=columns, lowering_cost=cost)


def _declared(signature: Signature, node: ast.Assign, what: str):
    """A declaration's value, when it is a literal of the kind it must be (KernelError naming the line if not)."""
    try:
        value = ast.literal_eval(node.value)
    except ValueError:
        value = None
    if what == "a positive number":
        fits = not isinstance(value, bool) and isinstance(value, (int, float)) and 0 < value < float("inf")
    else:
        fits = isinstance(value, (tuple, list)) and all(isinstance(name, str) for name in value)
    if not fits:
        name = node.targets[0].id
        raise KernelError(f"{signature.file}, line {node.lineno}: {name} must be {what}, not {ast.unparse(node.value)}")
    return value


def read_source(path: Path) -> str:
    """The text of a Python file as Python reads it when it imports it: its coding line, else a BOM, else UTF-8."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise KernelError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        return importlib.util.decode_source(data)
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise KernelError(
            f"{path}, line {line}: cannot be read as {exc.encoding} (byte {data[exc.start]:#04x}); save it as "
            "UTF-8 or declare its encoding in a coding line (# -*- coding: latin-1 -*-)"
        ) from None
    except SyntaxError as exc:  # a coding line naming an unknown encoding, or one that contradicts a BOM
        raise KernelError(f"{path}: cannot be read ({exc.msg})") from None


def local_modules(file: str | Path) -> list[str]:
    """The modules a kernel file imports from its own folder (first on sys.path when it is imported, so they win
    over installed packages), and theirs in turn, however imported (kernel_source.imported_modules): each a
    ``.py`` file, as a path like FILE's (relative when FILE is). They are part of the kernel: inputs of its jobs and
    in the trace cache's key. A module that does not parse still counts; its own imports are not followed."""
    return list(_local_modules(str(file)))


def kernel_files_of(paths) -> list[str]:
    """Each user kernel file, then the modules it imports from its own folder (local_modules), once each."""
    found: dict[str, None] = {}
    for file in paths:
        found[file] = None
        found.update(dict.fromkeys(local_modules(file)))
    return list(found)


@functools.cache
def _local_modules(file: str) -> tuple[str, ...]:
    root = Path(file).parent
    found: dict[str, None] = {}
    queue = [(Path(file), "")]
    while queue:
        path, package = queue.pop()
        try:
            tree = parse(path)
        except KernelError:
            continue
        for name in kernel_source.imported_modules(tree, package):
            for module, module_package in _module_files(root, name):
                if str(module) not in found and module.resolve() != Path(file).resolve():
                    found[str(module)] = None
                    queue.append((module, module_package))
    return tuple(found)


def _module_files(root: Path, name: str) -> list[tuple[Path, str]]:
    """The files under ROOT that importing the dotted NAME runs (each package's __init__.py on the way, then the
    module), with the package each belongs to; none when its first part is not in ROOT."""
    parts = name.split(".")
    files_: list[tuple[Path, str]] = []
    folder = root
    for i, part in enumerate(parts):
        package = ".".join(parts[:i])
        if (folder / part / "__init__.py").is_file():
            files_.append((folder / part / "__init__.py", ".".join(parts[: i + 1])))
            folder = folder / part
        elif (folder / f"{part}.py").is_file():
            files_.append((folder / f"{part}.py", package))
            break
        else:
            break
    return files_


def file_digests(paths) -> dict[str, str]:
    """The sha256 of each kernel file: a param of its batches' rule, so that an edit retraces them whatever its
    mtime (cp -p, rsync -t and tar x keep an older one, which Snakemake's mtime check does not see)."""
    return {str(path): hashlib.sha256(Path(path).read_bytes()).hexdigest() for path in paths}


def label(kernel: str, params: dict, defaults: dict) -> str:
    """A readable configuration label: the kernel and the parameters it sets away from the defaults, e.g.
    ``flash_attention(is_causal=True)``; ``rmsnorm`` when every parameter is the default. Compared by type
    (64.0 is not the default 64, which the job would get); a string that would read as another value is quoted
    (``'256'``, not ``256``)."""
    changed = [
        f"{name}={_shown(params[name])}"
        for name in params
        if not same_value(defaults.get(name, REQUIRED), params[name])
    ]
    return f"{kernel}({', '.join(changed)})" if changed else kernel


def same_value(a, b) -> bool:
    """Equal and of the same JSON type: 64 and 64.0, 1 and True, 256 and "256" differ."""
    if a is REQUIRED or b is REQUIRED:
        return a is b
    try:
        return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    except (TypeError, ValueError):  # a set or another literal JSON has no spelling for
        return type(a) is type(b) and a == b


def _shown(value) -> str:
    """A parameter's value in a label: a string as written, quoted where it could read as another value."""
    if isinstance(value, str) and LANGUAGE_OBJECT.fullmatch(value):  # T.float16: TileLang's object, as written
        return value
    if isinstance(value, str) and (not value.isidentifier() or value in ("True", "False", "None")):
        quote = "'" if "'" not in value else '"'
        return f"{quote}{value}{quote}" if quote not in value else repr(value)
    return str(value)


# a folder id longer than this is cut, with a stable hash of what it stands for: the file names of a job stay far
# under NAME_MAX whatever its parameters hold (the tables keep the full params and label)
MAX_FOLDER_ID = 120


def folder_id(kernel: str, params: dict, defaults: dict) -> str:
    """The folder of a parameter set under results/runs/<version>/<target>/: the kernel's name, plus each
    parameter set away from the defaults (rmsnorm_N1152), reduced to the characters a folder name allows;
    past MAX_FOLDER_ID characters, its start and a hash of the kernel and those parameters."""
    changed = {name: params[name] for name in params if not same_value(defaults.get(name, REQUIRED), params[name])}
    folder = re.sub(r"[^A-Za-z0-9_.+-]", "", "_".join([kernel] + [f"{name}{value}" for name, value in changed.items()]))
    return files.short_name(folder, MAX_FOLDER_ID, f"{kernel}\n{canonical(changed)}")


def load_function(file: str | Path, function: str = DEFAULT_FUNCTION):
    """Import the kernel file (as a module of its own name) and return its kernel object: a builder function, a
    @tilelang.jit or @autotune object, or a PrimFunc."""
    return kernel_object(load_module(file), file, function)


def kernel_object(module, file: str | Path, function: str):
    """FUNCTION of an imported kernel module (load_module): a KernelError naming the file when it has none."""
    built = getattr(module, function, None)
    if built is None or not (callable(built) or isinstance(built, primfunc_types())):
        raise KernelError(f"{Path(file).resolve()}: no function {function!r}")
    return built


def primfunc_types() -> tuple[type, ...]:
    """TVM's PrimFunc class of the imported TileLang: tvm.tirx.PrimFunc in 0.1.15, tvm.tir.PrimFunc before."""
    import tilelang  # noqa: F401 - puts its TVM on the path

    found = []
    for name in ("tvm.tirx", "tvm.tir"):
        try:
            found.append(importlib.import_module(name).PrimFunc)
        except (ImportError, AttributeError):
            pass
    return tuple(found)


def jit_impl(built):
    """The @tilelang.jit object of a kernel object (an @autotune object's ``jit_impl``), None for a builder or a
    PrimFunc. Recognised by TileLang's own types where the release has them, else by a ``get_tir`` method."""
    if isinstance(built, primfunc_types()):
        return None
    inner = getattr(built, "jit_impl", None)
    if inner is not None:
        return inner
    jit = sys.modules.get("tilelang.jit")
    kinds = tuple(kind for kind in (getattr(jit, "JITImpl", None), getattr(jit, "_JitImplementation", None)) if kind)
    if (kinds and isinstance(built, kinds)) or hasattr(built, "get_tir"):
        return built
    return _wrapped_jit(built, kinds)


class WrappedJit:
    """The @tilelang.jit of TileLang 0.1.6 and 0.1.7: a plain function wrapping the builder (``__wrapped__``) that
    compiles when called, its settings on the decorator object in its closure. ``get_tir`` calls the builder: the
    PrimFunc that release's compile would be given, without compiling."""

    def __init__(self, decorator, builder):
        self.pass_configs = getattr(decorator, "pass_configs", None)
        self.out_idx = getattr(decorator, "out_idx", None)
        self.target = getattr(decorator, "target", None)
        if self.target == "auto":  # that release's default: the job's target applies
            self.target = None
        self.builder = builder

    def get_tir(self, *args, **kwargs):
        return self.builder(*args, **kwargs)


def _wrapped_jit(built, kinds: tuple) -> WrappedJit | None:
    builder, cells = getattr(built, "__wrapped__", None), getattr(built, "__closure__", None) or ()
    if not kinds or builder is None or not callable(builder):
        return None
    for cell in cells:
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if isinstance(value, kinds):
            return WrappedJit(value, builder)
    return None


@dataclass(frozen=True)
class GpuHooks:
    """The optional GPU hooks of a kernel file (None where the file has none; see the module docstring)."""

    out_idx: tuple[int, ...]
    inputs: object = None
    reference: object = None
    tolerance: object = None
    work: object = None


def load_module(file: str | Path):
    """Import the kernel file as a module of its own name, its folder first on sys.path as Python puts a script's
    (its sibling modules import). An import that fails is a KernelError of one line (import_problem)."""
    path = Path(file).resolve()
    name = f"tlchurn_kernel_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise KernelError(f"{path}: not a Python file")
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # a dataclass or a pickle in the kernel's file looks its module up by name
    try:
        spec.loader.exec_module(module)
    except SystemExit:
        sys.modules.pop(name, None)
        raise
    except Exception as exc:  # noqa: BLE001 - one line naming the file, the line and the cause
        sys.modules.pop(name, None)
        raise KernelError(import_problem(exc, path, f"importing {path.name}")) from None
    return module


# what an exception says when the code needs a GPU that this machine lacks (torch and TileLang's own words)
_NEEDS_GPU = re.compile(
    r"Torch not compiled with CUDA|no NVIDIA driver|No CUDA GPUs are available|CUDA driver|cudaGetDevice|"
    r"CUDA_VISIBLE_DEVICES|found no NVIDIA|nvidia-smi|CUDA error|cuInit|libcuda|No HIP GPUs|ROCm|"
    r"device_count\(\) *== *0|torch\.cuda|Failed to get device properties|CUDA is not available",
    re.IGNORECASE,
)


def import_problem(exc: BaseException, path: Path, doing: str) -> str:
    """One line for an exception raised while importing a kernel file or building its PrimFunc: where (the
    deepest line of the kernel's own folder), what it needs (a GPU, a package to install) and TileLang's words."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    own = [frame for frame in frames if Path(frame.filename).resolve().parent == path.parent]
    where = f"{Path(own[-1].filename).name}, line {own[-1].lineno}" if own else path.name
    said = passes_table.error_text(exc)
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        package = exc.name.split(".")[0]
        return (f"{path}: {doing} needs the package {package!r}, which is not installed here ({where}: {said}); "
                f"give its config entry requirements: [{package}], or install it where it is traced")  # fmt: skip
    if needs_gpu(f"{type(exc).__name__}: {exc}", [frame.filename for frame in frames]):
        return (f"{path}: {doing} needs a GPU, which this machine lacks ({where}: {said}); a kernel that only asks "
                f"the GPU's numbers builds with config device (H100, H200, B200 or a mapping)")  # fmt: skip
    return f"{path}: {doing} failed ({where}: {said})"


def needs_gpu(text: str, filenames) -> bool:
    """Whether an exception (its type and message, TEXT, and the files of its traceback's frames) says that the code
    needs a GPU this machine lacks: torch's and TileLang's own words, or a frame where they ask the GPU itself."""
    device_query = ("torch/cuda", "carver/arch", "cuda_driver")  # where torch and TileLang ask the GPU itself
    return bool(_NEEDS_GPU.search(text)) or any(place in name for name in filenames for place in device_query)


def gpu_hooks(module) -> GpuHooks:
    """The GPU hooks a kernel module defines."""
    out_idx = getattr(module, "OUT_IDX", [-1])
    hooks = {name: getattr(module, name, None) for name in ("inputs", "reference", "tolerance", "work")}
    return GpuHooks(tuple(out_idx), **{name: hook if callable(hook) else None for name, hook in hooks.items()})


# a config string that names a TileLang language object: T.float16, T.GemmWarpPolicy.Square
LANGUAGE_OBJECT = re.compile(r"T(\.[A-Za-z_][A-Za-z0-9_]*)+")


def call_values(params: dict, jit: bool) -> dict:
    """The values a kernel is called with, from the config's JSON ones: a string ``"T.<name>[.<name>...]"`` is
    that attribute of ``tilelang.language`` (a dtype, a GemmWarpPolicy member); for a jit kernel a list is the
    tuple TileLang's JIT binding needs (its cache key refuses a list)."""

    def convert(value):
        if isinstance(value, str) and LANGUAGE_OBJECT.fullmatch(value):
            import tilelang.language as language

            found = language
            for part in value.split(".")[1:]:
                if not hasattr(found, part):
                    raise KernelError(
                        f"the parameter value {value!r} names no object of tilelang.language in this TileLang "
                        f"(it has no {part!r})"
                    )
                found = getattr(found, part)
            return found
        if isinstance(value, list):
            items = [convert(item) for item in value]
            return tuple(items) if jit else items
        if isinstance(value, dict):
            return {key: convert(item) for key, item in value.items()}
        return value

    return {name: convert(value) for name, value in params.items()}


def own_pass_configs(built, func) -> dict:
    """The pass configs a kernel brings itself, as TileLang's compile merges them: the PrimFunc's
    ``tilelang_pass_configs`` (T.annotate_pass_configs; func None: none built), then the @tilelang.jit decorator's;
    string keys."""
    merged = {}
    attrs = getattr(func, "attrs", None)
    if attrs is not None and "tilelang_pass_configs" in attrs:
        merged.update({str(key): value for key, value in dict(attrs["tilelang_pass_configs"]).items()})
    impl = jit_impl(built)
    for key, value in (getattr(impl, "pass_configs", None) or {}).items():
        merged[getattr(key, "value", str(key))] = value
    return {key: capture_hook.plain_value(value) for key, value in merged.items()}


def build(file: str | Path, function: str, params: dict, with_object: bool = False, target=None):
    """The kernel's PrimFunc as TileLang itself gets it (primfunc_of), its file imported here. with_object:
    (PrimFunc, the kernel object)."""
    built = load_function(file, function)
    func = primfunc_of(built, file, function, params, target)
    return (func, built) if with_object else func


def primfunc_of(built, file: str | Path, function: str, params: dict, target=None):
    """The PrimFunc of a kernel object (kernel_object) as TileLang itself gets it: a builder's
    ``FUNCTION(**params)``, a @tilelang.jit object's ``get_tir(**params)`` (an @autotune object's
    ``jit_impl.get_tir``), a module-level PrimFunc itself. A KernelError unless that is a PrimFunc (TVM's own type).
    target (a TVM Target): the job's, current while a jit kernel without a target of its own is built, as
    ``compile(target=...)`` would make it (a kernel may ask the target while it is built)."""
    path = Path(file)
    impl = jit_impl(built)
    real = primfunc_types()
    doing = f"building {function}()"
    try:
        if isinstance(built, real):
            if params:
                raise KernelError(f"{function} in {file} is a T.prim_func: it takes no parameters, the config gives "
                                  f"{', '.join(params)}")  # fmt: skip
            func = built
        elif impl is not None:
            if not hasattr(impl, "get_tir"):
                raise KernelError(
                    f"{function}() in {file} is a @tilelang.jit kernel, and this TileLang's {type(impl).__name__} "
                    "has no get_tir: it cannot give the PrimFunc without compiling"
                )
            doing = f"{function}.get_tir(**params)"
            scope = target if target is not None and getattr(impl, "target", None) is None else contextlib.nullcontext()
            with scope:
                func = impl.get_tir(**call_values(params, jit=True))
        else:
            func = built(**call_values(params, jit=False))
    except KernelError:
        raise
    except SystemExit as exc:  # sys.exit(), exit() in the kernel's code: the job records it instead of ending
        said = "" if exc.code is None or isinstance(exc.code, int) else f": {exc.code}"
        status = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        raise KernelError(
            f"the code of {function}() in {file} ended the process (SystemExit, status {status}{said}) instead of "
            "returning a T.prim_func"
        ) from None
    except Exception as exc:  # noqa: BLE001 - TileLang's own words, on one line, with the kernel's line
        problem = import_problem(exc, path.resolve(), doing)
        if "needs a GPU" in problem or "needs the package" in problem:
            raise KernelError(problem) from None
        raise
    if not isinstance(func, real):
        kind = type(func)
        where = "" if kind.__module__ == "builtins" else f" ({kind.__module__}.{kind.__qualname__})"
        wanted = f"{real[0].__module__}.{real[0].__qualname__}" if real else "PrimFunc"
        raise KernelError(f"{function}() in {file} returned {kind.__name__}{where}, not a T.prim_func ({wanted})")
    return func


def print_signature(file: str | Path, function: str = DEFAULT_FUNCTION) -> int:
    """The parameters of FUNCTION in FILE (``read_signature``), one line each, ``name=default`` or ``name`` when it
    has none; 2 with one line on stderr when the file or the function cannot be read."""
    try:
        signature = read_signature(file, function)
    except KernelError as error:
        print(f"kernel_params.py: error: {error}", file=sys.stderr)
        return 2
    for name, default in signature.params.items():
        print(f"{name}" if default is REQUIRED else f"{name}={default!r}")
    return 0
