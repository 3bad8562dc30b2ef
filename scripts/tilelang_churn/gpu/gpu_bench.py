"""The GPU stage (config ``gpu: true``): compile a job's kernel with TileLang for the visible GPU, check its
result against the kernel's reference, and time it and the reference with CUDA events.

One GPU job is a configuration of the grid (kernel, params, target, release) without its trace mode, for a
CUDA target whose arch is the GPU's. Its arguments are the trace script's kernel and target options
(``trace_cli`` parses them: the same checks, the same provenance), plus this stage's own::

    python3 scripts/gpu_bench.py --probe --out results/gpu/device.json          # the GPU, or one line and exit 1
    python3 scripts/gpu_bench.py --kernel rmsnorm --params '{"N": 1152}' --target cuda-sm90 \\
        --out results/gpu/runs/0.1.15/cuda-sm90/rmsnorm_N1152/speed.json

What one job does, each step's failure a row (``status``), never a crash:

1. ``build``: the kernel file's function returns the ``T.prim_func`` (``build_failed``).
2. ``compile``: ``tilelang.compile(func, out_idx=OUT_IDX, target="cuda", pass_configs=)`` (the job's pass configs),
   nvcc included, timed
   (``compile_seconds``); a private TileLang cache per job, so the time is a real compile (``compile_failed``:
   lowering may have succeeded in the trace jobs, which churn_vs_speed.csv shows beside it). The target is the
   job's kind with the GPU's own arch, as TileLang picks it for the visible device (``compile_target``): the
   job's ``{"kind": "cuda", "arch": "sm_90"}`` would make nvcc build for sm_90, where the wgmma instructions
   TileLang emits for Hopper need sm_90a (ptxas refuses them: measured on an H200, TileLang 0.1.15).
3. ``launch``: the kernel on the kernel file's ``inputs`` (or random tensors of its parameters' shapes), then
   ``torch.cuda.synchronize`` (``launch_failed``).
4. ``check``: every buffer the kernel wrote (gpu/output_check.py) against its reference (``wrong`` beyond the
   tolerance of the output's dtype), else against a knockout's baseline, else ``launch-only``; what it wrote is
   kept beside speed.json for the next version's comparison (tables/kernel_speed.py).
5. ``time``: ``WARMUP_MS`` of launches, then ``LAUNCHES`` launches captured in a CUDA graph; each of ``REPEATS``
   repeats flushes the L2 cache and replays the graph between two ``torch.cuda.Event``: latency is the median
   over the repeats of (elapsed / launches), spread is max/min of the repeats; TileLang's ``do_bench`` of the same
   kernel beside it. The reference is timed the same way in the same process. Work (the kernel file's ``work``:
   flops or bytes) over latency gives TFLOP/s or GB/s. Steps 3-5 hold a lock per GPU (a file under the temporary
   folder, named by the GPU's UUID), so jobs compile in parallel and time one at a time.

The kernel file's optional GPU hooks are documented in ``kernels.py``. Exit status: 0 a row was written (any
status), 2 bad arguments, 4 no CUDA device (one line on stderr naming the device and the config key).
torch and TileLang are imported only inside the functions that need them, so the workflow imports this module.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import functools
import hashlib
import json
import math
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

from tilelang_churn.core import files, passes_table, releases

# a configuration's status in kernel_speed.csv: core/statuses.py's GPU vocabulary (the meanings are there)
from tilelang_churn.core.statuses import GPU_STATUSES as STATUSES  # noqa: F401
from tilelang_churn.core.statuses import (  # noqa: F401
    STATUS_BUILD_FAILED,
    STATUS_COMPILE_FAILED,
    STATUS_LAUNCH_FAILED,
    STATUS_OK,
    STATUS_TIMEOUT,
    STATUS_WRONG,
)
from tilelang_churn.gpu import gpu_clock, output_check
from tilelang_churn.kernel import kernels
from tilelang_churn.releases import release_process
from tilelang_churn.trace import fork_pool, trace_cli

REPEATS = 7
GPU_SECONDS = 120.0  # one job holding the GPU: its launch, check and timing, the reference's included (gpu_timeout_s)
LAUNCHES = 20
# measured on an H100 (benchmarks/timing_methods.py): five runs of a 3-13 us kernel within 1.2-1.8 % of each other
# after 100 ms of warm-up, 0.2-1.5 % after 500 ms
WARMUP_MS = 500.0
MEASURED_BY = "torch.cuda.Event"
# how the launches were timed (timing_method): a CUDA graph of LAUNCHES launches replayed per repeat, the L2 cache
# flushed before each repeat; plain launches between the events where the kernel cannot be captured in a graph
TIMING_GRAPH, TIMING_LAUNCHES, FLUSHED = "cuda-graph", "launches", "+l2-flush"
# the GPU spins this long while the host queues the repeats (torch.cuda._sleep counts cycles: 2 GHz). A 10 ms spin
# before each repeat made a 4096^3 GEMM under the H100's power cap read 10 % faster (tests/data/gpu/PROVENANCE.md)
HOLD_MS, HOLD_CYCLES_PER_MS = 1.0, 2_000_000
L2_FLUSH_BYTES = 256 << 20  # written before each repeat: more than any GPU's L2 (H200: 50 MB), as TileLang's do_bench
COMPILE_TARGET = "cuda"  # TileLang's target for the visible GPU: its own arch (sm_90a on an H200)
EXIT_NO_DEVICE = 4
CONFIG_KEY = "gpu"

CHECK_REFERENCE = output_check.CHECK_REFERENCE
CHECK_LAUNCH_ONLY = output_check.CHECK_LAUNCH_ONLY
CHECK_REFERENCE_FAILED = output_check.CHECK_REFERENCE_FAILED


class NoDevice(Exception):
    """No CUDA device is visible: the one line the stage prints (naming the device and the config key)."""


def no_device_message(reason: str) -> str:
    return (
        f"gpu stage: config {CONFIG_KEY}: true needs a CUDA device, and none is visible here ({reason}); "
        f"run on a machine with an NVIDIA GPU and a CUDA build of torch, or set {CONFIG_KEY}: false"
    )


# ------------------------------------------------------------------------------------------------ device


def probe_device() -> dict:
    """The visible GPU (device 0) and the software that drives it; NoDevice when there is none."""
    try:
        import torch
    except ImportError as exc:
        raise NoDevice(no_device_message(f"torch cannot be imported: {exc}")) from None
    if torch.version.cuda is None:
        raise NoDevice(no_device_message(f"torch {torch.__version__} is a build without CUDA"))
    if not torch.cuda.is_available():
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        detail = f", CUDA_VISIBLE_DEVICES={visible!r}" if visible is not None else ""
        raise NoDevice(no_device_message(f"torch {torch.__version__}: torch.cuda.is_available() is False{detail}"))
    properties = torch.cuda.get_device_properties(0)
    uuid = str(getattr(properties, "uuid", "") or "")
    return {
        "gpu_name": properties.name,
        "gpu_arch": f"sm_{properties.major}{properties.minor}",
        "gpu_uuid": uuid,
        "gpu_count": torch.cuda.device_count(),
        "gpu_memory_gib": round(properties.total_memory / 2**30, 1),
        "driver_version": _driver_version(),
        "cuda_version": torch.version.cuda,
        "nvcc_version": _nvcc_version(),
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
    }


def _driver_version() -> str:
    """The NVIDIA driver's version (nvidia-smi), empty when it cannot be read."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return ""
    try:
        out = subprocess.run(
            [smi, "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True, text=True, timeout=30
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.strip().splitlines()[0].strip() if out.strip() else ""


def _nvcc_version() -> str:
    """The release of the nvcc TileLang compiles with (CUDA_HOME's, else PATH's), e.g. '13.0'; empty if none."""
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    nvcc = str(Path(home) / "bin" / "nvcc") if home and (Path(home) / "bin" / "nvcc").exists() else shutil.which("nvcc")
    if nvcc is None:
        return ""
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    for line in out.splitlines():
        if "release" in line:  # "Cuda compilation tools, release 13.0, V13.0.48"
            return line.split("release", 1)[1].split(",")[0].strip()
    return ""


def arch_matches(target: dict, gpu_arch: str) -> bool:
    """A job's target runs on the GPU: a CUDA target of the GPU's arch (sm_90a counts as sm_90)."""
    arch = str(target.get("arch", ""))
    return target.get("kind") == "cuda" and arch.rstrip("a") == gpu_arch.rstrip("a")


class _GpuLock:
    """One job at a time on one GPU (launch, check and timing; compiling needs no lock)."""

    def __init__(self, device: dict):
        name = (device.get("gpu_uuid") or "0").replace("/", "_")
        self.path = Path(tempfile.gettempdir()) / f"tilelang-churn-gpu-{name}.lock"

    def __enter__(self):
        self.handle = open(self.path, "w")
        fcntl.flock(self.handle, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.handle, fcntl.LOCK_UN)
        self.handle.close()


# ----------------------------------------------------------------------------------------------- timing


def time_launches(fn, repeats: int = REPEATS, launches: int = LAUNCHES, warmup_ms: float = WARMUP_MS,
                  flush_l2: bool = True, during=None, hold_ms: float = HOLD_MS) -> tuple[list[float], str]:  # fmt: skip
    """Milliseconds per launch of fn, one value per repeat, and how they were timed. After warmup_ms of launches (at
    least 3), ``launches`` calls are captured in a CUDA graph; each repeat flushes the L2 cache (unless not
    flush_l2), then replays the graph between two CUDA events: elapsed / launches. The host's cost of a launch is
    not in the time. A kernel that cannot be captured (its adapter launches outside torch's stream) is launched
    ``launches`` times between the events instead, and the method says so. ``during``: a context the repeats
    run in (a gpu_clock.ClockWatch). The repeats run back to back: the host queues them all while the GPU spins
    for ``hold_ms``, then waits once, so a host that stalls (a busy CPU) cannot leave the GPU idle between two
    events, and no pause between repeats lets a GPU under its power cap speed up."""
    import torch

    _warm_up(fn, warmup_ms)
    replay, method = _captured(fn, launches)
    flush = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda") if flush_l2 else None
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(repeats)]
    with during or contextlib.nullcontext():
        if hold_ms > 0:
            torch.cuda._sleep(int(hold_ms * HOLD_CYCLES_PER_MS))
        for begin, end in events:
            if flush is not None:
                flush.zero_()
            begin.record()
            replay()
            end.record()
        torch.cuda.synchronize()
    return [begin.elapsed_time(end) / launches for begin, end in events], method + (FLUSHED if flush_l2 else "")


def _warm_up(fn, warmup_ms: float) -> None:
    import torch

    fn()
    torch.cuda.synchronize()
    start, warm = time.perf_counter(), 1
    while warm < 3 or (time.perf_counter() - start) * 1e3 < warmup_ms:
        fn()
        warm += 1
        if warm % 10 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()


def _captured(fn, launches: int):
    """(a callable that runs ``launches`` launches of fn, its method): a CUDA graph's replay, else the launches."""
    import torch

    def in_a_row() -> None:
        for _ in range(launches):
            fn()

    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            fn()  # a capture needs the work warmed up on its stream
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            in_a_row()
        torch.cuda.synchronize()
        graph.replay()
        torch.cuda.synchronize()
        return graph.replay, TIMING_GRAPH
    except Exception as exc:  # noqa: BLE001 - not capturable: timed launch by launch, the method says so
        print(f"gpu_bench: not captured in a CUDA graph ({type(exc).__name__}: {exc}); timing plain launches")
        torch.cuda.synchronize()
        return in_a_row, TIMING_LAUNCHES


DO_BENCH_BACKENDS = ("cupti", "event")


def tilelang_do_bench(fn, backends=DO_BENCH_BACKENDS) -> tuple[float | None, str]:
    """TileLang's own timing of fn (``tilelang.profiler.do_bench``: the L2 flushed before each launch), with the first
    of backends that the installed TileLang has and that measures a time: (ms, backend), or (None, why not). cupti
    first: the profiler's device time of the kernel alone (about 0.75 s a call on an H100); else events around each
    launch, which also time a host cost longer than the flush (docs/gpu-stage.md)."""
    import inspect

    try:
        from tilelang.profiler import do_bench
    except ImportError as exc:
        return None, f"no do_bench: {exc}"
    accepts = inspect.signature(do_bench).parameters
    for backend in backends if "backend" in accepts else (None,):
        try:
            ms = float(_first(do_bench(fn, backend=backend) if backend else do_bench(fn)))
        except Exception as exc:  # noqa: BLE001 - cupti missing here: the next backend
            said = f"{backend or 'do_bench'}: {type(exc).__name__}: {exc}"
            continue
        if math.isfinite(ms) and ms > 0:
            return ms, backend or "event"
        said = f"{backend or 'do_bench'}: measured {ms} ms"  # a profiler that saw no kernel
    return None, passes_table.error_text(said)


def summarize_times(times: list[float]) -> dict:
    """median, min, max (ms) and spread (max/min) of the repeats."""
    return {
        "median": statistics.median(times),
        "min": min(times),
        "max": max(times),
        "spread": max(times) / min(times) if min(times) > 0 else math.inf,
    }


# ------------------------------------------------------------------------------------------------ hooks


def default_inputs(func, out_idx: list[int], device: str, sizes: dict | None = None) -> list:
    """Tensors for every parameter of func that is not an output (a kernel without an inputs hook), of the
    PrimFunc's own shapes and element types: floating point ones random normal; integer and boolean ones zero,
    the one value safe for an index, an offset or a length (give others with an inputs hook). A symbolic extent
    (T.dynamic, T.symbolic) takes its size from sizes by its name, else DYNAMIC_EXTENT; a scalar parameter (no
    buffer) its value from sizes, else 1."""
    import torch

    sizes = sizes or {}
    n_params = len(func.params)
    outputs = {i % n_params for i in out_idx}
    tensors = []
    for i, param in enumerate(func.params):
        if i in outputs:
            continue
        buffer = func.buffer_map.get(param)
        if buffer is None:  # a scalar argument
            tensors.append(sizes.get(str(param.name), 1))
            continue
        shape = [_extent(extent, sizes, buffer.name) for extent in buffer.shape]
        dtype = getattr(torch, str(buffer.dtype))
        if dtype.is_floating_point:
            tensors.append(torch.randn(shape, device=device).to(dtype))
        else:
            tensors.append(torch.zeros(shape, device=device, dtype=dtype))
    return tensors


DYNAMIC_EXTENT = 1024  # the size of a symbolic extent that the parameters do not name


def _extent(extent, sizes: dict, buffer: str) -> int:
    try:
        return int(extent)
    except TypeError:
        value = sizes.get(str(extent), DYNAMIC_EXTENT)
        if not isinstance(value, int):
            raise kernels.KernelError(f"input {buffer}: its extent {extent} is {value!r}, not a size") from None
        return value


def target_text(target) -> str:
    """`cuda sm_90a`: the kind and arch TileLang compiled for (COMPILE_TARGET when it does not say)."""
    kind = getattr(getattr(target, "kind", None), "name", None)
    arch = getattr(target, "arch", None) if kind else None
    return " ".join(str(part) for part in (kind, arch) if part) or COMPILE_TARGET


def error_text(exc: BaseException) -> str:
    """One line for the table: the exception's type and its lines that say `error` (nvcc's and ptxas's, whose
    message starts with the whole generated source), else its first line; the whole text goes to the log."""
    traceback.print_exception(exc, file=sys.stdout)
    said = [line.strip() for line in str(exc).splitlines() if re.search(r"\berror\b", line, re.IGNORECASE)]
    if not said:
        return passes_table.error_text(exc)
    return passes_table.error_text(f"{type(exc).__name__}: {' | '.join(dict.fromkeys(said[:4]))}")


def _first(result):
    return result[0] if isinstance(result, (list, tuple)) else result


# ------------------------------------------------------------------------------------------------- a job


@dataclasses.dataclass(frozen=True)
class KernelIO:
    """What the GPU stage needs of a job's kernel besides compiling it: its PrimFunc, outputs and inputs, and the
    reference to check it against (kernel_io)."""

    func: object  # the PrimFunc
    hooks: kernels.GpuHooks
    params: dict  # every parameter, the function's defaults filled in (what the hooks get)
    out_idx: list[int]  # the outputs among the PrimFunc's parameters
    compile_out_idx: list[int] | None  # what tilelang.compile is given (None: the PrimFunc's T.empty says)
    compile_args: dict  # the @tilelang.jit decorator's compile_flags, as its own compile passes them
    reference_fn: object = None  # (params, inputs, names) -> tensor(s), or None: launch-only
    written: tuple[int, ...] = ()  # the parameters the kernel writes (output_check.written_params)

    @property
    def names(self) -> list[str]:
        return output_check.param_names(self.func)

    @property
    def input_names(self) -> list[str]:
        """The names of the parameters the kernel is called with (all but its out_idx outputs), in order."""
        outputs = {i % len(self.func.params) for i in self.out_idx}
        return [name for i, name in enumerate(self.names) if i not in outputs]

    def inputs(self, device: str) -> list:
        """The kernel's inputs on device: its inputs hook's, else made from the PrimFunc (default_inputs)."""
        if self.hooks.inputs:
            return self.hooks.inputs(self.params, device)
        return default_inputs(self.func, self.out_idx, device, self.params)

    @property
    def tolerance(self) -> float | None:
        """The kernel's tolerance hook's value; None: each output's dtype decides (output_check.TOLERANCES)."""
        return self.hooks.tolerance(self.params) if self.hooks.tolerance else None

    @property
    def reference(self):
        if self.reference_fn is None:
            return None
        return lambda inputs: self.reference_fn(self.params, inputs, self.input_names)

    def outputs(self, inputs: list, returned) -> dict:
        """Every buffer the launch wrote, by its parameter's name: the out_idx outputs it returned, in out_idx
        order, then the inputs it wrote in place, in parameter order."""
        count = len(self.func.params)
        returned = list(returned) if isinstance(returned, (list, tuple)) else [] if returned is None else [returned]
        found = {self.names[i % count]: tensor for i, tensor in zip(self.out_idx, returned)}
        written = {self.names[i] for i in self.written}
        for name, value in zip(self.input_names, inputs):
            if name in written and hasattr(value, "shape"):
                found.setdefault(name, value)
        return found


def kernel_io(spec) -> KernelIO:
    """The job's kernel as the GPU stage runs it. Outputs: the @tilelang.jit decorator's ``out_idx``, else the
    PrimFunc's own (``T.empty`` outputs of an eager kernel), else the file's OUT_IDX (default the last parameter).
    Reference: the config's ``reference`` (a function of the file called ``(*inputs)``, as TileLang's examples
    call ``ref_program``), else the file's reference hook. Works without a GPU: the CPU tests call it."""
    module = kernels.load_module(spec.kernel_file)  # once: its hooks, its kernel and its reference
    hooks = kernels.gpu_hooks(module)
    params = {**kernels.read_signature(spec.kernel_file, spec.function).defaults(), **spec.params}
    built = kernels.kernel_object(module, spec.kernel_file, spec.function)
    func = kernels.primfunc_of(built, spec.kernel_file, spec.function, spec.params)
    impl = kernels.jit_impl(built)
    own_out = getattr(impl, "out_idx", None)
    attrs = getattr(func, "attrs", None)
    has_own = attrs is not None and "tilelang_out_idx" in attrs  # an eager kernel's T.empty outputs
    from_func = [int(i) for i in attrs["tilelang_out_idx"]] if has_own else None
    if own_out is not None:
        out_idx = [own_out] if isinstance(own_out, int) else [int(i) for i in own_out]
        compile_out_idx = None if from_func is not None else out_idx
    elif from_func is not None:
        out_idx, compile_out_idx = from_func, None
    else:
        out_idx = compile_out_idx = list(hooks.out_idx)
    compile_args = {}
    flags = getattr(impl, "compile_flags", None)
    if flags:
        compile_args["compile_flags"] = flags
    reference_fn = None
    if hooks.reference:
        reference_fn = lambda params, inputs, names: hooks.reference(params, inputs)  # noqa: E731 - the hook's form
    if spec.reference:
        named = getattr(module, spec.reference, None)
        if not callable(named):
            raise kernels.KernelError(f"{spec.kernel_file}: no function {spec.reference!r} (config reference)")
        reference_fn = functools.partial(call_reference, named, mapping=dict(spec.reference_args or {}))
    written = output_check.written_params(func)
    return KernelIO(func, hooks, params, out_idx, compile_out_idx, compile_args, reference_fn, written)


def compile_kernel(io: KernelIO, spec):
    """The job's kernel compiled for the visible GPU as the stage compiles it: its outputs, the job's pass configs,
    the decorator's compile flags."""
    import tilelang

    return tilelang.compile(io.func, out_idx=io.compile_out_idx, target=COMPILE_TARGET,
                            pass_configs=spec.pass_configs or None, **io.compile_args)  # fmt: skip


class ReferenceArgumentMissing(TypeError):
    """A reference parameter that no input, kernel parameter or reference_args entry gives (the message names it)."""


def call_reference(reference, params: dict, inputs: list, names: list[str] | None = None, mapping: dict | None = None):
    """A config ``reference`` called as TileLang's examples call theirs. Each of its parameters gets, by name (or the
    name ``mapping``, the config's ``reference_args``, gives it): the input tensor of that name, else the kernel's
    parameter of that name (``ref_program(Q, K, V, is_causal)``); the inputs no name took fill its other positional
    parameters in order (``ref_program(x, w, b, eps)`` of inputs X, W, B). ReferenceArgumentMissing names a
    parameter nothing gives. A reference that returns a function (``ref_program(stride, padding, dilation)``
    returning ``main(A, B)``) is a factory: the function is called in turn with the inputs it did not take."""
    import inspect

    names, mapping = list(names or []), dict(mapping or {})
    try:
        signature = inspect.signature(reference)
    except (TypeError, ValueError):
        return reference(*inputs)
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind == inspect.Parameter.VAR_POSITIONAL for p in signature.parameters.values()):
        return reference(*inputs)  # ref(*tensors): the inputs, in order
    tensors = dict(zip(names, inputs))
    given, used = {}, set()
    for name in signature.parameters:
        source = mapping.get(name, name)
        if source in tensors:
            given[name] = tensors[source]
            used.add(source)
        elif source in params:
            given[name] = reference_value(params[source])
    # the inputs no name took fill its other positional parameters in order (ref_program(x, w, b, eps))
    left = [(name, value) for name, value in zip(names or [None] * len(inputs), inputs) if name not in used]
    args, kwargs = [], {}
    for name, parameter in signature.parameters.items():
        if parameter.kind in positional and name not in given and left:
            given[name] = left.pop(0)[1]
    for name, parameter in signature.parameters.items():
        if parameter.kind in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL):
            continue
        if name not in given:
            if parameter.default is inspect.Parameter.empty:
                raise ReferenceArgumentMissing(
                    f"{getattr(reference, '__name__', 'the reference')}{signature}: no value for {name!r} (no input"
                    f" tensor or kernel parameter of that name: map it in the config's reference_args, e.g."
                    f" {{{name}: <kernel parameter>}})"
                )
            continue
        if parameter.kind == inspect.Parameter.POSITIONAL_ONLY:
            args.append(given[name])
        else:
            kwargs[name] = given[name]
    made = reference(*args, **kwargs)
    if callable(made) and not hasattr(made, "shape"):  # a factory's function (a tensor is no function here) gets
        # the inputs the factory did not take
        return call_reference(made, params, [value for _, value in left], [name for name, _ in left if name], mapping)
    return made


