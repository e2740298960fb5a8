"""How big the figure is: inches per lane, the font scale, the room for notes and the legend.

A lane is half an inch tall until the plot would pass :data:`LANES_FIT_IN`; then the
lanes shrink (and fonts and markers with them, never below :data:`MIN_SCALE`), and
with very many lanes the figure grows again rather than make lanes unreadably thin.
"""
from __future__ import annotations

import functools
import math
import textwrap
from dataclasses import dataclass

from matplotlib.backends.backend_agg import RendererAgg
from matplotlib.font_manager import FontProperties

from ...vocab import Delivery
from .axis import TimeAxis
from .layout import levels
from .model import Model
from .rows import RowKind, Rows
from .style import HEADING_PT, LANE_PT, LEGEND_PT, MARKERS, MESSAGE_PT, SMALL_PT, ink_pt, matplotlib_style
from .text import note_text, note_what, outcome_text, short_key, strip_needs_key

LANE_IN = 0.6  # in: one lane (one data unit) at full scale
LANES_FIT_IN = 22  # in: lanes shrink to keep the plot this tall ...
MIN_LANE_IN = 0.16  # in: ... down to this per lane ...
LANES_MAX_IN = 44  # in: ... unless even that would pass this height
MIN_SCALE = 0.55  # fonts and markers shrink with the lanes, but not below this fraction
COMPACT_BELOW_IN = 0.36  # in per lane: below this, subtitles and optional labels are left out
MIN_FONT_PT = 6.0  # pt: no text smaller than this
REFERENCE_DPI = 100  # sizes given in px are px at this resolution, scaled with the figure's dpi

GAP_LABEL_ROOM = 0.8  # data units below the last lane for "30 s skipped" labels
ROOM_BELOW = 0.1  # data units between the bottom of the last row and the x axis

TITLE_IN = 0.42  # in: the title and the space around it (measured: 0.40) ...
TITLE_LINE_EM = 1.2  # ... and each further line of a long title, in ems of its size
TITLE_SHARE = 0.82  # a title may take this fraction of the figure's width (it is centred on the plot, right of the
#: figure's middle, past the lane names: wider, it would reach the edge); a longer one is broken in two
TITLE_BREAKS = (" · ", ": ", "; ", ", ", " ")  # where a long title breaks, the most natural first
X_AXIS_IN = 0.63  # in: tick labels and the axis label (measured: 0.62)
LEGEND_ROW_IN = 0.2  # in: one row of legend entries at 10 pt ...
LEGEND_DRAWN_ROW_IN, LEGEND_PAD_IN = 0.22, 0.05  # in: ... as drawn, a row and the legend's padding (measured: 0.217
#   and 0.042; the figure's height, estimated with LEGEND_ROW_IN, is fitted by the layout)
LEGEND_MOST_SHARE = 0.28  # the legend takes at most this share of the figure's height (the audit allows 0.3)
MARGIN_IN = 0.15  # in: ... the padding around the legend, and the margin below it
MIN_HEIGHT_IN, MAX_HEIGHT_IN = 3.2, 50.0  # in: the figure's height stays within these
LEGEND_HANDLE_EM = 3.4  # ems: a legend entry's symbol and the space after it
LEGEND_CHAR_EM = 0.56  # ems: a character in the legend is at most this wide, on average (where to break a line)
MIN_LEGEND_CHARS = 16  # a legend entry is never broken into lines shorter than this
LEGEND_SPACING_EM = 1.5  # ems between legend columns (legend.COLUMN_SPACING)
LEGEND_SHARE = 0.92  # the legend may take this fraction of the figure's width (its estimate runs a little short)
TWO_LEGEND_COLUMNS_IN = 6  # in: a narrower figure gets a legend in one column
LEGEND_SECOND_LINE = 0.6  # a row whose entry takes two lines is this much taller than one row

PLOT_SHARE = 0.6  # about this fraction of the figure's width is the plot (the rest: lane names, outcomes)
SIDES_IN = 0.4  # in: beside the row names and the outcomes, the layout's padding and the ticks' gaps
NOTE_PAD_IN = 0.3  # in: room beside the note
MAX_NOTE_ROOM = 0.4  # the room after the history's end is at most this fraction of the axis
MARKER_PAD_PT = 2  # pt between neighbouring markers
MARK_EDGE_IN = 0.04  # in: a mark keeps this far inside the plot's left edge
STACK_PAD_PT = 2.5  # pt between marks stacked one above the other (at 0.5, two ✓ stacked read as one mark)


