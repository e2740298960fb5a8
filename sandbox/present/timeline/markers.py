"""Markers on the rows, placed in display space once the layout is frozen.

Each row (an invocation's lane, a source's header row, the TTL sweeper, a synchronous
caller's attempts) gets its markers at their true times: a mark's centre is where its
record's time is on the axis, always. Marks that would cover each other there are
stacked up and down within the row (:func:`stack_levels`), the earliest on top; they
never move along the axis, and a bar is never widened to hold them.
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
from .lanes import MIN_BAR_PX
from .layout import stack_levels
from .model import Attempt, Event, Mark
from .sizing import MARKER_PAD_PT, REFERENCE_DPI, STACK_PAD_PT
from .style import MARKERS, Z_BAR, Z_MARKER, ink_pt

CAP_GROW = 0.05  # data units: a short bar's cap reaches this far above and below the bar ...
CAP_ALPHA = 0.55  # ... in its outcome's colour, lighter than the bar itself ...
CAP_LW = 0.8  # pt: ... with a thin black outline
CAP_HOLDS = 2.4  # in the detail: a cap this many times as wide as the marks on it
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
    # source, seq and style, "head:async:12:receive", whatever row it is placed on)
    y: float
    items: list[Item]
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
    lane_right: dict[str, float] = field(default_factory=dict)  # data x where a lane's last marker ends
    lane_reach: dict[str, tuple[float, float]] = field(default_factory=dict)  # display y a lane's marks span
    boxes: list[Bbox] = field(default_factory=list)  # every marker's box, for lines that must not cross them

    def drawn_end(self, inv: str, bar: mpatches.Rectangle) -> float:
        """Data x where a lane's drawing ends: its bar's, or its last marker's when that overhangs the bar."""
        return max(bar.get_x() + bar.get_width(), self.lane_right.get(inv, -float("inf")))


def marker_half(c: Canvas, style: str) -> float:
    """Half a marker's drawn width in display px."""
    return ink_pt(style)[0] * c.scale.factor * 0.5 * c.pt


def place_markers(c: Canvas, bars: dict[str, mpatches.Rectangle]) -> MarkerPlacement:
    """Every marker, on every row; bars become obstacles once they are final."""
    _cap_short_bars(c, bars)
    placement = MarkerPlacement()
    by_style: dict[str, list[tuple[float, float, float, str]]] = {}
    for row in _rows(c, bars, placement.attempt_rows):
        _place_row(c, row, by_style, placement)
    _draw(c, by_style)
    for inv, rect in bars.items():
        c.obs.add(rect.get_window_extent(c.renderer), f"lane:{inv}")
    return placement


def _cap_short_bars(c: Canvas, bars: dict[str, mpatches.Rectangle]) -> None:
    """A bar too short to see (a run that errors in 14 ms) stays as long as its run, and gets a cap: a box in its
    outcome's colour, :data:`MIN_BAR_PX` wide and a little taller than the bar, centred on it, behind it. The cap
    marks where the run is, as a marker marks a moment; its ends say nothing (the bar's do, at their true times).
    In the detail's rows, which magnify as much as they may, a run still too short gets a cap that holds its marks
    (:data:`CAP_HOLDS` times as wide as they are), so they do not hide it."""
    min_w = MIN_BAR_PX * c.fig.dpi / REFERENCE_DPI
    for inv, rect in bars.items():
        x0, _ = c.px(rect.get_x(), 0.0)
        x1, _ = c.px(rect.get_x() + rect.get_width(), 0.0)
        if x1 - x0 >= min_w:
            continue
        if c.detail:
            min_w = max(MIN_BAR_PX * c.fig.dpi / REFERENCE_DPI, CAP_HOLDS * _marks_width(c, inv))
        mid = (x0 + x1) / 2
        cx0, cx1 = c.data(mid - min_w / 2, 0.0)[0], c.data(mid + min_w / 2, 0.0)[0]
        cap = mpatches.Rectangle((cx0, rect.get_y() - CAP_GROW), cx1 - cx0, rect.get_height() + 2 * CAP_GROW,
                                 facecolor=rect.get_facecolor()[:3], alpha=CAP_ALPHA, edgecolor="black", lw=CAP_LW,
                                 zorder=Z_BAR - 0.05, gid=f"cap:{inv}")
        c.ax.add_patch(cap)
        c.obs.add(cap.get_window_extent(c.renderer), f"lane:{inv}")


def _marks_width(c: Canvas, inv: str) -> float:
    """Display px the marks of a lane span together."""
    spans = [(c.px(c.taxis.x(m.t), 0.0)[0], marker_half(c, m.style)) for m in c.model.marks if m.inv == inv]
    return max((x + h for x, h in spans), default=0.0) - min((x - h for x, h in spans), default=0.0)