def reference_value(value):
    """A kernel parameter as a reference (torch code) takes it: a dtype spelled ``"T.float16"`` is torch's dtype of
    that name (TileLang's object reads as a device string to torch), another TileLang object is TileLang's."""
    import torch

    if isinstance(value, str) and kernels.LANGUAGE_OBJECT.fullmatch(value):
        found = getattr(torch, value.removeprefix("T."), None) if value.count(".") == 1 else None
        if isinstance(found, torch.dtype):
            return found
    return kernels.call_values({"value": value}, jit=False)["value"]


def check_against_reference(io: KernelIO, outputs: dict, inputs: list) -> dict:
    """The row's check columns of OUTPUTS against io's reference run on INPUTS: each of its results against the
    output in the same place (one result: the first output); ``reference-failed`` when it raised, with the argument
    it lacked or its own error, or returned nothing to compare."""
    import torch

    try:
        result = io.reference(inputs)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
    except Exception as exc:  # noqa: BLE001 - the reference's failure, not the kernel's: still timed
        return {"check": CHECK_REFERENCE_FAILED, "correct": None, "error": f"reference: {error_text(exc)}"}
    results = list(result) if isinstance(result, (list, tuple)) else [result]
    pairs = list(zip(outputs, results))
    if not pairs or any(not hasattr(ref, "shape") for _, ref in pairs):
        said = f"reference: returned {type(result).__name__}, not a tensor for output {next(iter(outputs), '?')}"
        return {"check": CHECK_REFERENCE_FAILED, "correct": None, "error": said}
    try:
        compared = output_check.compare({name: outputs[name] for name, _ in pairs}, dict(pairs), io.tolerance)
    except ValueError as exc:
        return {"check": CHECK_REFERENCE_FAILED, "correct": None, "error": f"reference: {exc}"}
    return {"check": CHECK_REFERENCE, **compared.as_columns()}


