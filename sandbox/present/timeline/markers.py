"""Markers on the rows, placed in display space once the layout is frozen.

Each row (an invocation's lane, a source's header row, the TTL sweeper, a synchronous
caller's attempts) gets its markers in time order, spread so they never overlap and,
on a lane, kept inside the invocation's bar (widened a little if they do not fit).
:func:`place_markers` returns where everything landed, for the guides, arrows and
labels that refer to a marker.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from matplotlib import lines as mlines
from matplotlib import patches as mpatches
from matplotlib.markers import MarkerStyle
from matplotlib.transforms import Bbox

from ...vocab import Delivery, SourceKind
from .canvas import Canvas
from .layout import row_positions
from .model import Attempt, Event, Mark
from .sizing import REFERENCE_DPI
from .style import MARKERS, Z_MARKER

MIN_BAR_PX = 3  # px at REFERENCE_DPI: a 1 ms invocation is still visible
MARKER_PAD_PT = 2  # pt between neighbouring markers
OVERHANG_RIGHT = 0.7  # markers that overhang a short bar do so mostly after it (later steps go right)
ROW_START_PT, ROW_END_PT = 3, 2  # pt: header-row markers stay this far inside the axes and the end of history
# staggering: crowded markers alternate this far above and below the row (data units)
LANE_STAGGER, SWEEPER_STAGGER, HEAD_STAGGER, CALLER_STAGGER = 0.19, 0.15, 0.16, 0.0  # a diamond is 0.37 tall
CALLER_OFFSETS = (-0.22, 0.0, 0.22)  # data units: several synchronous callers share the header row


class Item(NamedTuple):
    """One marker to place: when, its history position, its style, and what it stands for."""

    t: float
    seq: int
    style: str
    payload: Any  # a Mark, an Event, or (Attempt, "send" | "end")


@dataclass
class MarkerRow:
    """The markers of one row and the display x range they must stay in."""

    owner: str  # obstacle owner: "lane:inv-1", "head:sqs", "sweeper", "caller:<actor>" (a header event's own: its
    # source and seq, "head:async:12", whatever row it is placed on)
    y: float
    dy: float  # how far crowded markers move up and down
    items: list[Item]
    lo: float = 0.0  # display x the markers must stay within (lanes: their bar's ends)
    hi: float = 0.0
    bar: mpatches.Rectangle | None = None


class EventPoint(NamedTuple):
    """A labelled header-row marker, in display px: where its label goes next to."""

    event: Event
    x: float
    y: float
    half: float  # half the marker's width


@dataclass
class MarkerPlacement:
    """Where the markers landed (display px), for what refers to them later."""

    attempt_rows: dict[str, float] = field(default_factory=dict)  # caller -> data y of its attempts
    dup_points: list[tuple[str, float, float, str]] = field(default_factory=list)  # (inv, x, y, text)
    warn_points: list[tuple[str, float, float, str]] = field(default_factory=list)  # stale writes: (inv, x, y, text)
    refused_points: list[tuple[str, float, float, str]] = field(default_factory=list)  # refused writes, likewise
    sweep_points: list[tuple[float, float, str]] = field(default_factory=list)  # (x, y, key)
    event_points: list[EventPoint] = field(default_factory=list)
    attempt_px: dict[tuple[int, str], tuple[float, float]] = field(default_factory=dict)  # (id, send|end)
    lane_left: dict[str, float] = field(default_factory=dict)  # display x where a lane's first marker begins


def marker_half(c: Canvas, style: str) -> float:
    """Half a marker's drawn width in display px."""
    return ink_pt(style)[0] * c.scale.factor * 0.5 * c.pt


@functools.cache
def ink_pt(style: str) -> tuple[float, float]:
    """(width, height) in points at full scale of what a marker draws: its path's extents at its size, plus the
    edge line. Measured, because a marker's size is not its width: a diamond ("D") is 1.41 times as wide as its
    size, a "$" glyph half as wide."""
    kw = MARKERS[style][0]
    marker = MarkerStyle(kw["marker"])
    ext = marker.get_path().transformed(marker.get_transform()).get_extents()
    edge = kw.get("mew", 1.0)
    return ext.width * kw["ms"] + edge, ext.height * kw["ms"] + edge


def set_bar_px(c: Canvas, rect: mpatches.Rectangle, left: float, right: float) -> None:
    """Move a bar's ends to display x ``left`` and ``right``."""
    rect.set_x(c.data(left, 0.0)[0])
    rect.set_width(c.data(right, 0.0)[0] - rect.get_x())


def _end_px(c: Canvas) -> float:
    """Display x of the end of the history."""
    return c.px(c.taxis.x(c.model.t_end), 0)[0]


