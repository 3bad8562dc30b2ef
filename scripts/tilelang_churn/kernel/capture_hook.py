"""The capture's hook, inside the user's program: every kernel TileLang is asked to build, recorded as it is asked.

``scripts/capture_kernels.py`` (grid/kernel_capture.py) starts the program with a ``sitecustomize.py`` of its own
first on ``PYTHONPATH`` (``SITE_TEXT``): it loads this file by its path (``TLCHURN_CAPTURE_HOOK``), so the
program's interpreter needs nothing of this project, then runs the program's own ``sitecustomize`` if it has one.
``install`` adds a finder to ``sys.meta_path`` that waits for ``import tilelang``: nothing is imported early, and a
process that never imports TileLang only pays a string comparison per import. Once TileLang is imported, it is
patched in place (``_patch``):

- ``tilelang.compile`` (also ``JITImpl.compile``'s, ``par_compile``'s): each PrimFunc asked for is one ``kernel``
  record, named by what made it. ``JITImpl.get_tir`` tags the PrimFuncs of a ``@tilelang.jit`` (lazy or eager,
  ``.compile(...)`` or a call) with the function and its arguments; ``T.prim_func`` tags the others with the
  function whose body defined them (a factory, or ``<module>`` for a module-level one) and its arguments then.
- ``AutoTuneImpl.__call__``, ``AutoTuner.run`` and ``set_compile_args``: without a GPU nothing can be timed: the
  kernel is built with the first config of its search space, as TileLang builds it when a caller gives a tuned
  argument itself (then with the caller's arguments alone).
- ``JITKernel.__call__``: a kernel's first call gives the shapes and dtypes of its inputs (a ``call`` record).

With ``--cuda-on-cpu`` (``TLCHURN_CAPTURE_CUDA_ON_CPU=1``) the finder also waits for ``import torch``: without a GPU,
a tensor the program puts on cuda is made on the CPU (``_cuda_on_cpu``, a torch function mode). With ``--device``
(``TLCHURN_CAPTURE_DEVICE``: a profile's JSON), once TileLang is imported and without a GPU, device_profiles.py
(loaded by its path, beside this file) answers the program's device questions for the rest of its life; a tensor
put on cuda lives on torch's meta device, or on the CPU with ``--cuda-on-cpu``.

Where TileLang cannot compile (no GPU, ``torch.cuda.is_available()`` false, and a target that is not the host's:
``c``, ``llvm``), ``compile`` returns a ``StandIn``: called, it returns zero tensors of the outputs' shapes and
dtypes (``out_idx``, an eager kernel's ``T.empty``; a symbolic extent bound from the inputs), so the program goes
on to its next kernel; its profiler checks nothing and times NaN. With a GPU everything runs for real.

Records are JSON lines appended, under ``flock``, to the file ``TLCHURN_CAPTURE_RECORDS`` names, by every process
of the program (subprocesses inherit the environment). A process whose program ends on an exception adds an
``ended`` record (the exception and the program's frames). Nothing here may break the program: a failure of the
hook itself is said once on stderr and TileLang goes on unhooked. Standard library only until TileLang is imported.
"""

from __future__ import annotations

import json
import os
import sys
import threading

RECORDS_ENV = "TLCHURN_CAPTURE_RECORDS"  # the record file
HOOK_ENV = "TLCHURN_CAPTURE_HOOK"  # this file, loaded by the sitecustomize below
CUDA_ON_CPU_ENV = "TLCHURN_CAPTURE_CUDA_ON_CPU"  # "1": torch's cuda device stands in for the CPU (no GPU here)
DEVICE_ENV = "TLCHURN_CAPTURE_DEVICE"  # a device profile's JSON: it answers the program's device questions
TAG = "_tlchurn_capture"  # the attribute a PrimFunc's origin is kept in
HOST_TARGETS = ("c", "llvm")  # targets TileLang compiles for on a machine without a GPU
MAX_FRAMES = 40