def run_job(
    spec,
    device: dict,
    repeats: int = REPEATS,
    launches: int = LAUNCHES,
    cache_dir: Path | None = None,
    knockout=None,
    knockout_run: bool = False,
    gpu_seconds: float | None = None,
    flush_l2: bool = True,
    keep: Path | None = None,
    baseline: Path | None = None,
    do_bench: bool = True,
):
    """One GPU job (a core.job_spec.JobSpec): every step's outcome as one row (kernel_speed.csv's columns).

    Its outputs (every buffer it writes) are checked against its reference; without one, against the outputs that
    an earlier run kept in BASELINE (a knockout's baseline), else it is launch-only. KEEP: where to keep them for a
    later comparison (output_check.keep). The launches are timed as ``time_launches`` does (flush_l2), and, with
    do_bench, by TileLang's own ``do_bench`` beside.

    knockout_run (the pass knockout's GPU jobs, knockout_gpu.py): the kernel is compiled with ``knockout``'s pass
    skipped (None: the baseline), and the row also says how (``compile_hook``, ``compile_skipped_runs``) and what
    was compiled (``source_sha256`` of the generated source). gpu_seconds: once this process holds the GPU, its
    launch, check and timing must end within that many seconds, or SIGALRM (its default action) ends the process:
    a kernel that never finishes (seen on the H200 with a pass knocked out) would hold the GPU's lock for good."""
    import torch

    from tilelang_churn.knockout import pass_knockout

    if cache_dir is not None:
        os.environ["TILELANG_CACHE_DIR"] = str(cache_dir)
    row = job_row(spec, device, repeats, launches) | {"compiled": False}
    try:
        import tilelang
    except Exception as exc:  # noqa: BLE001 - a broken release is a row too
        return row | {"status": STATUS_BUILD_FAILED, "error": error_text(exc)}
    row["tilelang_version"] = tilelang.__version__
    # another TileLang than the job's version: nothing is run, its timing would be that TileLang's
    if spec.release and not releases.imports_release(tilelang.__version__, spec.release):
        return row | {
            "status": STATUS_BUILD_FAILED,
            "error": f"imported tilelang {tilelang.__version__}, not {spec.release}",
        }
    # a site shares the machine's packages: its TileLang may load another install's libtvm (not its own timings)
    foreign = release_process.foreign_library_problem(
        f"TileLang {tilelang.__version__}", release_process.native_libraries()
    )
    if foreign:
        return row | {"status": STATUS_BUILD_FAILED, "error": foreign}
    try:
        io = kernel_io(spec)
    except Exception as exc:  # noqa: BLE001 - a kernel that does not import or build here is a row
        return row | {"status": STATUS_BUILD_FAILED, "error": error_text(exc)}
    hooks, params, out_idx = io.hooks, io.params, io.out_idx
    start = time.perf_counter()
    try:
        with pass_knockout.compiling_without(knockout) as hook:
            try:
                kernel = compile_kernel(io, spec)
            finally:  # compiled or not: how the knockout reached the compile's passes
                if knockout_run:
                    row["compile_hook"] = hook
                    row["compile_skipped_runs"] = knockout.skipped_runs if knockout is not None else None
    except Exception as exc:  # noqa: BLE001
        row["compile_seconds"] = round(time.perf_counter() - start, 3)
        return row | {"status": STATUS_COMPILE_FAILED, "error": error_text(exc)}
    row |= {"compiled": True, "compile_seconds": round(time.perf_counter() - start, 3)}
    row["compile_target"] = target_text(getattr(kernel, "target", None))
    try:
        source = kernel.get_kernel_source()
        row["source_lines"] = len(source.splitlines())
        if knockout_run:  # the proof that this very variant was compiled, not a cached binary of another
            row["source_sha256"] = hashlib.sha256(source.encode("utf-8")).hexdigest()
    except Exception:  # noqa: BLE001 - only a count for the table
        pass
    work = hooks.work(params) if hooks.work else {}
    row["work_kind"] = "flops" if "flops" in work else "bytes" if "bytes" in work else ""
    row["work"] = work.get("flops", work.get("bytes"))
    with _GpuLock(device):
        if gpu_seconds:
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.alarm(max(1, math.ceil(gpu_seconds)))
        stage = "inputs"
        try:
            torch.manual_seed(0)
            inputs = io.inputs("cuda")
            stage = "launch"
            returned = kernel(*inputs)
            torch.cuda.synchronize()
            outputs = io.outputs(inputs, returned)
            if not outputs:  # seen with AnnotateEntryFunc knocked out: the compiled kernel hands back no tensor
                raise RuntimeError(f"the kernel returned no output tensor and wrote none (out_idx {out_idx})")
            stage = "check"
            kept = None
            if keep is not None or baseline is not None:  # what a later comparison, or this one, reads
                kept = {name: output_check.keep(tensor) for name, tensor in outputs.items()}
            if keep is not None:
                output_check.save_kept(keep, kept)
            if io.reference:
                row |= check_against_reference(io, outputs, inputs)
            reference_ran = row.get("check") == CHECK_REFERENCE
            if not reference_ran and baseline is not None and baseline.exists():
                compared = output_check.compare_kept(kept, output_check.load_kept(baseline), io.tolerance)
                row |= {"check": output_check.CHECK_BASELINE, **compared.as_columns()}
            elif not io.reference:
                row |= {"check": CHECK_LAUNCH_ONLY, "correct": None, "checked_outputs": " ".join(outputs)}
            stage = "time"
            clock = gpu_clock.ClockWatch(device.get("gpu_uuid", ""))
            times, method = time_launches(lambda: kernel(*inputs), repeats, launches, flush_l2=flush_l2, during=clock)
            row |= _timing_columns("", summarize_times(times), row["work_kind"], row["work"])
            row |= clock.columns()
            row["timing_method"] = method
            if do_bench:
                stage = "do_bench"
                row["do_bench_ms"], row["do_bench_backend"] = tilelang_do_bench(lambda: kernel(*inputs))
            if reference_ran and not knockout_run:  # the knockout compares with its baseline, not with torch
                stage = "time the reference"
                reference_times, _ = time_launches(lambda: io.reference(inputs), repeats, launches, flush_l2=flush_l2)
                reference_timed = summarize_times(reference_times)
                row |= _timing_columns("torch_", reference_timed, row["work_kind"], row["work"])
                row["speedup_vs_torch"] = reference_timed["median"] / row["latency_ms"]
        except Exception as exc:  # noqa: BLE001 - a launch failure is data
            return row | {"status": STATUS_LAUNCH_FAILED, "error": f"{stage}: {error_text(exc)}"}
        finally:
            if gpu_seconds:
                signal.alarm(0)
    row["status"] = STATUS_WRONG if row.get("correct") is False else STATUS_OK
    return row


