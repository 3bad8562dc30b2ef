"""Wiring of the book's figures (their rules are in book.smk): the reference job, the figure set, the
input functions; included before rule all, which asks for the book's figures when the grid holds the
reference job.

The book's figures (chapter 12, example 4) are a fixed set under results/book/<figure_language>/, each as
PNG (300 dpi), SVG and PDF, book_figure_width_cm wide, plus FIGURES.md (what was made, what was not and
why). scripts/book_figures.py draws them; scripts/tilelang_churn/figures/figure_style.py is the style of every figure.
"""

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger

from tilelang_churn.grid import book_reference

# the stems of scripts/book_figures.py FIGURES (a test keeps the two in step; the script is not imported here:
# it loads matplotlib, which the DAG does not need)
BOOK_FIGURES = ("fig1_reference_passes", "fig2_pass_heatmap", "fig3_releases", "fig4_variants")
BOOK_RELEASES_FIGURE = "fig3_releases"  # only when the config compares releases
BOOK_VARIANTS_FIGURE = "fig4_variants"  # only when a configuration differs from the reference in one respect
BOOK_FORMATS = ("png", "svg", "pdf")
BOOK_DIR = f"results/book/{config['figure_language']}"
# the reference job: figure 1 is its passes, figure 4 compares against it (book_reference.resolve: its release,
# mode, and why the grid cannot have it)
BOOK = book_reference.resolve(GRID, config["book_reference"], HEATMAP_MODE)
BOOK_REFERENCE = BOOK.key
BOOK_PROBLEM = BOOK.problem


def book_has_variants() -> bool:
    """Whether figure 4 can be drawn (book_reference.has_variants). Otherwise the script says in FIGURES.md and its
    log that figure 4 was not made, and why."""
    return book_reference.has_variants(GRID, BOOK)


def book_stems() -> list:
    """The figures this grid can have; the others are not outputs (FIGURES.md says why they were not made)."""
    left_out = set()
    if not GRID.compares_releases:
        left_out.add(BOOK_RELEASES_FIGURE)
    if not BOOK_PROBLEM and not book_has_variants():
        left_out.add(BOOK_VARIANTS_FIGURE)
    return [stem for stem in BOOK_FIGURES if stem not in left_out]


def get_book_outputs() -> list:
    """The book's files in the default target (none when the grid lacks the reference job)."""
    if BOOK_PROBLEM:
        return []
    return [f"{BOOK_DIR}/{stem}.{ext}" for stem in book_stems() for ext in BOOK_FORMATS] + [f"{BOOK_DIR}/FIGURES.md"]


def book_rule_outputs() -> dict:
    """Named outputs of the rule book_figures_render, <stem>_<ext> (figure 3 is book_releases_figure's) and the
    manifest; the PNGs in the report with their captions."""
    outputs = book_figure_outputs([stem for stem in book_stems() if stem != BOOK_RELEASES_FIGURE])
    outputs["manifest"] = f"{BOOK_DIR}/FIGURES.md"
    return outputs


def book_figure_outputs(stems: list) -> dict:
    """{<stem>_<ext>: path} of the figures STEMS, the PNGs in the report with their captions."""
    outputs = {}
    for stem in stems:
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
    return outputs


def book_jobs() -> list:
    """The jobs the book's figures draw from: its reference's release, mode and kernel, in grid order
    (book_reference.reference_jobs)."""
    return book_reference.reference_jobs(GRID, BOOK)


# cores from which the book's figures are drawn side by side (book_threads)
BOOK_SIDE_BY_SIDE_CORES = 8


def book_threads(wildcards) -> int:
    """Its three figures side by side, a process each, where cores are many (the end of a run waits for the longest
    figure only); on fewer cores one, so that it takes the first free core instead of waiting for three."""
    return 3 if workflow_cores() >= BOOK_SIDE_BY_SIDE_CORES else 1


def get_book_inputs(wildcards) -> dict:
    if BOOK_PROBLEM:
        raise WorkflowError(BOOK_PROBLEM)
    # the jobs the figures draw from, not churn.csv: editing another kernel reruns nothing of the book
    jobs = book_jobs()
    return {
        "passes": per_job(f"{RUN_DIR}/passes.csv", jobs),
        "runs": per_job(f"{RUN_DIR}/run.json", jobs),  # book_figures.py checks each passes.csv against it
        "reference": book_reference_passes(),
    }


def book_reference_passes() -> list:
    """The reference job's passes.csv, in each mode it may take (book_reference.reference_candidates)."""
    keys = book_reference.reference_candidates(BOOK)
    return [f"{RUN_DIR}/passes.csv".format(**GRID.jobs[key].wildcards) for key in keys]


def get_book_releases_inputs(wildcards) -> dict:
    """Figure 3's: the comparison's table (not the jobs: adding a release reruns this figure alone of the book)."""
    if BOOK_PROBLEM:
        raise WorkflowError(BOOK_PROBLEM)
    return {"by_version": f"{COMPARE_DIR}/churn_by_version.csv", "reference": book_reference_passes()}


if BOOK_PROBLEM:
    logger.warning(f"Book figures are left out of the default target, {BOOK_PROBLEM}")
