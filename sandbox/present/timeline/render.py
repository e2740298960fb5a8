"""The Agg canvas every timeline figure draws on: text measured once per process, not once per figure.

Matplotlib caches a text's size per renderer, and every figure has a renderer of its own, so each new
timeline shaped "inv-1 · first delivery" and every legend line with FreeType again (about 0.8 ms a string,
some 40 strings a figure). The numbers depend only on the string, the font, the dpi and the hinting settings,
so one table serves every figure; the pixels drawn are the same, as only the measuring is shared.
"""
from __future__ import annotations

from typing import Any

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg
from matplotlib.font_manager import FontProperties, fontManager, get_font

MAX_SIZES = 20_000  # strings kept: a lesson draws a few thousand; past this the table starts again

_sizes: dict[tuple[Any, ...], tuple[float, float, float]] = {}
Heights = tuple[float | None, float | None, float | None]  # a font's least ascent, descent and line gap (px)
_heights: dict[tuple[Any, ...], Heights] = {}


def _font_key(prop: FontProperties) -> tuple[Any, ...]:
    """What picks the font and its size: matplotlib's own cache key for a FontProperties, as a tuple, not a hash."""
    return (tuple(prop.get_family()), prop.get_slant(), prop.get_variant(), prop.get_weight(), prop.get_stretch(),
            prop.get_size_in_points(), prop.get_file(), prop.get_math_fontfamily())


class SharedRenderer(RendererAgg):
    """RendererAgg whose plain-text sizes come from the process-wide table (math text is left to matplotlib)."""

    def get_text_width_height_descent(self, s: str, prop: FontProperties, ismath: Any) -> tuple[float, float, float]:
        if ismath is not False:
            return super().get_text_width_height_descent(s, prop, ismath)
        rc = matplotlib.rcParams
        # hinting and kerning change how FreeType lays glyphs out, so they are part of the key
        key = (s, _font_key(prop), self.dpi, rc["text.hinting"], rc["text.kerning_factor"])
        size = _sizes.get(key)
        if size is None:
            if len(_sizes) >= MAX_SIZES:
                _sizes.clear()
            size = _sizes[key] = super().get_text_width_height_descent(s, prop, ismath)
        return size

    def draw_text(self, gc: Any, x: float, y: float, s: str, prop: FontProperties, angle: float, ismath: Any = False,
                  mtext: Any = None) -> None:
        """Each string starts at a whole pixel. Matplotlib's Agg renders every glyph at the sub-pixel place it falls
        on, so a label moved by a fraction of a pixel is rendered glyph by glyph again: in fifteen moves of lesson
        10's TTL slider, 2,698 of 3,955 glyphs drawn were new renders. Started at a whole pixel, a string's glyphs
        fall on the same fractions wherever it stands, and ``quicktext`` renders each once (19 new renders; drawing
        the picture took 17 ms instead of 27). A string starts at most half a pixel from where matplotlib would start
        it; its box, which the layout and the audit measure, is unchanged."""
        super().draw_text(gc, round(x), round(y), s, prop, angle, ismath, mtext)

    def _get_font_height_metrics(self, prop: FontProperties) -> Heights:
        """A font's least ascent, descent and line gap at its size, as ``Text._get_layout`` reads them from the font's
        tables when a renderer has no such method (the same tables, the same sums, once per font and size): it finds
        the font file and reads two tables for every text, at every measuring and every draw."""
        key = (_font_key(prop), self.dpi, matplotlib.rcParams["text.kerning_factor"])
        found = _heights.get(key)
        if found is None:
            found = _heights[key] = _table_heights(prop, self.dpi)
        return found


def _table_heights(prop: FontProperties, dpi: float) -> Heights:
    """(ascent, descent, line gap): ``Text._get_layout``'s own reading of the OS/2 (else hhea) table; (None, None, None)
    lets it read them itself."""
    font: Any = get_font(fontManager._find_fonts_by_props(prop))  # the stubs type a table by its name as a literal
    for table_name, gap_key, ascent_key, descent_key in (("OS/2", "sTypoLineGap", "sTypoAscender", "sTypoDescender"),
                                                         ("hhea", "lineGap", "ascent", "descent")):
        table = font.get_sfnt_table(table_name)
        if table is None:
            continue
        scale = 1 / font.get_sfnt_table("head")["unitsPerEm"] * prop.get_size_in_points() * dpi / 72
        return table[ascent_key] * scale, -table[descent_key] * scale, table[gap_key] * scale
    return None, None, None


class TimelineCanvas(FigureCanvasAgg):
    """FigureCanvasAgg drawing with a :class:`SharedRenderer` (its ``get_renderer``, with that one class changed)."""

    def get_renderer(self) -> RendererAgg:
        w, h = self.get_width_height(physical=True)
        key = w, h, self.figure.dpi
        if self._lastKey != key:
            self.renderer = SharedRenderer(w, h, self.figure.dpi)
            self._lastKey = key
        return self.renderer
