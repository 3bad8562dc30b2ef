#!/usr/bin/env python3
"""The GPU stage's tables: kernel_speed.csv and churn_vs_speed.csv (rule kernel_speed; the command line).

The logic: tilelang_churn/tables/kernel_speed.py.
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import argparse

from tilelang_churn.core import interrupt  # standard library only: before the slow imports


def build_parser() -> argparse.ArgumentParser:
    from tilelang_churn.tables import kernel_speed  # imported under the signal guard

    parser = argparse.ArgumentParser(prog="kernel_speed.py", description=kernel_speed.__doc__.split("\n\n")[0])
    parser.add_argument("--summary", required=True, help="churn_summary.csv")
    parser.add_argument("--mode", required=True, help="the trace mode whose churn is joined")
    parser.add_argument("--speed", required=True, help="kernel_speed.csv to write")
    parser.add_argument("--joined", required=True, help="churn_vs_speed.csv to write")
    parser.add_argument("speed_json", nargs="*", help="the GPU jobs' speed.json")
    return parser


def main(argv: list[str] | None = None) -> int:
    from tilelang_churn.tables import kernel_speed

    args = build_parser().parse_args(argv)
    return kernel_speed.build_tables(args.speed_json, args.summary, args.mode, args.speed, args.joined)


if __name__ == "__main__":
    interrupt.run("kernel_speed", main)