@dataclass(frozen=True)
class Scale:
    """How much to shrink text and markers, from the inches one lane gets."""

    lane_in: float  # inches per data unit
    factor: float  # 1.0, or less when there are very many lanes
    compact: bool  # so many lanes that subtitles and optional labels are left out

    @classmethod
    def for_rows(cls, rows: Rows) -> Scale:
        per = LANE_IN
        n_units = rows.height
        if n_units * per > LANES_FIT_IN:
            per = max(LANES_FIT_IN / n_units, min(MIN_LANE_IN, LANES_MAX_IN / n_units))
        return cls(per, max(MIN_SCALE, min(1.0, per / LANE_IN)), per < COMPACT_BELOW_IN)

    def fs(self, base: float) -> float:
        """The font size for ``base`` points at full scale."""
        return max(MIN_FONT_PT, round(base * self.factor, 1))


def plot_width_in(model: Model, rows: Rows, width: float, scale: Scale) -> float:
    """Inches the plot will take of the figure's ``width``: what the row names on its left and the outcomes on its
    right leave (measured as the layout will draw them)."""
    def widest(text: str, size: float, weight: str = "normal") -> float:
        return max(text_width_in(line, scale.fs(size), weight) for line in text.split("\n"))

    left = widest(rows.caption, HEADING_PT, "bold") if rows.caption else 0.0
    right = 0.0
    for r in rows.all:
        lane = r.kind == RowKind.LANE
        left = max(left, widest(r.label, LANE_PT) if lane else widest(r.label, HEADING_PT, "bold"))
        if r.sub and not scale.compact:
            left = max(left, widest(r.sub, SMALL_PT))
        if lane and r.inv in model.invs:
            text, lines = outcome_text(model.invs[r.inv])
            right = max(right, widest(text, LANE_PT))
            if lines and not scale.compact:
                right = max(right, widest("\n".join(lines), MESSAGE_PT))
    return max(width - left - right - SIDES_IN, PLOT_SHARE * width / 2)


def make_room(model: Model, rows: Rows, width: float, scale: Scale) -> tuple[float, bool]:
    """The fraction of the axis to add after the end of the history, and whether that room holds notes.

    Windows that outlive the history get a note like "o-1 kept 24 h →" in room at the right, after an "end of
    history" line, so the note never covers a lane. Marks need no room of their own: each stands at its time, and
    marks that crowd stack up and down (``markers.py``). (0.0, False): no room after the end.
    """
    notes: dict[str, float] = {}
    for w in model.windows:
        if w.end is None or w.end > model.t_end:
            note_in = text_width_in(note_text([w.key], note_what(w)), scale.fs(SMALL_PT)) + NOTE_PAD_IN
            notes[w.inv] = max(notes.get(w.inv, 0.0), note_in)
    if not notes:
        return 0.0, False
    return min(MAX_NOTE_ROOM, max(notes.values()) / plot_width_in(model, rows, width, scale)), True


STRIP_KEY_GAP_PT = 3  # pt between a strip's key and its band (``notes.label_strips``)


def strip_key_room(model: Model, rows: Rows, taxis: TimeAxis, plot_in: float, scale: Scale) -> float:
    """The fraction of the axis to add before its start so that the keys of every lane's strips fit left of the
    lane's first strip (``notes.label_strips``), never on a band (0.0: they fit already)."""
    starts: dict[str, float] = {}
    for w in model.windows:
        if rows.strip(w.inv, w.key) is not None and strip_needs_key(rows.strips[w.inv], model.invs[w.inv].keys):
            starts[w.inv] = min(starts.get(w.inv, w.start), w.start)
    in_per_x = plot_in / max(taxis.x_hi - taxis.x_lo, 1e-12)
    need = 0.0
    for inv, t in starts.items():
        widest = max(text_width_in(short_key(key), scale.fs(MESSAGE_PT)) for key in rows.strips[inv])
        room = (taxis.x(t) - taxis.x_lo) * in_per_x
        need = max(need, widest + 2 * STRIP_KEY_GAP_PT / 72 - room)
    return min(MAX_NOTE_ROOM, need / plot_in) if need > 0 else 0.0


