#!/usr/bin/env python3
"""The GPU stage's figures: one per kernel (rule speed_figures; the command line).

The logic: tilelang_churn/figures/speed_figures.py.
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the tilelang_churn package, even under python -I
from tilelang_churn.figures import speed_figures  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(speed_figures.main())
