#!/usr/bin/env python3
"""One job of the GPU stage: compile a kernel with TileLang for the visible GPU, check it, time it (rule
gpu_bench); with --probe, describe the GPU (rule gpu_device), or say in one line that there is none:

    python3 scripts/gpu_bench.py --probe --out results/gpu/device.json
    python3 scripts/gpu_bench.py --shape 4096,4096,4096 --target cuda-sm90 --out speed.json

The logic: tilelang_churn/gpu/gpu_bench.py.
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import argparse
import sys

from tilelang_churn.core import interrupt  # standard library only: before the slow imports


def build_parser() -> argparse.ArgumentParser:
    """This stage's own options; the rest are the trace script's kernel and target options (trace_cli)."""
    from tilelang_churn.gpu import gpu_bench  # imported under the signal guard

    parser = argparse.ArgumentParser(
        prog="gpu_bench.py",
        description="Compile a kernel with TileLang for the visible GPU, check it against its reference, time it.",
        epilog="Kernel and target options: those of gemm_lower_trace.py (--shape ..., --kernel, --params, --target).",
    )
    parser.add_argument("--out", required=True, metavar="FILE", help="the job's speed.json (or, --probe, device.json)")
    parser.add_argument("--probe", action="store_true", help="only describe the GPU into --out; exit 4 when none")
    parser.add_argument("--log", metavar="FILE", help="also write the no-device line here")
    parser.add_argument(
        "--site", metavar="DIR", help="a release's GPU site (gpu_site.py), put in front of sys.path: that TileLang"
    )
    repeats, launches = gpu_bench.REPEATS, gpu_bench.LAUNCHES
    parser.add_argument("--repeats", type=int, default=repeats, help=f"timed repeats (default {repeats})")
    parser.add_argument("--launches", type=int, default=launches, help=f"launches per repeat (default {launches})")
    parser.add_argument(
        "--flush-l2",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="flush the L2 cache before each timed repeat (default: yes)",
    )
    seconds = gpu_bench.GPU_SECONDS
    parser.add_argument(
        "--gpu-seconds",
        type=float,
        default=seconds,
        help=f"end the job (a timeout row) once it has held the GPU this long (default {seconds:g})",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    from tilelang_churn.gpu import gpu_bench

    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    ours, rest = parser.parse_known_args(argv)
    gpu_bench.use_site(ours.site)  # before anything imports tilelang
    if not ours.probe:
        return gpu_bench.bench_job(
            rest, ours.out, ours.log, ours.repeats, ours.launches, argv, ours.gpu_seconds, ours.flush_l2
        )
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    return gpu_bench.describe_device(ours.out, ours.log)


if __name__ == "__main__":
    interrupt.run("gpu_bench", main)
