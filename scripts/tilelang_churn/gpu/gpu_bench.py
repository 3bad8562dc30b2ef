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
4. ``check``: against the kernel file's ``reference``: ``max|out - ref| / max|ref|`` against ``tolerance``
   (``wrong``, the error and the tolerance recorded); without a reference hook ``check`` is ``launch-only``.
5. ``time``: ``WARMUP_MS`` of launches, then ``REPEATS`` x ``LAUNCHES`` launches, each repeat timed with a pair
   of ``torch.cuda.Event`` around its launches: latency is the median over the repeats of (elapsed / launches),
   spread is max/min of the repeats. The reference is timed the same way in the same process. Work (the kernel
   file's ``work``: flops or bytes) over latency gives TFLOP/s or GB/s. Steps 3-5 hold a lock per GPU (a file
   under the temporary folder, named by the GPU's UUID), so jobs compile in parallel and time one at a time.

The kernel file's optional GPU hooks are documented in ``kernels.py``. Exit status: 0 a row was written (any
status), 2 bad arguments, 4 no CUDA device (one line on stderr naming the device and the config key).
torch and TileLang are imported only inside the functions that need them, so the workflow imports this module.
"""

from __future__ import annotations

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
from tilelang_churn.grid import kernels
from tilelang_churn.releases import release_process
from tilelang_churn.trace import fork_pool, trace_cli

REPEATS = 7
GPU_SECONDS = 120.0  # one job holding the GPU: its launch, check and timing, the reference's included (gpu_timeout_s)
LAUNCHES = 20
WARMUP_MS = 100.0
MEASURED_BY = "torch.cuda.Event"
COMPILE_TARGET = "cuda"  # TileLang's target for the visible GPU: its own arch (sm_90a on an H200)
EXIT_NO_DEVICE = 4
CONFIG_KEY = "gpu"

CHECK_REFERENCE = "reference"
CHECK_LAUNCH_ONLY = "launch-only"
CHECK_REFERENCE_FAILED = "reference-failed"  # the reference raised (error says why): the kernel is timed, unchecked

# tolerance of max|out - ref| / max|ref| by element type, when the kernel file gives none: half precision
# rounds at 1e-3 relative and sums of hundreds of terms lose more; float32 GEMMs run on the tensor cores' tf32
DEFAULT_TOLERANCE = {"float16": 2e-2, "bfloat16": 3e-2, "float32": 1e-2, "float64": 1e-6}
FALLBACK_TOLERANCE = 5e-2


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


def time_launches(fn, repeats: int = REPEATS, launches: int = LAUNCHES, warmup_ms: float = WARMUP_MS) -> list[float]:
    """Milliseconds per launch of fn, one value per repeat: after warmup_ms of launches (at least 3), each repeat
    is `launches` calls between two CUDA events, its elapsed time divided by `launches`."""
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
    times = []
    for _ in range(repeats):
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        for _ in range(launches):
            fn()
        end.record()
        end.synchronize()
        times.append(begin.elapsed_time(end) / launches)
    return times


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


def default_tolerance(params: dict) -> float:
    dtype = str(params.get("dtype", "float16")).removeprefix("T.")  # "T.bfloat16": TileLang's object, by name
    return DEFAULT_TOLERANCE.get(dtype, FALLBACK_TOLERANCE)


def relative_error(out, ref) -> tuple[float, float]:
    """(max|out - ref|, max|out - ref| / max|ref|), in float64; NaN anywhere gives NaN."""
    diff = (out.double() - ref.double()).abs()
    max_abs = float(diff.max()) if diff.numel() else 0.0
    if not math.isfinite(max_abs) or bool(out.isnan().any()):
        return math.nan, math.nan
    scale = float(ref.double().abs().max()) if ref.numel() else 0.0
    return max_abs, (max_abs / scale if scale > 0 else max_abs)


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
    reference_fn: object = None  # (params, inputs) -> tensor, or None: launch-only

    def inputs(self, device: str) -> list:
        """The kernel's inputs on device: its inputs hook's, else made from the PrimFunc (default_inputs)."""
        if self.hooks.inputs:
            return self.hooks.inputs(self.params, device)
        return default_inputs(self.func, self.out_idx, device, self.params)

    @property
    def reference(self):
        return None if self.reference_fn is None else (lambda inputs: self.reference_fn(self.params, inputs))


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
    reference_fn = hooks.reference
    if spec.reference:
        named = getattr(module, spec.reference, None)
        if not callable(named):
            raise kernels.KernelError(f"{spec.kernel_file}: no function {spec.reference!r} (config reference)")
        reference_fn = functools.partial(_call_reference, named)
    return KernelIO(func, hooks, params, out_idx, compile_out_idx, compile_args, reference_fn)


def compile_kernel(io: KernelIO, spec):
    """The job's kernel compiled for the visible GPU as the stage compiles it: its outputs, the job's pass configs,
    the decorator's compile flags."""
    import tilelang

    return tilelang.compile(io.func, out_idx=io.compile_out_idx, target=COMPILE_TARGET,
                            pass_configs=spec.pass_configs or None, **io.compile_args)  # fmt: skip


