#!/usr/bin/env python3
"""The GPU stage's figures: one per kernel (rule speed_figures; the command line).

The logic: tilelang_churn/figures/speed_figures.py.
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import argparse

from tilelang_churn.core import interrupt  # standard library only: before the slow imports


def build_parser() -> argparse.ArgumentParser:
    from tilelang_churn.figures import speed_figures  # matplotlib, pandas: imported under the signal guard

    parser = argparse.ArgumentParser(prog="speed_figures.py", description=speed_figures.__doc__.split("\n\n")[0])
    parser.add_argument("--joined", required=True, help="churn_vs_speed.csv")
    parser.add_argument("--out-dir", required=True)
    parser.add_argument("--kernels", required=True, help="comma-separated kernel names, one figure each")
    parser.add_argument("--formats", default="png,svg")
    return parser


def main(argv: list[str] | None = None) -> int:
    from tilelang_churn.figures import speed_figures

    args = build_parser().parse_args(argv)
    return speed_figures.build(args.joined, args.out_dir, args.kernels.split(","), tuple(args.formats.split(",")))


if __name__ == "__main__":
    interrupt.run("speed_figures", main)
