"""Command line of gemm_lower_trace.py: parsing and validation, standard library only.

Everything here runs before ``tilelang`` is imported, so a bad argument costs no import (about 2 s) and
exits 2 with the argument and the value named.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import sys
from pathlib import Path

from tilelang_churn.core import devices, pass_configs, trace_modes
from tilelang_churn.core.job_spec import JobSpec
from tilelang_churn.core.targets import (  # noqa: F401 (the trace script's targets, named here too)
    DEFAULT_TARGET,
    SIMT_TARGET_KINDS,
    TARGET_KINDS,
    TARGETS,
    target_kind_problem,
    target_name_for,
)
from tilelang_churn.kernel import kernels, tilelang_source
from tilelang_churn.releases import release_process

DTYPES = ("float16", "bfloat16", "float32", "float64", "int8", "float8_e4m3fn", "float8_e5m2")
ACCUM_DTYPES = ("float32", "float16", "float64", "int32")

# Default pass list of the API modes: the tile-level part of the CUDA/HIP pipelines.
DEFAULT_PASSES = (
    "BindTarget",
    "MaterializeKernelLaunch",
    "Simplify",
    "PipelinePlanning",
    "InjectSoftwarePipeline",
    "LayoutInference",
    "LowerTileOp",
    "Simplify",
)

# Pass-factory parameters the script can fill in from the target and the kernel; any other parameter
# without a default makes the pass unusable from --passes.
DERIVABLE_PASS_PARAMS = ("target", "lower_thread_binding", "default_threads", "storage_scope")

# Exit statuses of gemm_lower_trace.py; the workflow accepts OK and PASS_FAILED (a recorded failure is data).
EXIT_OK = 0
EXIT_PASS_FAILED = 1
EXIT_BAD_ARGUMENTS = 2
EXIT_NOT_RECORDED = 3

# Sizes become C integers (int64 in TVM's shapes): larger values are argument errors, not lowering failures.
INT64_MAX = 2**63 - 1
# Largest launch grid per dimension (x, y, z): CUDA's documented limits; HIP limits the work-items of one
# dimension (grid x block) to 2^32 - 1. Beyond them the kernel lowers but could never launch.
CUDA_MAX_GRID = (2**31 - 1, 65535, 65535)
HIP_MAX_WORK_ITEMS = 2**32 - 1

NOTE_LINE = "note: a change in IR text is a clue to where to look, not proof of a semantic or performance change."


def _positive_triple(what: str):
    def parse(text: str) -> tuple[int, int, int]:
        parts = text.split(",")
        if len(parts) != 3 or not all(re.fullmatch(r"\s*\d+\s*", p) for p in parts):
            raise argparse.ArgumentTypeError(f"{text!r} is not {what} (three positive integers separated by commas)")
        values = tuple(int(p) for p in parts)
        if min(values) <= 0:
            raise argparse.ArgumentTypeError(f"{text!r}: every size in {what} must be positive")
        if max(values) > INT64_MAX:
            raise argparse.ArgumentTypeError(f"{text!r}: a size in {what} exceeds {INT64_MAX} (int64)")
        return values  # type: ignore[return-value]

    return parse


def _int_at_least(minimum: int):
    def parse(text: str) -> int:
        if not re.fullmatch(r"\s*-?\d+\s*", text):
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer")
        value = int(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{text!r} must be at least {minimum}")
        if value > INT64_MAX:
            raise argparse.ArgumentTypeError(f"{text!r} exceeds {INT64_MAX} (int64)")
        return value

    return parse


def _choice(options: tuple[str, ...]):
    def parse(text: str) -> str:
        if text not in options:
            raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(options)}")
        return text

    return parse


def parse_target(text: str) -> tuple[str, dict]:
    """A short name from TARGETS, or a JSON target dict with a string "kind". Returns (name, dict)."""
    given, text = text, text.strip()
    if text in TARGETS:
        return text, dict(TARGETS[text])
    if not text.startswith("{"):
        raise argparse.ArgumentTypeError(
            f"unknown target {given!r}; use one of {', '.join(TARGETS)} or a JSON dict such as "
            '\'{"kind": "cuda", "arch": "sm_90"}\''
        )
    try:
        target = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"{given!r} is not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(target, dict) or not isinstance(target.get("kind"), str) or not target["kind"]:
        raise argparse.ArgumentTypeError(f'{given!r}: a JSON target must be a dict with a string "kind"')
    problem = target_kind_problem(target)
    if problem:
        raise argparse.ArgumentTypeError(f"{given!r}: {problem}")
    return target_name_for(target), target


def _pass_names(text: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(","))
    bad = [name for name in names if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name)]
    if bad:
        raise argparse.ArgumentTypeError(f"{text!r}: {bad[0]!r} is not a pass name")
    return names


# the book's GEMM options (the default kernel: kernels.BOOK_KERNEL) and their defaults, as the book's script has them
BOOK_OPTIONS = {"shape": (1024, 1024, 1024), "block": (128, 128, 32), "dtype": "float16", "accum_dtype": "float32"}
BOOK_OPTIONS |= {"threads": 128, "stages": 3}


def _params(text: str) -> dict:
    try:
        params = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(params, dict):
        raise argparse.ArgumentTypeError(f"{text!r} is not a JSON object of parameter names and values")
    return params


def _pass_configs(text: str) -> dict:
    try:
        return pass_configs.parse(text)
    except pass_configs.PassConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _requirements(text: str) -> tuple[str, ...]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not valid JSON ({exc.msg})") from None
    if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a JSON list of requirements")
    return tuple(value)


def _device(text: str) -> str:
    """A --device value: a profile's name or its JSON mapping (core/devices.py), as the spec holds it."""
    try:
        profile = devices.read_argument(text)
    except devices.ProfileError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return profile.to_json() if profile else None


