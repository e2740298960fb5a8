"""Drawing the same words figure after figure, fast: what matplotlib measures and renders, remembered.

Matplotlib measures a string again for every new figure and renders every glyph at every draw; a
widget redraws the same labels on every slider move. ``quick_text()`` remembers both while a widget
draws, with the same pixels (tests/test_widgets_lesson.py compares them), and gives the artists an
Axes clips one clip box. It replaces four of matplotlib's internals for the length of the block (the
constraints file pins matplotlib); where they are missing, the block draws as usual.
``png_of_pixels`` writes a widget's picture as PNG.
"""
from __future__ import annotations

import contextlib
import math
import struct
import zlib
from collections.abc import Callable
from typing import Any

_CACHE_CAP = 50_000  # remembered text metrics and glyphs, each; past it they are forgotten and start again
_metrics: dict[tuple, Any] = {}
_layouts: dict[tuple, Any] = {}  # a Text's layout, without its position
_strings: dict[tuple, tuple] = {}  # a string's glyphs and their offsets
_glyphs: dict[tuple, tuple] = {}
_masks: dict[tuple, Any] = {}  # a string's glyphs as one mask, by their sub-pixel offsets


def _remembered_metrics(original: Callable) -> Callable:
    import matplotlib as mpl

    def metrics(renderer, text, fontprop, ismath, dpi):
        if ismath:
            return original(renderer, text, fontprop, ismath, dpi)
        key = (type(renderer), text, fontprop, dpi, mpl.rcParams["text.hinting"],
               mpl.rcParams["text.hinting_factor"], mpl.rcParams["text.kerning_factor"])
        found = _metrics.get(key)
        if found is None:
            if len(_metrics) > _CACHE_CAP:
                _metrics.clear()
            found = _metrics[_kept(key, 2)] = original(renderer, text, fontprop, ismath, dpi)
        return found
    return metrics


def _remembered_layout(original: Callable) -> Callable:
    """``Text._get_layout``, remembered by everything it reads but the text's position."""
    import matplotlib as mpl
    from matplotlib.transforms import Bbox

    def layout(self, renderer):
        if self.get_wrap() or self.get_usetex():
            return original(self, renderer)
        key = (type(renderer), self.get_text(), self._fontproperties, self.get_figure(root=True).dpi,
               self._linespacing, self._get_multialignment(), self.get_rotation(), self._horizontalalignment,
               self._verticalalignment, self.get_rotation_mode(), self._parse_math, mpl.rcParams["text.hinting"],
               mpl.rcParams["text.hinting_factor"], mpl.rcParams["text.kerning_factor"])
        found = _layouts.get(key)
        if found is None:
            if len(_layouts) > _CACHE_CAP:
                _layouts.clear()
            found = _layouts[_kept(key, 2)] = original(self, renderer)
        bbox, info, descent = found
        return Bbox(bbox.get_points().copy()), info, descent
    return layout


def _kept(key: tuple, at: int) -> tuple:
    """``key`` to store, its font properties (at ``at``) copied: a lookup may use the text's own, which can change."""
    return (*key[:at], key[at].copy(), *key[at + 1:])


def _glyph(font, size: float, dpi: float, index: int, turn, sub: tuple[int, int], flags, antialiased: bool,
           sized: list):
    """One glyph's bitmap at a sub-pixel offset, rendered once: (buffer, left, top), cut to its ink (the blank
    rows and columns around it blend nothing).

    ``sized`` holds the font and size last set while drawing this string: FreeType starts afresh at each
    size it is given, even the same one, so the glyphs of one string are rendered at one setting.
    """
    import numpy as np
    from matplotlib.ft2font import RenderMode

    key = (font.fname, font.style_name, size, dpi, index, turn.tobytes(), sub, flags, antialiased)
    found = _glyphs.get(key)
    if found is None:
        if len(_glyphs) > _CACHE_CAP:
            _glyphs.clear()
        if sized[0] != (font, size, dpi):
            font.set_size(size, dpi)
            sized[0] = (font, size, dpi)
        font._set_transform(turn, list(sub))
        bitmap = font._render_glyph(index, flags, RenderMode.NORMAL if antialiased else RenderMode.MONO)
        buffer, left, top = bitmap.buffer, bitmap.left, bitmap.top
        rows, columns = np.flatnonzero(buffer.any(axis=1)), np.flatnonzero(buffer.any(axis=0))
        if rows.size:
            buffer = buffer[rows[0]:rows[-1] + 1, columns[0]:columns[-1] + 1]
            left, top = left + int(columns[0]), top - int(rows[0])
        buffer = buffer.copy() if rows.size else np.zeros((0, 0), np.uint8)
        if not antialiased:
            buffer *= 0xff
        found = _glyphs[key] = (buffer, left, top)
    return found


