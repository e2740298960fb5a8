"""Markers on the rows, placed in display space once the layout is frozen.

Each row (an invocation's lane, a source's header row, the TTL sweeper, a synchronous
caller's attempts) gets its markers in time order, spread so they never overlap and,
on a lane, kept inside the invocation's bar (or, when they do not fit, running on over a pale strip after it:
the bar keeps the run's true length).
:func:`place_markers` returns where everything landed, for the guides, arrows and
labels that refer to a marker.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from matplotlib import lines as mlines
from matplotlib import patches as mpatches
from matplotlib.transforms import Bbox

from ...vocab import Delivery
from .canvas import Canvas
from .layout import drift_allowed, row_positions
from .model import Attempt, Event, Mark
from .sizing import MARKER_PAD_PT, REFERENCE_DPI, ROW_END_PT
from .style import MARKERS, SPILL_EDGE, SPILL_FACE, SPILL_LS, SPILL_LW, Z_BAR, Z_MARKER, ink_pt

MIN_BAR_PX = 3  # px at REFERENCE_DPI: a 1 ms invocation is still visible
SPILL_MIN_PX = 2  # px at REFERENCE_DPI: marks that overhang their bar by less need no strip
ROW_START_PT = 3  # pt: header-row markers stay this far inside the axes
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
    # (inv, x, y, text); inv None: the sweeper's lane
    dup_points: list[tuple[str | None, float, float, str]] = field(default_factory=list)
    warn_points: list[tuple[str | None, float, float, str]] = field(default_factory=list)  # stale writes, likewise
    refused_points: list[tuple[str | None, float, float, str]] = field(default_factory=list)  # refused writes
    sweep_points: list[tuple[float, float, str]] = field(default_factory=list)  # (x, y, key)
    event_points: list[EventPoint] = field(default_factory=list)
    attempt_px: dict[tuple[int, str], tuple[float, float]] = field(default_factory=dict)  # (id, send|end)
    lane_left: dict[str, float] = field(default_factory=dict)  # display x where a lane's first marker begins
    boxes: list[Bbox] = field(default_factory=list)  # every marker's box, for lines that must not cross them
    spills: dict[str, mpatches.Rectangle] = field(default_factory=dict)  # inv -> the pale strip its marks run on

    def drawn_end(self, inv: str, bar: mpatches.Rectangle) -> float:
        """Data x where a lane's drawing ends: its bar's, or the pale strip's after it."""
        strip = self.spills.get(inv)
        return (strip or bar).get_x() + (strip or bar).get_width()


def marker_half(c: Canvas, style: str) -> float:
    """Half a marker's drawn width in display px."""
    return ink_pt(style)[0] * c.scale.factor * 0.5 * c.pt


def set_bar_px(c: Canvas, rect: mpatches.Rectangle, left: float, right: float) -> None:
    """Move a bar's ends to display x ``left`` and ``right``."""
    rect.set_x(c.data(left, 0.0)[0])
    rect.set_width(c.data(right, 0.0)[0] - rect.get_x())


def place_markers(c: Canvas, bars: dict[str, mpatches.Rectangle]) -> MarkerPlacement:
    """Every marker, on every row; bars become obstacles once they are final."""
    _widen_short_bars(c, bars)
    placement = MarkerPlacement()
    by_style: dict[str, list[tuple[float, float, float, str]]] = {}
    for row in _rows(c, bars, placement.attempt_rows):
        _place_row(c, row, by_style, placement)
    _draw(c, by_style)
    for inv, rect in [*bars.items(), *placement.spills.items()]:
        c.obs.add(rect.get_window_extent(c.renderer), f"lane:{inv}")
    return placement


def _widen_short_bars(c: Canvas, bars: dict[str, mpatches.Rectangle]) -> None:
    """A bar too short to see grows rightwards: it still starts when its invocation started."""
    min_w = MIN_BAR_PX * c.fig.dpi / REFERENCE_DPI
    for rect in bars.values():
        x0, _ = c.px(rect.get_x(), 0)
        x1, _ = c.px(rect.get_x() + rect.get_width(), 0)
        if x1 - x0 < min_w:
            set_bar_px(c, rect, x0, x0 + min_w)


def _rows(c: Canvas, bars: dict[str, mpatches.Rectangle], attempt_rows: dict[str, float]) -> list[MarkerRow]:
    """The rows of markers: lanes, then the sweeper, header rows and callers (which fill ``attempt_rows``)."""
    axbox = c.axes_box()
    top_lo = axbox.x0 + ROW_START_PT * c.pt
    top_hi = max(axbox.x1 - ROW_END_PT * c.pt, top_lo)
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
        # A caller on its source's own line (an Event invoke's on the async queue's, a Task's on Step Functions'):
        # its markers and the source's ("queued again", "retry scheduled") are spread as one row, each send before
        # what it caused at the same instant.
        on_line = [r for r in callers if r.y == c.rows.head_y[source]]
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


