#!/usr/bin/env python3
"""Per-pass counts of one TL_LOWER_TRACE run record: python3 scripts/run_record.py RUN_DIR.

The logic: tilelang_churn/trace/run_record.py.
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the tilelang_churn package, even under python -I
from tilelang_churn.trace import run_record  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(run_record.main())
