#!/usr/bin/env python3
"""The command line of tilelang_churn/tables/knockout_table.py (the knockout rules call it): see its docstring."""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import argparse
import sys

from tilelang_churn.core import interrupt  # standard library only: before the slow imports


def build_parser() -> argparse.ArgumentParser:
    from tilelang_churn.tables import knockout_table  # imported under the signal guard

    parser = argparse.ArgumentParser(prog=knockout_table.PROG, description=knockout_table.__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="the gathered table (results/knockout/knockout.csv)")
    parser.add_argument("records", nargs="+", help="each configuration's knockout.json (and knockout_gpu.json)")
    return parser


def main(argv: list[str] | None = None) -> int:
    from tilelang_churn.tables import knockout_table

    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    return knockout_table.write_table(args.records, args.out)


if __name__ == "__main__":
    interrupt.run("knockout_table", main)
