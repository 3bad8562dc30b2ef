#!/usr/bin/env python3
"""The pass knockout of one configuration on the GPU (rule knockout_gpu; the command line too):

    python3 scripts/knockout_gpu.py --knockout .../knockout.json --device results/gpu/device.json \\
        --out .../knockout_gpu.csv --workers 16 --shape 1024,1024,1024 --target cuda-sm90

The logic, its outputs and exit statuses: tilelang_churn/gpu/knockout_gpu.py.
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the tilelang_churn package, even under python -I
from tilelang_churn.gpu import knockout_gpu  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(knockout_gpu.main())