def _timing_columns(prefix: str, timed: dict, work_kind: str, work) -> dict:
    columns = {
        f"{prefix}latency_ms": timed["median"],
        f"{prefix}latency_min_ms": timed["min"],
        f"{prefix}latency_max_ms": timed["max"],
        f"{prefix}spread": timed["spread"],
    }
    seconds = timed["median"] / 1e3
    columns[f"{prefix}tflops"] = work / seconds / 1e12 if work_kind == "flops" and work else None
    columns[f"{prefix}gbps"] = work / seconds / 1e9 if work_kind == "bytes" and work else None
    return columns


# the row: which job (passes_table's provenance columns, without mode and source: a GPU job has no trace mode),
# on which machine, then the outcome (kernel_speed.py documents every column)
ROW_PROVENANCE = [
    column
    for column in passes_table.PROVENANCE_COLUMNS
    if column not in ("mode", "source", "kernel_label", "pass_configs", *passes_table.LATER_PROVENANCE)
] + ["kernel_label"]  # pass_configs and version_name, later columns, are the table's last
# every provenance column a GPU row carries
ROW_JOB_COLUMNS = [*ROW_PROVENANCE, "pass_configs", *passes_table.LATER_PROVENANCE]
DEVICE_COLUMNS = ["gpu_name", "gpu_arch", "driver_version", "cuda_version", "nvcc_version", "torch_version"]


