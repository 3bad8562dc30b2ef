#!/usr/bin/env python3
"""Gather per-job passes.csv tables into churn.csv and churn_summary.csv (the rule's `script:`; the command line):

    python3 scripts/churn_table.py --out results/churn.csv --summary results/churn_summary.csv PASSES_CSV...

The logic: tilelang_churn/tables/churn_table.py.
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import argparse
from contextlib import redirect_stderr, redirect_stdout

from tilelang_churn.core import interrupt  # standard library only: before the slow imports


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Gather per-job passes.csv tables into churn.csv and churn_summary.csv."
    )
    parser.add_argument("--out", required=True, help="churn.csv: all rows of all inputs")
    parser.add_argument("--summary", required=True, help="churn_summary.csv: one row per job")
    parser.add_argument("passes", nargs="+", metavar="PASSES_CSV", help="per-job passes.csv files")
    return parser


def main(argv: list[str] | None = None) -> int:
    from tilelang_churn.tables import churn_table  # pandas: imported under the signal guard

    args = build_parser().parse_args(argv)
    return churn_table.build_tables(args.passes, args.out, args.summary)


def _from_rule(smk) -> int:
    from tilelang_churn.tables import churn_table

    with open(smk.log[0], "w", encoding="utf-8") as log, redirect_stdout(log), redirect_stderr(log):
        return churn_table.build_tables(list(smk.input), smk.output.churn, smk.output.summary)


if __name__ == "__main__":
    interrupt.run("churn_table", lambda: _from_rule(snakemake) if "snakemake" in globals() else main())  # noqa: F821
