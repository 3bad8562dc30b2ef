"""figure_style.save writes its PNGs itself (_png_unfiltered): the image matplotlib's own PNG holds, pixel for
pixel, with the same dpi and no text chunk, at any zlib level, and the same bytes each time."""

from __future__ import annotations

import io

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
from PIL import Image
from tilelang_churn.figures import figure_style as fs


def a_figure():
    """Text, lines, hatches, a transparent patch and a colour map: what the workflow's figures hold."""
    fig, ax = plt.subplots(figsize=(4.13, 2.71))
    ax.bar([0, 1, 2], [3, -2, 5], color=["#2e8b3a", "#c62828", "#1f77b4"], hatch="//")
    ax.imshow(np.arange(12).reshape(3, 4), extent=(2.5, 4, -2, 0), cmap="viridis")
    ax.axvspan(0.5, 1.5, alpha=0.3, color="orange")
    ax.set_title("14 LayoutInference  +12 / -3")
    fig.suptitle("changed 35 / 85 IR passes")
    return fig


def decoded(png: bytes) -> tuple[Image.Image, np.ndarray]:
    image = Image.open(io.BytesIO(png))
    image.load()
    return image, np.asarray(image)


@pytest.mark.parametrize("dpi, level", [(fs.SCREEN_DPI, 3), (fs.PRINT_DPI, 6), (72, 0)])
def test_the_pixels_and_dpi_of_matplotlibs_png(tmp_path, dpi, level):
    with fs.context("en"):
        fig = a_figure()
        fs.save(fig, tmp_path / "ours.png", dpi=dpi, png_compress_level=level)
        theirs = io.BytesIO()
        fig.savefig(theirs, format="png", dpi=dpi, metadata=fs.SAVE_METADATA["png"])
        plt.close(fig)
    ours, our_pixels = decoded((tmp_path / "ours.png").read_bytes())
    reference, reference_pixels = decoded(theirs.getvalue())
    assert (ours.mode, ours.size) == (reference.mode, reference.size) == ("RGBA", reference.size)
    assert np.array_equal(our_pixels, reference_pixels)
    assert ours.info["dpi"] == pytest.approx(reference.info["dpi"]) and ours.text == reference.text == {}


def test_the_same_bytes_each_time_and_the_figures_own_size_whatever_the_matplotlibrc(tmp_path):
    with matplotlib.rc_context({"savefig.bbox": "tight"}), fs.context("en"):
        fig = a_figure()
        fs.save(fig, [tmp_path / "first.png", tmp_path / "second.png"])
        plt.close(fig)
    assert (tmp_path / "first.png").read_bytes() == (tmp_path / "second.png").read_bytes()
    image, _ = decoded((tmp_path / "first.png").read_bytes())
    assert image.size == (int(4.13 * fs.SCREEN_DPI), int(2.71 * fs.SCREEN_DPI))
