"""Whether a kernel's result is right: which buffers it writes, what they are compared with, how close is close.

Every buffer a kernel writes is an output (``written_params``, read from its PrimFunc): the ``out_idx`` outputs it
returns and the parameters it writes in place. A row's ``check`` names what its outputs were compared with, the
first that exists of

| check | compared with |
| --- | --- |
| `reference` | the kernel's reference (its file's hook, or the config's `reference`), on the same inputs |
| `baseline` | a knockout variant: the configuration compiled with no pass knocked out, on the same seeded inputs |
| `version:<name>` | a version without a reference: the previous entry of config `versions`, same seeded inputs |
| `launch-only` | nothing: no reference, no baseline, no earlier version |

The error of one output is ``max|out - ref| / max|ref|`` in float64 (NaN anywhere: NaN, never right); a row
holds the worst output's. It is right when that error is at most the tolerance of the output's dtype
(``TOLERANCES``, or the kernel's tolerance hook): integer and boolean outputs must be equal. An output kept for a
later comparison (``keep``) holds up to SAMPLE_LIMIT elements at an even stride and the sha256 of all its bytes:
equal bytes compare as equal, others are compared on the sample.

torch and TileLang are imported inside the functions that need them (the workflow imports this module).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

CHECK_REFERENCE = "reference"
CHECK_BASELINE = "baseline"
CHECK_VERSION_PREFIX = "version:"
CHECK_LAUNCH_ONLY = "launch-only"
CHECK_REFERENCE_FAILED = "reference-failed"  # the reference raised (error says why): the kernel is timed, unchecked

# The largest error accepted for an output of each dtype (docs/gpu-stage.md shows this table). fp8 and fp4 round at
# half a step of 3 (e4m3), 2 (e5m2) or 1 (e2m1) mantissa bits, and two roundings may land a step apart.
TOLERANCES = {
    "float64": 1e-6,
    "float32": 1e-2,  # tensor cores compute float32 GEMMs in tf32
    "float16": 2e-2,
    "bfloat16": 3e-2,
    "float8_e4m3fn": 1.25e-1,
    "float8_e4m3fnuz": 1.25e-1,
    "float8_e5m2": 2.5e-1,
    "float8_e5m2fnuz": 2.5e-1,
    "float4_e2m1fn": 5e-1,
}
EXACT_KINDS = ("int", "uint", "bool")  # integers and booleans: equal or wrong
FALLBACK_TOLERANCE = 5e-2  # a dtype the table does not know
SAMPLE_LIMIT = 1 << 20  # elements of an output kept for a later comparison
KEPT_OUTPUTS = "outputs.pt"  # beside a GPU job's speed.json: its outputs, kept for a later version's comparison


def tolerance_of(dtype: str) -> float:
    """The tolerance of an output of DTYPE (a torch or TVM dtype name: "torch.float16", "float16", "int32")."""
    name = str(dtype).removeprefix("torch.").removeprefix("T.")
    if name in TOLERANCES:
        return TOLERANCES[name]
    if name.startswith(EXACT_KINDS):
        return 0.0
    return FALLBACK_TOLERANCE


# ------------------------------------------------------------------------------------ what a PrimFunc writes


def written_params(func) -> tuple[int, ...]:
    """Positions of FUNC's parameters whose buffer it writes: a store into it, a tile operation's region with write
    access (``T.copy``'s destination, a GEMM's C), an access pointer with write access (an atomic's), the address
    of one of its elements (passed on to be written), and the ``T.empty`` outputs its attributes name."""
    from tilelang import tvm

    tir = getattr(tvm, "tirx", None) or tvm.tir
    position = {func.buffer_map[param].data: i for i, param in enumerate(func.params) if param in func.buffer_map}
    written: set[int] = set()

    def mark(var) -> None:
        if var in position:
            written.add(position[var])

    def visit(node) -> None:
        if isinstance(node, tir.BufferStore):
            mark(node.buffer.data)
        elif isinstance(node, tir.Call) and hasattr(node.op, "name"):
            op, args = node.op.name, node.args
            if op == "tl.region" and _int(args[1]) & 2:
                mark(args[0].buffer.data)
            elif op == "tl.access_ptr" and _int(args[2]) & 2:
                mark(args[0].buffer.data)
            elif op.endswith(".tvm_access_ptr") and _int(args[4]) & 2:
                mark(args[1])
            elif op.endswith(".address_of") and isinstance(args[0], tir.BufferLoad):
                mark(args[0].buffer.data)

    tir.stmt_functor.post_order_visit(func.body, visit)
    attrs = func.attrs
    if attrs is not None and "tilelang_out_idx" in attrs:
        written |= {int(i) % len(func.params) for i in attrs["tilelang_out_idx"]}
    return tuple(sorted(written))


def _int(value) -> int:
    try:
        return int(value)
    except TypeError:  # not a constant: it may write
        return 2


def param_names(func) -> list[str]:
    """The name of each parameter: its buffer's (``A``), or the scalar's own."""
    return [func.buffer_map[p].name if p in func.buffer_map else str(p.name) for p in func.params]


# ------------------------------------------------------------------------------------------------ comparing


@dataclass(frozen=True)
class Comparison:
    """The worst output's error against what it was compared with."""

    max_abs_error: float
    max_rel_error: float
    tolerance: float
    output: str  # the output whose error this is
    compared: tuple[str, ...]  # every output compared

    @property
    def correct(self) -> bool:
        if math.isnan(self.max_rel_error):
            return False
        if self.tolerance == 0.0:
            return self.max_abs_error == 0.0
        return self.max_rel_error <= self.tolerance

    def as_columns(self) -> dict:
        return {
            "max_abs_error": self.max_abs_error,
            "max_rel_error": self.max_rel_error,
            "tolerance": self.tolerance,
            "correct": self.correct,
            "checked_outputs": " ".join(self.compared),
        }


def error(out, ref) -> tuple[float, float]:
    """(max|out - ref|, max|out - ref| / max|ref|) in float64, shapes must match. An element that is NaN (or the
    same infinity) in both is equal: a softmax of a fully masked row is NaN in the reference and the kernel alike.
    A NaN or infinity of one side only gives NaN."""
    import torch

    if tuple(out.shape) != tuple(ref.shape):
        raise ValueError(f"shape {tuple(out.shape)} against {tuple(ref.shape)}")
    out, ref = out.double(), ref.double()
    same = (out == ref) | (out.isnan() & ref.isnan())
    diff = torch.where(same, torch.zeros_like(out), (out - ref).abs())
    max_abs = float(diff.max()) if diff.numel() else 0.0
    if not math.isfinite(max_abs):
        return math.nan, math.nan
    finite = ref[ref.isfinite()]
    scale = float(finite.abs().max()) if finite.numel() else 0.0
    return max_abs, (max_abs / scale if scale > 0 else max_abs)


def compare(outputs: dict, expected: dict, tolerance: float | None = None) -> Comparison:
    """OUTPUTS (name -> tensor) against EXPECTED (the same names), each at its dtype's tolerance unless TOLERANCE
    (a kernel's hook) is given: the worst output by error over tolerance. ValueError naming an output whose shape
    differs or that EXPECTED lacks."""
    missing = sorted(set(outputs) - set(expected))
    if missing:
        raise ValueError(f"nothing to compare output {missing[0]} with (compared with: {', '.join(expected)})")
    worst = None
    for name, out in outputs.items():
        try:
            max_abs, max_rel = error(out, expected[name])
        except ValueError as exc:
            raise ValueError(f"output {name}: {exc}") from None
        allowed = tolerance if tolerance is not None else tolerance_of(out.dtype)
        badness = _badness(max_abs, max_rel, allowed)
        if worst is None or badness > worst[0]:
            worst = (badness, max_abs, max_rel, allowed, name)
    _, max_abs, max_rel, allowed, name = worst
    return Comparison(max_abs, max_rel, allowed, name, tuple(outputs))


def _badness(max_abs: float, max_rel: float, tolerance: float) -> float:
    if math.isnan(max_rel):
        return math.inf
    if tolerance == 0.0:
        return math.inf if max_abs > 0 else 0.0
    return max_rel / tolerance


# ------------------------------------------------------------------------- outputs kept for a later comparison


def keep(tensor) -> dict:
    """What is kept of an output for a later comparison: shape, dtype, the sha256 of its bytes, and up to
    SAMPLE_LIMIT of its elements at an even stride (on the CPU)."""
    import torch

    flat = tensor.detach().reshape(-1)
    stride = max(1, math.ceil(flat.numel() / SAMPLE_LIMIT))
    raw = flat.contiguous().view(torch.uint8) if flat.element_size() else flat
    return {
        "shape": list(tensor.shape),
        "dtype": str(tensor.dtype).removeprefix("torch."),
        "sha256": hashlib.sha256(raw.cpu().numpy().tobytes()).hexdigest(),
        "stride": stride,
        "sample": flat[::stride].cpu().clone(),
    }


def compare_kept(kept: dict, earlier: dict, tolerance: float | None = None) -> Comparison:
    """Outputs kept by ``keep`` (name -> record) against an earlier run's, on the outputs both kept (another
    TileLang may write one more buffer: 0.1.14's flash attention backward writes dK, 0.1.13's does not): equal
    bytes are an error of 0, others are compared on their samples. ValueError when they share no output, or one
    is held in another shape."""
    outputs, expected = {}, {}
    common = [name for name in kept if name in earlier]
    if not common:
        raise ValueError(f"the earlier run kept none of {', '.join(kept) or 'no outputs'} (it kept: "
                         f"{', '.join(earlier) or 'none'})")  # fmt: skip
    for name in common:
        record, other = kept[name], earlier[name]
        if (record["shape"], record["dtype"]) != (other["shape"], other["dtype"]):
            raise ValueError(
                f"output {name} is {record['dtype']} {record['shape']}, the earlier run's {other['dtype']} "
                f"{other['shape']}"
            )
        outputs[name] = record["sample"]
        expected[name] = record["sample"] if record["sha256"] == other["sha256"] else other["sample"]
    return compare(outputs, expected, tolerance)


def save_kept(path, kept: dict) -> None:
    """KEPT (name -> record) to PATH (torch.save, atomically)."""
    import io

    import torch

    from tilelang_churn.core import files

    # plain types only (load_kept reads data alone): a buffer's name from a PrimFunc is TVM's String, whose class
    # torch.load(weights_only=True) refuses (seen on the H100 for 0.1.13's fused MoE)
    plain = {
        str(name): {"shape": [int(n) for n in record["shape"]], "dtype": str(record["dtype"]),
                    "sha256": str(record["sha256"]), "stride": int(record["stride"]), "sample": record["sample"]}
        for name, record in kept.items()
    }  # fmt: skip
    buffer = io.BytesIO()
    torch.save({"schema": 1, "outputs": plain}, buffer)
    files.write_bytes(path, buffer.getvalue())


def load_kept(path) -> dict:
    """The outputs ``save_kept`` wrote; ValueError naming PATH when it is not such a file (read as data only)."""
    import torch

    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - a file read from disk: any failure is the file's
        raise ValueError(f"{path}: not a file of kept outputs ({type(exc).__name__}: {exc})") from None
    outputs = data.get("outputs") if isinstance(data, dict) and data.get("schema") == 1 else None
    fields = {"shape", "dtype", "sha256", "stride", "sample"}
    if not isinstance(outputs, dict) or not all(isinstance(r, dict) and fields <= set(r) for r in outputs.values()):
        raise ValueError(f"{path}: not a file of kept outputs (schema 1, each output {', '.join(sorted(fields))})")
    return outputs