# the sitecustomize.py the capture puts first on PYTHONPATH: this hook, then the program's own sitecustomize
SITE_TEXT = '''"""tilelang-churn's capture: its hook (scripts/capture_kernels.py), then the own sitecustomize."""
import os as _os
import sys as _sys


def _tlchurn_capture():
    import importlib.machinery
    import importlib.util

    here = _os.path.dirname(_os.path.abspath(__file__))
    try:
        spec = importlib.util.spec_from_file_location("_tlchurn_capture_hook", _os.environ["{hook}"])
        hook = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(hook)
        hook.install()
    except Exception as exc:  # the program runs on, uncaptured
        print(f"tilelang-churn capture: the hook did not load ({type(exc).__name__}: {exc}); "
              "the program runs without capture", file=_sys.stderr)
    path = [p for p in _sys.path if _os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is not None and spec.loader is not None:  # the program's own, in our place as Python would import it
        module = importlib.util.module_from_spec(spec)
        _sys.modules["sitecustomize"] = module
        spec.loader.exec_module(module)


_tlchurn_capture()
'''.replace("{hook}", HOOK_ENV)

_warned: list[str] = []
_state = threading.local()
_installed: dict = {}


def warn_once(what: str, exc: BaseException | None = None) -> None:
    """Say once on stderr that the hook failed (and write it to the records, where it can), never raise."""
    if _warned:
        return
    said = f"{what}" + (f" ({type(exc).__name__}: {exc})" if exc is not None else "")
    _warned.append(said)
    try:
        print(f"tilelang-churn capture: {said}; the program runs on, this process's kernels may be missing",
              file=sys.stderr)  # fmt: skip
        append({"kind": "hook", "pid": os.getpid(), "error": said})
    except Exception:  # noqa: BLE001,S110 - the program comes first
        pass


def append(record: dict) -> None:
    """One JSON line appended to the record file, under an exclusive flock (processes write side by side)."""
    import fcntl

    path = os.environ.get(RECORDS_ENV)
    if not path:
        return
    line = (json.dumps(record, default=str) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, line)
    finally:
        os.close(fd)  # closing releases the lock


def install() -> None:
    """Wait for TileLang's import (a finder first on sys.meta_path) and record how the program ends."""
    if _installed or not os.environ.get(RECORDS_ENV):
        return
    _installed["finder"] = finder = _Finder()
    sys.meta_path.insert(0, finder)
    previous = sys.excepthook

    def excepthook(kind, value, traceback):
        try:
            append(_ended(value, traceback))
        except Exception:  # noqa: BLE001,S110 - the program's own report comes first
            pass
        previous(kind, value, traceback)

    sys.excepthook = excepthook


class _Finder:
    """Finds nothing itself: when a module it waits for (``tilelang``; ``torch`` with CUDA_ON_CPU_ENV) is found by
    the others, that module's loader calls its patch once the module has run."""

    busy = False

    def __init__(self):
        self.waiting = {"tilelang": _patch}
        if os.environ.get(CUDA_ON_CPU_ENV) == "1":
            self.waiting["torch"] = _cuda_on_cpu

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.waiting or self.busy:
            return None
        import importlib.util

        self.busy = True
        try:
            spec = importlib.util.find_spec(fullname)
        except Exception:  # noqa: BLE001 - let the import itself say it
            return None
        finally:
            self.busy = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        real, patch = spec.loader.exec_module, self.waiting.pop(fullname)
        if not self.waiting and self in sys.meta_path:
            sys.meta_path.remove(self)

        def exec_module(module):
            real(module)
            try:
                patch(module)
            except Exception as exc:  # noqa: BLE001 - the program runs on, uncaptured
                warn_once(f"could not hook {fullname}", exc)

        spec.loader.exec_module = exec_module
        return spec


# ------------------------------------------------------------------------------------------------- the patches


