"""grid/book_reference.py on its own: the book's reference job in a grid (config book_reference), whether figure 4
has a variant to draw, the jobs the book draws from, and why a grid cannot have the reference."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

from test_job_grid import grid_of
from tilelang_churn.grid import book_reference

REFERENCE = {"target": "cuda-sm90", "shape": "1024x1024x1024"}
SHAPES = [{"M": 1024, "N": 1024, "K": 1024}, {"M": 1024, "N": 1024, "K": 1024, "block": [32, 32, 32]}]


def release(*lacks: str) -> SimpleNamespace:
    """What a release can do, as Grid.probed holds it (capabilities.Capabilities)."""
    return SimpleNamespace(supports=lambda mode: mode not in lacks)


def probed(grid, found: dict):
    """The grid as if its versions had been probed so before any build (Grid.probed)."""
    return replace(grid, probed=found)


def test_the_reference_is_the_installed_releases_job_in_the_heatmaps_mode():
    grid = grid_of(shapes=SHAPES, modes=["instrument", "trace-env"])
    book = book_reference.resolve(probed(grid, {"0.1.15": release()}), REFERENCE, "trace-env")
    assert book.key == ("0.1.15", "cuda-sm90", "1024x1024x1024", "trace-env") and book.problem is None
    assert (book.version, book.mode) == ("0.1.15", "trace-env")
    assert book_reference.has_variants(grid, book)  # the same kernel with another block size: one respect
    jobs = book_reference.reference_jobs(grid, book)
    assert [(job.shape, job.mode) for job in jobs] == [
        ("1024x1024x1024", "trace-env"),
        ("1024x1024x1024_b32x32x32", "trace-env"),
    ]


def test_a_release_without_the_heatmaps_mode_takes_its_first_mode_it_has():
    grid = grid_of(shapes=SHAPES, modes=["instrument", "trace-env"])
    book = book_reference.resolve(probed(grid, {"0.1.15": release("trace-env")}), REFERENCE, "trace-env")
    assert book.mode == "instrument" and book.problem is None
    unknown = book_reference.resolve(probed(grid, {}), REFERENCE, "trace-env")  # not probed yet: every mode
    assert unknown.mode == "trace-env"


def test_one_configuration_has_no_variant_to_draw():
    grid = grid_of(shapes=SHAPES[:1], modes=["instrument"])
    book = book_reference.resolve(probed(grid, {}), REFERENCE, "instrument")
    assert not book_reference.has_variants(grid, book)


def test_why_a_grid_cannot_have_the_reference_is_said_in_one_line():
    grid = grid_of(shapes=SHAPES[1:], modes=["trace-env"])
    book = book_reference.resolve(probed(grid, {}), REFERENCE, "trace-env")
    assert book.problem == (
        "the book's reference job (config book_reference: target 'cuda-sm90', shape '1024x1024x1024'; release "
        "0.1.15, mode trace-env) is not in the job grid: targets ['cuda-sm90'], shapes ['1024x1024x1024_b32x32x32']. "
        "Set book_reference to one of them."
    )
    none = book_reference.resolve(probed(grid, {"0.1.15": release("trace-env")}), REFERENCE, "trace-env")
    assert none.problem == (
        "the book's reference release 0.1.15 has the tool of none of the configured modes ['trace-env']; add mode "
        "instrument, which every release has."
    )
