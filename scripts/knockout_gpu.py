#!/usr/bin/env python3
"""The pass knockout of one configuration on the GPU (rule knockout_gpu; the command line too):

    python3 scripts/knockout_gpu.py --knockout .../knockout.json --device results/gpu/device.json \\
        --out .../knockout_gpu.csv --workers 16 --shape 1024,1024,1024 --target cuda-sm90

The logic, its outputs and exit statuses: tilelang_churn/gpu/knockout_gpu.py.
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import argparse
import sys

from tilelang_churn.core import interrupt  # standard library only: before the slow imports


def build_parser() -> argparse.ArgumentParser:
    """This command's own options; the rest are the trace script's kernel and target options (trace_cli)."""
    from tilelang_churn.gpu import gpu_bench, knockout_gpu  # imported under the signal guard

    timeout, gpu_seconds = knockout_gpu.TIMEOUT_S, knockout_gpu.GPU_SECONDS
    parser = argparse.ArgumentParser(prog=knockout_gpu.PROG, description=knockout_gpu.__doc__.split("\n\n")[0])
    parser.add_argument("--knockout", required=True, metavar="FILE", help="the configuration's CPU knockout.json")
    parser.add_argument("--device", required=True, metavar="FILE", help="results/gpu/device.json (gpu_bench --probe)")
    parser.add_argument("--out", required=True, metavar="FILE", help="the configuration's knockout_gpu.csv")
    parser.add_argument("--workers", type=int, default=1, help="variants compiled at the same time (default 1)")
    parser.add_argument("--timeout", type=float, default=timeout, help=f"seconds per variant ({timeout:g})")
    parser.add_argument(
        "--gpu-timeout", type=float, default=gpu_seconds, help=f"seconds a variant may hold the GPU ({gpu_seconds:g})"
    )
    parser.add_argument("--site", metavar="DIR", help="a release's GPU site (gpu_site.py), in front of sys.path")
    parser.add_argument("--repeats", type=int, default=gpu_bench.REPEATS)
    parser.add_argument("--launches", type=int, default=gpu_bench.LAUNCHES)
    return parser


def main(argv: list[str] | None = None) -> int:
    from tilelang_churn.gpu import gpu_bench, knockout_gpu

    argv = sys.argv[1:] if argv is None else list(argv)
    ours, rest = build_parser().parse_known_args(argv)
    gpu_bench.use_site(ours.site)  # before anything imports tilelang
    return knockout_gpu.measure_variants(
        rest,
        ours.knockout,
        ours.device,
        ours.out,
        argv,
        workers=ours.workers,
        timeout=ours.timeout,
        gpu_timeout=ours.gpu_timeout,
        repeats=ours.repeats,
        launches=ours.launches,
    )


if __name__ == "__main__":
    interrupt.run("knockout_gpu", main)