def _patch(tilelang) -> None:
    jit = sys.modules["tilelang.jit"]
    tuner = sys.modules.get("tilelang.autotuner.tuner")
    builder = sys.modules["tilelang.language.eager.builder"]
    kernel = sys.modules["tilelang.jit.kernel"]
    _installed["tilelang"] = tilelang
    _installed["gpu"] = _gpu()
    device = json.loads(os.environ[DEVICE_ENV]) if os.environ.get(DEVICE_ENV) else None
    if device and not _installed["gpu"]:
        _device_profile(device, meta_tensors="torch" not in _installed)
    append({"kind": "process", "pid": os.getpid(), "ppid": os.getppid(), "argv": list(sys.argv),
            "executable": sys.executable, "gpu": _installed["gpu"], "cuda_on_cpu": "torch" in _installed,
            "device": device["name"] if device else None,
            "tilelang": getattr(tilelang, "__version__", None)})  # fmt: skip

    original_compile = jit.compile
    replaced = {"compile": _compile_hook(original_compile)}
    for name, module in list(sys.modules.items()):
        if name.startswith("tilelang") and getattr(module, "compile", None) is original_compile:
            module.compile = replaced["compile"]

    original_prim_func = builder.prim_func
    tagging = _prim_func_hook(original_prim_func)
    for name, module in list(sys.modules.items()):
        if name.startswith("tilelang") and getattr(module, "prim_func", None) is original_prim_func:
            module.prim_func = tagging

    impl = jit.JITImpl
    impl.get_tir = _get_tir_hook(impl.get_tir)
    kernel.JITKernel.__call__ = _kernel_call_hook(kernel.JITKernel.__call__)
    if tuner is not None and hasattr(tuner, "AutoTuneImpl"):
        tuner.AutoTuneImpl.__call__ = _autotune_hook(tuner.AutoTuneImpl.__call__)
        tuner.AutoTuner.run = _tuner_run_hook(tuner.AutoTuner.run, tuner)
        tuner.AutoTuner.set_compile_args = _set_compile_args_hook(tuner.AutoTuner.set_compile_args, tuner)


