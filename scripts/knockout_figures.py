#!/usr/bin/env python3
"""The command line of tilelang_churn/figures/knockout_figures.py (the knockout rules call it): see its docstring."""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import argparse

from tilelang_churn.core import interrupt  # standard library only: before the slow imports


def build_parser() -> argparse.ArgumentParser:
    from tilelang_churn.figures import knockout_figures  # matplotlib, pandas: imported under the signal guard

    description = knockout_figures.__doc__.split("\n\n")[0]
    parser = argparse.ArgumentParser(prog="knockout_figures.py", description=description)
    parser.add_argument("--runs-dir", required=True, help="results/knockout/runs")
    parser.add_argument("--out-dir", required=True, help="results/knockout/figures")
    parser.add_argument("--formats", default="png")
    parser.add_argument("records", nargs="+", help="each configuration's knockout.json (and knockout_gpu.json)")
    return parser


def main(argv: list[str] | None = None) -> int:
    from tilelang_churn.figures import knockout_figures

    args = build_parser().parse_args(argv)
    return knockout_figures.draw_figures(args.records, args.runs_dir, args.out_dir, tuple(args.formats.split(",")))


if __name__ == "__main__":
    interrupt.run("knockout_figures", main)
