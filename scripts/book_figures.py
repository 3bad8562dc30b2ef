#!/usr/bin/env python3
"""The book's figures (chapter 12, example 4; the book rule's `script:`; the command line):

    python scripts/book_figures.py --churn results/churn.csv --reference PASSES_CSV \\
        [--by-version results/compare/churn_by_version.csv] --out-dir results/book/en [--language en|zh] [--width-cm 15]

The figures, FIGURES.md and the exit statuses: tilelang_churn/figures/book_figures.py.
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the tilelang_churn package, even under python -I
import argparse  # noqa: E402
from contextlib import redirect_stderr, redirect_stdout  # noqa: E402

from tilelang_churn.figures import book_figures  # noqa: E402
from tilelang_churn.figures import figure_style as fs  # noqa: E402


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="The book's figures of TileLang pass churn (chapter 12).")
    tables = parser.add_mutually_exclusive_group(required=True)
    tables.add_argument("--churn", help="churn.csv (churn_table.py)")
    tables.add_argument(
        "--passes", nargs="+", help="or the passes.csv files of the jobs to draw from, in churn.csv's order"
    )
    parser.add_argument("--reference", required=True, help="the reference job's passes.csv (fig1, fig4)")
    parser.add_argument("--by-version", default=None, help="churn_by_version.csv of the comparison of releases")
    parser.add_argument("--out-dir", required=True, help="folder of the figures and FIGURES.md")
    parser.add_argument("--language", default="en", choices=fs.LANGUAGES, help="language of the labels")
    parser.add_argument("--width-cm", type=float, default=book_figures.DEFAULT_WIDTH_CM, help="figure width in cm")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return book_figures.draw_book(
        args.churn or args.passes, args.reference, args.out_dir, args.language, args.width_cm, args.by_version
    )


def _from_rule(smk) -> int:
    argv = ["--passes", *smk.input.passes, "--reference", smk.input.reference, "--out-dir", smk.params.out_dir]
    # one token: argparse would take a width of "-inf" for an option
    argv += ["--language", smk.params.language, f"--width-cm={smk.params.width_cm}"]
    if smk.input.get("by_version"):
        argv += ["--by-version", smk.input.by_version]
    with open(smk.log[0], "w", encoding="utf-8") as log, redirect_stdout(log), redirect_stderr(log):
        return main(argv)


if __name__ == "__main__":
    raise SystemExit(_from_rule(snakemake) if "snakemake" in globals() else main())  # noqa: F821
