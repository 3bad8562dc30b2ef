"""Wiring of the book's figures (their rules are in book.smk): the reference job, the figure set, the
input functions; included before rule all, which asks for the book's figures when the grid holds the
reference job.

The book's figures (chapter 12, example 4) are a fixed set under results/book/<figure_language>/, each as
PNG (300 dpi), SVG and PDF, book_figure_width_cm wide, plus FIGURES.md (what was made, what was not and
why). scripts/book_figures.py draws them; scripts/tilelang_churn/figures/figure_style.py is the style of every figure.
"""

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger

from tilelang_churn.core import passes_table  # scripts/, on sys.path from common.smk (standard library only)

# the stems of scripts/book_figures.py FIGURES (a test keeps the two in step; the script is not imported here:
# it loads matplotlib, which the DAG does not need)
BOOK_FIGURES = ("fig1_reference_passes", "fig2_pass_heatmap", "fig3_releases", "fig4_variants")
BOOK_RELEASES_FIGURE = "fig3_releases"  # only when the config compares releases
BOOK_VARIANTS_FIGURE = "fig4_variants"  # only when a configuration differs from the reference in one respect
BOOK_FORMATS = ("png", "svg", "pdf")
BOOK_DIR = f"results/book/{config['figure_language']}"
# the reference job: figure 1 is its passes, figure 4 compares against it; the release traced beside the
# workflow (else the last configured), the heatmap's mode (trace-env when configured) unless that release lacks
# the mode's tool (trace-env before 0.1.13: one "unsupported" row, no passes to draw), then the first mode it has
BOOK_VERSION = GRID.installed if GRID.installed in GRID.versions else GRID.versions[-1]
_BOOK_RELEASE = release_envs.load_releases().get(BOOK_VERSION)
BOOK_MODES = [
    mode for mode in dict.fromkeys([HEATMAP_MODE, *GRID.modes]) if _BOOK_RELEASE is None or _BOOK_RELEASE.supports(mode)
]
BOOK_MODE = BOOK_MODES[0] if BOOK_MODES else HEATMAP_MODE
BOOK_REFERENCE = (
    BOOK_VERSION,
    config["book_reference"]["target"],
    config["book_reference"]["shape"],
    BOOK_MODE,
)
if not BOOK_MODES:
    BOOK_PROBLEM = (
        f"the book's reference release {BOOK_VERSION} has the tool of none of the configured modes "
        f"{list(GRID.modes)}; add mode instrument, which every release has."
    )
elif BOOK_REFERENCE not in GRID.jobs:
    BOOK_PROBLEM = (
        f"the book's reference job (config book_reference: target {BOOK_REFERENCE[1]!r}, shape "
        f"{BOOK_REFERENCE[2]!r}; release {BOOK_VERSION}, mode {BOOK_MODE}) is not in the job grid: "
        f"{job_grid.some(GRID.targets, 'targets')}, {job_grid.some(GRID.shapes, 'shapes')}. "
        "Set book_reference to one of them."
    )
else:
    BOOK_PROBLEM = None


def _kernel(target: str, configuration: str) -> dict:
    """The provenance columns of a grid configuration (of the book's release), which
    passes_table.differing_axes compares."""
    return GRID.lowerings[(BOOK_VERSION, target, configuration)].provenance(BOOK_VERSION)


def book_has_variants() -> bool:
    """Whether figure 4 can be drawn: a configuration of the reference's kernel in the grid (the reference's
    release and mode: every target x configuration) differs from the reference in exactly one respect, as
    book_figures.py decides from the tables. Otherwise the script says in FIGURES.md and its log that figure 4
    was not made, and why."""
    reference = _kernel(BOOK_REFERENCE[1], BOOK_REFERENCE[2])
    return any(
        len(passes_table.differing_axes(kernel, reference)) == 1
        for kernel in (
            _kernel(target, configuration) for target in GRID.targets for configuration in GRID.configurations
        )
        if kernel["kernel"] == reference["kernel"]
    )


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
    """The jobs the book's figures draw from: its reference's release, mode and kernel, in grid order (churn.csv's)."""
    kernel = GRID.jobs[BOOK_REFERENCE].spec.kernel
    return [
        job
        for (version, _, _, mode), job in GRID.jobs.items()
        if version == BOOK_VERSION and mode == BOOK_MODE and job.spec.kernel == kernel
    ]


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


def book_reference_passes() -> str:
    return f"{RUN_DIR}/passes.csv".format(**GRID.jobs[BOOK_REFERENCE].wildcards)


def get_book_releases_inputs(wildcards) -> dict:
    """Figure 3's: the comparison's table (not the jobs: adding a release reruns this figure alone of the book)."""
    if BOOK_PROBLEM:
        raise WorkflowError(BOOK_PROBLEM)
    return {"by_version": f"{COMPARE_DIR}/churn_by_version.csv", "reference": book_reference_passes()}


if BOOK_PROBLEM:
    logger.warning(f"Book figures are left out of the default target, {BOOK_PROBLEM}")
