"""Labels placed without covering anything: source events, caller results, sweeps (arrows': ``arrow_labels.py``).

Each kind of label has a list of candidate positions around what it names; the
first candidate that overlaps nothing already drawn wins (:meth:`Canvas.place`).
The pipeline in ``drawing.py`` runs these stages most important first, so a
required label (where a lost order went, what a caller finally saw) is never
crowded out by an optional one; optional labels that find no free spot are left out.
"""
from __future__ import annotations

import functools
import math
import textwrap
from collections.abc import Iterable
from typing import Any

import numpy as np
from matplotlib import lines as mlines
from matplotlib import patches as mpatches
from matplotlib.transforms import Bbox

from ...vocab import AWS_OK, HTTP_CLIENTS, Delivery, SourceKind
from .audit import CALLOUT_CARET, CALLOUT_LEADER, CALLOUT_NEAR_PX, callout_near, marks
from .canvas import GAP_OWNER, Canvas
from .guides import CallerWait
from .lanes import PENDING_HALF, QueueBox, queue_owner
from .markers import EventPoint, MarkerPlacement, head_owner
from .model import READ_TIMEOUT, Attempt, Batching, Event, Hidden
from .rows import RowKind
from .sizing import REFERENCE_DPI
from .style import (
    EVENT_TEXT,
    LABEL_EDGE,
    LABEL_PT,
    MESSAGE_PT,
    QUEUE_TEXT,
    SMALL_PT,
    TEXT_GREY,
    Z_EVENT_LABEL,
    Z_GAP_LABEL,
    Z_NOTE,
)
from .text import halves
from .timefmt import duration

# where a lost or stuck order went, or never arrived, and why a deleted message still runs again: always labelled
REQUIRED_LABELS = ("dropped", "gave_up", Delivery.PENDING, "deleted_late")
#: A stack's statuses in few words: a grey square's label, by it; the key names them as CloudFormation does.
STACK_WORDS = {"CREATE_COMPLETE": "created", "ROLLBACK_IN_PROGRESS": "rolling back",
               "ROLLBACK_COMPLETE": "rolled back", "ROLLBACK_FAILED": "rollback failed"}


def status_words(label: str) -> str:
    """A stack status event's label ("stack ROLLBACK_FAILED") in the words its square is labelled with."""
    status = label.removeprefix("stack ").strip()
    return STACK_WORDS.get(status, status.lower().replace("_", " "))

EVENT_GAP_PT = 5  # pt between a header-row marker and its label beside it
EVENT_CLEAR_PT = 7  # pt at full scale: a label above or below clears at least this much ...
EVENT_CLEAR_PAD_PT = 6  # pt: ... plus this
UNDER_SHIFTS_PT = (0, 3, -3, 6, -6)  # pt: a label under its marker may stand this far off its middle
CARET_PT = 7  # pt: the tail under (or over) an off-centre label, pointing at its marker
CARET_EDGE_PT = 1.0  # pt: the tail's outline
LEADER_SIDE_PT = 3  # pt beside a stack, a leader past its other marks comes down
LEADER_LW = 1.0  # pt: the line from a label that stands apart from its marker to it
ACROSS_BREAK_HITS = 1000  # a label with an axis break between it and its marker counts as this many overlaps
BAND_STYLES = (Delivery.THROTTLED, Delivery.PENDING)  # labels of a band on a source's row, not of a mark
LEADER_IGNORES = ("separator", "static", "endline")  # what a label's leader line may cross (a row's line, a break's
#   label, the end of the history)
EVENT_STEP_PT = 14  # pt: farther candidates beside the marker step out this much ...
EVENT_STEPS = (1, 2, 3)  # ... this many times
EVENT_HIGHER = 1.6  # the last candidates above a marker stand this many times as high as the first
PENDING_INSET_PT = 6  # pt: a pending label's distance from its band's ends
PENDING_LIFT_PT = 2  # pt: a label above the band clears it by this much
CALLER_GAP_PT = 9  # pt between a caller's last marker and what it finally saw
SWEEP_GAP_PT = 10  # pt at full scale beside the sweep marker