def _on_bar(c: Canvas, row: MarkerRow, want: list[float], halves: list[float]) -> tuple[list[float], list[int]]:
    """A lane's markers, in time order, on or just after its bar.

    They keep inside the bar (widened to their width when it is shorter) while each stays within its cluster's
    half width of its time (``layout.drift_allowed``); else, a crowd at the bar's end (the last steps of a run
    that crashed) runs on past it, up to the next squeezed gap or the plot's edge, where the axis leaves room
    (``sizing.make_room``). Never before the invocation started: the arrow from the run it repeats lands on the
    first marker, and would read as an earlier time."""
    bar, pad = row.bar, MARKER_PAD_PT * c.pt
    assert bar is not None  # called for the rows of lanes, which have one
    lo, _ = c.px(bar.get_x(), row.y)
    hi, _ = c.px(bar.get_x() + bar.get_width(), row.y)
    ceiling = max(_ceiling(c, hi), hi)
    need = sum(halves) * 2 + pad * (len(halves) - 1)
    placed, signs = row_positions(want, halves, lo, max(hi, min(ceiling, lo + need)), pad)
    allowed = drift_allowed(want, halves, pad, lo, ceiling)
    if any(signs) or any(abs(p - w) > a + 0.5 for p, w, a in zip(placed, want, allowed)):
        placed, signs = row_positions(want, halves, lo, ceiling, pad)
    return placed, signs


def _spill(c: Canvas, inv: str, bar: mpatches.Rectangle, right: float) -> mpatches.Rectangle | None:
    """A run too short for its marks keeps its true length; its marks go on over a pale strip after the bar (none
    when they fit): drawn longer, a 0.5 s run would seem to be running 20 s later, when others act."""
    end = bar.get_x() + bar.get_width()
    if right - c.px(end, 0.0)[0] < SPILL_MIN_PX * c.fig.dpi / REFERENCE_DPI:
        return None
    strip = mpatches.Rectangle((end, bar.get_y()), c.data(right, 0.0)[0] - end, bar.get_height(),
                               facecolor=SPILL_FACE, edgecolor=SPILL_EDGE, lw=SPILL_LW, ls=SPILL_LS,
                               zorder=Z_BAR, gid=f"spill:{inv}")
    c.ax.add_patch(strip)
    return strip


def _ceiling(c: Canvas, x: float) -> float:
    """Display x a row's markers may reach after ``x``: the next squeezed gap, or the plot's right edge."""
    ceiling = c.axes_box().x1 - ROW_END_PT * c.pt
    for _, _, xa, _ in c.taxis.gaps:
        gap_lo = c.px(xa, 0)[0]
        if gap_lo >= x - 1:
            ceiling = min(ceiling, gap_lo - ROW_END_PT * c.pt)
    return ceiling


def _place_row(c: Canvas, row: MarkerRow, by_style: dict[str, list[tuple[float, float, float, str]]],
               placement: MarkerPlacement) -> None:
    """Spread one row's markers, register them as obstacles, and note what refers to them."""
    items = sorted(row.items, key=lambda it: (it[0], it[1]))
    halves = [marker_half(c, it.style) for it in items]
    want = [c.px(c.taxis.x(it.t), row.y)[0] for it in items]
    if row.bar is not None:
        placed, signs = _on_bar(c, row, want, halves)
    else:
        placed, signs = row_positions(want, halves, row.lo, row.hi, MARKER_PAD_PT * c.pt)
    if row.bar is not None and placed:
        inv = row.owner[len("lane:"):]
        placement.lane_left[inv] = placed[0] - halves[0]
        strip = _spill(c, inv, row.bar, max(p + h for p, h in zip(placed, halves)))
        if strip is not None:
            placement.spills[inv] = strip
    for item, px, sign, half in zip(items, placed, signs, halves):
        yd = row.y + sign * row.dy
        py = c.px(0.0, yd)[1]
        by_style.setdefault(item.style, []).append((c.data(px, py)[0], yd, c.taxis.x(item.t), row.owner))
        tall = ink_pt(item.style)[1] * c.scale.factor * c.pt
        mine = f"head:{item.payload.source}:{item.payload.seq}" if isinstance(item.payload, Event) else row.owner
        box = Bbox.from_bounds(px - half, py - tall / 2, 2 * half, tall)
        c.obs.add(box, mine)
        placement.boxes.append(box)
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


def _draw(c: Canvas, by_style: dict[str, list[tuple[float, float, float, str]]]) -> None:
    """One line of markers per style, in the fixed order of ``MARKERS`` (deterministic z-order); the figure
    keeps where each marker stands in time and its row (``TimelineFigure.mark_times``)."""
    meant = {}
    for name in MARKERS:
        pts = by_style.get(name)
        if not pts:
            continue
        kw = dict(MARKERS[name][0])
        kw["ms"] = kw["ms"] * c.scale.factor
        gid = f"marker:{name}"
        line = mlines.Line2D([p[0] for p in pts], [p[1] for p in pts], ls="none", zorder=Z_MARKER, gid=gid, **kw)
        line.set_in_layout(False)
        c.ax.add_line(line)
        meant[gid] = [(p[2], p[3]) for p in pts]
    c.fig.mark_times = meant
