#!/usr/bin/env python3
"""Compare the lowering of the same jobs across TileLang releases: tables and figures under --out-dir.

The logic: tilelang_churn/figures/release_figures.py (tables: tables/release_tables.py).
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the tilelang_churn package, even under python -I
from tilelang_churn.figures import release_figures  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(release_figures.main())