def _event_style(c: Canvas, e: Event) -> dict:
    """Text properties: required labels are bold, black and boxed in black."""
    strong = e.style in REQUIRED_LABELS
    return {"fontsize": c.fs(LABEL_PT if strong else SMALL_PT), "color": "black" if strong else EVENT_TEXT,
            "fontweight": "bold" if strong else "normal", "zorder": Z_EVENT_LABEL, "parse_math": False,
            "gid": f"event-label:{e.style}",
            "bbox": {"boxstyle": "round,pad=0.2", "fc": "white", "ec": "black" if strong else LABEL_EDGE,
                     "lw": 1.0 if strong else 0.6}}


def _beside_marker(c: Canvas, p: EventPoint, boxes: list[Bbox]) -> list[tuple[float, float, str, str]]:
    """(x, y, ha, va) around a header-row marker: beside it, above, below, then farther out; then above and below
    the stack of marks it stands in (``boxes``: every mark's), when marks at its time are stacked."""
    pt, half = c.pt, p.half
    off = half + EVENT_GAP_PT * pt
    clear = max(half, EVENT_CLEAR_PT * pt * c.scale.factor) + EVENT_CLEAR_PAD_PT * pt
    up, down = clear, -clear
    offsets = [(off, 0, "left", "center"), (-off, 0, "right", "center"),
               (-half, up, "left", "bottom"), (half, up, "right", "bottom"), (0, up, "center", "bottom"),
               (-half, down, "left", "top"), (half, down, "right", "top"), (0, down, "center", "top")]
    offsets += [(off + k * EVENT_STEP_PT * pt, 0, "left", "center") for k in EVENT_STEPS]
    offsets += [(-off - k * EVENT_STEP_PT * pt, 0, "right", "center") for k in EVENT_STEPS]
    row = _head_span_px(c, p.event.source)
    # the marks stacked on its own row: a lane's marks at that time stand lower, under another row's name
    stack = [b for b in boxes if b.x0 <= p.x <= b.x1 and (row is None or row[0] <= (b.y0 + b.y1) / 2 <= row[1])]
    top = max((b.y1 for b in stack), default=p.y + half) + EVENT_CLEAR_PAD_PT * pt - p.y
    bottom = min((b.y0 for b in stack), default=p.y - half) - EVENT_CLEAR_PAD_PT * pt - p.y
    # over the stack only where the marker is its top (under it, its bottom): a caret there points at the marker,
    #   not at another mark in between (lesson 02 cell 20: the orphan's caret pointed at the stack's status square)
    sides = [(dy, va, any(_between(b, p, end) for b in stack))
             for dy, va, end in ((top, "bottom", p.y + half), (bottom, "top", p.y - half))]
    offsets += [(dx, dy, ha, va) for dy, va, past in sides if not past
                for dx, ha in ((0, "center"), (half, "right"), (-half, "left"))]
    # higher still: a neighbour's mark a label's width away (a retry every 30 s) reaches into the room just above
    offsets += [(dx, EVENT_HIGHER * up, ha, "bottom") for dx, ha in ((half, "right"), (-half, "left"), (0, "center"))]
    # last, over (under) the stack past other marks: a leader then comes down beside them (``_point_at``)
    offsets += [(dx, dy, ha, va) for dy, va, past in sides if past for dx, ha in ((-half, "left"), (0, "center"))]
    return [(p.x + dx, p.y + dy, ha, va) for dx, dy, ha, va in offsets]


def _head_span_px(c: Canvas, source: str) -> tuple[float, float] | None:
    """Display y from and to of a source's header row, from its top to its separator (None: it has no row)."""
    row = next((r for r in c.rows.all if r.kind == RowKind.HEADING and r.source == source), None)
    if row is None:
        return None
    a, b = c.px(0, row.y - row.above)[1], c.px(0, row.y + row.sep)[1]
    return min(a, b), max(a, b)


