"""Wiring of the book's figures (their rules are in book.smk): the reference job, the figure set, the
input functions; included before rule all, which asks for the book's figures when the grid holds the
reference job.

The book's figures (chapter 12, example 4) are a fixed set under results/book/<figure_language>/, each as
PNG (300 dpi), SVG and PDF, book_figure_width_cm wide, plus FIGURES.md (what was made, what was not and
why). scripts/book_figures.py draws them; scripts/figure_style.py is the style of every figure.
"""

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger

# the stems of scripts/book_figures.py FIGURES (a test keeps the two in step; the script is not imported here:
# it loads matplotlib, which the DAG does not need)
BOOK_FIGURES = ("fig1_reference_passes", "fig2_pass_heatmap", "fig3_releases", "fig4_variants")
BOOK_RELEASES_FIGURE = "fig3_releases"  # only when the config compares releases
BOOK_FORMATS = ("png", "svg", "pdf")
BOOK_DIR = f"results/book/{config['figure_language']}"
# the reference job: figure 1 is its passes, figure 4 compares against it; the release traced beside the
# workflow (else the last configured), the heatmap's mode (trace-env when configured)
BOOK_VERSION = GRID.installed if GRID.installed in GRID.versions else GRID.versions[-1]
BOOK_REFERENCE = (
    BOOK_VERSION,
    config["book_reference"]["target"],
    config["book_reference"]["shape"],
    HEATMAP_MODE,
)
BOOK_PROBLEM = (
    None
    if BOOK_REFERENCE in GRID.jobs
    else (
        f"the book's reference job (config book_reference: target {BOOK_REFERENCE[1]!r}, shape "
        f"{BOOK_REFERENCE[2]!r}; release {BOOK_VERSION}, mode {HEATMAP_MODE}) is not in the job grid: targets "
        f"{list(GRID.targets)}, shapes {list(GRID.shapes)}. Set book_reference to one of them."
    )
)


def book_stems() -> list:
    return [s for s in BOOK_FIGURES if s != BOOK_RELEASES_FIGURE or GRID.compares_releases]


def get_book_outputs() -> list:
    """The book's files in the default target (none when the grid lacks the reference job)."""
    if BOOK_PROBLEM:
        return []
    return [f"{BOOK_DIR}/{stem}.{ext}" for stem in book_stems() for ext in BOOK_FORMATS] + [f"{BOOK_DIR}/FIGURES.md"]


def book_rule_outputs() -> dict:
    """Named outputs of the rule book_figures_render, <stem>_<ext>; the PNGs in the report with their captions."""
    outputs = {}
    for stem in book_stems():
        for ext in BOOK_FORMATS:
            path = f"{BOOK_DIR}/{stem}.{ext}"
            if ext == "png":
                path = report(
                    path,
                    caption=f"../report/book_{stem}.rst",
                    category="Book figures",
                    subcategory=f"language {config['figure_language']}",
                    labels={"figure": stem, "language": config["figure_language"]},
                )
            outputs[f"{stem}_{ext}"] = path
    outputs["manifest"] = f"{BOOK_DIR}/FIGURES.md"
    return outputs


def get_book_inputs(wildcards) -> dict:
    if BOOK_PROBLEM:
        raise WorkflowError(BOOK_PROBLEM)
    inputs = {
        "churn": "results/churn.csv",
        "reference": f"{RUN_DIR}/passes.csv".format(**GRID.jobs[BOOK_REFERENCE].wildcards),
    }
    if GRID.compares_releases:
        inputs["by_version"] = f"{COMPARE_DIR}/churn_by_version.csv"
    return inputs


if BOOK_PROBLEM:
    logger.warning(f"Book figures are left out of the default target, {BOOK_PROBLEM}")