def _call_reference(reference, params: dict, inputs: list):
    """A config ``reference`` called as TileLang's examples call theirs: the inputs in order, then every further
    parameter of the function that the kernel has by the same name (``ref_program(Q, K, V, is_causal)``,
    ``ref_program(x, weight, bias, eps)``) by keyword, with the value the kernel gets."""
    import inspect

    try:
        names = list(inspect.signature(reference).parameters)
    except (TypeError, ValueError):
        return reference(*inputs)
    extra = {name: params[name] for name in names[len(inputs) :] if name in params}
    return reference(*inputs, **kernels.call_values(extra, jit=False))  # "T.float16" as the kernel gets it


def run_job(
    spec,
    device: dict,
    repeats: int = REPEATS,
    launches: int = LAUNCHES,
    cache_dir: Path | None = None,
    knockout=None,
    knockout_run: bool = False,
    gpu_seconds: float | None = None,
):
    """One GPU job (a core.job_spec.JobSpec): every step's outcome as one row (kernel_speed.csv's columns).

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
            out = _first(kernel(*inputs))
            torch.cuda.synchronize()
            if out is None:  # seen with AnnotateEntryFunc knocked out: the compiled kernel hands back no tensor
                raise RuntimeError(f"the kernel returned no output tensor (out_idx {out_idx})")
            reference_ran = False
            if io.reference:
                try:
                    ref = _first(io.reference(inputs))
                    torch.cuda.synchronize()
                    reference_ran = True
                except Exception as exc:  # noqa: BLE001 - the reference's failure, not the kernel's: still timed
                    row |= {"check": CHECK_REFERENCE_FAILED, "correct": None, "error": f"reference: {error_text(exc)}"}
            if reference_ran:
                max_abs, max_rel = relative_error(out, ref)
                tolerance = hooks.tolerance(params) if hooks.tolerance else default_tolerance(params)
                correct = math.isfinite(max_rel) and max_rel <= tolerance
                row |= {"check": CHECK_REFERENCE, "max_abs_error": max_abs, "max_rel_error": max_rel}
                row |= {"tolerance": tolerance, "correct": correct}
            elif not io.reference:
                row |= {"check": CHECK_LAUNCH_ONLY, "correct": None}
            stage = "time"
            timed = summarize_times(time_launches(lambda: kernel(*inputs), repeats, launches))
            row |= _timing_columns("", timed, row["work_kind"], row["work"])
            if reference_ran and not knockout_run:  # the knockout compares with its baseline, not with torch
                stage = "time the reference"
                reference_timed = summarize_times(time_launches(lambda: io.reference(inputs), repeats, launches))
                row |= _timing_columns("torch_", reference_timed, row["work_kind"], row["work"])
                row["speedup_vs_torch"] = reference_timed["median"] / timed["median"]
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
) -> int:
    """One GPU job: the kernel and target of KERNEL_ARGS (the trace script's options and checks: exit 2 on a bad
    one) compiled, checked and timed on the visible GPU; OUT (speed.json) gets its row, the device and ARGV, and
    its summary line is printed. EXIT_NO_DEVICE as ``describe_device``.

    The work runs in a child forked before anything touches CUDA (TileLang's import initialises it): a kernel that
    never finishes holds the GPU's lock, and every other job of the stage waits behind it (seen on the H200 with
    TileLang's own examples), so the child is ended once it has held the GPU for GPU_SECONDS (a ``timeout`` row);
    a child killed by a signal is a ``crashed`` row."""
    spec = trace_cli.parse_lowering(kernel_args)  # a lowering of no trace mode, with the trace script's checks
    expected = spec.release
    out = Path(out)
    scratch = out.with_name(out.name + ".child")
    scratch.unlink(missing_ok=True)
    started = time.perf_counter()
    child = functools.partial(_job_child, spec, log, repeats, launches, out.parent / "tilelang_cache", scratch,
                              gpu_seconds)  # fmt: skip
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
    if expected and row.get("tilelang_version") and releases.base_version(row["tilelang_version"]) != expected:
        row |= {"status": STATUS_BUILD_FAILED, "error": f"imported tilelang {row['tilelang_version']}, not {expected}"}
    row["job_seconds"] = round(time.perf_counter() - started, 3)
    files.write_json(out, {"row": row, "device": device, "argv": argv})
    print(summary_line(row))
    return 0


def _job_child(spec, log, repeats: int, launches: int, cache_dir: Path, scratch: Path, gpu_seconds: float) -> int:
    device = _visible_device(log)
    if device is None:
        return EXIT_NO_DEVICE
    files.write_json(scratch, {"device": device})  # what the parent knows should the run never end
    row = run_job(spec, device, repeats, launches, cache_dir=cache_dir, gpu_seconds=gpu_seconds)
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