def _lane_marks(c: Canvas, boxes: list[Bbox]) -> list[Bbox]:
    """The marks (of ``boxes``, every mark's) that stand on a lane's row."""
    spans = [sorted((c.px(0, top)[1], c.px(0, bottom)[1])) for top, bottom in c.rows.lane_spans().values()]
    return [b for b in boxes if any(lo < (b.y0 + b.y1) / 2 < hi for lo, hi in spans)]


def _by_lane_mark(c: Canvas, box: Bbox, lane_marks: list[Bbox], row: tuple[float, float] | None) -> bool:
    """A header row's label standing off its row (``row``: display y from and to) next to a lane's mark reads as that
    mark's (durable-esm-start: "o-1, o-2, o-3 received again" down under inv-3's ✖, its caret on it)."""
    if row is not None and box.y0 <= row[1] and row[0] <= box.y1:
        return False  # on its own row (across its separator, at worst), over the line from the lanes
    near = CALLOUT_NEAR_PX * c.fig.dpi / REFERENCE_DPI
    return any(callout_near(box, m, near) for m in lane_marks
               if m.x0 - near <= box.x1 and box.x0 <= m.x1 + near and m.y0 - near <= box.y1 and box.y0 <= m.y1 + near)


def _between(b: Bbox, p: EventPoint, end: float) -> bool:
    """A mark's box ``b`` stands beyond marker ``p``'s edge at ``end`` (display y), on the side a label there is."""
    if abs((b.y0 + b.y1) / 2 - p.y) < 1e-6:
        return False  # the marker's own box
    return b.y0 >= end - 1e-6 if end > p.y else b.y1 <= end + 1e-6


def _on_band(c: Canvas, e: Event, rect: mpatches.Rectangle) -> list[tuple[float, float, str, str]]:
    """(x, y, ha, va) on a pending band (its right end first), then above it."""
    y = c.rows.head_y[e.source]
    x0, y0 = c.px(rect.get_x(), y)
    x1, _ = c.px(rect.get_x() + rect.get_width(), y)
    off = PENDING_INSET_PT * c.pt
    top = c.px(0, y - PENDING_HALF)[1] + PENDING_LIFT_PT * c.pt
    return [(x1 - off, y0, "right", "center"), ((x0 + x1) / 2, y0, "center", "center"),
            (x0 + off, y0, "left", "center"), (x1 + off, y0, "left", "center"),
            (x1 - off, top, "right", "bottom"), ((x0 + x1) / 2, top, "center", "bottom"),
            (x0 + off, top, "left", "bottom")]


def _label_event(c: Canvas, e: Event, cands: list[tuple[float, float, str, str]], required: bool,
                 point: EventPoint | None = None, lane_marks: list[Bbox] | None = None) -> None:
    kw = _event_style(c, e)
    assert e.label is not None  # only labelled events are placed
    must = required or e.style in REQUIRED_LABELS
    # on one line, else (where marks stacked at one instant leave no room for a long one) on two; a required label
    # that finds no free spot either way goes on one line where it covers least
    # a required label keeps what it says whole: "failed (Error): ..."
    splits = (": ", " → ") if must else (": ", " → ", " (")
    texts = [e.label] + ([_split(e.label, sep) for sep in splits if sep in e.label][:1] or [halves(e.label)])
    if e.style == Delivery.STACK_STATUS:  # CloudFormation's own word is too wide for the stretch by its square
        #   (lesson 02 cell 20: "IN_PROGRESS" between two breaks); the key spells the statuses out in turn
        texts = [halves(status_words(e.label))]
    texts = list(dict.fromkeys([*texts, _three_lines(texts[-1])]))  # narrower still: by a mark at a stretch's end
    own = (head_owner(e), *{f"wait:{a.actor}" for a in c.model.attempts if a.source == e.source})  # and a
    #   caller's waits on its row
    row = _head_span_px(c, e.source)

    def across(box: Bbox) -> int:  # a break between a label and its marker: it would name another time; or its
        #   leader crossing what it does not point at
        if point is None:
            return 0
        return (ACROSS_BREAK_HITS * (c.across_break(point.x, box) + _by_lane_mark(c, box, lane_marks or [], row))
                + _leader_hits(c, box, point, own))

    def centred_in_break(box: Bbox) -> int:
        middle = (box.x0 + box.x1) / 2
        return across(box) + (ACROSS_BREAK_HITS if any(a < middle < b for a, b in c.breaks_px()) else 0)

    text = _first_fit(c, texts, cands, kw, False, own, across)
    if text is None and not must and e.style not in BAND_STYLES:  # a mark on a stretch too short for its label:
        #   over a break's band, beside it (a band's label starts where its band does, never in a break before it)
        text = _first_fit(c, texts, cands, kw, False, (*own, GAP_OWNER), centred_in_break)
    if text is None and point is not None:  # under its marker, over its row's line: a row too low for it under the
        #   marker (02 cell 20: over the stack, its caret pointed at the status square, not at ∅)
        under = [(x + dx * c.pt, y, ha, va) for x, y, ha, va in cands if va == "top" and x == point.x
                 for dx in UNDER_SHIFTS_PT]  # nudged along, clear of a break beside it, its middle still over it
        # a stretch between a break and the end
        narrower = list(dict.fromkeys([*texts, _balanced(texts[0].replace("\n", " "), 3)]))
        text = _first_fit(c, narrower, under, kw, False, (*own, "separator"),
                          lambda box: across(box) + (0 if _near_drawn(c, box, point) else ACROSS_BREAK_HITS))
    if text is None and must:  # where it covers least
        text = _first_fit(c, texts + [e.label], cands, kw, True, own, across)
    if text is not None and point is not None:
        _point_at(c, text, point, kw["color"])


