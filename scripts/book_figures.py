#!/usr/bin/env python3
"""The book's figures (chapter 12, example 4; the book rule's `script:`; the command line):

    python scripts/book_figures.py --churn results/churn.csv --reference PASSES_CSV \\
        [--by-version results/compare/churn_by_version.csv | --releases-apart] --out-dir results/book/en \\
        [--language en|zh] [--width-cm 15]
    python scripts/book_figures.py --releases-only --by-version results/compare/churn_by_version.csv \\
        --reference PASSES_CSV --out-dir results/book/en [--language en|zh] [--width-cm 15]

The second draws figure 3 alone; the first, with ``--releases-apart``, all the others and FIGURES.md, which
lists figure 3 too (the workflow's two jobs: adding a release reruns figure 3 only).

The figures, FIGURES.md and the exit statuses: tilelang_churn/figures/book_figures.py.
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import argparse
from contextlib import redirect_stderr, redirect_stdout

from tilelang_churn.core import interrupt  # standard library only: before the slow imports


def build_parser() -> argparse.ArgumentParser:
    from tilelang_churn.figures import book_figures  # matplotlib, pandas: imported under the signal guard
    from tilelang_churn.figures import figure_style as fs

    parser = argparse.ArgumentParser(description="The book's figures of TileLang pass churn (chapter 12).")
    tables = parser.add_mutually_exclusive_group(required=True)
    tables.add_argument("--churn", help="churn.csv (churn_table.py)")
    tables.add_argument(
        "--passes", nargs="+", help="or the passes.csv files of the jobs to draw from, in churn.csv's order"
    )
    tables.add_argument(
        "--releases-only", action="store_true", help="figure 3 alone, from --by-version (no FIGURES.md)"
    )
    parser.add_argument(
        "--reference",
        required=True,
        nargs="+",
        help="the reference job's passes.csv (fig1, fig3, fig4); several: the same job in each mode its release may "
        "have, the first that ran is the reference",
    )
    parser.add_argument("--by-version", default=None, help="churn_by_version.csv of the comparison of releases")
    parser.add_argument(
        "--releases-apart",
        action="store_true",
        help="figure 3 is drawn by a --releases-only run: FIGURES.md lists its files, this run leaves them be",
    )
    parser.add_argument("--out-dir", required=True, help="folder of the figures and FIGURES.md")
    parser.add_argument("--language", default="en", choices=fs.LANGUAGES, help="language of the labels")
    parser.add_argument("--width-cm", type=float, default=book_figures.DEFAULT_WIDTH_CM, help="figure width in cm")
    parser.add_argument("--workers", type=int, default=1, help="figures drawn at the same time (forked processes)")
    return parser


def main(argv: list[str] | None = None) -> int:
    from tilelang_churn.figures import book_figures

    parser = build_parser()
    args = parser.parse_args(argv)
    if args.releases_only and not args.by_version:
        parser.error("argument --releases-only: needs --by-version (figure 3 is drawn from it)")
    if args.releases_apart and (args.by_version or args.releases_only):
        parser.error("argument --releases-apart: not with --by-version or --releases-only (figure 3 is drawn apart)")
    tables = None if args.releases_only else args.churn or args.passes
    return book_figures.draw_book(
        tables, args.reference, args.out_dir, args.language, args.width_cm, args.by_version, args.releases_apart,
        args.workers,
    )  # fmt: skip


def _from_rule(smk) -> int:
    """The rules book_figures_render (every figure but figure 3, and FIGURES.md) and book_releases_figure."""
    if smk.input.get("by_version"):
        argv = ["--releases-only", "--by-version", smk.input.by_version]
    else:
        argv = ["--passes", *smk.input.passes] + (["--releases-apart"] if smk.params.releases_apart else [])
    reference = smk.input.reference  # one passes.csv, or the same job in each mode it may take
    reference = [reference] if isinstance(reference, str) else list(reference)
    argv += ["--reference", *reference, "--out-dir", smk.params.out_dir]
    # one token: argparse would take a width of "-inf" for an option
    argv += ["--language", smk.params.language, f"--width-cm={smk.params.width_cm}", "--workers", str(smk.threads)]
    with open(smk.log[0], "w", encoding="utf-8") as log, redirect_stdout(log), redirect_stderr(log):
        return main(argv)


if __name__ == "__main__":
    interrupt.run("book_figures", lambda: _from_rule(snakemake) if "snakemake" in globals() else main())  # noqa: F821