def _cuda_on_cpu(torch) -> None:
    """Without a GPU, torch's cuda device stands in for the CPU: a tensor put on cuda (a factory's device=, .cuda(),
    .to("cuda"), a module's .cuda()) is made on the CPU, a cuda Generator is a CPU one and synchronize waits for
    nothing; a query of the device itself (its capability, properties, timing events) still fails."""
    if torch.cuda.is_available():
        return
    from torch.overrides import TorchFunctionMode

    def cpu(device):
        if isinstance(device, str) and device.startswith("cuda"):
            return "cpu"
        if isinstance(device, torch.device) and device.type == "cuda":
            return torch.device("cpu")
        return device

    class CudaOnCpu(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            name = getattr(func, "__name__", "")
            if name == "cuda" and args and isinstance(args[0], torch.Tensor):
                return args[0]
            if "device" in kwargs:
                kwargs = {**kwargs, "device": cpu(kwargs["device"])}
            if name == "to":
                args = tuple(cpu(arg) for arg in args)
            if kwargs.get("pin_memory"):
                kwargs = {**kwargs, "pin_memory": False}
            return func(*args, **kwargs)

    generator = torch.Generator

    class Generator(generator):
        def __new__(cls, device="cpu"):
            return generator(device=cpu(device))

    CudaOnCpu().__enter__()
    torch.Generator = Generator
    torch.cuda.synchronize = lambda *args, **kwargs: None
    torch.cuda.empty_cache = lambda *args, **kwargs: None
    _installed["torch"] = torch


def _device_profile(numbers: dict, meta_tensors: bool) -> None:
    """The program's device questions answered by the profile NUMBERS from now on (device_profiles.active, entered
    for the life of the process)."""
    import importlib.util
    import types

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "device_profiles.py")
    spec = importlib.util.spec_from_file_location("_tlchurn_device_profiles", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    _installed["device"] = context = module.active(types.SimpleNamespace(**numbers), meta_tensors=meta_tensors)
    context.__enter__()


def _gpu() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001 - no torch, no GPU
        return False


def _prim_func_hook(original):
    def prim_func(func=None, *args, **kwargs):
        if func is None:  # @T.prim_func(...) with arguments: the decorator it returns
            inner = original(None, *args, **kwargs)
            return lambda f: _tagged_frame(inner(f), sys._getframe(1))
        return _tagged_frame(original(func, *args, **kwargs), sys._getframe(1))

    prim_func.__wrapped__ = original
    return prim_func


def _tagged_frame(built, frame):
    """A PrimFunc tagged with the function whose body defined it and its arguments then, spelled at once (no
    reference to them is kept)."""
    try:
        if built.__class__.__name__ == "PrimFunc" and getattr(built, TAG, None) is None:
            setattr(built, TAG, _frame_origin(built, frame))
    except Exception as exc:  # noqa: BLE001
        warn_once("could not tag a T.prim_func", exc)
    return built


def _get_tir_hook(original):
    def get_tir(self, *args, **kwargs):
        tir = original(self, *args, **kwargs)
        try:
            setattr(tir, TAG, _jit_origin(self, args, kwargs))
        except Exception as exc:  # noqa: BLE001
            warn_once("could not tag a @tilelang.jit PrimFunc", exc)
        return tir

    get_tir.__wrapped__ = original
    return get_tir


def _compile_hook(original):
    import inspect

    signature = inspect.signature(original)

    def compile(*args, **kwargs):
        try:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            settings = dict(bound.arguments)
            func = settings.get("func")
        except TypeError:  # TileLang says what is wrong with the call
            return original(*args, **kwargs)
        if func.__class__.__name__ != "PrimFunc":
            return original(*args, **kwargs)
        try:
            record, stand_in = _kernel_record(func, settings), not _compiles_here(settings.get("target"))
        except Exception as exc:  # noqa: BLE001
            warn_once("could not record a kernel", exc)
            return original(*args, **kwargs)
        if stand_in:
            return StandIn(func, record["out_idx"], record["key"], record["function"] or "kernel")
        built = original(*args, **kwargs)
        _pending[id(built)] = (record["key"], record["out_idx"], built)  # held until its first call: no id reused
        return built

    compile.__wrapped__ = original
    return compile


def _compiles_here(target) -> bool:
    """Whether TileLang can compile for TARGET on this machine: a GPU is there, or the target is the host's."""
    if _installed.get("gpu"):
        return True
    if target in (None, "auto"):
        target = os.environ.get("TILELANG_DEFAULT_TARGET", "auto")
    kind = getattr(getattr(target, "kind", None), "name", None)
    if kind is None and isinstance(target, dict):
        kind = target.get("kind")
    if kind is None and isinstance(target, str):
        kind = target.split()[0] if target.strip() else target
    return kind in HOST_TARGETS


_pending: dict[int, tuple] = {}  # id(JITKernel) -> (kernel key, out_idx, it): its first call is recorded
_recorded: set[str] = set()  # kernel keys this process recorded


def _kernel_call_hook(original):
    def call(self, *args, **kwargs):
        found = _pending.pop(id(self), None) if _pending else None
        if found is not None:
            _record_call(found[0], getattr(self, "prim_func", None), found[1], args)
        return original(self, *args, **kwargs)

    call.__wrapped__ = original
    return call


def _autotune_hook(original):
    def call(self, *args, **kwargs):
        if _compiles_here(getattr(self.jit_impl, "target", None)):
            return original(self, *args, **kwargs)
        return_kernel = kwargs.pop("__return_kernel", False)
        try:
            chosen = _first_config(self, args, kwargs)
        except Exception as exc:  # noqa: BLE001
            warn_once("could not read an @autotune search space", exc)
            return original(self, *args, **kwargs, **({"__return_kernel": True} if return_kernel else {}))
        merged = {**kwargs, **chosen}
        _state.autotune = bool(chosen)
        try:
            mode = self.jit_impl.initialize_jit_mode(*args, **merged)
            if return_kernel and mode == "eager":
                return _tuned(self.jit_impl.compile(*args, **merged), chosen)
            return _tuned(self.jit_impl(*args, **merged), chosen)
        finally:
            _state.autotune = False

    call.__wrapped__ = original
    return call


def _tuned(result, config: dict):
    """A stand-in as the autotuner's best kernel: its config, and NaN for what would have been timed."""
    if isinstance(result, StandIn):
        result.config, result.latency, result.ref_latency = dict(config), float("nan"), float("nan")
    return result


def _tuner_run_hook(original, tuner):
    """AutoTuner.run (TileLang's autotuner API, AutoTuner.from_kernel(...).run()) where nothing can be timed: the
    first config compiled, an AutotuneResult of NaN latencies."""

    def run(self, *args, **kwargs):
        if _compiles_here(getattr(self.compile_args, "target", None)):
            return original(self, *args, **kwargs)
        try:
            configs = self.configs
            if callable(configs):
                positional, keywords = self._kernel_parameters or ((), ())
                configs = configs(*positional, **dict(keywords))
            first = dict(next(iter(configs)))
            import inspect

            names = inspect.signature(self.fn).parameters
            config_arg = {name: first[name] for name in names if name in first}
            config_arg[tuner._PASS_CONFIGS_KEY] = first.get("pass_configs")
            compile_func, _ = self._ensure_jit_functions()
        except Exception as exc:  # noqa: BLE001
            warn_once("could not read an autotuner's search space", exc)
            return original(self, *args, **kwargs)
        _state.autotune = True
        try:
            kernel = compile_func(**config_arg)
        finally:
            _state.autotune = False
        _tuned(kernel, first)
        nan = float("nan")
        return tuner.AutotuneResult(latency=nan, config=first, ref_latency=nan, libcode=kernel.get_kernel_source(),
                                    func=kernel.prim_func, kernel=kernel)  # fmt: skip

    run.__wrapped__ = original
    return run


def _set_compile_args_hook(original, tuner):
    """AutoTuner.set_compile_args where TileLang cannot compile: the target kept as given ("auto" cannot be
    resolved without a GPU), for the stand-in's compile."""

    def set_compile_args(self, out_idx=None, target=None, execution_backend=None, target_host=None, verbose=None,
                         pass_configs=None):  # fmt: skip
        if _compiles_here(target):
            return original(self, out_idx, target, execution_backend, target_host, verbose, pass_configs)
        self.compile_args = tuner.CompileArgs(out_idx=out_idx, target=target or "auto", execution_backend="auto",
                                              target_host=target_host, verbose=bool(verbose),
                                              pass_configs=pass_configs)  # fmt: skip
        return self

    set_compile_args.__wrapped__ = original
    return set_compile_args


def _first_config(autotuned, args: tuple, kwargs: dict) -> dict:
    """The first config of an @autotune search space without TileLang's reserved keys (a config's own
    pass_configs); none when the caller gives one of its arguments, as TileLang then tunes nothing."""
    configs = autotuned.configs
    if callable(configs):
        configs = configs(*args, **kwargs)
    first = dict(next(iter(configs)))
    names = list(autotuned.jit_impl.signature.parameters)
    tuned = [name for name in first if name != "pass_configs"]
    if any(name in kwargs or name in names[: len(args)] for name in tuned):
        return {}  # as TileLang: a caller who gives a tuned argument gets no tuning, its own arguments alone
    return {name: first[name] for name in tuned}


# ------------------------------------------------------------------------------------------------- the records


def _kernel_record(func, settings: dict) -> dict:
    """The kernel record of FUNC compiled with SETTINGS (tilelang.compile's arguments), written once per kernel."""
    origin = getattr(func, TAG, None) or {}
    attrs = getattr(func, "attrs", None) or {}
    out_idx = settings.get("out_idx")
    if "tilelang_out_idx" in attrs:
        out_idx = [int(i) for i in attrs["tilelang_out_idx"]]
    own = {}
    if "tilelang_pass_configs" in attrs:
        own = {_key(k): plain_value(v) for k, v in dict(attrs["tilelang_pass_configs"]).items()}
    given = {_key(k): plain_value(v) for k, v in (settings.get("pass_configs") or {}).items()}
    record = {"kind": "kernel", "pid": os.getpid(), "out_idx": _out_idx(out_idx), "target": _target(settings),
              "pass_configs": {**own, **given}, "where": _program_line(), "problems": [],
              "autotune": bool(getattr(_state, "autotune", False))}  # fmt: skip
    if origin:
        record.update({key: value for key, value in origin.items() if key != "decorator_pass_configs"})
        record["problems"] = list(origin["problems"])
        record["own_pass_configs"] = {**own, **origin["decorator_pass_configs"]}
    else:
        record.update({"file": None, "function": None, "qualname": None, "style": "unknown", "params": {},
                       "inputs": None, "own_pass_configs": own})  # fmt: skip
        record["problems"].append("a PrimFunc the capture cannot trace back to the function that built it")
    record["key"] = _key_of(record)
    if record["key"] not in _recorded:
        _recorded.add(record["key"])
        append(record)
    return record


def _key_of(record: dict) -> str:
    import hashlib

    identity = [record[k] for k in ("file", "function", "params", "pass_configs", "out_idx", "target", "problems")]
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _jit_origin(impl, args: tuple, kwargs: dict) -> dict:
    """A @tilelang.jit kernel's function and arguments by name (positional ones bound by its signature); the
    tensors it was given are its inputs, an eager kernel's T.const values read from them as TileLang reads them."""
    orig = getattr(impl.func, "orig_func", impl.func)
    code = getattr(orig, "__code__", None)
    names = [p.name for p in impl.signature.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    problems: list[str] = []
    if len(args) > len(names):
        problems.append(f"{len(args)} positional arguments for {len(names)} named parameters (*args)")
    given = {**dict(zip(names, args)), **kwargs}
    tensor_names = set(getattr(impl.func, "tensor_args", None) or {})
    tensors = {name: value for name, value in given.items() if name in tensor_names}
    values = {name: value for name, value in given.items() if name not in tensor_names}
    if tensors:
        try:
            values.update(_const_values(impl, args, kwargs))
        except Exception as exc:  # noqa: BLE001
            problems.append(f"its T.const values could not be read from its tensors ({type(exc).__name__}: {exc})")
    params, more = _spelled_params(values)
    qualname = getattr(orig, "__qualname__", None)
    file = getattr(code, "co_filename", None)
    decorator = {_key(k): plain_value(v) for k, v in (impl.pass_configs or {}).items()}
    return {"file": file, "function": getattr(orig, "__name__", None), "qualname": qualname, "style": "jit",
            "params": params, "problems": problems + more + _naming_problems(qualname, file),
            "inputs": _shapes(tensors) if tensors else None, "decorator_pass_configs": decorator}  # fmt: skip


def _const_values(impl, args: tuple, kwargs: dict) -> dict:
    """An eager kernel's T.const names and the values TileLang binds them to from its tensors' shapes."""
    jit_func = impl.func
    bound = jit_func._argument_binder.bind(args, kwargs)
    template = jit_func.p1_cache.get(bound.p1_key)
    if template is None or not template.matcher:
        return {}
    values = template._parse_phase2_key(**bound.tensor_args, **bound.compile_kwargs)
    return {entry[3]: value for entry, value in zip(template.matcher.values(), values)}


def _frame_origin(built, frame) -> dict:
    """A PrimFunc defined in a function's body (a factory: config style builder), its arguments read from the
    frame then, or at a module's top level (config style prim_func)."""
    code = frame.f_code
    module_level = code.co_name == "<module>"
    count = code.co_argcount + code.co_kwonlyargcount
    star = code.co_varnames[count : count + bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)]  # *a, **k
    values = {} if module_level else {name: frame.f_locals.get(name) for name in code.co_varnames[:count]}
    params, problems = _spelled_params(values)
    if star and not module_level:
        problems.append(f"its factory takes *{'/**'.join(star)}, which a config cannot name")
    function = getattr(getattr(built, "orig_func", None), "__name__", None) if module_level else code.co_name
    qualname = function if module_level else getattr(code, "co_qualname", code.co_name)
    if function is None:
        problems.append("a module-level T.prim_func without a name")
    return {"file": code.co_filename, "function": function, "qualname": qualname,
            "style": "prim_func" if module_level else "builder", "params": params,
            "problems": problems + _naming_problems(qualname, code.co_filename), "inputs": None,
            "decorator_pass_configs": {}}  # fmt: skip


def _naming_problems(qualname, file) -> list[str]:
    if not file or not os.path.isfile(file):
        return [f"defined in {file or 'no file'}, not in a file a config can name"]
    if qualname and ("<locals>" in qualname or "." in qualname):
        outer = qualname.split(".<locals>")[0].split(".")[0]
        inside = f"inside {outer}()" if "<locals>" in qualname else f"in class {outer}"
        return [f"defined {inside}: a config names a function at the top level of its file"]
    return []


def _spelled_params(values: dict) -> tuple[dict, list[str]]:
    params, problems = {}, []
    for name, value in values.items():
        try:
            params[name] = spelled(value)
        except ValueError as why:
            problems.append(f"its argument {name} is {why}, not data a config can hold")
    return params, problems


def spelled(value):
    """A kernel argument as a config spells it: JSON's scalars as they are, a TileLang dtype or enum member of
    ``tilelang.language`` as "T.<name>" (kernel_source.literal's spelling), a tuple or list as a list; a
    ValueError saying what it is for anything else (a tensor, a callable, a torch dtype)."""
    if value is None or type(value) in (bool, str, int):
        return value
    if type(value) is float:
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"the float {value}")
        return float(value)
    if isinstance(value, (list, tuple)):
        return [spelled(item) for item in value]
    if isinstance(value, dict) and all(isinstance(key, str) for key in value):
        return {key: spelled(item) for key, item in value.items()}
    language = sys.modules.get("tilelang.language")
    kind = type(value)
    if language is not None and kind.__module__.startswith(("tvm", "tilelang")):
        import enum

        if isinstance(value, enum.Enum):
            for name in dir(language):
                if getattr(language, name, None) is kind:
                    return f"T.{name}.{value.name}"
        name = str(value)
        if name.isidentifier() and getattr(language, name, None) == value:
            return f"T.{name}"
        try:
            return int(value)  # an IntImm
        except (TypeError, ValueError):
            pass
    if hasattr(value, "__index__") and not hasattr(value, "shape"):
        return int(value.__index__())  # a numpy integer
    if kind.__module__ == "numpy" and hasattr(value, "item") and not getattr(value, "shape", ()):
        return spelled(value.item())
    what = "a tensor" if hasattr(value, "shape") and hasattr(value, "dtype") else (
        "a callable" if callable(value) else f"a {kind.__module__}.{kind.__qualname__}")  # fmt: skip
    raise ValueError(what)