def _first_fit(c: Canvas, texts: list[str], cands: list[tuple[float, float, str, str]], kw: dict, must: bool,
               exclude: tuple[str, ...], crossings) -> Any:
    """The first of ``texts`` that fits at one of ``cands`` (the last one placed anyway when ``must``)."""
    for i, label in enumerate(texts):
        def make(cand, label=label):
            x, y, ha, va = cand
            xd, yd = c.data(x, y)
            return c.ax.text(xd, yd, label, ha=ha, va=va, **kw)

        # a candidate's box is its alignment's box moved to its point: one text measured per alignment, not one per spot
        text = c.place(make, cands, required=must and i == len(texts) - 1, exclude=exclude, crossings=crossings,
                       anchor=lambda cand: (cand[0], cand[1], (cand[2], cand[3])))
        if text is not None:
            return text
    return None


def _split(label: str, sep: str) -> str:
    """``label`` on two lines at ``sep``: after a colon ("failed:" ends a line), before an arrow or a bracket."""
    if sep.startswith(" "):
        return label.replace(sep, "\n" + sep.lstrip(), 1)
    return label.replace(sep, sep.rstrip() + "\n", 1)


def _balanced(label: str, lines: int) -> str:
    """``label`` on ``lines`` lines as even as its words allow: narrower than halving its longest line again."""
    width = math.ceil(len(label) / lines)
    while len(wrapped := textwrap.wrap(label, width)) > lines:
        width += 1
    return "\n".join(wrapped)


def _three_lines(text: str) -> str:
    """A two-line label with its longer line broken again: "o-2 sent twice" / "(a new event," / "new id)"."""
    lines = text.split("\n")
    longest = max(range(len(lines)), key=lambda i: len(lines[i]))
    lines[longest] = halves(lines[longest])
    return "\n".join(lines)


