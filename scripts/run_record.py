#!/usr/bin/env python3
"""Per-pass counts of one TL_LOWER_TRACE run record: python3 scripts/run_record.py RUN_DIR.

The logic: tilelang_churn/trace/run_record.py.
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import sys

from tilelang_churn.trace import run_record


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: run_record.py RUN_DIR", file=sys.stderr)
        return 2
    return run_record.print_run_record(argv[0])


if __name__ == "__main__":
    raise SystemExit(main())
