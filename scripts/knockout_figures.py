#!/usr/bin/env python3
"""The command line of tilelang_churn/figures/knockout_figures.py (the knockout rules call it): see its docstring."""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the tilelang_churn package, even under python -I
from tilelang_churn.figures import knockout_figures  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(knockout_figures.main())