def _point_at(c: Canvas, text, p: EventPoint, color: str) -> None:
    """A label above or below its marker but not centred on it (a neighbour took the middle), or over the stack of
    marks it stands in, gets a small caret on its edge, over the marker: a speech bubble's tail. Over a row of
    marks, a box alone reads as naming whichever is under its middle. A label that stands apart from its marker
    along the row gets a leader line to it: a callout pointing at nothing names nothing."""
    box = c.text_box(text)
    over = box.x0 <= p.x <= box.x1
    if not _near(c, box, p) and not over:
        ends = _leader_ends(box, p)
        if ends is not None:
            _leader(c, *ends, p, color)
        return
    if _near(c, box, p) and (abs((box.x0 + box.x1) / 2 - p.x) < box.width / 4 or not over):
        return
    above = box.y0 >= p.y
    if not (box.y0 >= p.y if above else box.y1 <= p.y):
        return  # beside it, on its line: the label starts at the marker
    past = [m.box for m in marks(c.fig) if m.ax is c.ax and m.box.x0 <= p.x <= m.box.x1
            and (p.y + p.half <= m.box.y0 <= box.y0 if above else box.y1 <= m.box.y1 <= p.y - p.half)]
    if past:  # another mark stands between: a caret would point at it; a leader comes down beside the stack
        side = max(b.x1 for b in past) + LEADER_SIDE_PT * c.pt
        if box.x0 < side < box.x1:
            pts = [(side, box.y0 if above else box.y1), (side, p.y), (p.x + p.half, p.y)]
            xs, ys = zip(*(c.data(x, y) for x, y in pts))
            c.ax.add_line(mlines.Line2D(xs, ys, color=color, lw=LEADER_LW, zorder=Z_EVENT_LABEL,
                                        gid=f"{CALLOUT_LEADER}{p.event.style}"))
            return
    xd, yd = c.data(p.x, box.y0 if above else box.y1)
    # Hollow, as the box it hangs from: a filled ▼ read as a mark of its own, a TTL deletion (lesson 00 cell 18).
    c.ax.add_line(mlines.Line2D([xd], [yd], ls="none", marker="v" if above else "^", ms=CARET_PT * c.scale.factor,
                                mfc="white", mec=color, mew=CARET_EDGE_PT * c.scale.factor, zorder=Z_EVENT_LABEL,
                                gid=f"{CALLOUT_CARET}{p.event.style}"))


def _near(c: Canvas, box: Bbox, p: EventPoint) -> bool:
    mark = Bbox.from_extents(p.x - p.half, p.y - p.half, p.x + p.half, p.y + p.half)
    return callout_near(box, mark, CALLOUT_NEAR_PX * c.fig.dpi / REFERENCE_DPI)


def _near_drawn(c: Canvas, box: Bbox, p: EventPoint) -> bool:
    """A label next to its marker's ink as drawn (as the audit measures it), not its estimated box: one under its
    marker, over its row's line, may be near by the estimate and apart by the ink."""
    inks = [m.box for m in marks(c.fig) if m.ax is c.ax and m.box.contains(p.x, p.y)]
    return any(callout_near(box, ink, CALLOUT_NEAR_PX * c.fig.dpi / REFERENCE_DPI) for ink in inks)


def _leader_ends(box: Bbox, p: EventPoint) -> tuple[tuple[float, float], tuple[float, float]] | None:
    """The leader from a label's edge nearest its marker to the marker's edge, display px (None: they touch)."""
    sx, sy = min(max(p.x, box.x0), box.x1), min(max(p.y, box.y0), box.y1)
    length = float(np.hypot(p.x - sx, p.y - sy))
    if length <= p.half:
        return None
    f = 1 - p.half / length
    return (sx, sy), (sx + f * (p.x - sx), sy + f * (p.y - sy))


def _leader_hits(c: Canvas, box: Bbox, p: EventPoint, own: tuple[str, ...]) -> int:
    """What the leader a label at ``box`` would need crosses (marks, labels, arrows): it would point at them."""
    if _near(c, box, p) or box.x0 <= p.x <= box.x1:
        return 0  # no leader: it stands by its marker, or over the stack it is in (a caret)
    ends = _leader_ends(box, p)
    if ends is None:
        return 0
    (x0, y0), (x1, y1) = ends
    pts = np.array([(x0 + f * (x1 - x0), y0 + f * (y1 - y0)) for f in np.linspace(0.05, 0.95, 12)])
    return c.obs.points_hit(pts, exclude=(*own, *LEADER_IGNORES)) * ACROSS_BREAK_HITS


def _leader(c: Canvas, start: tuple[float, float], end: tuple[float, float], p: EventPoint, color: str) -> None:
    """A thin line from the label's edge to its marker's."""
    (x0, y0), (x1, y1) = c.data(*start), c.data(*end)
    c.ax.add_line(mlines.Line2D([x0, x1], [y0, y1], color=color, lw=LEADER_LW, zorder=Z_EVENT_LABEL,
                                gid=f"{CALLOUT_LEADER}{p.event.style}"))


