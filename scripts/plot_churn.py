#!/usr/bin/env python3
"""Per-job churn bars and the configuration heatmap (the plot rules' `script:`; the command line):

    python3 scripts/plot_churn.py bars --passes PASSES_CSV... --out FIGURE...
    python3 scripts/plot_churn.py heatmap --churn results/churn.csv --mode trace-env --out FIGURE...
    python3 scripts/plot_churn.py heatmap --passes PASSES_CSV... --mode trace-env --out FIGURE...

The logic: tilelang_churn/figures/plot_churn.py.
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import argparse
from contextlib import redirect_stderr, redirect_stdout

from tilelang_churn.core import interrupt, trace_modes  # standard library only: before the slow imports


def build_parser() -> argparse.ArgumentParser:
    from tilelang_churn.figures import plot_churn  # matplotlib, pandas: imported under the signal guard

    parser = argparse.ArgumentParser(description="Figures of TileLang pass churn.")
    sub = parser.add_subparsers(dest="command", required=True)
    bars = sub.add_parser("bars", help="per-pass churn bars of each job (one process draws them all)")
    bars.add_argument("--passes", required=True, nargs="+", help="each job's passes.csv")
    bars.add_argument("--out", required=True, nargs="+", help="a figure per passes.csv, in order")
    bars.add_argument("--measure", default="raw", choices=plot_churn.MEASURES, help="raw, or ignoring whitespace")
    bars.add_argument("--workers", type=int, default=1, help="figures drawn at the same time (forked processes)")
    heat = sub.add_parser("heatmap", help="passes x configurations heatmap of one mode")
    rows = heat.add_mutually_exclusive_group(required=True)
    rows.add_argument("--churn", help="churn.csv from churn_table.py")
    rows.add_argument("--passes", nargs="+", help="the jobs' passes.csv, in churn.csv's order (the rule's)")
    heat.add_argument("--out", required=True, nargs="+", help="figure path(s); format from the suffix")
    heat.add_argument("--mode", default="trace-env", choices=trace_modes.MODE_NAMES)
    heat.add_argument("--measure", default="raw", choices=plot_churn.MEASURES, help="raw, or ignoring whitespace")
    return parser


def main(argv: list[str] | None = None) -> int:
    from tilelang_churn.figures import plot_churn

    args = build_parser().parse_args(argv)
    if args.command == "bars":
        return plot_churn.draw_bars(args.passes, args.out, args.measure, args.workers)
    return plot_churn.draw_heatmap(args.churn or args.passes, args.out, args.mode, args.measure)


def _from_rule(smk) -> int:
    """params.figure: bars or heatmap."""
    measure = ["--measure", smk.params.measure]
    if smk.params.figure == "bars":
        argv = ["bars", "--passes", *smk.input.passes, *measure, "--workers", str(smk.threads), "--out", *smk.output]
    else:
        argv = ["heatmap", "--passes", *smk.input.passes, "--mode", smk.params.mode, *measure, "--out", *smk.output]
    with open(smk.log[0], "w", encoding="utf-8") as log, redirect_stdout(log), redirect_stderr(log):
        return main(argv)


if __name__ == "__main__":
    interrupt.run("plot_churn", lambda: _from_rule(snakemake) if "snakemake" in globals() else main())  # noqa: F821
