"""The one matplotlib style of every tilelang-churn figure: fonts, colours, DPI, and saving with fixed metadata.

Used by ``plot_churn.py`` (per-job bars, heatmap), ``compare_releases.py`` (release figures) and
``book_figures.py`` (the book's figures, ``results/book/``)::

    from tilelang_churn.figures import figure_style as fs

    with fs.context("zh", book=True):          # rcParams: fonts of the language, book sizes, determinism
        fig, ax = plt.subplots(figsize=fs.book_size(15.0, 9.0))   # width and height in cm
        ...
        fs.save(fig, ["f.png", "f.svg", "f.pdf"], dpi=fs.PRINT_DPI, strict=True)

Save inside the context: matplotlib resolves a text's font family when the figure is drawn, which is when
it is saved.

Fonts. ``en``: DejaVu Sans, which matplotlib ships (pinned with matplotlib). ``zh``: Noto Sans CJK SC
(SIL Open Font License), the file ``NotoSansCJKsc-Regular.otf`` of the ``mplfonts`` package (pinned in
requirements.txt), registered from that file with ``font_manager.addfont`` -- never a system font, so that a
regeneration on another machine with the same pins draws the same glyphs; DejaVu Sans is the fallback for
the few symbols the CJK font lacks. The workflow's own (English) figures list the CJK font after DejaVu Sans
(``font.family``, matplotlib's per-glyph fallback), so that a kernel parameter in Chinese is drawn, not boxes;
the book keeps the fonts of its language. The package is located without importing it (importing
``mplfonts`` would not change anything here, but its command line copies fonts into matplotlib's data folder).

Determinism: the same figure saved twice gives the same bytes in PNG, SVG and PDF -- no dates, no software
tags (``SAVE_METADATA``), a fixed ``svg.hashsalt`` (the ids SVG elements get), text as paths in SVG, and
TrueType (Type 42) subsets in PDF, whose subset tags are derived from the glyphs used.

No text is read as mathtext (``text.parse_math`` off): labels come from the user's config, and a ``$`` in a
kernel parameter is a dollar sign.

A glyph that no font of the list has is a warning of matplotlib at draw time ("Glyph ... missing from
font(s) ..."); ``save`` collects those messages for each file and, with ``strict=True``, refuses to write
the file (``MissingGlyphError``): a figure with a hole in a label cannot be printed.
"""

from __future__ import annotations

import importlib.util
import io
import multiprocessing
import os
import struct
import sys
import warnings
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import matplotlib

from tilelang_churn.figures import agg_text_cache

matplotlib.use(agg_text_cache.BACKEND)  # Agg, each text laid out once per process

from matplotlib import font_manager  # noqa: E402

from tilelang_churn.core import files, interrupt  # noqa: E402

LANGUAGES = ("en", "zh")
SCREEN_DPI = 100  # the workflow's own figures (results/figures, results/compare): looked at on a screen
PRINT_DPI = 300  # the book's PNG figures (results/book)
CM = 1 / 2.54  # inches per centimetre

# --- colours: one palette for every figure -------------------------------------------------------------
ADDED_COLOR = "#2e8b3a"  # lines added by a pass
DELETED_COLOR = "#c62828"  # lines deleted by a pass
NOOP_COLOR = "#9e9e9e"  # a pass that ran and changed nothing
FAILED_COLOR = "#d50000"  # a failed pass
FAILED_FILL = "#ffd6d6"
CODEGEN_COLOR = "#5c6bc0"  # codegen step: TIR -> source, never churn
ZERO_COLOR = "#fbf3d5"  # heatmaps: the pass ran, 0 lines changed
ABSENT_COLOR = "#ececec"  # heatmaps: the pass run does not exist in that column
ABSENT_EDGE = "#c4c4c4"
UNSUPPORTED_FILL = "#dde3ec"  # a release without the trace mode
UNSUPPORTED_EDGE = "#7a8799"
GRID_COLOR = "#dddddd"
TEXT_MUTED = "#37474f"
# lines of a categorical series (targets, configurations): colour-blind safe (Okabe-Ito), then tab10
SERIES_COLORS = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442", "#000000")
# churn heatmaps: viridis reversed without its palest end, so that 1 line stays distinct from a 0 cell
CHURN_CMAP_NAME = "viridis_r"
CHURN_CMAP_RANGE = (0.12, 1.0)
# signed differences (book: a variant against the reference): red fewer lines, blue more
DIVERGING_CMAP_NAME = "RdBu"

