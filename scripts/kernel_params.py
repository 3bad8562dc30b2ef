#!/usr/bin/env python3
"""A kernel file's parameters, read from its source without importing it (the kernel contract):

    python3 scripts/kernel_params.py workflow/kernels/rmsnorm.py [FUNCTION]   # one line each: name=default

FUNCTION defaults to ``build``. Exit status 2, with one line on stderr, when the file or the function cannot be
read. The logic: tilelang_churn/kernel/kernels.py.
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import sys

from tilelang_churn.kernel import kernels


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) not in (1, 2):
        print("usage: kernel_params.py FILE [FUNCTION]", file=sys.stderr)
        return 2
    return kernels.print_signature(*argv)


if __name__ == "__main__":
    raise SystemExit(main())