def _string_masks(items: list, size: float, dpi: float, turn, px, py, flags, antialiased: bool) -> list[tuple]:
    """The glyphs of one string as a few masks, each placed relative to the first glyph: (mask, column, row).

    Agg blends each glyph on its own, so two glyphs whose ink boxes meet go in successive masks,
    blended in the order the glyphs come (a run of glyphs that keep apart is one mask).
    """
    import numpy as np

    runs: list[list] = [[]]
    sized = [None]
    for (font, index, _, _), gx, gy in zip(items, px, py):
        buffer, left, top = _glyph(font, size, dpi, index, turn, (gx & 63, gy & 63), flags, antialiased, sized)
        if not buffer.size:
            continue
        col, row = left + (gx >> 6) - (px[0] >> 6), (py[0] >> 6) - (top + (gy >> 6))
        rows, cols = row + buffer.shape[0], col + buffer.shape[1]
        if any(row < r1 and r0 < rows and col < c1 and c0 < cols for _, c0, r0, c1, r1 in runs[-1]):
            runs.append([])
        runs[-1].append((buffer, col, row, cols, rows))
    masks = []
    for run in filter(None, runs):
        col0, row0 = min(g[1] for g in run), min(g[2] for g in run)
        mask = np.zeros((max(g[4] for g in run) - row0, max(g[3] for g in run) - col0), np.uint8)
        for buffer, col, row, cols, rows in run:
            mask[row - row0:rows - row0, col - col0:cols - col0] = buffer
        masks.append((mask, col0, row0))
    return masks


def _laid_out(renderer: Any, s: str, prop: Any, flags: int) -> tuple:
    """(key, glyphs, x offsets, y offsets) of a string in a font, laid out once (as Agg lays it out)."""
    import numpy as np

    key = (s, prop, renderer.dpi, flags)
    laid = _strings.get(key)
    if laid is None:
        if len(_strings) > _CACHE_CAP:
            _strings.clear()
        font = renderer._prepare_font(prop)
        items = [(i.ft_object, i.glyph_index, i.x, i.y) for i in font._layout(s, flags=flags)]
        key = _kept(key, 1)
        laid = _strings[key] = (items, np.array([i[2] for i in items], float), np.array([i[3] for i in items], float))
    return (key, *laid)


def _remembered_draw_text(original: Callable) -> Callable:
    """Agg's draw_text, laying out each string and rendering it once (as Agg does, pixel for pixel).

    An upright string is drawn as masks of its glyphs (``_string_masks``), each glyph at the sub-pixel
    offset Agg would give it: a blend or two instead of one per glyph.
    """
    import numpy as np
    from matplotlib.backends.backend_agg import get_hinting_flag

    def draw_text(self, gc, x, y, s, prop, angle, ismath=False, mtext=None):
        if ismath or (mtext is not None and (mtext.get_fontfeatures() or mtext.get_language())):
            return original(self, gc, x, y, s, prop, angle, ismath, mtext)
        flags = get_hinting_flag()
        key, items, dxs, dys = _laid_out(self, s, prop, flags)
        if not items:
            return
        size, aa = prop.get_size_in_points(), gc.get_antialiased()
        cos, sin = math.cos(math.radians(angle)), math.sin(math.radians(angle))
        turn = (0x10000 * np.array([[cos, -sin], [sin, cos]])).round().astype(int)
        # The same arithmetic as drawing glyph by glyph, for all glyphs at once (numpy rounds half to even, as round).
        px = np.rint(0x40 * (x + dxs * cos - dys * sin)).astype(np.int64)
        py = np.rint(0x40 * (self.height - y + dxs * sin + dys * cos)).astype(np.int64)
        if angle == 0:  # Agg blends an upright mask pixel by pixel: a string's masks draw what its glyphs do
            shape = (key, size, aa, (px & 63).tobytes(), (py & 63).tobytes(), (px - px[0]).tobytes(),
                     (py - py[0]).tobytes())
            masks = _masks.get(shape)
            if masks is None:
                if len(_masks) > _CACHE_CAP:
                    _masks.clear()
                masks = _masks[(_kept(key, 1), *shape[1:])] = _string_masks(items, size, self.dpi, turn,
                                                                            px.tolist(), py.tolist(), flags, aa)
            col, row = int(px[0] >> 6), int(self.height) - int(py[0] >> 6)
            for mask, dcol, drow in masks:
                self._renderer.draw_text_image(mask, col + dcol, row + drow + mask.shape[0], 0, gc)
            return
        sized = [None]
        for (font, index, _, _), gx, gy in zip(items, px.tolist(), py.tolist()):
            buffer, left, top = _glyph(font, size, self.dpi, index, turn, (gx & 63, gy & 63), flags, aa, sized)
            self._renderer.draw_text_image(buffer, left + (gx >> 6),
                                           int(self.height) - (top + (gy >> 6)) + buffer.shape[0], 0, gc)
    return draw_text