# --- fonts -------------------------------------------------------------------------------------------
LATIN_FAMILY = "DejaVu Sans"
CJK_FAMILY = "Noto Sans CJK SC"
CJK_PACKAGE = "mplfonts"
CJK_FONT_FILE = "NotoSansCJKsc-Regular.otf"
MISSING_GLYPH = "missing from font"  # text of matplotlib's warning for a glyph no font has

# --- saving --------------------------------------------------------------------------------------------
SAVE_METADATA = {  # no dates and no software tags: reruns write identical bytes
    "png": {"Software": None},
    "svg": {"Date": None, "Creator": None},
    "pdf": {"CreationDate": None, "ModDate": None, "Creator": None, "Producer": None},
}
FORMATS = tuple(SAVE_METADATA)
DEFAULT_HASHSALT = "tilelang-churn"

# Book pages: text sizes in points for a figure printed at its own size (no scaling on the page).
BOOK_RC = {
    "font.size": 7.5,
    "axes.titlesize": 8.5,
    "axes.labelsize": 7.5,
    "xtick.labelsize": 6.5,
    "ytick.labelsize": 6.5,
    "legend.fontsize": 6.5,
    "figure.titlesize": 9.0,
    "axes.linewidth": 0.6,
    "xtick.major.width": 0.6,
    "ytick.major.width": 0.6,
    "lines.linewidth": 1.2,
    "lines.markersize": 4.0,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.frameon": False,
}


class MissingGlyphError(ValueError):
    """A figure's text needs a glyph that none of its fonts has."""


class FontNotInstalled(RuntimeError):
    """The CJK font package is missing: install the pins of requirements.txt."""


def check_language(language: str) -> str:
    if language not in LANGUAGES:
        raise ValueError(f"figure language {language!r}: one of {', '.join(LANGUAGES)}")
    return language


