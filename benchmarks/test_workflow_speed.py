"""Speed target of the workflow's set-up (run with `make bench`).

Building the DAG of the default config (132 trace jobs), config validation included, stays under
10 s on the 2-core reference machine (measured: about 1.5 s), so a dry run is cheap to repeat.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DAG_S = 10.0


def test_dry_run_of_the_default_grid_is_quick():
    started = time.perf_counter()
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "snakemake"), "-n", "--forceall", "--quiet", "rules"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - started
    assert proc.returncode == 0, proc.stderr
    assert "trace" in proc.stdout
    assert wall < DAG_S
