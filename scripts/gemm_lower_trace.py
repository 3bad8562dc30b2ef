#!/usr/bin/env python3
"""See how TileLang lowers a GEMM, pass by pass (book chapter 12, example 4).

    python3 gemm_lower_trace.py --static-only [--tilelang-src PATH]   # any machine, no TileLang needed
    python3 gemm_lower_trace.py --mode trace-env    # TL_LOWER_TRACE=1: every pass of tilelang.lower
    python3 gemm_lower_trace.py --mode trace-api    # lower_trace(func, passes)
    python3 gemm_lower_trace.py --mode pass-diff    # pass_diff(func, passes)
    python3 gemm_lower_trace.py --mode instrument   # a TVM pass instrument over the full tilelang.lower

The book's script, a thin entry: its options are tilelang_churn/trace/trace_cli.py's, the logic is
tilelang_churn/trace/trace_job.py (options, outputs and exit statuses in its docstring). Needs only the standard
library and TileLang.
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import sys

from tilelang_churn.core import interrupt  # standard library only: before the slow imports


def main(argv: list[str] | None = None) -> int:
    """The job of ARGV (default: the command line), its options parsed by tilelang_churn/trace/trace_cli.py."""
    from tilelang_churn.trace import trace_job  # imported under the signal guard

    return trace_job.run_job(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    interrupt.run("gemm_lower_trace", main)