def mark_room(model: Model, taxis: TimeAxis, plot_in: float, scale: Scale, end: bool = False) -> float:
    """The fraction of the axis to add before its start (after its end, with ``end``) so that a mark at the very
    beginning (a "500" at 0 s) lies inside the plot, not against the row names left of it, and one at the very end
    not against the outcomes right of it (0.0: every mark fits already)."""
    in_per_x = plot_in / max(taxis.x_hi - taxis.x_lo, 1e-12)
    styles = [(m.t, m.style) for m in model.marks] + [(e.t, e.style) for e in model.events]
    styles += [(t, s) for a in model.attempts for t, s in ((a.sent, "call_send"), (a.t, a.style))]
    room = (lambda t: taxis.x_hi - taxis.x(t)) if end else (lambda t: taxis.x(t) - taxis.x_lo)
    need = max((ink_pt(style)[0] * scale.factor / 144 + MARK_EDGE_IN - room(t) * in_per_x
                for t, style in styles if style in MARKERS), default=0.0)
    return min(MAX_NOTE_ROOM, need / plot_in) if need > 0 else 0.0


def stack_reach(model: Model, taxis: TimeAxis, plot_in: float, scale: Scale) -> dict[str, float]:
    """How far (data units) the marks of each row reach above and below its centre once stacked where they crowd
    (``layout.levels``, on the axis as it will be drawn ``plot_in`` inches wide), for the rows that stack: by
    invocation, or ``head:<source>`` for a header row. The rows grow to hold them (``rows.layout_rows``)."""
    per_s = plot_in / max(taxis.x_hi - taxis.x_lo, 1e-12)
    marks: dict[str, list[tuple[float, int, str]]] = {}
    for m in model.marks:
        if m.inv is not None:
            marks.setdefault(m.inv, []).append((m.t, m.seq, m.style))
    for e in model.events:
        if e.style != Delivery.PENDING:
            marks.setdefault(f"head:{e.source}", []).append((e.t, e.seq, e.style))
    for a in model.attempts:
        marks.setdefault(f"head:{a.source}", []).extend([(a.sent, a.seq, "call_send"), (a.t, a.seq, a.style)])
    reach = {}
    for row, items in marks.items():
        items.sort()
        xs = [taxis.x(t) * per_s for t, _, _ in items]
        halves = [ink_pt(style)[0] * scale.factor / 144 for _, _, style in items]
        found = levels(xs, halves, MARKER_PAD_PT / 72)
        depth = max(n for _, n, _ in found)
        if depth > 1:
            tall = max(ink_pt(style)[1] for _, _, style in items) * scale.factor / 72
            reach[row] = ((depth - 1) / 2 * (tall + STACK_PAD_PT / 72) + tall / 2) / scale.lane_in
    return reach


@functools.lru_cache(maxsize=4096)
def text_width_in(text: str, size: float, weight: str = "normal") -> float:
    """Inches a line of ``text`` takes at ``size`` points in the timeline's font (measured, not guessed)."""
    with matplotlib_style():
        prop = FontProperties(size=size, weight=weight)
        width, _, _ = _RULER.get_text_width_height_descent(text, prop, ismath=False)
    return width / _RULER.dpi


_RULER = RendererAgg(1, 1, 72)


def _legend_need(cols: list[list[str]], em: float) -> float:
    """Inches the legend's columns take side by side."""
    need = sum(LEGEND_HANDLE_EM * em + max(text_width_in(line, LEGEND_PT) for t in col for line in t.split("\n"))
               for col in cols)
    return need + (len(cols) - 1) * LEGEND_SPACING_EM * em


def _columns(texts: list[str], ncols: int) -> list[list[str]]:
    """The entries of each column: matplotlib fills a legend's columns top to bottom, ``ceil(n / ncols)`` each."""
    per = math.ceil(len(texts) / ncols)
    return [texts[i:i + per] for i in range(0, len(texts), per)]


def legend_layout(texts: list[str], width: float) -> tuple[int, list[str], float]:
    """(columns, entries, rows) for a legend ``width`` inches wide: the most columns (3 at most) that fit; else two
    (one on a narrow figure) with the long entries broken into two lines. ``rows`` counts a two-line row as
    :data:`LEGEND_SECOND_LINE` more."""
    em = LEGEND_PT / 72
    room = width * LEGEND_SHARE
    if not texts:
        return 1, texts, 0.0
    for ncols in (3, 2):
        cols = _columns(texts, ncols)
        if len(cols) == ncols and _legend_need(cols, em) <= room:
            return ncols, texts, float(math.ceil(len(texts) / ncols))
    ncols = 2 if len(texts) > 1 and width >= TWO_LEGEND_COLUMNS_IN else 1
    chars = int(((room - (ncols - 1) * LEGEND_SPACING_EM * em) / ncols - LEGEND_HANDLE_EM * em) / (LEGEND_CHAR_EM * em))
    chars = max(chars, MIN_LEGEND_CHARS)
    wrapped = ["\n".join(textwrap.wrap(t, chars, max_lines=2, placeholder=" …")) if len(t) > chars else t
               for t in texts]
    rows = 0.0
    cols = _columns(wrapped, ncols)
    for i in range(len(cols[0])):
        lines = max(col[i].count("\n") + 1 for col in cols if i < len(col))
        rows += 1 + (lines - 1) * LEGEND_SECOND_LINE
    return ncols, wrapped, rows