# ------------------------------------------------------------- the commands' work (scripts/gpu_bench.py)


def use_site(site: str | None) -> None:
    """A release's GPU site (gpu_site.py) put in front of sys.path, before anything imports tilelang: that TileLang;
    the site holds no torch, the machine's CUDA torch stays. Nothing without one."""
    if site:
        sys.path.insert(0, str(Path(site).resolve()))
        for key in release_process.TILELANG_VARIABLES:  # another install's paths would load its libtvm
            os.environ.pop(key, None)


def _visible_device(log: str | None) -> dict | None:
    """probe_device(), or None once the reason is on stderr (and in LOG, when given)."""
    try:
        return probe_device()
    except NoDevice as problem:
        print(problem, file=sys.stderr)
        if log:
            Path(log).parent.mkdir(parents=True, exist_ok=True)
            Path(log).write_text(f"{problem}\n", encoding="utf-8")
        return None


def describe_device(out: str | Path, log: str | None = None) -> int:
    """--probe: the visible GPU described into OUT (device.json) and named in one line; EXIT_NO_DEVICE when there is
    none, the reason on stderr (and in LOG)."""
    device = _visible_device(log)
    if device is None:
        return EXIT_NO_DEVICE
    files.write_json(Path(out), device)
    print(f"gpu stage: {device['gpu_name']} ({device['gpu_arch']}), driver {device['driver_version']}")
    return 0