def _key(key) -> str:
    return str(getattr(key, "value", key))


def plain_value(value):
    """A TVM or enum config value as JSON's scalar (kernel/kernels.py reads a kernel's pass configs with it too)."""
    for kind in (bool, int, float, str):
        if isinstance(value, kind):
            return kind(value)
    try:
        return json.loads(str(value))
    except ValueError:
        return str(value)


def _out_idx(out_idx):
    if out_idx is None:
        return None
    if isinstance(out_idx, int):
        return [int(out_idx)]
    return [int(i) for i in out_idx]


def _target(settings: dict):
    target = settings.get("target")
    if target is None or target == "auto":
        return None
    return target if isinstance(target, (str, dict)) else str(target)


def _shapes(tensors: dict) -> dict:
    """{name: {"shape": [...], "dtype": "float16"}} of the tensors given (a scalar: {"value": ...})."""
    shapes = {}
    for name, value in tensors.items():
        shape = getattr(value, "shape", None)
        if shape is not None and hasattr(value, "dtype"):
            shapes[name] = {"shape": [int(n) for n in shape], "dtype": str(value.dtype).removeprefix("torch.")}
        else:
            try:
                shapes[name] = {"value": spelled(value)}
            except ValueError:
                shapes[name] = {"value": None}
    return shapes


