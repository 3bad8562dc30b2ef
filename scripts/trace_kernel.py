#!/usr/bin/env python3
"""Trace how TileLang lowers any kernel, pass by pass: the general entry beside the book's gemm_lower_trace.py.

    python3 scripts/trace_kernel.py --kernel-file my_kernels/gemv.py --params '{"N": 4096, "K": 4096}' \\
        --target cuda-sm90 --mode instrument --out DIR

The kernel file's function (``--function``, default ``build``) is called with the JSON object of ``--params``
and must return a ``T.prim_func`` (tilelang_churn/kernel/kernels.py). Every option, output and exit status is
the book's script's (``gemm_lower_trace.py --help``): the modes, targets, ``--out DIR/passes.csv`` and
``run.json``. Without ``--kernel-file`` or ``--kernel`` it traces the book's GEMM.
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import sys

from tilelang_churn.trace import trace_job


def main(argv: list[str] | None = None) -> int:
    """The job of ARGV (default: the command line), its options parsed by tilelang_churn/trace/trace_cli.py."""
    return trace_job.run_job(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    raise SystemExit(main())