def label_required_events(c: Canvas, placed: MarkerPlacement,
                          pending_bands: list[tuple[Event, mpatches.Rectangle]]) -> None:
    """Where a lost order went, and what was still pending: always labelled."""
    lane_marks = _lane_marks(c, placed.boxes)
    for p in placed.event_points:
        if p.event.style in REQUIRED_LABELS:
            _label_event(c, p.event, _beside_marker(c, p, placed.boxes), required=True, point=p, lane_marks=lane_marks)
    for e, rect in pending_bands:
        if e.label:
            _label_event(c, e, _on_band(c, e, rect), required=True)


def _label_optional(c: Canvas, points: Iterable[EventPoint], boxes: list[Bbox]) -> None:
    if c.compact:
        return
    lane_marks = _lane_marks(c, boxes)
    for p in points:
        _label_event(c, p.event, _beside_marker(c, p, boxes), required=False, point=p, lane_marks=lane_marks)


def label_redeliveries(c: Canvas, placed: MarkerPlacement) -> None:
    """"received again while inv-1 still runs": before the arrow labels, which say less."""
    _label_optional(c, (p for p in placed.event_points if p.event.style == Delivery.REDELIVERY), placed.boxes)


def label_other_events(c: Canvas, placed: MarkerPlacement) -> None:
    """The remaining header-row labels (redeliveries and required ones were placed earlier)."""
    done = (*REQUIRED_LABELS, Delivery.REDELIVERY)
    _label_optional(c, (p for p in placed.event_points if p.event.style not in done), placed.boxes)