def _record_call(key: str, func, out_idx, args: tuple) -> None:
    """A kernel's first call: the shapes and dtypes of what it was given, by the PrimFunc's parameter names."""
    try:
        names = _input_names(func, out_idx)
        inputs = _shapes(dict(zip(names, args)))
        append({"kind": "call", "pid": os.getpid(), "key": key, "inputs": inputs})
    except Exception as exc:  # noqa: BLE001
        warn_once("could not record a kernel's first call", exc)


def _input_names(func, out_idx) -> list[str]:
    params = list(func.params)
    outputs = {i % len(params) for i in (out_idx or [])}
    names = []
    for i, param in enumerate(params):
        if i in outputs:
            continue
        buffer = func.buffer_map.get(param)
        names.append(str(buffer.name) if buffer is not None else str(param.name))
    return names


def _library_dirs() -> list[str]:
    import sysconfig

    found = {os.path.dirname(os.path.abspath(__file__))}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            found.add(os.path.realpath(path))
    tilelang = _installed.get("tilelang")
    if tilelang is not None and getattr(tilelang, "__file__", None):
        found.add(os.path.dirname(os.path.realpath(tilelang.__file__)))
    return sorted(found)


def _is_program_file(filename: str, libraries: list[str]) -> bool:
    if not filename or filename.startswith("<"):
        return False
    path = os.path.realpath(filename)
    return not any(path == lib or path.startswith(lib + os.sep) for lib in libraries)


