#!/usr/bin/env python3
"""Compare the lowering of the same jobs across TileLang releases: tables and figures under --out-dir.

The logic: tilelang_churn/figures/release_figures.py (tables: tables/release_tables.py). SIGINT, SIGTERM or the
death of its parent stop it in one line, exit 128 + the signal (tilelang_churn/core/interrupt.py).
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the tilelang_churn package, even under python -I
from tilelang_churn.core import interrupt  # noqa: E402  (standard library only: before the slow imports)

if __name__ == "__main__":
    with interrupt.stopped_in_one_line("compare_releases"):
        from tilelang_churn.figures import release_figures

        status = release_figures.main()
    raise SystemExit(status)