def place_markers(c: Canvas, bars: dict[str, mpatches.Rectangle]) -> MarkerPlacement:
    """Every marker, on every row; bars become obstacles once they are final."""
    _widen_short_bars(c, bars)
    placement = MarkerPlacement()
    by_style: dict[str, list[tuple[float, float]]] = {}
    for row in _rows(c, bars, placement.attempt_rows):
        _place_row(c, row, by_style, placement)
    _draw(c, by_style)
    for inv, rect in bars.items():
        c.obs.add(rect.get_window_extent(c.renderer), f"lane:{inv}")
    return placement


def _widen_short_bars(c: Canvas, bars: dict[str, mpatches.Rectangle]) -> None:
    min_w = MIN_BAR_PX * c.fig.dpi / REFERENCE_DPI
    end_px = _end_px(c)
    for rect in bars.values():
        x0, _ = c.px(rect.get_x(), 0)
        x1, _ = c.px(rect.get_x() + rect.get_width(), 0)
        if x1 - x0 < min_w:
            right = min(x0 + min_w, max(end_px, x1))
            set_bar_px(c, rect, right - min_w, right)


def _rows(c: Canvas, bars: dict[str, mpatches.Rectangle], attempt_rows: dict[str, float]) -> list[MarkerRow]:
    """The rows of markers: lanes, then the sweeper, header rows and callers (which fill ``attempt_rows``)."""
    axbox = c.axes_box()
    top_lo = axbox.x0 + ROW_START_PT * c.pt
    top_hi = max(_end_px(c) - ROW_END_PT * c.pt, top_lo)
    lanes: dict[str, list[Item]] = {}
    sweeps: list[Item] = []
    for m in c.model.marks:
        (sweeps if m.inv is None else lanes.setdefault(m.inv, [])).append(Item(m.t, m.seq, m.style, m))
    rows = [MarkerRow(f"lane:{inv}", c.rows.lane_y[inv], LANE_STAGGER, items, bar=bars[inv])
            for inv, items in lanes.items()]
    if sweeps and c.rows.sweeper_y is not None:
        rows.append(MarkerRow("sweeper", c.rows.sweeper_y, SWEEPER_STAGGER, sweeps, top_lo, top_hi))
    heads: dict[str, list[Item]] = {}
    for e in c.model.events:
        if e.style != Delivery.PENDING and e.source in c.rows.head_y:
            heads.setdefault(e.source, []).append(Item(e.t, e.seq, e.style, e))
    callers = _caller_rows(c, attempt_rows, top_lo, top_hi) if c.model.attempts else []
    for source, items in heads.items():
        # An Event invoke's caller on the async queue's own line: its markers and the queue's ("queued again")
        # are spread as one row, each send before what it caused at the same instant.
        on_line = [r for r in callers if r.y == c.rows.head_y[source]] if source == SourceKind.ASYNC else []
        shared = on_line[0] if on_line else None
        if shared is None:
            rows.append(MarkerRow(f"head:{source}", c.rows.head_y[source], HEAD_STAGGER, items, top_lo, top_hi))
            continue
        sends = [Item(it.t, -1, it.style, it.payload) for it in shared.items if it.style == "call_send"]
        shared.items = sends + [it for it in shared.items if it.style != "call_send"] + items
    return rows + callers


def _caller_rows(c: Canvas, attempt_rows: dict[str, float], lo: float, hi: float) -> list[MarkerRow]:
    """One sub-row per synchronous caller on its source's header row: each attempt's send and end."""
    sources = {a.actor: a.source for a in c.model.attempts if a.source in c.rows.head_y}
    rows = []
    for source in dict.fromkeys(sources.values()):
        actors = [actor for actor, s in sources.items() if s == source]
        rows += _callers_of(c, actors, c.rows.head_y[source], attempt_rows, lo, hi)
    return rows


def _callers_of(c: Canvas, actors: list[str], head_y: float, attempt_rows: dict[str, float], lo: float,
                hi: float) -> list[MarkerRow]:
    """The callers of one header row, each on its own sub-row when there are several."""
    offsets = [0.0] if len(actors) == 1 else CALLER_OFFSETS
    rows = []
    for i, actor in enumerate(actors):
        y = head_y + offsets[i % len(offsets)]
        attempt_rows[actor] = y
        items = []
        for a in c.model.attempts:
            if a.actor == actor:
                items.append(Item(a.sent, a.seq, "call_send", (a, "send")))
                items.append(Item(a.t, a.seq, a.style, (a, "end")))
        rows.append(MarkerRow(f"caller:{actor}", y, CALLER_STAGGER, sorted(items, key=lambda it: (it[0], it[1])),
                              lo, hi))
    return rows