def _program_line() -> str | None:
    """file:line of the program's innermost frame in the stack (the call that asked for the kernel)."""
    libraries = _library_dirs()
    frame = sys._getframe(1)
    while frame is not None:
        if _is_program_file(frame.f_code.co_filename, libraries):
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return None


def _ended(value: BaseException, traceback) -> dict:
    """How the process's program ended: the exception, its frames (innermost last) and which are the program's."""
    import traceback as tb

    libraries = _library_dirs()
    frames = [(frame.filename, frame.lineno) for frame in tb.extract_tb(traceback)][-MAX_FRAMES:]
    said = str(value).strip().splitlines()
    return {"kind": "ended", "pid": os.getpid(), "error": ": ".join([type(value).__name__, *said[:1]])[:400],
            "text": str(value)[:2000], "frames": [[file, line, _is_program_file(file, libraries)]
                                                  for file, line in frames]}  # fmt: skip


# ------------------------------------------------------------------------------------------------- the stand-in


class StandIn:
    """What ``tilelang.compile`` returns where it cannot compile: called, zero tensors of the outputs' shapes and
    dtypes (one: the tensor, several: a list, as TileLang's kernels return them); its profiler checks nothing
    and times NaN. The PrimFunc is ``prim_func``, as a JITKernel's."""

    def __init__(self, func, out_idx, key: str, name: str):
        self.prim_func = func
        self.out_idx = list(out_idx or [])
        self.name = name
        self._key = key
        self._called = False
        self.config, self.latency, self.ref_latency = None, None, None  # an autotuned kernel's

    def __call__(self, *args, **kwargs):
        if not self._called:
            self._called = True
            _record_call(self._key, self.prim_func, self.out_idx, args)
        return _outputs(self.prim_func, self.out_idx, args)

    def get_kernel_source(self, *args, **kwargs) -> str:
        return f"// {self.name}: not compiled (tilelang-churn capture, no GPU on this machine)\n"

    get_host_source = get_kernel_source

    def get_profiler(self, *args, **kwargs):
        return _StandInProfiler(self)

    def __repr__(self) -> str:
        return f"<tilelang-churn capture stand-in for {self.name}>"


