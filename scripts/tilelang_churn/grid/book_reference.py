"""The book's reference job (config book_reference): the job whose passes figure 1 draws and against which figure 4
compares the configurations that differ from it in one respect, and why the book's figures cannot be made when the
grid lacks it. Read by the workflow's book wiring (workflow/rules/book_common.smk) as the DAG is built.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tilelang_churn.core import passes_table
from tilelang_churn.grid.config_checks import some
from tilelang_churn.grid.grid_job import Job
from tilelang_churn.grid.grid_model import Grid


@dataclass(frozen=True)
class BookReference:
    key: tuple[str, str, str, str]  # (release, target, configuration folder, mode): a key of Grid.jobs when in the grid
    problem: str | None  # why the book's figures cannot be made; None: the grid holds the reference job
    # the modes the reference may take, in order (its mode first): more than one for a release not probed before its
    # environment is built, whose book then takes the first mode whose job ran (book_figures.reference_job)
    modes: tuple[str, ...] = ()

    @property
    def version(self) -> str:
        return self.key[0]

    @property
    def mode(self) -> str:
        return self.key[3]


def resolve(grid: Grid, reference: Mapping, heatmap_mode: str) -> BookReference:
    """config book_reference (its target and shape) as a job of the grid: the release traced beside the workflow
    (else the last configured), the heatmap's mode (``heatmap_mode``) unless that release lacks the mode's tool
    (trace-env before 0.1.13: one "unsupported" row, no passes to draw), then the first mode it has (as probed
    before any environment is built: Grid.probed; a release not probed yet is taken to have them all)."""
    version = grid.installed if grid.installed in grid.versions else grid.versions[-1]
    found = grid.probed.get(version)
    modes = [mode for mode in dict.fromkeys([heatmap_mode, *grid.modes]) if found is None or found.supports(mode)]
    # probed: the one mode; not probed yet: every configured mode that is in the grid, for the script to choose from
    candidates = (
        tuple(modes[:1])
        if found is not None
        else tuple(mode for mode in modes if (version, reference["target"], reference["shape"], mode) in grid.jobs)
    )
    key = (version, reference["target"], reference["shape"], modes[0] if modes else heatmap_mode)
    if not modes:
        problem = (
            f"the book's reference release {version} has the tool of none of the configured modes "
            f"{list(grid.modes)}; add mode instrument, which every release has."
        )
    elif key not in grid.jobs:
        problem = (
            f"the book's reference job (config book_reference: target {key[1]!r}, shape "
            f"{key[2]!r}; release {version}, mode {key[3]}) is not in the job grid: "
            f"{some(grid.targets, 'targets')}, {some(grid.shapes, 'shapes')}. "
            "Set book_reference to one of them."
        )
    else:
        problem = None
    return BookReference(key, problem, candidates or key[3:])


def has_variants(grid: Grid, reference: BookReference) -> bool:
    """Whether figure 4 can be drawn: a configuration of the reference's kernel in the grid (the reference's release
    and mode: every target x configuration) differs from the reference in exactly one respect, as book_figures.py
    decides from the tables (passes_table.differing_axes of their provenance columns)."""

    own = grid.lowerings[(reference.version, reference.key[1], reference.key[2])].provenance(reference.version)
    others = (
        lowering.provenance(reference.version)
        for (version, _, _), lowering in grid.lowerings.items()  # the targets each configuration has
        if version == reference.version
    )
    return any(
        len(passes_table.differing_axes(other, own)) == 1 for other in others if other["kernel"] == own["kernel"]
    )


def reference_jobs(grid: Grid, reference: BookReference) -> list[Job]:
    """The jobs the book's figures draw from: its reference's release, mode and kernel, in grid order (churn.csv's)."""
    kernel = grid.jobs[reference.key].spec.kernel
    return [
        job
        for (version, _, _, mode), job in grid.jobs.items()
        if version == reference.version and mode in (reference.modes or (reference.mode,)) and job.spec.kernel == kernel
    ]


def reference_candidates(reference: BookReference) -> list[tuple[str, str, str, str]]:
    """The grid keys of the reference job in each mode it may take, in order (BookReference.modes)."""
    return [(*reference.key[:3], mode) for mode in reference.modes or (reference.mode,)]
