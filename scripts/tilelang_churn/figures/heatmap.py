"""The one drawer of churn heatmaps: a matrix of pass runs (rows) x columns (configurations or releases).

A cell is the lines a pass changed (+added + -deleted): a positive count takes the churn colour map on a log
scale with its number printed in it; 0 (the pass ran and changed nothing) is pale; a missing value (the pass
did not run there) shows the hatched grey axes background; a failed run is a red cross. Every heatmap of the
workflow draws its cells, colour bar and legend entries here, so they read the same: the configuration heatmap
(plot_churn), the release heatmap (release_figures) and the book's figure 2 (book_figures), which differ only in
sizes and words.
"""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib.colors as mcolors
import matplotlib.ticker as mticker
import numpy as np
from matplotlib.patches import Patch, Rectangle

from tilelang_churn.figures import figure_style as fs

COLORBAR_TICKS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000)
MAX_TICKS = 10  # more: every other one


@dataclass(frozen=True)
class CellStyle:
    """Sizes and words of the cells: the workflow's screen figures by default, the book's smaller."""

    linewidth: float = 0.6  # the white lines between cells
    hatch: str = "///"  # of absent cells
    value_fontsize: float = 7.5
    failed_text: str = "\u2715 failed"
    failed_fontsize: float = 8.0
    failed_bold: bool = True


BOOK_CELLS = CellStyle(linewidth=0.5, hatch="////", value_fontsize=5.0, failed_text="\u00d7", failed_fontsize=7.0,
                       failed_bold=False)  # fmt: skip


def absent_background(ax, style: CellStyle = CellStyle()) -> None:
    """The axes' background as an absent cell (hatched grey): what a cell left undrawn shows."""
    ax.set_facecolor(fs.ABSENT_COLOR)
    ax.patch.set_hatch(style.hatch)
    ax.patch.set_edgecolor(fs.ABSENT_EDGE)


def draw_cells(ax, values: np.ndarray, failed: np.ndarray, style: CellStyle = CellStyle()):
    """Draw the matrix into ``ax`` (row 0 at the bottom until figure_style.matrix_axes turns it); returns
    (mesh, norm) for the colour bar. ``values``: float, NaN where absent; ``failed``: bool of the same shape."""
    absent_background(ax, style)
    cmap = fs.churn_cmap()
    norm = mcolors.LogNorm(vmin=1, vmax=max(2.0, float(np.nanmax(values, initial=0.0))))
    nrows, ncols = values.shape
    edges_x, edges_y = np.arange(ncols + 1) - 0.5, np.arange(nrows + 1) - 0.5
    positive = np.ma.masked_where(~(values > 0), values)
    zero = np.ma.masked_where(~(values == 0), values)
    lines = {"edgecolors": "white", "linewidth": style.linewidth}
    mesh = ax.pcolormesh(edges_x, edges_y, positive, cmap=cmap, norm=norm, **lines)
    ax.pcolormesh(edges_x, edges_y, zero, cmap=mcolors.ListedColormap([fs.ZERO_COLOR]), **lines)
    # a cell's text lies inside its cell, so inside the axes: left out of the layout, which would otherwise measure
    # each of them (thousands in a large grid) on every draw
    rows, columns = np.nonzero(values > 0)
    rgba = cmap(norm(values[rows, columns]))
    light = 0.299 * rgba[:, 0] + 0.587 * rgba[:, 1] + 0.114 * rgba[:, 2] > 0.5  # dark text on light colours
    for r, c, on_light in zip(rows, columns, light):
        ax.text(c, r, f"{int(values[r, c])}", ha="center", va="center", fontsize=style.value_fontsize,
                color="black" if on_light else "white", in_layout=False)  # fmt: skip
    weight = {"fontweight": "bold"} if style.failed_bold else {}
    for r, c in zip(*np.nonzero(failed)):
        ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, facecolor=fs.FAILED_FILL, edgecolor="white",
                               lw=style.linewidth))  # fmt: skip
        ax.text(c, r, style.failed_text, ha="center", va="center", fontsize=style.failed_fontsize,
                color=fs.FAILED_COLOR, in_layout=False, **weight)  # fmt: skip
    return mesh, norm


def colorbar(fig, ax, mesh, norm, label: str, *, shrink: float, aspect: float = 30, pad: float = 0.02):
    """The churn colour bar: log ticks 1, 2, 5, 10, ... up to the largest value, labelled without exponents."""
    cbar = fig.colorbar(mesh, ax=ax, shrink=shrink, aspect=aspect, pad=pad)
    cbar.set_label(label)
    ticks = [t for t in COLORBAR_TICKS if t <= norm.vmax]
    cbar.set_ticks(ticks if len(ticks) <= MAX_TICKS else ticks[::2])
    cbar.ax.yaxis.set_major_formatter(mticker.FuncFormatter(lambda v, _: f"{v:g}"))
    cbar.ax.yaxis.set_minor_formatter(mticker.NullFormatter())
    return cbar


def legend_handles(zero: str, absent: str, failed: str | None, style: CellStyle = CellStyle()) -> list[Patch]:
    """Legend entries of the cell kinds; ``failed`` None leaves that entry out."""
    handles = [
        Patch(facecolor=fs.ZERO_COLOR, edgecolor="#bbbbbb", label=zero),
        Patch(facecolor=fs.ABSENT_COLOR, edgecolor=fs.ABSENT_EDGE, hatch=style.hatch, label=absent),
    ]
    if failed is not None:
        handles.append(Patch(facecolor=fs.FAILED_FILL, edgecolor=fs.FAILED_COLOR, label=failed))
    return handles
