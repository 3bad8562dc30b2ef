#!/usr/bin/env python3
"""Check a config and print its jobs: python3 scripts/job_grid.py CONFIG.yaml.

The logic: tilelang_churn/grid/job_grid.py.
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import sys

from tilelang_churn.grid import job_grid
from tilelang_churn.grid.config_checks import ConfigError

USAGE = "usage: job_grid.py CONFIG.yaml  (checks the config and prints its jobs)"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    asked = argv in (["-h"], ["--help"])
    if len(argv) != 1 or asked:
        print(USAGE, file=sys.stdout if asked else sys.stderr)
        return 0 if asked else 2
    try:
        grid = job_grid.build_grid(job_grid.read_config(argv[0]))
    except ConfigError as error:  # one line naming the key and the value
        print(error, file=sys.stderr)
        return 2
    print("\n".join(job_grid.job_lines(grid)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