#: HTTP reason phrases for what API Gateway answers itself.
HTTP_REASONS = {500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout"}


def _caller_text(a: Attempt) -> str:
    if a.source == SourceKind.STEPFUNCTIONS:  # a Task's attempt: it succeeded, or failed with an error name
        return "Task succeeded" if a.result == AWS_OK else f"Task failed: {a.result}"
    if a.result == READ_TIMEOUT:
        return "gave up: its own timeout" if a.source in HTTP_CLIENTS else "gave up: ReadTimeoutError"
    if a.result == AWS_OK:
        return f"got {a.status}" if a.status is not None else "got the response"
    if a.http_status is not None:
        return f"gave up after {a.http_status} {HTTP_REASONS.get(a.http_status, '')}".rstrip()
    return f"got {a.function_error or a.result}"


CALLER_HIGHER = (2, 2.5, 3)  # a caller's result may go this many gaps above its row, over stacked marks
OVER_MARK_HITS = 5  # a caller's label over another mark of its row counts as this many overlaps: it reads as that
#   mark's (sync-sdk-retry's "gave up: ReadTimeoutError" over the 2:00 ✖, the last one at 3:00)
STATUS_MARKS = ("gateway_timeout",)  # marks that are an HTTP status themselves ("504"): nothing to add by them


def _caller_candidates(ex: float, py: float, off: float,
                       end_x: float | None = None) -> list[tuple[float, float, str, str]]:
    """(x, y, ha, va) by the mark ending an attempt at (``ex``, ``py``): centred over or under it first, so that it
    stands over no other mark of its row, then beside it, then ending or starting at it, higher; last, just past the
    history's end line at ``end_x`` where that stands between it and its mark."""
    up = off
    cands = [(ex, py + up, "center", "bottom"), (ex, py - up, "center", "top"), (ex + off, py, "left", "center"),
             (ex, py + up, "right", "bottom"), (ex, py - up, "right", "top"), (ex - off, py, "right", "center"),
             (ex, py + up, "left", "bottom"), (ex, py - up, "left", "top")]
    # higher, over marks stacked where attempts meet (a read timeout and the next send at one instant)
    cands += [(ex, py + k * up, ha, "bottom") for k in CALLER_HIGHER for ha in ("center", "right", "left")]
    cands += [(ex + dx, py + dy, ha, va) for dx, ha in ((-off, "right"), (off, "left"))
              for dy, va in ((up, "bottom"), (-up, "top"), (2 * up, "bottom"))]
    if end_x is not None and ex <= end_x < ex + off:
        # the mark ends the history (async-invoke-resend seed 5: "got 202" at 60.03 s, the line at 60.04 s cut
        #   through every label beside it, and over it the label hid the read timeout stacked at 60 s); only the
        #   final result: an earlier attempt's status past the line stood by the later marks of the stack, not its own
        cands += [(end_x + off, py + dy, "left", va) for dy, va in ((0, "center"), (up, "bottom"), (-up, "top"))]
    return cands


def _end_line_x(c: Canvas) -> float | None:
    """Display x of the "history ends" line (its obstacle's middle), if it is drawn."""
    return next(((b.x0 + b.x1) / 2 for b, owner in zip(c.obs.boxes, c.obs.owners) if owner == "endline"), None)


def _caller_room(c: Canvas, a: Attempt) -> Bbox:
    """Where a caller's label may stand: in the plot, and right of it on its own row (nothing stands there; the lanes'
    outcomes stand beside the lanes, under the row's separator)."""
    axbox, span = c.axes_box(), _head_span_px(c, a.source)
    if span is None:
        return axbox
    return Bbox.from_extents(axbox.x0, max(axbox.y0, span[0]), c.fig.bbox.x1, axbox.y1)


def _over_other_marks(c: Canvas, placed: MarkerPlacement, ex: float, py: float):
    """Counts the marks of a caller's row, but the one at ``ex``, that a candidate box stands over."""
    half = CALLER_GAP_PT * c.pt
    others = [(b.x0 + b.x1) / 2 for b in placed.boxes
              if b.y0 - half <= py <= b.y1 + half and not b.x0 <= ex <= b.x1]

    def hits(box: Bbox) -> int:
        return OVER_MARK_HITS * sum(box.x0 <= x <= box.x1 for x in others)
    return hits


def label_caller_results(c: Canvas, placed: MarkerPlacement, waits: list[CallerWait]) -> None:
    """What each synchronous caller finally saw: "gave up: ReadTimeoutError", "got 409"; and by an earlier attempt's
    mark, the HTTP status a load balancer or API Gateway answered itself ("502"), where its mark does not say it."""
    for a, _, ex in sorted(waits, key=lambda w: not w.attempt.final):  # what it finally saw first: required
        status = a.http_status is not None and a.style not in STATUS_MARKS
        if not a.final and not status:
            continue
        _, py = c.px(0, placed.attempt_rows[a.actor])
        text = _caller_text(a) if a.final else str(a.http_status)

        def make(cand, text, final=a.final, actor=a.actor):
            x, yy, ha, va = cand
            xd, yd = c.data(x, yy)
            return c.ax.text(xd, yd, text, ha=ha, va=va, zorder=Z_EVENT_LABEL, parse_math=False,
                             gid=f"caller-label:{actor}", fontsize=c.fs(LABEL_PT if final else SMALL_PT),
                             fontweight="bold" if final else "normal", color="black",
                             bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "black" if final else LABEL_EDGE,
                                   "lw": 1.0 if final else 0.6})

        # on one line where it fits, else on two (a long one, "gave up after 504 Gateway Timeout", over no other mark)
        texts = list(dict.fromkeys([text, halves(text)]))
        cands = _caller_candidates(ex, py, CALLER_GAP_PT * c.pt, _end_line_x(c) if a.final else None)
        for i, words in enumerate(texts):
            placed_label = c.place(functools.partial(make, text=words), cands,
                                   required=a.final and i == len(texts) - 1, exclude=(f"wait:{a.actor}",),  # on its
                                   crossings=_over_other_marks(c, placed, ex, py), room=_caller_room(c, a))  # wait
            if placed_label is not None:
                break


