#!/usr/bin/env python3
"""results/versions.csv: one row per entry of config versions (the rule's `script:`).

The logic: tilelang_churn/tables/version_table.py.
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
from contextlib import redirect_stderr, redirect_stdout

from tilelang_churn.core import interrupt  # standard library only: before the slow imports


def _from_rule(smk) -> int:
    from tilelang_churn.tables import version_table

    with open(smk.log[0], "w", encoding="utf-8") as log, redirect_stdout(log), redirect_stderr(log):
        return version_table.write(smk.params.entries, smk.params.markers, smk.output[0])


if __name__ == "__main__":
    interrupt.run("version_table", lambda: _from_rule(snakemake))  # noqa: F821