def cjk_font_path() -> Path:
    """The Noto Sans CJK SC file shipped by the pinned ``mplfonts`` package (found without importing it)."""
    spec = importlib.util.find_spec(CJK_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        path = Path(location) / "fonts" / CJK_FONT_FILE
        if path.is_file():
            return path
    raise FontNotInstalled(
        f"Chinese figure labels need {CJK_FONT_FILE} from the {CJK_PACKAGE} package, pinned in requirements.txt"
        f" ({'not installed' if not locations else 'installed without that file'}; interpreter {sys.executable})"
    )


def register_cjk_font() -> str:
    """Register the CJK font file with matplotlib (once) and return its family name."""
    path = str(cjk_font_path())
    if not any(entry.fname == path for entry in font_manager.fontManager.ttflist):
        font_manager.fontManager.addfont(path)
    name = font_manager.FontProperties(fname=path).get_name()
    if name != CJK_FAMILY:  # another release of the package shipping another font under the same file name
        raise FontNotInstalled(f"{path} is {name!r}, expected {CJK_FAMILY!r}: check the {CJK_PACKAGE} pin")
    return name


def font_families(language: str, *, book: bool = True) -> list[str]:
    """font.sans-serif of a language: its own font first, DejaVu Sans (matplotlib's) as fallback. The workflow's
    own English figures (``book=False``) fall back to the CJK font for labels taken from the user's config
    (a kernel parameter in Chinese); without the font package they keep DejaVu Sans alone."""
    if check_language(language) == "zh":
        return [register_cjk_font(), LATIN_FAMILY]
    if not book:
        try:
            return [LATIN_FAMILY, register_cjk_font()]
        except FontNotInstalled:
            pass
    return [LATIN_FAMILY]


def rc(language: str = "en", *, book: bool = False, hashsalt: str = DEFAULT_HASHSALT) -> dict:
    """rcParams of a figure: fonts of ``language``, deterministic SVG/PDF output, book sizes if ``book``."""
    families = font_families(language, book=book)
    params = {
        # a list of families is matplotlib's per-glyph fallback; "sans-serif" would pick only its first font
        "font.family": families if families[0] == LATIN_FAMILY and len(families) > 1 else "sans-serif",
        "font.sans-serif": families,
        "text.parse_math": False,  # labels hold user text: "$HOME/$USER" is drawn as written, never as TeX
        "savefig.bbox": "standard",  # the figure as laid out, whatever a matplotlibrc says (_png_unfiltered)
        "svg.hashsalt": hashsalt,
        "svg.fonttype": "path",  # text as outlines: the SVG shows the same glyphs without the font
        "pdf.fonttype": 42,  # TrueType subsets: text stays text (searchable), the font is embedded
        "ps.fonttype": 42,
    }
    if book:
        params.update(BOOK_RC)
    return params


@contextmanager
def context(language: str = "en", *, book: bool = False, hashsalt: str = DEFAULT_HASHSALT) -> Iterator[None]:
    """``with context("zh"):`` -- create and save figures inside it (fonts are resolved when a figure is drawn)."""
    with matplotlib.rc_context(rc(language, book=book, hashsalt=hashsalt)):
        yield


def styled(language: str = "en", *, hashsalt: str = DEFAULT_HASHSALT):
    """Decorator: run a plotting function inside ``context(language)``."""

    def wrap(function):
        def run(*args, **kwargs):
            with context(language, hashsalt=hashsalt):
                return function(*args, **kwargs)

        run.__name__, run.__doc__, run.__wrapped__ = function.__name__, function.__doc__, function
        return run

    return wrap


def matrix_axes(ax, row_labels, col_labels, *, row_fontsize=None, col_fontsize=None, col_rotation=None) -> None:
    """The axes of a matrix of unit cells (pcolormesh at integer centres): a tick per row, first row on top, a
    tick per column, no tick marks. Label sizes and rotation left out keep the rcParams' (the book's sizes)."""
    ax.set_xlim(-0.5, len(col_labels) - 0.5)
    ax.set_ylim(len(row_labels) - 0.5, -0.5)
    ax.set_yticks(range(len(row_labels)))
    ax.set_yticklabels(row_labels, **({} if row_fontsize is None else {"fontsize": row_fontsize}))
    ax.set_xticks(range(len(col_labels)))
    col_style = {"fontsize": col_fontsize, "rotation": col_rotation}
    ax.set_xticklabels(col_labels, **{key: value for key, value in col_style.items() if value is not None})
    ax.tick_params(length=0)


def book_size(width_cm: float, height_cm: float) -> tuple[float, float]:
    """figsize in inches of a figure width_cm x height_cm."""
    return (width_cm * CM, height_cm * CM)


def churn_cmap():
    """The colour map of churn heatmaps (positive counts, log-normalised by the caller)."""
    import matplotlib.colors as mcolors
    import numpy as np

    low, high = CHURN_CMAP_RANGE
    colors = matplotlib.colormaps[CHURN_CMAP_NAME](np.linspace(low, high, 256))
    return mcolors.ListedColormap(colors, name="churn")


def _format(path: Path) -> str:
    fmt = path.suffix.lstrip(".").lower()
    if not fmt:
        raise ValueError(f"{path}: no suffix to choose the image format from")
    return fmt


def _png_unfiltered(fig, dpi: float, compress_level: int) -> bytes:
    """FIG drawn at DPI as the PNG matplotlib writes (8-bit RGBA, its dpi in pHYs, no text chunk: ``SAVE_METADATA``),
    the same pixels, with every row unfiltered and deflated at COMPRESS_LEVEL. matplotlib's writer, Pillow, tries
    each filter on each row, which was three quarters of its time; a figure's flat colours compress as well
    unfiltered (at the same zlib level a per-job chart a third smaller, the heatmap 13% larger, each in under half
    the time)."""
    raw = io.BytesIO()
    fig.savefig(raw, format="rgba", dpi=dpi)  # what savefig(format="png") draws, as bytes
    # the canvas' size: FigureCanvasAgg takes int() of the figure's size in inches times the dpi
    width, height = (int(inches * dpi) for inches in fig.get_size_inches())
    rgba = raw.getbuffer()
    if len(rgba) != width * height * 4:
        raise ValueError(f"the figure drew {len(rgba)} bytes of RGBA, not {width}x{height}x4")
    row_bytes = width * 4
    deflate = zlib.compressobj(compress_level)
    idat = [deflate.compress(b"\0" + rgba[start : start + row_bytes]) for start in range(0, len(rgba), row_bytes)]
    idat.append(deflate.flush())  # each row above: filter type 0, then its pixels

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    pixels_per_metre = int(dpi / 0.0254 + 0.5)  # as Pillow writes a dpi
    return b"".join([
        b"\x89PNG\r\n\x1a\n",
        chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)),  # 8 bits, RGBA, no interlace
        chunk(b"pHYs", struct.pack(">IIB", pixels_per_metre, pixels_per_metre, 1)),
        chunk(b"IDAT", b"".join(idat)),
        chunk(b"IEND", b""),
    ])  # fmt: skip