def _label(text: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.+-]*", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a name (letters, digits, _ . + -, not first)")
    return text


def _identifier(text: str) -> str:
    if not text.isidentifier():
        raise argparse.ArgumentTypeError(f"{text!r} is not a Python function name")
    return text


def _reference_args(text: str) -> dict:
    mapping = _params(text)
    for name, source in mapping.items():
        if not (name.isidentifier() and isinstance(source, str) and source.isidentifier()):
            raise argparse.ArgumentTypeError(f"{name!r}: {source!r} is not a parameter name mapped to a parameter name")
    return mapping


class ArgumentProblem(ValueError):
    """A bad argument, as argparse would report it (the config check turns it into a ConfigError); ``option`` is
    the option it is about (``--threads``), None where the message names none."""

    def __init__(self, message: str):
        super().__init__(message)
        named = re.match(r"argument (--[\w-]+)", message)  # argparse's wording, and this module's own errors
        self.option = named.group(1) if named else None


class _CheckingParser(argparse.ArgumentParser):
    def error(self, message):
        raise ArgumentProblem(message)


def build_parser(parser_class: type = argparse.ArgumentParser, needs_mode: bool = True) -> argparse.ArgumentParser:
    """The trace script's options; needs_mode False: a lowering of no trace mode (a GPU job's) may omit --mode."""
    parser = parser_class(
        prog="gemm_lower_trace.py",
        description="Trace how TileLang lowers a GEMM, pass by pass (book chapter 12, example 4).",
    )
    what = parser.add_mutually_exclusive_group(required=needs_mode)
    what.add_argument(
        "--static-only",
        action="store_true",
        help="py_compile the scripts and locate the entry points in a TileLang source; needs no TileLang",
    )
    what.add_argument(
        "--mode",
        type=_choice(trace_modes.MODE_NAMES),
        help="; ".join(f"{m.name}: {m.summary}" for m in trace_modes.MODES.values()),
    )
    parser.add_argument(
        "--tilelang-src",
        metavar="PATH",
        help="--static-only: a TileLang source directory or .whl "
        "(default: the installed tilelang, found without importing it)",
    )
    gemm = parser.add_argument_group("the book's GEMM (the default kernel)")
    gemm.add_argument("--shape", type=_positive_triple("M,N,K"), metavar="M,N,K", help="default 1024,1024,1024")
    gemm.add_argument("--block", type=_positive_triple("BM,BN,BK"), metavar="BM,BN,BK", help="default 128,128,32")
    gemm.add_argument("--dtype", type=_choice(DTYPES), help="default float16")
    gemm.add_argument("--accum-dtype", type=_choice(ACCUM_DTYPES), help="default float32")
    gemm.add_argument("--threads", type=_int_at_least(1), help="default 128")
    gemm.add_argument("--stages", type=_int_at_least(0), help="num_stages of T.Pipelined (0: not pipelined; default 3)")
    other = parser.add_argument_group("any other kernel (kernel/kernels.py: FUNCTION(**PARAMS) returns a T.prim_func)")
    source = other.add_mutually_exclusive_group()
    source.add_argument(
        "--kernel", metavar="NAME", help="a kernel shipped with the workflow (workflow/kernels/NAME.py)"
    )
    source.add_argument("--kernel-file", metavar="FILE", help="your kernel's Python file")
    other.add_argument("--function", default=kernels.DEFAULT_FUNCTION, metavar="NAME", help="default build")
    other.add_argument("--params", type=_params, default={}, metavar="JSON", help="a JSON object (default {})")
    other.add_argument(
        "--kernel-name", type=_label, metavar="NAME", help="its name in the tables (default: the file's)"
    )
    other.add_argument(
        "--reference",
        type=_identifier,
        metavar="NAME",
        help="the GPU stage's reference: a function of the kernel's file called with the inputs, as TileLang's "
        "examples call their ref_program(*inputs)",
    )
    other.add_argument(
        "--reference-args",
        type=_reference_args,
        default={},
        metavar="JSON",
        help="the reference's parameters named otherwise than the kernel's: {reference name: kernel name}",
    )
    parser.add_argument(
        "--target",
        type=parse_target,
        default=(DEFAULT_TARGET, dict(TARGETS[DEFAULT_TARGET])),
        metavar="NAME_OR_JSON",
        help=f"one of {', '.join(TARGETS)} or a JSON target dict (default {DEFAULT_TARGET})",
    )
    parser.add_argument(
        "--target-name",
        type=_label,
        metavar="NAME",
        help="the target's name in the tables (default: its short name, or json-<kind>[-<arch or mcpu>])",
    )
    parser.add_argument(
        "--pass-configs",
        type=_pass_configs,
        default={},
        metavar="JSON",
        help="TileLang pass configs (PassConfigKey options) to lower and compile under, a JSON object, e.g. "
        "'{\"tl.disable_warp_specialized\": true}' (default {}: TileLang's own)",
    )
    parser.add_argument(
        "--passes",
        type=_pass_names,
        default=None,
        metavar="NAME,NAME,...",
        help="pass list of trace-api / pass-diff (default: " + ",".join(DEFAULT_PASSES) + ")",
    )
    parser.add_argument(
        "--out", metavar="DIR", help="where this run writes everything (default ./tmp/gemm_lower_trace/<mode>)"
    )
    parser.add_argument(
        "--keep-ir",
        action="store_true",
        help="instrument: also keep the IR printed after every pass, compressed, in DIR/ir.json.gz",
    )
    parser.add_argument(
        "--keep",
        choices=KEEP_CHOICES,
        default="all",
        help="all: every file of the run (default); tables: only what the tables, figures and the comparison of "
        "releases read (passes.csv, run.json, ir.json.gz): trace-env's run record (report.html and the IR "
        "before and after each pass, about 4 MB a job) and, when the run succeeded, TileLang's log are removed "
        "once the rows are written",
    )
    parser.add_argument(
        "--release-env",
        metavar="DIR",
        help="run in the TileLang release environment DIR (a venv made by scripts/release_envs.py), or with the "
        "interpreter DIR names (an environment of a user's own TileLang, used as it is)",
    )
    parser.add_argument(
        "--requirements",
        type=_requirements,
        default=(),
        metavar="JSON",
        help="the packages the kernel's file imports beyond this environment's, a JSON list; installed by the "
        "config check (releases/kernel_requirements.py), put on sys.path before the kernel is imported",
    )
    parser.add_argument(
        "--device",
        type=_device,
        metavar="PROFILE",
        help="build the kernel as if on this GPU, where none is visible: a profile's name "
        f"({', '.join(devices.PROFILES)}) or a JSON mapping of its numbers (docs/own-kernel.md)",
    )
    parser.add_argument(
        "--version-name",
        type=_label,
        metavar="NAME",
        help="the name of the TileLang version entry (config versions) that is no release, in the rows' "
        "version_name (default: the imported TileLang version)",
    )
    parser.add_argument(
        "--expect-release",
        type=_label,
        metavar="VERSION",
        help="the TileLang release this run must import; another one is a broken environment (exit 3)",
    )
    return parser


