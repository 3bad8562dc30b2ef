"""matplotlib's Agg backend with each text's glyphs laid out once per process, not once per figure.

A process draws many figures with the same texts: a batch's 20 bar charts label the same passes ("14
LayoutInference") and bar values ("+12"), a heatmap its cell counts. Agg lays out and rasterises a text with
FreeType twice per figure (its size, then its bitmap) and forgets both with the figure's renderer, which was a
quarter of a bar chart's time. This backend keeps both per text and font state (the font files, size, dpi,
hinting and kerning settings, antialiasing), so a repeated text costs one paste of its bitmap. What it pastes
is what Agg would have rasterised: the same pixels, the same bytes (``tests/test_agg_text_cache.py`` compares
figures drawn with and without it). Mathtext and TeX keep Agg's own path; SVG and PDF have their own canvases.

Selected as a third-party backend (``matplotlib.use("module://tilelang_churn.figures.agg_text_cache")``, done by
``figure_style``): the module provides ``FigureCanvas`` and ``FigureManager``, as matplotlib's backend API asks.
"""

from __future__ import annotations

from collections import OrderedDict
from math import cos, radians, sin

import matplotlib
import numpy as np
from matplotlib.backend_bases import FigureManagerBase
from matplotlib.backends import backend_agg
from matplotlib.font_manager import fontManager

BACKEND = f"module://{__name__}"
# RendererAgg.draw_text below repeats matplotlib 3.10's up to its paste; another series draws texts its own way
# (3.11 shapes each glyph on its own), so there the canvas keeps Agg's renderer
CACHES_TEXT = matplotlib.__version__.startswith("3.10.")
MAX_TEXTS = 20_000  # a few KB of bitmap each; the least recently used go first


class _Lru(OrderedDict):
    def get_or(self, key, make):
        if key in self:
            self.move_to_end(key)
            return self[key]
        value = self[key] = make()
        if len(self) > MAX_TEXTS:
            self.popitem(last=False)
        return value


_BITMAPS = _Lru()  # key + antialiased -> (bitmap, descent, x offset, y offset), the last three in pixels
_METRICS = _Lru()  # key -> (width, height, descent) in pixels


# the rcParams that map a generic family ("sans-serif") to fonts, as FontManager.findfont keys its own cache
_FAMILY_LISTS = ("font.serif", "font.sans-serif", "font.cursive", "font.fantasy", "font.monospace")
_FONT_FILES: dict[tuple, tuple[str, ...]] = {}


def _font_files(prop) -> tuple[str, ...]:
    """The files of prop's family list (the glyph fallback), found once per font state: finding them copies
    the properties once per family, which was half of a repeated text's cost."""
    key = (prop, *(tuple(matplotlib.rcParams[name]) for name in _FAMILY_LISTS))
    files = _FONT_FILES.get(key)
    if files is None:
        files = _FONT_FILES[(prop.copy(), *key[1:])] = tuple(fontManager._find_fonts_by_props(prop))
    return files


def _font_key(text: str, prop, dpi: float) -> tuple:
    """Everything Agg's text layout depends on: the text and the state of the FT2Font it lays it out with."""
    return (
        text,
        _font_files(prop),
        prop.get_size_in_points(),
        dpi,
        backend_agg.get_hinting_flag(),
        matplotlib.rcParams["text.hinting_factor"],
        matplotlib.rcParams["text.kerning_factor"],
    )


def cache_sizes() -> tuple[int, int]:
    """(texts rasterised, texts measured) held now."""
    return len(_BITMAPS), len(_METRICS)


def clear() -> None:
    _BITMAPS.clear()
    _METRICS.clear()
    _FONT_FILES.clear()


class RendererAgg(backend_agg.RendererAgg):
    def draw_text(self, gc, x, y, s, prop, angle, ismath=False, mtext=None):
        if ismath:
            return super().draw_text(gc, x, y, s, prop, angle, ismath, mtext)
        antialiased = gc.get_antialiased()

        def rasterise():  # backend_agg.RendererAgg.draw_text, up to the paste
            font = self._prepare_font(prop)
            font.set_text(s, 0, flags=backend_agg.get_hinting_flag())  # at angle 0: the paste rotates it
            font.draw_glyphs_to_bitmap(antialiased=antialiased)
            xo, yo = font.get_bitmap_offset()
            return np.array(font), font.get_descent() / 64.0, xo / 64.0, yo / 64.0

        image, descent, xo, yo = _BITMAPS.get_or(_font_key(s, prop, self.dpi) + (antialiased,), rasterise)
        # the descent adjusted for the angle, as Agg does
        xd, yd = descent * sin(radians(angle)), descent * cos(radians(angle))
        self._renderer.draw_text_image(image, round(x + xo + xd), round(y + yo + yd) + 1, angle, gc)

    def get_text_width_height_descent(self, s, prop, ismath):
        if ismath:
            return super().get_text_width_height_descent(s, prop, ismath)
        measure = super().get_text_width_height_descent
        return _METRICS.get_or(_font_key(s, prop, self.dpi), lambda: measure(s, prop, ismath))


class FigureCanvas(backend_agg.FigureCanvasAgg):
    def get_renderer(self):
        # FigureCanvasAgg.get_renderer with this module's renderer: a new one when the size or dpi changes
        width, height = self.figure.bbox.size
        key = width, height, self.figure.dpi
        if self._lastKey != key:
            renderer = RendererAgg if CACHES_TEXT else backend_agg.RendererAgg
            self.renderer = renderer(width, height, self.figure.dpi)
            self._lastKey = key
        return self.renderer


FigureManager = FigureManagerBase