def _rows(c: Canvas, bars: dict[str, mpatches.Rectangle], attempt_rows: dict[str, float]) -> list[MarkerRow]:
    """The rows of markers: lanes, then the sweeper, header rows and callers (which fill ``attempt_rows``)."""
    lanes: dict[str, list[Item]] = {}
    sweeps: list[Item] = []
    for m in c.model.marks:
        (sweeps if m.inv is None else lanes.setdefault(m.inv, [])).append(Item(m.t, m.seq, m.style, m))
    rows = [MarkerRow(f"lane:{inv}", c.rows.lane_y[inv], items, bar=bars[inv]) for inv, items in lanes.items()]
    if sweeps and c.rows.sweeper_y is not None:
        rows.append(MarkerRow("sweeper", c.rows.sweeper_y, sweeps))
    heads: dict[str, list[Item]] = {}
    for e in c.model.events:
        if e.style != Delivery.PENDING and e.source in c.rows.head_y:
            heads.setdefault(e.source, []).append(Item(e.t, e.seq, e.style, e))
    callers = _caller_rows(c, attempt_rows) if c.model.attempts else []
    for source, items in heads.items():
        # A caller on its source's own line (an Event invoke's on the async queue's, a Task's on Step Functions'):
        # its markers and the source's ("queued again", "retry scheduled") are spread as one row, each send before
        # what it caused at the same instant.
        on_line = [r for r in callers if r.y == c.rows.head_y[source]]
        shared = on_line[0] if on_line else None
        if shared is None:
            rows.append(MarkerRow(f"head:{source}", c.rows.head_y[source], items))
            continue
        sends = [Item(it.t, -1, it.style, it.payload) for it in shared.items if it.style == "call_send"]
        shared.items = sends + [it for it in shared.items if it.style != "call_send"] + items
    return rows + callers


def _caller_rows(c: Canvas, attempt_rows: dict[str, float]) -> list[MarkerRow]:
    """One sub-row per synchronous caller on its source's header row: each attempt's send and end."""
    sources = {a.actor: a.source for a in c.model.attempts if a.source in c.rows.head_y}
    rows = []
    for source in dict.fromkeys(sources.values()):
        actors = [actor for actor, s in sources.items() if s == source]
        rows += _callers_of(actors, c.model.attempts, c.rows.head_y[source], attempt_rows)
    return rows


def _callers_of(actors: list[str], attempts: list[Attempt], head_y: float,
                attempt_rows: dict[str, float]) -> list[MarkerRow]:
    """The callers of one header row, each on its own sub-row when there are several."""
    offsets = [0.0] if len(actors) == 1 else CALLER_OFFSETS
    rows = []
    for i, actor in enumerate(actors):
        y = head_y + offsets[i % len(offsets)]
        attempt_rows[actor] = y
        items = []
        for a in attempts:
            if a.actor == actor:
                items.append(Item(a.sent, a.seq, "call_send", (a, "send")))
                items.append(Item(a.t, a.seq, a.style, (a, "end")))
        rows.append(MarkerRow(f"caller:{actor}", y, sorted(items, key=lambda it: (it[0], it[1]))))
    return rows


def _place_row(c: Canvas, row: MarkerRow, by_style: dict[str, list[tuple[float, float, float, str]]],
               placement: MarkerPlacement) -> None:
    """Put one row's markers at their times, stacked where they would cover each other; register them as obstacles,
    and note what refers to them."""
    items = sorted(row.items, key=lambda it: (it[0], it[1]))
    halves = [marker_half(c, it.style) for it in items]
    talls = [ink_pt(it.style)[1] * c.scale.factor * c.pt for it in items]
    xs = [c.px(c.taxis.x(it.t), row.y)[0] for it in items]
    row_py = c.px(0.0, row.y)[1]
    lifts = stack_levels(xs, halves, talls, MARKER_PAD_PT * c.pt, STACK_PAD_PT * c.pt)
    if row.bar is not None and items:
        inv = row.owner[len("lane:"):]
        placement.lane_left[inv] = min(x - h for x, h in zip(xs, halves))
        placement.lane_right[inv] = c.data(max(x + h for x, h in zip(xs, halves)), row_py)[0]
        placement.lane_reach[inv] = (row_py + min(lf - t / 2 for lf, t in zip(lifts, talls)),
                                     row_py + max(lf + t / 2 for lf, t in zip(lifts, talls)))
    for item, px, lift, half, tall in zip(items, xs, lifts, halves, talls):
        py = row_py + lift
        by_style.setdefault(item.style, []).append((c.taxis.x(item.t), c.data(px, py)[1], item.t, row.owner))
        mine = head_owner(item.payload) if isinstance(item.payload, Event) else row.owner
        box = Bbox.from_bounds(px - half, py - tall / 2, 2 * half, tall)
        c.obs.add(box, mine)
        placement.boxes.append(box)
        _note(placement, item.payload, px, py, half)


def head_owner(e: Event) -> str:
    """A header event's obstacle owner, its label's to cover: by its source, record and kind (one delivery record
    can stand for two marks, EventBridge's refused hand-offs and the accepted one)."""
    return f"head:{e.source}:{e.seq}:{e.style}"


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
    keeps each marker's time (s) and its row (``TimelineFigure.mark_times``), for the true-time audit."""
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
    if c.detail:  # one of the detail's rows: its own marks, by its axes' place in the figure
        c.fig.detail_mark_times = {**c.fig.detail_mark_times, c.fig.axes.index(c.ax): meant}
    else:
        c.fig.mark_times = meant