KEEP_CHOICES = ("all", "tables")


# the parameter columns that give a kernel's launch grid: one block per block_M x block_N tile of its M x N output
TILE_COLUMNS = ("M", "N", "block_M", "block_N")


def warnings_for(args: argparse.Namespace) -> list[str]:
    """What the run will do differently from what was asked, or cannot do on real hardware (not errors)."""
    found = []
    mode = trace_modes.MODES[args.mode]
    if args.passes_given and not mode.takes_passes:
        found.append(f"--passes is ignored by mode {args.mode}: it runs every pass of tilelang.lower")
    spec = args.spec
    if not set(TILE_COLUMNS) <= set(spec.columns):  # the launch grid of another kernel is its own code's
        return found
    p = spec.params  # a block_M x block_N tile of an M x N output per block: T.Kernel(ceildiv(N, bN), ...)
    grid = (-(-p["N"] // p["block_N"]), -(-p["M"] // p["block_M"]), 1)
    kind = spec.target.get("kind")
    if kind == "cuda":
        over = [f"gridDim.{axis} = {size:,} > {limit:,}" for axis, size, limit in zip("xyz", grid, CUDA_MAX_GRID)
                if size > limit]  # fmt: skip
    elif kind in ("hip", "rocm"):
        over = [f"gridDim.{axis} x {spec.threads} threads = {size * spec.threads:,} work-items > {HIP_MAX_WORK_ITEMS:,}"
                for axis, size in zip("xy", grid[:2]) if size * spec.threads > HIP_MAX_WORK_ITEMS]  # fmt: skip
    else:
        over = []
    if over:
        found.append(f"the launch grid exceeds what a {kind} device can launch ({'; '.join(over)}); it lowers, "
                     "but the kernel could never run")  # fmt: skip
    return found


def release_env_value(argv: list[str]) -> str | None:
    """The value of --release-env in ARGV (read before the arguments are parsed), None without one."""
    value = None
    for i, arg in enumerate(argv):
        if arg == "--release-env" and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith("--release-env="):
            value = arg.split("=", 1)[1]
    return value


def release_env_python(argv: list[str]) -> str | None:
    """The interpreter of --release-env DIR when it is not the running one (the script re-runs itself there).

    Read before anything else, so that every check (pass names included) is made against that release.
    """
    value = release_env_value(argv)
    if value is None or os.environ.get(release_process.RUNNING_IN) == value:
        return None
    if Path(value).is_file():  # an interpreter of a user's environment
        return value
    if Path(sys.prefix).resolve() == Path(value).resolve():
        return None
    python = Path(value) / "bin" / "python"
    if not python.exists():
        build_parser().error(f"argument --release-env: {value!r} has no bin/python (build it with release_envs.py)")
    return str(python)


def is_book_kernel(spec: JobSpec) -> bool:
    """The book's GEMM as its script names it: the shipped kernel it traces by default, by its own options."""
    shipped = spec.source == kernels.BOOK_KERNEL and not spec.user_file
    return spec.kernel == kernels.BOOK_KERNEL and shipped and spec.function == kernels.DEFAULT_FUNCTION


def job_argv(spec: JobSpec) -> tuple[str, ...]:
    """The trace script's arguments for a job spec (without --out), the one writer of them: the book's GEMM by its
    own options, any other kernel by its file and params; a GPU job's (mode None) have no mode options. parse_args
    reads them back into the same spec."""
    args = ["--mode", spec.mode] if spec.mode is not None else []
    if is_book_kernel(spec):
        p = spec.params
        args += [
            "--shape", f"{p['M']},{p['N']},{p['K']}",
            "--block", f"{p['block_M']},{p['block_N']},{p['block_K']}",
            "--dtype", p["dtype"],
            "--accum-dtype", p["accum_dtype"],
            "--threads", str(p["threads"]),
            "--stages", str(p["stages"]),
        ]  # fmt: skip
    else:
        args += [
            "--kernel-file" if spec.user_file else "--kernel", spec.source,
            "--function", spec.function,
            "--params", kernels.canonical(spec.params),
            "--kernel-name", spec.kernel,
        ]  # fmt: skip
    if spec.pass_configs:
        args += ["--pass-configs", pass_configs.canonical(spec.pass_configs)]
    if spec.reference:
        args += ["--reference", spec.reference]
    if spec.reference_args:
        args += ["--reference-args", kernels.canonical(spec.reference_args)]
    if TARGETS.get(spec.target_name) == spec.target:
        args += ["--target", spec.target_name]
    else:
        args += ["--target", spec.target_json]
        if spec.target_name != target_name_for(spec.target):
            args += ["--target-name", spec.target_name]
    if spec.mode is not None:
        if trace_modes.MODES[spec.mode].takes_passes:
            args += ["--passes", ",".join(spec.passes)]
        if spec.keep_ir:
            args += ["--keep-ir"]
        if spec.keep != "all":
            args += ["--keep", spec.keep]
    if spec.release_env:
        args += ["--release-env", spec.release_env]
    if spec.release:
        args += ["--expect-release", spec.release]
    if spec.version_name:
        args += ["--version-name", spec.version_name]
    if spec.device:
        args += ["--device", spec.device]
    if spec.requirements:
        args += ["--requirements", json.dumps(list(spec.requirements))]
    return tuple(args)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Parse and validate; any bad value exits 2 through argparse before TileLang is imported."""
    return _parse(build_parser(), sys.argv[1:] if argv is None else argv, check_passes=True)


def parse_lowering(argv: list[str]) -> JobSpec:
    """The job spec of a lowering of no trace mode (a GPU job: mode None) from the trace script's kernel and
    target options, with the same checks; a bad one exits 2 through argparse."""
    return _parse(build_parser(needs_mode=False), list(argv), check_passes=False).spec


def job_spec_or_none(argv: list[str]) -> JobSpec | None:
    """The spec of a job's arguments, None where the trace script would refuse them (the job says why itself)."""
    try:
        return _parse(_checking_parser(), list(argv), check_passes=False).spec
    except ArgumentProblem:
        return None


def job_argument_problem(argv: list[str]) -> ArgumentProblem | None:
    """What parse_args would refuse in a job's arguments (its text as argparse words it, its ``option``), else
    None: the config check runs every job's arguments through the same rules, so no job the check accepts exits 2
    later. Pass names are left out (the config check resolves them once for the grid)."""
    try:
        _parse(_checking_parser(), list(argv), check_passes=False)
    except ArgumentProblem as problem:
        return problem
    return None


@functools.cache
def _checking_parser() -> argparse.ArgumentParser:
    return build_parser(_CheckingParser)


def _parse(parser: argparse.ArgumentParser, argv: list[str], check_passes: bool) -> argparse.Namespace:
    args = parser.parse_args(_attach_dash_values(parser, argv))
    if args.static_only:
        return args
    if args.tilelang_src:
        parser.error("argument --tilelang-src: only used with --static-only")
    mode = trace_modes.MODES[args.mode] if args.mode is not None else None
    args.passes_given = args.passes is not None
    if args.passes is None:
        args.passes = DEFAULT_PASSES
    if args.keep_ir and args.mode not in trace_modes.KEEPS_IR:
        parser.error(f"argument --keep-ir: only used with --mode {' or '.join(trace_modes.KEEPS_IR)}")
    takes_passes = mode is not None and mode.takes_passes
    if check_passes and takes_passes and release_has(mode.requires):
        problem = check_pass_names(args.passes)
        if problem:
            parser.error(f"argument --passes: {problem}")
    name, target = args.target
    name = args.target_name or name
    kernel = _kernel_of(parser, args)
    own = kernel.pop("own_pass_configs")  # the kernel's own, under the command line's
    args.spec = JobSpec(
        mode=args.mode,
        target_name=name,
        target=target,
        passes=tuple(args.passes) if takes_passes else (),
        keep_ir=args.keep_ir,
        keep=args.keep,
        pass_configs={**own, **(args.pass_configs or {})},
        release=args.expect_release,
        release_env=args.release_env,
        version_name=args.version_name,
        device=args.device,
        requirements=args.requirements,
        reference=args.reference,
        reference_args=args.reference_args,
        **kernel,
    )
    return args


def _kernel_of(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict:
    """The kernel fields of the spec: another kernel's file, function and params, checked against its
    signature (read from its source, no import), or the GEMM from its own options."""
    gemm_options = [option for option in BOOK_OPTIONS if getattr(args, option) is not None]
    if args.kernel is not None:
        if not re.fullmatch(r"[A-Za-z0-9_]+", args.kernel) or not kernels.shipped(args.kernel).is_file():
            parser.error(
                f"argument --kernel: no shipped kernel {args.kernel!r}; they are {', '.join(kernels.shipped_names())}"
            )
        if args.kernel == kernels.BOOK_KERNEL and not gemm_options and not args.params:
            args.kernel = None  # the GEMM from its own options
        else:
            source, user_file = args.kernel, False
            args.kernel_file, args.kernel_name = str(kernels.shipped(args.kernel)), args.kernel_name or args.kernel
    elif args.kernel_file is not None:
        source, user_file = args.kernel_file, True
    if args.kernel_file is None:
        if args.params or args.kernel_name:
            parser.error("argument --params: only used with --kernel or --kernel-file (the GEMM takes --shape, ...)")
        values = {
            option: default if getattr(args, option) is None else getattr(args, option)
            for option, default in BOOK_OPTIONS.items()
        }
        params = dict(zip(("M", "N", "K"), values["shape"])) | dict(
            zip(("block_M", "block_N", "block_K"), values["block"])
        )
        params |= {name: values[name] for name in ("dtype", "accum_dtype", "threads", "stages")}
        name = source = kernels.BOOK_KERNEL
        file, function, user_file = kernels.shipped(name), kernels.DEFAULT_FUNCTION, False
    else:
        if gemm_options:
            parser.error(
                f"argument --{gemm_options[0].replace('_', '-')}: a GEMM option; another kernel takes --params"
            )
        file, function, params = args.kernel_file, args.function, args.params
        name = args.kernel_name or Path(file).stem
        if not kernels.SAFE_NAME.fullmatch(name):
            parser.error(f"argument --kernel-name: {name!r} is not a name (letters, digits, _ . + -)")
    try:
        signature = kernels.read_signature(file, function)
    except kernels.KernelError as error:
        parser.error(f"argument --kernel-file: kernel {name!r}: {error}")
    problem = signature.problem(params)
    if problem:
        parser.error(f"argument --params: kernel {name!r}: {problem}")
    if signature.columns:  # its parameters fill columns of their own: every one of them, defaults included
        params = {**signature.defaults(), **params}
    return {
        "kernel": name,
        "source": source,
        "user_file": user_file,
        "kernel_file": str(Path(file).resolve()),
        "function": function,
        "params": params,
        "kernel_label": kernels.label(name, signature.ordered(params), signature.defaults()),
        "columns": signature.columns,
        "own_pass_configs": signature.kernel_pass_configs if isinstance(signature.kernel_pass_configs, dict) else {},
    }


def _attach_dash_values(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """'--shape -5,1,1' -> '--shape=-5,1,1', so the value reaches its check instead of argparse saying
    only 'expected one argument'."""
    takes_value = {
        opt
        for action in parser._actions
        if action.nargs is None and action.option_strings
        for opt in action.option_strings
    }
    result, i = [], 0
    while i < len(argv):
        if (
            argv[i] in takes_value
            and i + 1 < len(argv)
            and argv[i + 1].startswith("-")
            and not argv[i + 1].startswith("--")
        ):
            result.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
        else:
            result.append(argv[i])
            i += 1
    return result


def release_has(module: str | None) -> bool:
    """Whether the installed TileLang has the module a mode requires (unknown: True, the run will tell)."""
    source = tilelang_source.find_installed_source()
    return module is None or source is None or tilelang_source.has_module(source, module)


def check_pass_names(names: tuple[str, ...]) -> str | None:
    """Check pass names against the pass factories in the installed TileLang's source, without importing it.

    Returns a message for the first name that does not resolve or needs an argument the script cannot
    derive, else None. With no TileLang source found, nothing can be checked here (the run then fails on
    import and records that).
    """
    source = tilelang_source.find_installed_source()
    if source is None:
        return None
    catalog = tilelang_source.pass_catalog(source)
    for name in names:
        factory = catalog.get(name)
        if factory is None:
            return f"unknown pass {name!r}; passes that resolve: {', '.join(sorted(catalog))}"
        missing = [p for p in factory.required_params if p not in DERIVABLE_PASS_PARAMS]
        if missing:
            return (
                f"pass {name!r} ({factory.module}) needs {', '.join(missing)}, which the script cannot derive "
                f"from the target and kernel; it can derive {', '.join(DERIVABLE_PASS_PARAMS)}"
            )
    return None
