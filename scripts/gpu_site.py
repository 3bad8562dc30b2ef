#!/usr/bin/env python3
"""A release's GPU site for the GPU stage (rule gpu_release_site; the command line): TileLang and its pins without
dependencies, layered onto the GPU machine's CUDA torch through PYTHONPATH.

    python3 scripts/gpu_site.py --version 0.1.14 --dest .envs/gpu/tilelang-0.1.14

The logic: tilelang_churn/gpu/gpu_site.py.
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the tilelang_churn package, even under python -I
from tilelang_churn.gpu import gpu_site  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(gpu_site.main())
