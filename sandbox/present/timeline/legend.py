"""The legend: an entry for each kind of thing this particular figure shows, and nothing else.

Order is fixed (outcomes, partial batches, table windows, markers in
``LEGEND_MARKER_ORDER``, pending bands, caller waits, repeat arrows, squeezed gaps),
so the same history always gives the same legend. Two custom handlers draw the
entries matplotlib has no handle for: a repeat arrow and a caller's send-and-wait.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from matplotlib import lines as mlines
from matplotlib import patches as mpatches
from matplotlib.figure import Figure
from matplotlib.legend_handler import HandlerPatch, HandlerTuple

from ...vocab import HTTP_CLIENTS, Cause, Delivery, ItemStatus, Outcome, SourceKind
from .model import END_MARKER, Model, Window, WindowKind
from .style import (
    ARROW_COLOR,
    BATCHING_STYLE,
    COPY_CAUSES,
    COPY_COLOR,
    COPY_DOTS,
    FOLLOW_ON_CAUSES,
    FOLLOW_ON_DASHES,
    GAP_COLOR,
    GAP_EDGE,
    HIDDEN_DONE_STYLE,
    HIDDEN_STYLE,
    LEGEND_MARKER_ORDER,
    MARKERS,
    OI_ORANGE,
    OUTCOME_COLORS,
    PENDING_BAND,
    RUNNING_BAR,
    THROTTLED_BAND,
    WAIT_COLOR,
    WINDOW_STYLE,
)
from .text import OUTCOME_WORDS

HANDLE_LENGTH, HANDLE_HEIGHT = 2.2, 1.1  # font sizes: a legend entry's symbol
COLUMN_SPACING = 1.5  # font sizes between legend columns (sizing.LEGEND_SPACING_EM)
BORDER_PAD = 0.2  # font sizes between the legend and the axes
ARROW_HEAD_EM = 1.1  # the legend arrow's head, in font sizes
WAIT_INSET_PX = 2  # px: a legend wait line's inset from its box


@dataclass(frozen=True)
class LegendPlan:
    """The legend a figure was sized for: its entries, columns and rows (a two-line row counts more, as
    :func:`sizing.legend_layout` says). ``shown``: drawn below the plot; else left to a picture of its own
    (:func:`figure.legend_figure`), as a widget shows it, drawn once for every picture with the same entries."""

    items: list[tuple[Any, str]]
    ncols: int
    rows: float = 0.0
    shown: bool = True

    @property
    def texts(self) -> tuple[str, ...]:
        """What tells two legends apart: each entry's text stands for one look (a marker, a band, an arrow)."""
        return tuple(text for _, text in self.items)


class _ArrowHandler(HandlerPatch):
    """Legend entry for a repeat arrow."""

    def create_artists(self, legend, orig_handle, xdescent, ydescent, width, height, fontsize, trans):
        y = height / 2 - ydescent
        p = mpatches.FancyArrowPatch((-xdescent, y), (width - xdescent, y), arrowstyle="-|>",
                                     mutation_scale=fontsize * ARROW_HEAD_EM, color=ARROW_COLOR, lw=1.6)
        p.set_transform(trans)
        return [p]


class _FollowOnHandle(mpatches.FancyArrowPatch):
    """The legend's handle for a follow-on arrow (a TTL deletion's record after the run that handled the order)."""


class _FollowOnHandler(_ArrowHandler):
    """Legend entry for a follow-on arrow: dashed, as drawn."""

    def create_artists(self, legend, orig_handle, xdescent, ydescent, width, height, fontsize, trans):
        (p,) = super().create_artists(legend, orig_handle, xdescent, ydescent, width, height, fontsize, trans)
        p.set_linestyle(FOLLOW_ON_DASHES)
        return [p]


class _CopyHandle(mpatches.FancyArrowPatch):
    """The legend's handle for a copy's arrow (a duplicate or a re-send of an earlier event, not a retry)."""


class _CopyHandler(_ArrowHandler):
    """Legend entry for a copy's arrow: dotted and blue, as drawn."""

    def create_artists(self, legend, orig_handle, xdescent, ydescent, width, height, fontsize, trans):
        (p,) = super().create_artists(legend, orig_handle, xdescent, ydescent, width, height, fontsize, trans)
        p.set_linestyle(COPY_DOTS)
        p.set_color(COPY_COLOR)
        return [p]


class _WaitHandler(HandlerPatch):
    """Legend entry for a synchronous caller's attempt: send, wait, read timeout."""

    def create_artists(self, legend, orig_handle, xdescent, ydescent, width, height, fontsize, trans):
        y = height / 2 - ydescent
        x0, x1 = -xdescent + WAIT_INSET_PX, width - xdescent - WAIT_INSET_PX
        line = mlines.Line2D([x0, x1], [y, y], color=WAIT_COLOR, lw=3, solid_capstyle="butt")
        kw = dict(MARKERS["call_send"][0])
        send = mlines.Line2D([x0], [y], ls="none", **kw)
        for a in (line, send):
            a.set_transform(trans)
        return [line, send]