class _StandInProfiler:
    def __init__(self, kernel: StandIn):
        self.kernel = self.func = kernel

    def assert_allclose(self, *args, **kwargs) -> None:
        """Nothing ran: nothing to check."""

    manual_assert_close = assert_allclose

    def do_bench(self, *args, **kwargs) -> float:
        return float("nan")

    run_once = do_bench


def _outputs(func, out_idx: list, args: tuple):
    import torch

    params = list(func.params)
    n = len(params)
    outputs = [i % n for i in out_idx]
    inputs = [i for i in range(n) if i not in outputs]
    sizes, device = _bound_sizes(func, [params[i] for i in inputs], args)
    made = []
    for i in outputs:
        buffer = func.buffer_map[params[i]]
        shape = [_size(extent, sizes) for extent in buffer.shape]
        made.append(torch.zeros(shape, dtype=_torch_dtype(str(buffer.dtype)), device=device))
    return made[0] if len(made) == 1 else made


def _bound_sizes(func, params: list, args: tuple) -> tuple[dict, object]:
    """The symbolic extents of the input buffers bound from the tensors given (and a scalar parameter's value),
    and the device of the first tensor."""
    sizes, device = {}, "cpu"
    first = True
    for param, value in zip(params, args):
        buffer = func.buffer_map.get(param)
        if buffer is None:
            if isinstance(value, int):
                sizes[param] = value
            continue
        shape = getattr(value, "shape", None)
        if shape is None:
            continue
        if first and hasattr(value, "device"):
            device, first = value.device, False
        for extent, size in zip(buffer.shape, shape):
            if extent.__class__.__name__ == "Var":
                sizes[extent] = int(size)
    return sizes, device


def _size(extent, sizes: dict) -> int:
    try:
        return int(extent)
    except TypeError:
        pass
    tvm = sys.modules["tvm"]
    found = tvm.arith.Analyzer().simplify(tvm.tirx.stmt_functor.substitute(extent, sizes))
    return int(found)


def _torch_dtype(name: str):
    import torch

    found = getattr(torch, name, None)
    if isinstance(found, torch.dtype):
        return found
    return torch.uint8  # a dtype torch lacks (int4, float4): bytes of its shape