def label_sweeps(c: Canvas, placed: MarkerPlacement) -> None:
    """The key next to each TTL sweeper marker, where there is room."""
    for px, py, label in placed.sweep_points:
        xy = c.data(px, py)
        off = SWEEP_GAP_PT * c.scale.factor

        def make(cand, xy=xy, label=label):
            (dx, dy), ha = cand
            return c.ax.annotate(label, xy=xy, xytext=(dx, dy), textcoords="offset points", ha=ha,
                                 va="center", fontsize=c.fs(SMALL_PT), color=TEXT_GREY, zorder=Z_NOTE,
                                 parse_math=False, annotation_clip=False, gid="sweep-label")

        c.place(make, [((off, 0), "left"), ((-off, 0), "right")], required=False)


QUEUE_INSET_PT = 3  # pt: a poller's window label keeps this far inside the band


def _queue_text(w: Hidden | Batching) -> list[str]:
    """What a poller's window says, longest first ([]: nothing to say)."""
    if isinstance(w, Batching):
        held = duration(w.end - w.start)
        if w.kind == Delivery.THROTTLED:
            return [f"throttled (429): {w.note}, {held}", f"429: {w.note}", "429"]
        if w.kind == Delivery.QUIET_QUEUE_WAIT:
            return [f"quiet queue: held {held} ({w.note})", f"quiet queue: {held}", f"held {held}"]
        return [f"batching window {held}", f"batching {held}"]
    if w.ran_out and w.timeout is not None:
        vt = duration(w.timeout)
        return [f"invisible until the {vt} visibility timeout ran out", f"invisible: {vt} visibility timeout",
                f"{vt} visibility timeout"]
    return []  # deleted in time: the band says enough


def label_queue_windows(c: Canvas, queue_boxes: list[QueueBox]) -> None:
    """"batching window 4 s" in a poller's batching window, and what ended an invisible stretch, inside its band:
    the longest wording that fits, or nothing when the band is too short."""
    for i, box in enumerate(queue_boxes):
        yd = box.y0 + box.h / 2
        (x0, y), (x1, _) = c.px(box.x0, yd), c.px(box.x1, yd)
        room = x1 - x0 - 2 * QUEUE_INSET_PT * c.pt

        def make(label, yd=yd, x=(x0 + x1) / 2, y=y):
            return c.ax.text(c.data(x, y)[0], yd, label, ha="center", va="center", fontsize=c.fs(MESSAGE_PT),
                             color=QUEUE_TEXT, zorder=Z_EVENT_LABEL, parse_math=False, gid="queue-label")

        fits = []
        for words in _queue_text(box.window):
            artist = make(words)
            if c.text_box(artist).width <= room:
                fits.append(words)
            artist.remove()
        if fits:
            c.place(make, fits, required=False, exclude=(queue_owner(box, i),))


END_LABEL_GAP_PT = 4  # pt: between the "history ends" line and its label
END_LABEL_DROP_PX = 1  # px: the label hangs this far below the top of the plot
END_LABEL_STEPS = 2  # down the line, heights are tried this many to a label's height


def label_end_line(c: Canvas, end_line: mlines.Line2D | None) -> None:
    """"history ends" beside the end line, at the top right of it, else left of it, else the first free height
    down the line: after the labels that say where an order went, which it must not cover (kafka-topic-destination:
    the batch's "discarded → kafka://orders-failures" spans the top of the plot, across the line)."""
    if end_line is None:
        return
    x = c.px(float(np.asarray(end_line.get_xdata())[0]), 0)[0]
    box, gap = c.axes_box(), END_LABEL_GAP_PT * c.pt
    top = box.y1 - END_LABEL_DROP_PX

    def make(cand):
        px, py, ha = cand
        xd, yd = c.data(px, py)
        return c.ax.text(xd, yd, "history ends", ha=ha, va="top", fontsize=c.fs(SMALL_PT), color=TEXT_GREY,
                         fontstyle="italic", zorder=Z_GAP_LABEL, gid="end-label")

    probe = make((x, top, "left"))
    tall = c.text_box(probe).height
    probe.remove()
    heights = np.arange(top, box.y0 + tall, -tall / END_LABEL_STEPS)
    cands = [(px, float(y), ha) for y in heights for px, ha in ((x + gap, "left"), (x - gap, "right"))]
    c.place(make, cands, required=True, owner="static", anchor=lambda cand: cand)
