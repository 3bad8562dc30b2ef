#!/usr/bin/env python3
"""One job of the GPU stage: compile a kernel with TileLang for the visible GPU, check it, time it (rule
gpu_bench); with --probe, describe the GPU (rule gpu_device), or say in one line that there is none:

    python3 scripts/gpu_bench.py --probe --out results/gpu/device.json
    python3 scripts/gpu_bench.py --shape 4096,4096,4096 --target cuda-sm90 --out speed.json

The logic: tilelang_churn/gpu/gpu_bench.py.
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the tilelang_churn package, even under python -I
from tilelang_churn.gpu import gpu_bench  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(gpu_bench.main())