def _fit_bar(c: Canvas, row: MarkerRow, halves: list[float]) -> tuple[float, float]:
    """The display x range a lane's markers may use: its bar, widened by at most one marker if they do not fit,
    then, for a short invocation with many steps, reaching past its ends by at most one more; never into a
    squeezed gap (a marker there would read as seconds or hours later) or past the end of history."""
    bar = row.bar
    lo, _ = c.px(bar.get_x(), row.y)
    hi, _ = c.px(bar.get_x() + bar.get_width(), row.y)
    floor, ceiling = _free_stretch(c, lo, hi)
    need = sum(halves) * 2 + MARKER_PAD_PT * c.pt * (len(halves) - 1)
    if need > hi - lo:  # widen the bar by at most one marker
        ext = min(need - (hi - lo), 2 * max(halves))
        r = min(ext, max(0.0, ceiling - hi))
        hi += r
        lo -= min(ext - r, max(0.0, lo - floor))
        set_bar_px(c, bar, lo, hi)
    if need > hi - lo:  # still too many for the bar: they overhang it by one more marker, later steps to the right
        left_room, right_room = max(0.0, lo - floor), max(0.0, ceiling - hi)
        extra = min(need - (hi - lo), 2 * max(halves))  # (farther out they would seem to happen at other times:
        # what is left over, row_positions squeezes or staggers up and down around the bar)
        r = min(extra * OVERHANG_RIGHT, right_room)
        left = min(extra - r, left_room)
        r = min(extra - left, right_room)
        lo, hi = lo - left, hi + r
    return lo, hi


def _free_stretch(c: Canvas, lo: float, hi: float) -> tuple[float, float]:
    """(left, right) display x a lane's markers may reach from its bar [lo, hi]: the axes' start or the squeezed
    gap before the bar, and the gap after it or the end of history."""
    floor, ceiling = c.axes_box().x0 + ROW_START_PT * c.pt, _end_px(c)
    for _, _, xa, xb in c.taxis.gaps:
        gap_lo, gap_hi = c.px(xa, 0)[0], c.px(xb, 0)[0]
        if gap_hi <= lo + 1:
            floor = max(floor, gap_hi + ROW_START_PT * c.pt)
        elif gap_lo >= hi - 1:
            ceiling = min(ceiling, gap_lo - ROW_END_PT * c.pt)
    return floor, max(ceiling, hi)


def _place_row(c: Canvas, row: MarkerRow, by_style: dict[str, list[tuple[float, float]]],
               placement: MarkerPlacement) -> None:
    """Spread one row's markers, register them as obstacles, and note what refers to them."""
    items = sorted(row.items, key=lambda it: (it[0], it[1]))
    halves = [marker_half(c, it.style) for it in items]
    want = [c.px(c.taxis.x(it.t), row.y)[0] for it in items]
    lo, hi = _fit_bar(c, row, halves) if row.bar is not None else (row.lo, row.hi)
    placed, signs = row_positions(want, halves, lo, hi, MARKER_PAD_PT * c.pt)
    if row.bar is not None and placed:
        placement.lane_left[row.owner[len("lane:"):]] = placed[0] - halves[0]
    for item, px, sign, half in zip(items, placed, signs, halves):
        yd = row.y + sign * row.dy
        py = c.px(0.0, yd)[1]
        by_style.setdefault(item.style, []).append((c.data(px, py)[0], yd))
        tall = ink_pt(item.style)[1] * c.scale.factor * c.pt
        mine = f"head:{item.payload.source}:{item.payload.seq}" if isinstance(item.payload, Event) else row.owner
        c.obs.add(Bbox.from_bounds(px - half, py - tall / 2, 2 * half, tall), mine)
        _note(placement, item.payload, px, py, half)


def _note(placement: MarkerPlacement, payload: Any, px: float, py: float, half: float) -> None:
    """Remember where a marker that something refers to landed."""
    if isinstance(payload, Mark):
        if payload.dup_text:
            placement.dup_points.append((payload.inv, px, py, payload.dup_text))
        if payload.warning:
            placement.warn_points.append((payload.inv, px, py, payload.warning))
        if payload.note:
            placement.refused_points.append((payload.inv, px, py, payload.note))
        if payload.label:
            placement.sweep_points.append((px, py, payload.label))
    elif isinstance(payload, Event):
        if payload.label:
            placement.event_points.append(EventPoint(payload, px, py, half))
    elif isinstance(payload, tuple):
        attempt: Attempt = payload[0]
        placement.attempt_px[(id(attempt), payload[1])] = (px, py)


def _draw(c: Canvas, by_style: dict[str, list[tuple[float, float]]]) -> None:
    """One line of markers per style, in the fixed order of ``MARKERS`` (deterministic z-order)."""
    for name in MARKERS:
        pts = by_style.get(name)
        if not pts:
            continue
        kw = dict(MARKERS[name][0])
        kw["ms"] = kw["ms"] * c.scale.factor
        line = mlines.Line2D([p[0] for p in pts], [p[1] for p in pts], ls="none", zorder=Z_MARKER,
                             gid=f"marker:{name}", **kw)
        line.set_in_layout(False)
        c.ax.add_line(line)
