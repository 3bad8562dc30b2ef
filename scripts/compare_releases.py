#!/usr/bin/env python3
"""Compare the lowering of the same jobs across TileLang releases: tables and figures under --out-dir.

The logic: tilelang_churn/figures/compare_releases.py.
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import sys
from pathlib import Path

sys.path.insert(
    0, str(Path(__file__).resolve().parent)
)  # the tilelang_churn package next to this file, even under python -I
from tilelang_churn.figures import compare_releases  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(compare_releases.main())
