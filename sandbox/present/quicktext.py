"""Drawing the same words figure after figure, fast: what matplotlib measures and renders, remembered.

Matplotlib measures a string again for every new figure and renders every glyph at every draw; a
widget redraws the same labels on every slider move. ``quick_text()`` remembers both while a widget
draws, with the same pixels (tests/test_widgets_lesson.py compares them). It replaces three of
matplotlib's internals for the length of the block (the constraints file pins matplotlib); where
they are missing, the block draws as usual.
"""
from __future__ import annotations

import contextlib
import io
import math
from collections.abc import Callable
from typing import Any

_CACHE_CAP = 50_000  # remembered text metrics and glyphs, each; past it they are forgotten and start again
_metrics: dict[tuple, Any] = {}
_layouts: dict[tuple, Any] = {}  # a Text's layout, without its position
_strings: dict[tuple, list] = {}  # a string's glyphs and their offsets
_glyphs: dict[tuple, tuple] = {}


def _remembered_metrics(original: Callable) -> Callable:
    import matplotlib as mpl

    def metrics(renderer, text, fontprop, ismath, dpi):
        if ismath:
            return original(renderer, text, fontprop, ismath, dpi)
        key = (type(renderer), text, fontprop.copy(), dpi, mpl.rcParams["text.hinting"],
               mpl.rcParams["text.hinting_factor"], mpl.rcParams["text.kerning_factor"])
        found = _metrics.get(key)
        if found is None:
            if len(_metrics) > _CACHE_CAP:
                _metrics.clear()
            found = _metrics[key] = original(renderer, text, fontprop, ismath, dpi)
        return found
    return metrics


def _remembered_layout(original: Callable) -> Callable:
    """``Text._get_layout``, remembered by everything it reads but the text's position."""
    import matplotlib as mpl
    from matplotlib.transforms import Bbox

    def layout(self, renderer):
        if self.get_wrap() or self.get_usetex():
            return original(self, renderer)
        key = (type(renderer), self.get_text(), self._fontproperties.copy(), self.get_figure(root=True).dpi,
               self._linespacing, self._get_multialignment(), self.get_rotation(), self._horizontalalignment,
               self._verticalalignment, self.get_rotation_mode(), self._parse_math, mpl.rcParams["text.hinting"],
               mpl.rcParams["text.hinting_factor"], mpl.rcParams["text.kerning_factor"])
        found = _layouts.get(key)
        if found is None:
            if len(_layouts) > _CACHE_CAP:
                _layouts.clear()
            found = _layouts[key] = original(self, renderer)
        bbox, info, descent = found
        return Bbox(bbox.get_points().copy()), info, descent
    return layout


def _glyph(font, size: float, dpi: float, index: int, turn, sub: tuple[int, int], flags, antialiased: bool):
    """One glyph's bitmap at a sub-pixel offset, rendered once: (buffer, left, top)."""
    from matplotlib.ft2font import RenderMode

    key = (font.fname, font.style_name, size, dpi, index, turn.tobytes(), sub, flags, antialiased)
    found = _glyphs.get(key)
    if found is None:
        if len(_glyphs) > _CACHE_CAP:
            _glyphs.clear()
        font.set_size(size, dpi)
        font._set_transform(turn, list(sub))
        bitmap = font._render_glyph(index, flags, RenderMode.NORMAL if antialiased else RenderMode.MONO)
        buffer = bitmap.buffer.copy()
        if not antialiased:
            buffer *= 0xff
        found = _glyphs[key] = (buffer, bitmap.left, bitmap.top)
    return found


def _remembered_draw_text(original: Callable) -> Callable:
    """Agg's draw_text, laying out each string and rendering each glyph once (as Agg does, pixel for pixel)."""
    import numpy as np
    from matplotlib.backends.backend_agg import get_hinting_flag

    def draw_text(self, gc, x, y, s, prop, angle, ismath=False, mtext=None):
        if ismath or (mtext is not None and (mtext.get_fontfeatures() or mtext.get_language())):
            return original(self, gc, x, y, s, prop, angle, ismath, mtext)
        flags = get_hinting_flag()
        key = (s, prop.copy(), self.dpi, flags)
        items = _strings.get(key)
        if items is None:
            if len(_strings) > _CACHE_CAP:
                _strings.clear()
            font = self._prepare_font(prop)
            items = _strings[key] = [(i.ft_object, i.glyph_index, i.x, i.y) for i in font._layout(s, flags=flags)]
        size, aa = prop.get_size_in_points(), gc.get_antialiased()
        cos, sin = math.cos(math.radians(angle)), math.sin(math.radians(angle))
        turn = (0x10000 * np.array([[cos, -sin], [sin, cos]])).round().astype(int)
        for font, index, dx, dy in items:
            px, py = round(0x40 * (x + dx * cos - dy * sin)), round(0x40 * (self.height - y + dx * sin + dy * cos))
            buffer, left, top = _glyph(font, size, self.dpi, index, turn, (px & 63, py & 63), flags, aa)
            self._renderer.draw_text_image(buffer, left + (px >> 6),
                                           int(self.height) - (top + (py >> 6)) + buffer.shape[0], 0, gc)
    return draw_text


@contextlib.contextmanager
def quick_text():
    """While drawing in this block, text is measured and rendered once per string and glyph, not per figure.

    Matplotlib measures a string again for every new figure, and renders every glyph at every
    draw; a widget redraws the same words figure after figure. The pixels are the same
    (tests/test_widgets_lesson.py compares them); where this matplotlib lacks the parts it
    replaces, the block draws as usual.
    """
    try:
        from matplotlib import text as mtext
        from matplotlib.backends import backend_agg

        # matplotlib's private text measuring, which its stubs leave out
        metrics, layout = mtext._get_text_metrics_with_cache, mtext.Text._get_layout  # type: ignore[attr-defined]
        draw_text = backend_agg.RendererAgg.draw_text
        patched = _remembered_metrics(metrics), _remembered_layout(layout), _remembered_draw_text(draw_text)
    except (ImportError, AttributeError):
        yield
        return
    (mtext._get_text_metrics_with_cache, mtext.Text._get_layout,  # type: ignore[attr-defined]
     backend_agg.RendererAgg.draw_text) = patched  # type: ignore[method-assign]
    try:
        yield
    finally:
        mtext._get_text_metrics_with_cache, mtext.Text._get_layout = metrics, layout  # type: ignore[attr-defined]
        backend_agg.RendererAgg.draw_text = draw_text  # type: ignore[method-assign]


def png_of_pixels(rgba) -> bytes:
    """PNG bytes of an RGBA array, compressed lightly (a widget's picture is sent once and thrown away).

    An opaque picture is written as RGB: the same pixels, in three quarters of the bytes.
    """
    from PIL import Image

    if (rgba[..., 3] == 255).all():
        rgba = rgba[..., :3]
    buf = io.BytesIO()
    Image.fromarray(rgba).save(buf, format="png", compress_level=3)
    return buf.getvalue()
