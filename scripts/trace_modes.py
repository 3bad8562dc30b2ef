#!/usr/bin/env python3
"""The trace modes, one line each (name, the source column of passes.csv, pass list or all passes, what it runs):

    python3 scripts/trace_modes.py

The mode table: tilelang_churn/core/trace_modes.py (MODES).
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
from tilelang_churn.core import trace_modes


def main() -> int:
    print("\n".join(trace_modes.table_lines()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
