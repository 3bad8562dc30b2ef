#!/usr/bin/env python3
"""The GPU stage's tables: kernel_speed.csv and churn_vs_speed.csv (rule kernel_speed; the command line).

The logic: tilelang_churn/tables/kernel_speed.py.
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the tilelang_churn package, even under python -I
from tilelang_churn.tables import kernel_speed  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(kernel_speed.main())