# the draws of a side_by_side call, by index: its forked workers inherit them (figures are not pickled)
_DRAWS: list = []


def side_by_side(draws: list, workers: int) -> list:
    """Each draw of ``draws`` (a function and its arguments) called, its results in order: in forked processes,
    ``workers`` at a time, when there are more than one, else one after another here. Each figure's draws are its
    own in either way, so its bytes are the same. A draw's exception is raised here; a Ctrl-C stops the workers
    quietly (interrupt.quiet_worker)."""
    if workers <= 1 or len(draws) <= 1:
        return [function(*args) for function, args in draws]
    _DRAWS[:] = draws
    try:
        with multiprocessing.get_context("fork").Pool(min(workers, len(draws)), interrupt.quiet_worker) as pool:
            return pool.map(_draw, range(len(draws)), chunksize=1)
    finally:
        _DRAWS.clear()


def _draw(index: int):
    function, args = _DRAWS[index]
    return function(*args)


def save(
    fig,
    paths: str | os.PathLike | Iterable[str | os.PathLike],
    *,
    dpi: float = SCREEN_DPI,
    strict: bool = False,
    hashsalt: str | None = None,
    png_compress_level: int = 6,
) -> dict[str, list[str]]:
    """Save ``fig`` to every path (format from the suffix), each atomically, with fixed metadata.

    Returns {path: [missing-glyph messages]} (empty lists when every glyph was found); the messages are
    also printed on stderr. With ``strict`` a missing glyph raises ``MissingGlyphError`` and that file is
    not written. ``hashsalt`` overrides ``svg.hashsalt`` for this save (default: the rcParams in force).
    A PNG is written by ``_png_unfiltered``, its zlib level ``png_compress_level`` (0-9) trading its bytes for
    its time.
    """
    paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    reports: dict[str, list[str]] = {}
    rc_save = {} if hashsalt is None else {"svg.hashsalt": hashsalt}
    for path in map(Path, paths):
        fmt = _format(path)
        # passes_table's atomic writer: renamed into place only when complete, its temporary removed on any
        # error, and a full disk one WriteError naming the file
        with files.atomic_file(path, binary=True) as handle:
            with warnings.catch_warnings(record=True) as caught, matplotlib.rc_context(rc_save):
                warnings.simplefilter("always")
                if fmt == "png":
                    handle.write(_png_unfiltered(fig, dpi, png_compress_level))
                else:
                    fig.savefig(handle, format=fmt, dpi=dpi, metadata=SAVE_METADATA.get(fmt))
            missing = []
            for warning in caught:
                if MISSING_GLYPH in str(warning.message):
                    missing.append(str(warning.message))
                else:  # not ours: hand it on
                    warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
            missing = list(dict.fromkeys(missing))
            reports[str(path)] = missing
            for message in missing:
                print(f"figure_style: {path}: {message}", file=sys.stderr)
            if missing and strict:
                raise MissingGlyphError(f"{path}: {'; '.join(missing)}")
    return reports