@functools.cache
def _marker_handle(name: str) -> mlines.Line2D:
    """A legend handle showing one marker style (the legend copies its look and leaves it as it was, so one does)."""
    return mlines.Line2D([], [], ls="none", **MARKERS[name][0])


def _outcome_items(m: Model) -> list[tuple[Any, str]]:
    """An entry per outcome the lanes show (with the end marker that goes with it)."""
    items: list[tuple[Any, str]] = []
    outcomes = {rec.outcome for rec in m.invs.values()}
    for outcome in (*Outcome, None):
        if outcome not in outcomes:
            continue
        if outcome is None:
            items.append((mpatches.Patch(**RUNNING_BAR), "still running when the history ends"))
            continue
        patch = mpatches.Patch(facecolor=OUTCOME_COLORS[outcome], edgecolor="black", lw=0.6)
        if outcome in END_MARKER:
            items.append(((patch, _marker_handle(END_MARKER[outcome])), f"invocation → {OUTCOME_WORDS[outcome]}"))
        else:
            items.append((patch, f"invocation → {OUTCOME_WORDS[outcome]}"))
    if any(rec.outcome == Outcome.OK and rec.failed_items for rec in m.invs.values()):
        patch = mpatches.Patch(facecolor=OUTCOME_COLORS[Outcome.OK], edgecolor="black", lw=0.6,
                               hatch="\\\\", hatchcolor=OI_ORANGE)
        items.append((patch, "ok, but reported failed batch items"))
    return items


def _handoff_text(m: Model) -> str:
    """What a failed hand-off's marker stands for: the service whose row shows it retries it."""
    sources = {e.source for e in m.events if e.style == Delivery.DELIVERY_FAILED}
    if sources <= {SourceKind.EVENTBRIDGE}:
        return MARKERS[Delivery.DELIVERY_FAILED][1]
    who = "SNS retries" if sources == {SourceKind.SNS} else "the service retries"
    return f"hand-off failed (500): {who}"


#: Who delivers an event again on its own, by the row that shows it: a queue only where a queue is the row.
AGAIN_BY: dict[str, str] = {
    SourceKind.S3: "S3 sent the event notification again", SourceKind.SNS: "SNS delivered the message again",
    SourceKind.EVENTBRIDGE: "EventBridge delivered the event again",
    SourceKind.CLOUDFORMATION: "CloudFormation sent the request again"}


def _again_text(m: Model) -> str:
    """What a ⇉ on a source's row stands for: the row's service delivered the event again (s3-notification-duplicate's
    legend said "queue delivered the event again", with no queue on its row)."""
    texts = {AGAIN_BY.get(e.source, MARKERS["spont_dup"][1]) for e in m.events if e.style == "spont_dup"}
    return texts.pop() if len(texts) == 1 else "the source delivered the event again"


def _solid_arrow_text(causes: set[str | None]) -> str:
    """What a figure's solid arrows say: a repeat of the invocation they come from, or, for CloudFormation's
    rollback Delete, a new request its failed Create brought (a new learner read "repeats" as a retry of the
    Create)."""
    if causes == {Cause.ROLLBACK_DELETE}:
        return "a rollback's Delete, after the failed Create"
    if Cause.ROLLBACK_DELETE in causes:
        return "repeats an earlier invocation, or its rollback's Delete"
    return "repeats an earlier invocation"


def _wait_text(sources: set[str]) -> str:
    """What a caller's send-and-wait line stands for: an SDK's Invoke, an HTTP request through API Gateway."""
    if len(sources) == 1 and sources <= HTTP_CLIENTS:
        return f"client sends POST {'/checkout' if SourceKind.ALB in sources else '/orders'}, waits for the answer"
    if sources == {SourceKind.STEPFUNCTIONS}:
        return "the Task invokes the function, waits for its result"
    if sources & {*HTTP_CLIENTS, SourceKind.STEPFUNCTIONS}:
        return "caller sends a request, waits for the answer"
    return "caller sends Invoke, waits for the answer"


#: What a kept band's legend says when none of the figure's records has a TTL, or only some have one: the band's
#: own note says "kept, no TTL" there, and "until TTL" beside it would contradict it.
KEPT_NO_TTL = "result kept (COMPLETED, no TTL)"
KEPT_SOME_TTL = "result kept (COMPLETED, until TTL if it has one)"


def _window_text(m: Model, kind: WindowKind) -> str:
    """A table window's legend words, as this figure's windows of that kind are: with or without a TTL."""
    text = WINDOW_STYLE[kind][3]
    if kind == WindowKind.LOCK and m.lock_statuses and m.lock_statuses != {ItemStatus.IN_PROGRESS}:
        # the claims' own word for the record (claim_only.py writes CLAIMED), not the article's
        text = f"lock held ({' or '.join(sorted(m.lock_statuses))} record)"
    if kind == WindowKind.KEPT:
        timed = {w.expires is not None for w in m.windows if w.kind == kind}
        text = text if timed == {True} else KEPT_NO_TTL if timed == {False} else KEPT_SOME_TTL
    return text


