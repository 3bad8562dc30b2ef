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
from contextlib import redirect_stderr, redirect_stdout  # noqa: E402

from tilelang_churn.figures import book_figures  # noqa: E402


def _from_rule(smk) -> int:
    argv = ["--churn", smk.input.churn, "--reference", smk.input.reference, "--out-dir", smk.params.out_dir]
    # one token: argparse would take a width of "-inf" for an option
    argv += ["--language", smk.params.language, f"--width-cm={smk.params.width_cm}"]
    if smk.input.get("by_version"):
        argv += ["--by-version", smk.input.by_version]
    with open(smk.log[0], "w", encoding="utf-8") as log, redirect_stdout(log), redirect_stderr(log):
        return book_figures.main(argv)


if __name__ == "__main__":
    raise SystemExit(_from_rule(snakemake) if "snakemake" in globals() else book_figures.main())  # noqa: F821
