#!/usr/bin/env python3
"""Per-job churn bars and the configuration heatmap (the plot rules' `script:`; the command line):

    python3 scripts/plot_churn.py bars --passes PASSES_CSV... --out FIGURE...
    python3 scripts/plot_churn.py heatmap --churn results/churn.csv --mode trace-env --out FIGURE...

The logic: tilelang_churn/figures/plot_churn.py.
"""

# no `from __future__` import: Snakemake's script: directive puts its preamble above this file
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the tilelang_churn package, even under python -I
from contextlib import redirect_stderr, redirect_stdout  # noqa: E402

from tilelang_churn.figures import plot_churn  # noqa: E402


def _from_rule(smk) -> int:
    """params.figure: bars or heatmap."""
    measure = ["--measure", smk.params.measure]
    if smk.params.figure == "bars":
        argv = ["bars", "--passes", *smk.input.passes, *measure, "--workers", str(smk.threads), "--out", *smk.output]
    else:
        argv = ["heatmap", "--churn", smk.input.churn, "--mode", smk.params.mode, *measure, "--out", *smk.output]
    with open(smk.log[0], "w", encoding="utf-8") as log, redirect_stdout(log), redirect_stderr(log):
        return plot_churn.main(argv)


if __name__ == "__main__":
    raise SystemExit(_from_rule(snakemake) if "snakemake" in globals() else plot_churn.main())  # noqa: F821