def _status_text(m: Model) -> str:
    """What the grey squares say in this figure, in time order: their labels rarely find room by them (lesson 02
    cell 20: two squares, and a key naming CREATE_COMPLETE, which neither was)."""
    said = [e.label.removeprefix("stack ").strip() for e in sorted(m.events, key=lambda e: (e.t, e.seq))
            if e.style == Delivery.STACK_STATUS and e.label]
    said = list(dict.fromkeys(s for s in said if s and s != "?"))
    return f"stack status: {' → '.join(said)}" if said else MARKERS[Delivery.STACK_STATUS][1]


def legend_items(m: Model, squeezed: bool, seen: Callable[[Window], bool] | None = None) -> list[tuple[Any, str]]:
    """(handle, text) for each kind of item in the figure; ``squeezed``: the axis has gaps; ``seen``: whether a
    table window is drawn wide enough to see (one too narrow is no kind of item the figure shows)."""
    items = _outcome_items(m)
    kinds = {w.kind for w in m.windows if seen is None or seen(w)}
    for kind in (WindowKind.LOCK, WindowKind.KEPT, WindowKind.EXPIRED):
        if kind in kinds:
            face, edge, hatch, _ = WINDOW_STYLE[kind]
            items.append((mpatches.Patch(facecolor=face, edgecolor=edge, hatch=hatch, lw=0.8), _window_text(m, kind)))
    styles = {mk.style for mk in m.marks} | {e.style for e in m.events} | {a.style for a in m.attempts}
    for name in LEGEND_MARKER_ORDER:
        if name in styles and name != "call_send":
            text = (_handoff_text(m) if name == Delivery.DELIVERY_FAILED else _status_text(m)
                    if name == Delivery.STACK_STATUS else _again_text(m) if name == "spont_dup" else MARKERS[name][1])
            items.append((_marker_handle(name), text))
    if Delivery.PENDING in styles:
        items.append((mpatches.Patch(**PENDING_BAND), "still pending when the run stopped"))
    if any(w.ran_out for w in m.hidden):
        items.append((mpatches.Patch(**HIDDEN_STYLE), "invisible until its visibility timeout"))
    if any(not w.ran_out for w in m.hidden):
        items.append((mpatches.Patch(**HIDDEN_DONE_STYLE), "received, invisible until deleted"))
    if any(e.running for e in m.events):  # the guide from ↻ down through the run still at work (guides.py)
        guide = mlines.Line2D([], [], color="black", lw=1, ls=(0, (2, 2)))
        items.append((guide, "received again while a run works on them"))
    if any(b.kind == "" for b in m.batching):
        items.append((mpatches.Patch(**BATCHING_STYLE), "poller waits out its batching window"))
    if any(b.kind == Delivery.QUIET_QUEUE_WAIT for b in m.batching):
        items.append((mpatches.Patch(**BATCHING_STYLE), "quiet queue: batch held past its window"))
    if any(e.style == Delivery.THROTTLED and e.t0 is not None for e in m.events) or any(
            b.kind == Delivery.THROTTLED for b in m.batching):
        items.append((mpatches.Patch(**THROTTLED_BAND), "throttled: the event waits, retried"))
    if m.attempts:
        items.append((mpatches.Rectangle((0, 0), 1, 1), _wait_text({a.source for a in m.attempts})))
    linked = [rec for rec in m.invs.values() if rec.prev in m.invs and rec.prev != rec.inv]
    solid = {rec.cause for rec in linked if rec.cause not in FOLLOW_ON_CAUSES | COPY_CAUSES}
    if solid:
        items.append((mpatches.FancyArrowPatch((0, 0), (1, 1)), _solid_arrow_text(solid)))
    if any(rec.cause in COPY_CAUSES for rec in linked):  # no run failed: the event was sent again
        items.append((_CopyHandle((0, 0), (1, 1)), "a copy of an earlier event: a duplicate, not a retry"))
    if any(rec.cause in FOLLOW_ON_CAUSES for rec in linked):  # not a repeat: a new record about the same order
        items.append((_FollowOnHandle((0, 0), (1, 1)), "TTL deleted the item: a REMOVE record, a new invocation"))
    if squeezed:
        items.append((mpatches.Patch(facecolor=GAP_COLOR, edgecolor=GAP_EDGE, ls="--", lw=0.8),
                      "axis break: idle time left out"))
    return items


def add_legend(fig: Figure, items: list[tuple[Any, str]], ncols: int, fontsize: float,
               loc: Literal["outside lower center", "center"] = "outside lower center") -> None:
    """The legend below the axes (or at ``loc``), in ``ncols`` columns."""
    if not items:
        return
    handles = [h for h, _ in items]
    labels = [t for _, t in items]
    fig.legend(handles, labels, loc=loc, ncols=ncols, frameon=False,
               fontsize=fontsize, handlelength=HANDLE_LENGTH, handleheight=HANDLE_HEIGHT,
               columnspacing=COLUMN_SPACING, borderaxespad=BORDER_PAD,
               handler_map={tuple: HandlerTuple(ndivide=1),
                            mpatches.FancyArrowPatch: _ArrowHandler(), _FollowOnHandle: _FollowOnHandler(),
                            _CopyHandle: _CopyHandler(),
                            mpatches.Rectangle: _WaitHandler()})
