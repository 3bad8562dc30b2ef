#!/usr/bin/env python3
"""One uv environment per TileLang release: python3 scripts/release_envs.py build --version V --root DIR.

The logic: tilelang_churn/releases/release_envs.py.
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the tilelang_churn package, even under python -I
from tilelang_churn.releases import release_envs  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(release_envs.main())