def bench_job(
    kernel_args: list[str],
    out: str | Path,
    log: str | None,
    repeats: int,
    launches: int,
    argv: list[str],
    gpu_seconds: float = GPU_SECONDS,
    flush_l2: bool = True,
) -> int:
    """One GPU job: the kernel and target of KERNEL_ARGS (the trace script's options and checks: exit 2 on a bad
    one) compiled, checked and timed on the visible GPU; OUT (speed.json) gets its row, the device and ARGV, and
    its summary line is printed; the outputs it wrote are kept beside it (output_check.KEPT_OUTPUTS) for a later
    version's comparison. EXIT_NO_DEVICE as ``describe_device``.

    The work runs in a child forked before anything touches CUDA (TileLang's import initialises it): a kernel that
    never finishes holds the GPU's lock, and every other job of the stage waits behind it (seen on the H200 with
    TileLang's own examples), so the child is ended once it has held the GPU for GPU_SECONDS (a ``timeout`` row);
    a child killed by a signal is a ``crashed`` row."""
    spec = trace_cli.parse_lowering(kernel_args)  # a lowering of no trace mode, with the trace script's checks
    out = Path(out)
    scratch = out.with_name(out.name + ".child")
    scratch.unlink(missing_ok=True)
    started = time.perf_counter()
    kept = out.with_name(output_check.KEPT_OUTPUTS)
    kept.unlink(missing_ok=True)  # an earlier run's outputs never pass for this one's
    child = functools.partial(_job_child, spec, log, repeats, launches, out.parent / "tilelang_cache", scratch,
                              gpu_seconds, flush_l2, kept)  # fmt: skip
    with fork_pool.ForkPool(1) as pool:
        pool.start("job", child)
        _, ended = pool.wait()
    if ended.reported == EXIT_NO_DEVICE:
        return EXIT_NO_DEVICE
    try:
        record = json.loads(scratch.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        record = {}
    scratch.unlink(missing_ok=True)
    device = record.get("device") or {}
    row = record.get("row") or unfinished_row(spec, device, ended, gpu_seconds, repeats, launches)
    row["job_seconds"] = round(time.perf_counter() - started, 3)
    files.write_json(out, {"row": row, "device": device, "argv": argv})
    print(summary_line(row))
    return 0


def _job_child(spec, log, repeats: int, launches: int, cache_dir: Path, scratch: Path, gpu_seconds: float,
               flush_l2: bool, kept: Path) -> int:  # fmt: skip
    device = _visible_device(log)
    if device is None:
        return EXIT_NO_DEVICE
    files.write_json(scratch, {"device": device})  # what the parent knows should the run never end
    row = run_job(spec, device, repeats, launches, cache_dir=cache_dir, gpu_seconds=gpu_seconds, flush_l2=flush_l2,
                  keep=kept)  # fmt: skip
    files.write_json(scratch, {"device": device, "row": row})
    return 0


def job_row(spec, device: dict, repeats: int, launches: int) -> dict:
    """The columns every row of a GPU job starts with: the job's provenance, the device, how it is timed."""
    provenance = spec.provenance("")
    row = {name: provenance[name] for name in ROW_JOB_COLUMNS if name in provenance}
    row |= {name: device.get(name, "") for name in DEVICE_COLUMNS}
    return row | {"measured_by": MEASURED_BY, "repeats": repeats, "launches": launches}


def held_the_gpu_too_long(gpu_seconds: float, key: str) -> dict:
    """The result of a process that SIGALRM ended once it had held the GPU for GPU_SECONDS (config KEY)."""
    return {
        "status": STATUS_TIMEOUT,
        "error": f"the launch, check and timing ran past {gpu_seconds:g} s on the GPU (config {key}) and the process "
        "was ended: a kernel that never finishes?",
    }


def unfinished_row(spec, device: dict, ended, gpu_seconds: float, repeats: int, launches: int) -> dict:
    """The row of a job whose child gave none: ``timeout`` (SIGALRM: it held the GPU past gpu_seconds) or
    ``crashed`` (another signal, or an exit without its result)."""
    from tilelang_churn.knockout import pass_knockout

    if ended.signal == signal.SIGALRM:
        result = held_the_gpu_too_long(gpu_seconds, "gpu_timeout_s")
    else:
        result = pass_knockout.ended_without_result(ended, None, "the job")
    row = job_row(spec, device, repeats, launches) | {"compiled": None}
    row["tilelang_version"] = spec.release or ""  # never imported here: the release the job was given
    return row | {"status": result["status"], "error": result["error"]}


def summary_line(row: dict) -> str:
    parts = [f"{row.get('kernel_label')} on {row.get('target_name')}: {row.get('status')}"]
    if row.get("compile_seconds") is not None:
        parts.append(f"compile {row['compile_seconds']:.1f} s")
    if row.get("latency_ms") is not None:
        parts.append(f"{row['latency_ms']:.4f} ms (spread {row['spread']:.3f})")
    if row.get("tflops"):
        parts.append(f"{row['tflops']:.0f} TFLOP/s")
    if row.get("gbps"):
        parts.append(f"{row['gbps']:.0f} GB/s")
    if row.get("torch_latency_ms") is not None:
        parts.append(f"torch {row['torch_latency_ms']:.4f} ms")
    if row.get("max_rel_error") is not None:
        parts.append(f"error {row['max_rel_error']:.2e} (tolerance {row['tolerance']:.0e})")
    if row.get("error"):
        parts.append(str(row["error"])[:200])
    return ", ".join(parts)


def dumps(row: dict) -> str:
    return json.dumps(row, sort_keys=True)


# ---------------------------------------------------------------------------------------------- the grid


def gpu_jobs(grid, gpu_arch: str | None = None) -> dict[tuple[str, str, str], tuple[str, ...]]:
    """(version, target, configuration) -> this stage's arguments (without --out: the configuration's lowering as
    a job spec of no mode, core/job_spec.py), for every configuration of the grid on each CUDA target (of
    gpu_arch only, when given), in grid order. No release environment: a GPU job imports its release from the
    release's GPU site, beside the machine's CUDA torch (--site)."""
    return {
        key: trace_cli.job_argv(dataclasses.replace(lowering, release_env=None))
        for key, lowering in grid.lowerings.items()
        if lowering.target.get("kind") == "cuda" and (gpu_arch is None or arch_matches(lowering.target, gpu_arch))
    }


def kernel_names(grid) -> list[str]:
    """The kernels of the grid, in configuration order, one figure each."""
    return list(dict.fromkeys(lowering.kernel for lowering in grid.lowerings.values()))
