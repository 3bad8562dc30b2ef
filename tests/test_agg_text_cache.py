"""The workflow's Agg backend (figures/agg_text_cache.py) draws what matplotlib's own Agg draws, byte for byte,
and lays out each text once per process.

Every figure here is drawn twice with this backend (the second time from the cache) and once with matplotlib's
"Agg", and the files are compared.
"""

from __future__ import annotations

import matplotlib
import matplotlib.pyplot as plt
import pytest
from conftest import job_provenance, make_row
from matplotlib.backends import backend_agg
from tilelang_churn.core import passes_table as pt
from tilelang_churn.figures import agg_text_cache, plot_churn
from tilelang_churn.figures import figure_style as fs
from tilelang_churn.tables import frames


@pytest.fixture
def with_backend():
    """draw(backend, function, path): ``function(path)`` with ``backend`` selected, then the workflow's again."""

    def draw(backend: str, function, path):
        matplotlib.use(backend)
        try:
            function(path)
        finally:
            matplotlib.use(agg_text_cache.BACKEND)
        return path.read_bytes()

    agg_text_cache.clear()
    yield draw
    matplotlib.use(agg_text_cache.BACKEND)


def assert_same_as_agg(with_backend, tmp_path, function, suffix=".png"):
    first = with_backend(agg_text_cache.BACKEND, function, tmp_path / f"cached_1{suffix}")
    sizes = agg_text_cache.cache_sizes()
    second = with_backend(agg_text_cache.BACKEND, function, tmp_path / f"cached_2{suffix}")
    plain = with_backend("Agg", function, tmp_path / f"agg{suffix}")
    assert sizes[0] > 0 and sizes[1] > 0, "no text went through the cache"
    assert agg_text_cache.cache_sizes() == sizes, "a text drawn again was laid out again"
    assert first == plain, "the first drawing differs from matplotlib's Agg"
    assert second == plain, "the drawing from the cache differs from matplotlib's Agg"


def test_the_workflow_selects_it():
    assert matplotlib.get_backend() == agg_text_cache.BACKEND
    fig = plt.figure()
    assert isinstance(fig.canvas, agg_text_cache.FigureCanvas)
    assert isinstance(fig.canvas.get_renderer(), agg_text_cache.RendererAgg)
    plt.close(fig)


def job_rows(**provenance) -> list[dict]:
    """A job with every kind of row the bar chart draws: changes, no-ops, a failed pass, codegen."""
    prov = job_provenance(**provenance)
    rows = [make_row(0, "BindTarget", pt.STATUS_CHANGED, 1, 0, job=prov)]
    rows += [make_row(1 + i, f"Simplify{i}", pt.STATUS_NOOP, 0, 0, job=prov) for i in range(30)]
    rows += [make_row(31, "LowerTileOp", pt.STATUS_CHANGED, 420, 12, job=prov)]  # symlog: 420 against 1
    rows += [make_row(32, "LayoutInference", pt.STATUS_FAILED, job=prov, error="Check failed: (x) is false")]
    rows += [make_row(33, "codegen", pt.STATUS_CODEGEN, 98, 77, job=prov, phase="codegen", depth=0)]
    return rows


@pytest.mark.parametrize("dtype", ["float16", "\u534a\u7cbe\u5ea6"])  # the second needs the CJK fallback font
def test_a_jobs_bars_are_agg_s(with_backend, tmp_path, dtype):
    frame = frames.to_frame(job_rows(dtype=dtype))
    assert_same_as_agg(with_backend, tmp_path, lambda path: plot_churn.plot_job_bars(frame, path))


def test_the_configuration_heatmap_is_agg_s(with_backend, tmp_path):
    rows = job_rows() + job_rows(M=2048) + job_rows(target_name="cuda-sm80")
    frame = frames.to_frame(rows)
    assert_same_as_agg(with_backend, tmp_path, lambda path: plot_churn.plot_configuration_heatmap(frame, [path]))


@pytest.mark.parametrize("language", fs.LANGUAGES)
def test_the_books_reference_figure_at_print_dpi_is_agg_s(with_backend, tmp_path, language):
    rows = [row for row in job_rows() if row["status"] != pt.STATUS_FAILED]

    def draw(path):
        with fs.context(language, book=True):
            fig = plt.figure(figsize=fs.book_size(15.0, 8.0))
            ax = fig.add_subplot()
            ax.bar(range(len(rows)), [row["added"] or 0 for row in rows])
            ax.set_xticks(range(len(rows)), [f"{row['step']} {row['pass']}" for row in rows], rotation=90)
            ax.set_title({"en": "passes of the reference", "zh": "\u53c2\u8003\u914d\u7f6e\u7684 pass"}[language])
            fs.save(fig, [path], dpi=fs.PRINT_DPI)
            plt.close(fig)

    assert_same_as_agg(with_backend, tmp_path, draw)


def test_texts_at_any_angle_size_weight_and_antialiasing_are_agg_s(with_backend, tmp_path):
    def draw(path):
        with fs.context("en"):
            fig = plt.figure(figsize=(4, 3), dpi=100)
            for i, angle in enumerate((0, 30, 45, 90, 135, 270)):
                weight = "bold" if i % 2 else "normal"
                fig.text(0.1 + 0.13 * i, 0.5, "Simplify #3\nline two", rotation=angle, fontsize=6 + i,
                         fontweight=weight, antialiased=bool(i % 3), alpha=0.4 + 0.1 * i)  # fmt: skip
            fig.text(0.5, 0.9, "same text", fontsize=8)
            fig.text(0.5, 0.8, "same text", fontsize=9)  # another size: another entry, not the first's bitmap
            fs.save(fig, [path], dpi=137)
            plt.close(fig)

    assert_same_as_agg(with_backend, tmp_path, draw)


def test_the_other_formats_keep_their_own_canvases(with_backend, tmp_path):
    frame = frames.to_frame(job_rows())

    def draw(path):
        plot_churn.plot_job_bars(frame, path)

    for suffix in (".svg", ".pdf"):
        cached = with_backend(agg_text_cache.BACKEND, draw, tmp_path / f"cached{suffix}")
        plain = with_backend("Agg", draw, tmp_path / f"agg{suffix}")
        assert cached == plain, suffix


def test_the_cache_forgets_the_least_recently_used(monkeypatch):
    agg_text_cache.clear()
    monkeypatch.setattr(agg_text_cache, "MAX_TEXTS", 3)
    fig = plt.figure(figsize=(2, 1))
    for i in range(5):
        fig.text(0.1, 0.1, f"text {i}")
    fig.canvas.draw()
    plt.close(fig)
    assert agg_text_cache.cache_sizes() == (3, 3)
    assert list(key[0] for key in agg_text_cache._BITMAPS) == ["text 2", "text 3", "text 4"]


def test_another_matplotlib_series_keeps_aggs_renderer(monkeypatch):
    monkeypatch.setattr(agg_text_cache, "CACHES_TEXT", False)
    fig = plt.figure()
    renderer = fig.canvas.get_renderer()
    plt.close(fig)
    assert type(renderer) is backend_agg.RendererAgg
