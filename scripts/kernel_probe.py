#!/usr/bin/env python3
"""A kernel's settings that its source computes (decorator pass_configs and out_idx, @autotune configs), read by
importing its file; one JSON line on stdout. The config check runs it (tilelang_churn/grid/kernel_probe.py):

    python3 scripts/kernel_probe.py FILE FUNCTION[,FUNCTION...] ['{"M": 1024}']

One JSON object: each function's settings; with the fixed parameters, a callable @autotune configs is called
with them.
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import json
import sys
from pathlib import Path

from tilelang_churn.grid import kernel_probe


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) not in (2, 3):
        print("usage: kernel_probe.py FILE FUNCTION[,FUNCTION...] [FIXED_PARAMS_JSON]", file=sys.stderr)
        return 2
    fixed = json.loads(argv[2]) if len(argv) == 3 else None
    print(json.dumps(kernel_probe.settings(Path(argv[0]), argv[1].split(","), fixed)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