def gap_label_room(squeezed: bool) -> float:
    """Data units below the last lane for gap labels (none on a linear axis)."""
    return GAP_LABEL_ROOM if squeezed else 0.0


def y_limits(rows: Rows, squeezed: bool) -> tuple[float, float]:
    """(bottom, top) of the y axis in data units; y grows downwards."""
    return rows.bottom + ROOM_BELOW + gap_label_room(squeezed), rows.top


def fit_title(title: str, width: float, size: float) -> str:
    """``title``, broken into lines where it reads best when it is wider than the figure (``width`` in): in two at
    the most natural break that fits, else wrapped word by word. A "·" only joins what stands on either side of
    it, so where a line breaks at one it is left out: no line starts or ends with a separator."""
    if "\n" in title:  # the caller's own lines, each fitted (measured whole, a line break is a missing glyph)
        return "\n".join(fit_title(line, width, size) for line in title.split("\n"))
    room = width * TITLE_SHARE

    def fits(line: str) -> bool:
        return text_width_in(line, size, "bold") <= room

    if fits(title):
        return title
    for sep in TITLE_BREAKS:
        splits = []
        start = title.find(sep)
        while start > 0:
            kept = "" if sep.strip() in JOINERS else sep.rstrip()  # "a:" ends a line; "a ·" would dangle
            head, tail = title[:start] + kept, title[start + len(sep):]
            if head.strip() and tail.strip() and fits(head) and fits(tail):  # the most even split at the most
                splits.append((abs(len(head) - len(tail)), head, tail))  # natural break
            start = title.find(sep, start + 1)
        if splits:
            _, head, tail = min(splits)
            return f"{head}\n{tail}"
    return "\n".join(_wrapped(title, fits))


JOINERS = ("·",)  # separators a line break replaces


def _wrapped(title: str, fits) -> list[str]:
    """``title`` wrapped greedily, word by word, into lines that ``fits`` (a single word too wide for one stands
    alone); a separator at a break is left out."""
    lines: list[str] = []
    for word in title.split():
        if lines and fits(f"{lines[-1]} {word}"):
            lines[-1] = f"{lines[-1]} {word}"
        else:
            lines.append(word)
    lines = [_unjoined(line) for line in lines]
    return [line for line in lines if line] or [title]


def _unjoined(line: str) -> str:
    """A line without a separator at either end."""
    words = line.split()
    while words and words[0] in JOINERS:
        words.pop(0)
    while words and words[-1] in JOINERS:
        words.pop()
    return " ".join(words)


def title_height(title: str, size: float) -> float:
    """Inches the title takes with the space around it."""
    return TITLE_IN + title.count("\n") * TITLE_LINE_EM * size / 72


def figure_height(rows: Rows, scale: Scale, squeezed: bool, legend_rows: float, title_in: float = TITLE_IN,
                  detail_in: float = 0.0) -> float:
    """Inches: title, lanes, x axis, legend (``legend_rows`` rows of entries) and margin, within the limits, and the
    detail rows' ``detail_in``; at least so tall that the legend takes :data:`LEGEND_MOST_SHARE` of it at most."""
    height = (title_in + (rows.height + ROOM_BELOW + gap_label_room(squeezed)) * scale.lane_in + X_AXIS_IN
              + legend_rows * LEGEND_ROW_IN + MARGIN_IN)
    height = min(max(height, MIN_HEIGHT_IN), MAX_HEIGHT_IN) + detail_in
    # a long key under a short plot outweighs it (sqs-dlq-redrive's 17 entries, too long for three columns, under
    #   two lanes: 30% of the picture): the plot takes in the height that keeps the key a minor part
    legend_in = legend_rows * LEGEND_DRAWN_ROW_IN + LEGEND_PAD_IN
    return max(height, legend_in / LEGEND_MOST_SHARE) if legend_rows else height