def _shared_clip_box(original: Callable) -> Callable:
    """``Artist.set_clip_path``, giving every artist clipped by the same rectangle one clip box, not one each.

    Matplotlib builds a new transformed box (and the rectangle's transform under it) for each artist
    an Axes clips, ticks included, and works each one out again at every draw; they are all the same box.
    """
    import weakref

    from matplotlib.artist import Artist
    from matplotlib.patches import Rectangle
    from matplotlib.transforms import Bbox, TransformedBbox

    boxes: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def set_clip_path(self, path, transform=None):
        if transform is not None or type(path) is not Rectangle:
            return original(self, path, transform)
        # What the rectangle's transform is made of when asked: its place and size, and what it is drawn in.
        made_of = (tuple(path.get_xy()), path.get_width(), path.get_height(), path.get_angle(),
                   path.rotation_point, Artist.get_transform(path))
        known = boxes.get(path)
        if known is None or known[0] != made_of:
            known = boxes[path] = (made_of, TransformedBbox(Bbox.unit(), path.get_transform()))
        self.clipbox = known[1]
        self._clippath = None
        self.pchanged()
        self.stale = True
    return set_clip_path


@contextlib.contextmanager
def quick_text():
    """While drawing in this block, text is measured and rendered once per string and glyph, not per figure.

    Matplotlib measures a string again for every new figure, and renders every glyph at every
    draw; a widget redraws the same words figure after figure. Artists clipped by one rectangle
    share one clip box. The pixels are the same (tests/test_widgets_lesson.py compares them);
    where this matplotlib lacks the parts it replaces, the block draws as usual.
    """
    try:
        from matplotlib import artist as martist
        from matplotlib import text as mtext
        from matplotlib.backends import backend_agg

        # matplotlib's private text measuring, which its stubs leave out (hence the ignores below)
        metrics, layout = mtext._get_text_metrics_with_cache, mtext.Text._get_layout  # type: ignore[attr-defined]
        draw_text, clip = backend_agg.RendererAgg.draw_text, martist.Artist.set_clip_path
        patched = (_remembered_metrics(metrics), _remembered_layout(layout), _remembered_draw_text(draw_text),
                   _shared_clip_box(clip))
    except (ImportError, AttributeError):
        yield
        return
    (mtext._get_text_metrics_with_cache, mtext.Text._get_layout,  # type: ignore[attr-defined]
     backend_agg.RendererAgg.draw_text, martist.Artist.set_clip_path) = patched  # type: ignore[method-assign]
    try:
        yield
    finally:
        mtext._get_text_metrics_with_cache, mtext.Text._get_layout = metrics, layout  # type: ignore[attr-defined]
        backend_agg.RendererAgg.draw_text, martist.Artist.set_clip_path = draw_text, clip  # type: ignore[method-assign]


def png_of_pixels(rgba) -> bytes:
    """PNG bytes of an RGBA array, compressed lightly (a widget's picture is sent once and thrown away).

    The rows are left unfiltered and the alpha channel kept even where it is all opaque: on the
    widgets' figures that comes out as small as PIL's adaptive filters on RGB (1 % larger), in a
    third of the time.
    """
    import numpy as np

    pixels = np.asarray(rgba, np.uint8)
    height, width, _ = pixels.shape
    rows = np.zeros((height, 1 + width * 4), np.uint8)  # each row starts with its filter: 0, none
    rows[:, 1:] = pixels.reshape(height, width * 4)
    colour = 6  # RGBA

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, colour, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows.data, 3)) + chunk(b"IEND", b""))
