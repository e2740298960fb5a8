"""How the timeline looks: colours, marker glyphs and styles, window bands, matplotlib settings.

Everything here is a constant (or builds one) except :func:`matplotlib_style`, the
context every drawing runs in so that the caller's own matplotlib style never leaks
into the picture (the PNG must be byte-identical for the same history).
"""
from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import matplotlib
from matplotlib import path as mpath
from matplotlib import style as mstyle
from matplotlib.markers import MarkerStyle
from matplotlib.transforms import Affine2D

from ...vocab import Cause, Delivery, Outcome, RecordType, Status
from .model import WindowKind

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

# Okabe-Ito colour-blind-safe palette.
OI_ORANGE = "#E69F00"
OI_SKY = "#56B4E9"
OI_GREEN = "#009E73"
OI_YELLOW = "#F0E442"
OI_BLUE = "#0072B2"
OI_VERMILLION = "#D55E00"
OI_PURPLE = "#CC79A7"

OUTCOME_COLORS = {
    Outcome.OK: OI_GREEN,
    Outcome.ERROR: OI_ORANGE,
    Outcome.TIMEOUT: OI_PURPLE,
    Outcome.CRASHED: "#8F8F8F",
    None: OI_SKY,  # still running
}
DUPLICATE_COLOR = OI_VERMILLION
#: Each verdict's colour in a run's badge and in the verdict map's cells alike, white words on it: Okabe-Ito's
#: bluish green and vermillion, darkened to hold white text at 5:1 or better (their own held it at 3.4 and 3.9). A
#: learner saw a red badge over an orange map and asked whether "invalid" meant two things.
VERDICT_COLOURS: dict[str, str] = {Status.VALID: "#007A5A", Status.INVALID: "#B84A00", Status.UNKNOWN: "#6E6E6E"}
LOCK_COLOR = "#F7EC7E"  # Okabe-Ito yellow, lightened
LOCK_EDGE = "#B8A800"
KEPT_COLOR = "#CBE6F6"  # Okabe-Ito sky blue, lightened
KEPT_EDGE = "#6FA8CC"
EXPIRED_COLOR = "#FFFDF0"
EXPIRED_EDGE = "#C29A00"
PENDING_EDGE = "#8A8A8A"
GAP_COLOR = "#E4E4E4"
ARROW_COLOR = "#3A3A3A"
TEXT_GREY = "#3A3A3A"  # 11:1 on white: a projector halves contrast, and #505050 (8:1) washed out
WAIT_COLOR = "#8C8C8C"
GRID_COLOR = "#DDDDDD"
SEPARATOR_COLOR = "#B5B5B5"  # the line between two sources' groups of lanes
END_LINE_COLOR = "#6E6E6E"  # "history ends"
GAP_EDGE = "#9A9A9A"  # the dashed edges of a squeezed gap
LABEL_EDGE = "#BBBBBB"  # the box around an optional label
NOTE_TEXT = "#1F1F1F"  # "o-1 kept 24 h →"
EVENT_TEXT = "#2A2A2A"  # an optional label on a header row
QUEUE_TEXT = "#3F2A52"  # "invisible: 5 s visibility timeout", "batching window 4 s"
EXPIRED_TEXT = "#5A4600"  # "o-1 expired, still in the table"

#: Causes whose arrow links a new record to the run that handled its order before, not a repeat of that run's event
#: (DynamoDB's TTL deleting the item writes a REMOVE to the stream): dashed, with a legend entry of its own.
FOLLOW_ON_CAUSES = frozenset({Cause.TTL_DELETION})
FOLLOW_ON_DASHES = (0, (4, 2.5))  # the follow-on arrow's dashes
#: Causes whose run is a copy of an earlier event, sent again though no run failed (a queue's spontaneous duplicate,
#: a producer's or caller's re-send): not a retry. A learner read a plain arrow to a duplicate as a retry, so a copy's
#: arrow is dotted and blue, with a legend entry of its own.
COPY_CAUSES = frozenset({Cause.SPONTANEOUS_DUPLICATE, Cause.CONCURRENT_DUPLICATE, Cause.PRODUCER_RESEND,
                         Cause.CALLER_RESEND})
COPY_DOTS = (0, (1.2, 1.6))  # the copy arrow's dots
COPY_COLOR = OI_BLUE


def arrow_look(cause: str | None) -> tuple[str, Any]:
    """(colour, line style) of the arrow to a run with ``cause``: a retry's solid, a copy's dotted and blue, a
    follow-on's dashed."""
    if cause in COPY_CAUSES:
        return COPY_COLOR, COPY_DOTS
    return ARROW_COLOR, FOLLOW_ON_DASHES if cause in FOLLOW_ON_CAUSES else "-"

# Drawing order (matplotlib zorder), back to front.
Z_GRID = 0
Z_SEPARATOR = 0.5
Z_WINDOW = {WindowKind.KEPT: 1.0, WindowKind.EXPIRED: 1.1, WindowKind.LOCK: 1.2}  # a lock shows on a kept record
Z_PENDING = 1.5
Z_HIDDEN = 1.5  # an SQS poller's invisible messages
Z_BAR = 2
# after a run too short for its marks, the strip they run on: an outline, dotted, over white (not a bar: nothing runs)
Z_END_LINE = 2.5
Z_GAP = 2.6  # squeezed gaps cover what passes through them
Z_GAP_LABEL = 2.7
Z_CALLER_WAIT = 3
Z_ARROW = 3.5
Z_GUIDE = 3.7
Z_MARKER = 4
Z_NOTE = 5  # notes and optional labels
Z_ARROW_LABEL = 5.5
Z_EVENT_LABEL = 5.6
Z_DUPLICATE = 6

# Font sizes in points at full scale; the drawing scales them down when there are very many lanes.
TITLE_PT = 16
AXIS_LABEL_PT = 12
TICK_PT = 11
LANE_PT = 12  # a lane's name and its outcome
HEADING_PT = 13  # a source's header row
SMALL_PT = 10  # subtitles, error lines, notes, gap and arrow labels
LABEL_PT = 11  # what must be read: where an order went, duplicates, what a caller saw
LEGEND_PT = 10  # the legend: read at leisure, and kept compact (a legend as tall as the plot buried it)
MESSAGE_PT = 10  # the lines under a lane's outcome (an error's class and message), a strip's key: the smallest text,
#   read from a projector's back row (9 pt was lost there)

# Patch styles shared by a drawn item and its legend entry: keyword arguments to matplotlib's Patch.
PatchStyle = dict[str, Any]
RUNNING_BAR: PatchStyle = {"facecolor": "#DCEFFA", "edgecolor": OI_SKY, "hatch": "///", "lw": 1.0}  # still running
PENDING_BAND: PatchStyle = {  # orders left in a source
    "facecolor": "white", "edgecolor": PENDING_EDGE, "hatch": "xx", "lw": 0.8}
HIDDEN_STYLE: PatchStyle = {  # received, invisible until the timeout ...
    "facecolor": "#E6D8F0", "edgecolor": "#8E6AA8", "lw": 0.9}
HIDDEN_DONE_STYLE: PatchStyle = {  # ... or deleted: dashed, and dark enough to see on a projector (a learner lost it)
    "facecolor": "#ECE2F4", "edgecolor": "#6F4F8C", "lw": 1.0, "ls": (0, (3, 2))}
BATCHING_STYLE: PatchStyle = {  # batching window
    "facecolor": "#F3F3F3", "edgecolor": "#5A5A5A", "ls": (0, (3, 2)), "lw": 1.0}
THROTTLED_BAND: PatchStyle = {  # Lambda said 429
    "facecolor": "#FDF1EA", "edgecolor": OI_VERMILLION, "ls": "--", "lw": 0.8}

WINDOW_STYLE = {  # kind -> (face, edge, hatch, legend text)
    WindowKind.KEPT: (KEPT_COLOR, KEPT_EDGE, None, "result kept (COMPLETED, until TTL)"),
    WindowKind.LOCK: (LOCK_COLOR, LOCK_EDGE, None, "lock held (IN_PROGRESS record)"),
    WindowKind.EXPIRED: (EXPIRED_COLOR, EXPIRED_EDGE, "////", "expired, still in the table (TTL lag)"),
}


def _envelope() -> mpath.Path:
    w, h = 1.0, 0.66
    verts = [(-w, -h), (w, -h), (w, h), (-w, h), (-w, -h),  # body
             (-w, h), (0.0, -0.1), (w, h)]  # flap
    codes = [mpath.Path.MOVETO] + [mpath.Path.LINETO] * 3 + [mpath.Path.CLOSEPOLY] + \
            [mpath.Path.MOVETO, mpath.Path.LINETO, mpath.Path.LINETO]
    return mpath.Path(verts, codes)


def _hourglass() -> mpath.Path:
    """▼ over ▲ between two bars, its frame: without them it read as the TTL sweeper's ▼ on a ▲."""
    glass = mpath.Path([(-0.7, 1.0), (0.7, 1.0), (0.0, 0.0), (-0.7, 1.0),
                        (-0.7, -1.0), (0.7, -1.0), (0.0, 0.0), (-0.7, -1.0)],
                       [mpath.Path.MOVETO, mpath.Path.LINETO, mpath.Path.LINETO, mpath.Path.CLOSEPOLY] * 2)
    bars = [mpath.Path.unit_rectangle().transformed(Affine2D().scale(1.8, 0.3).translate(-0.9, y))
            for y in (1.0, -1.3)]
    return mpath.Path.make_compound_path(glass, *bars)


def _bin() -> mpath.Path:
    """A waste bin, lid and handle over a tapered body with two ribs: a record deleted (no other mark or pointer is
    one; a hollow ▽ was, and read as a label's pointer)."""
    lid = mpath.Path.unit_rectangle().transformed(Affine2D().scale(1.7, 0.2).translate(-0.85, 0.62))
    handle = mpath.Path([(-0.3, 0.82), (-0.3, 1.0), (0.3, 1.0), (0.3, 0.82)],
                        [mpath.Path.MOVETO, mpath.Path.LINETO, mpath.Path.LINETO, mpath.Path.LINETO])
    body = mpath.Path([(-0.7, 0.5), (0.7, 0.5), (0.5, -1.0), (-0.5, -1.0), (-0.7, 0.5)],
                      [mpath.Path.MOVETO, mpath.Path.LINETO, mpath.Path.LINETO, mpath.Path.LINETO,
                       mpath.Path.CLOSEPOLY])
    ribs = mpath.Path([(-0.22, 0.3), (-0.17, -0.8), (0.22, 0.3), (0.17, -0.8)],
                      [mpath.Path.MOVETO, mpath.Path.LINETO, mpath.Path.MOVETO, mpath.Path.LINETO])
    return mpath.Path.make_compound_path(lid, handle, body, ribs)


def _clock() -> mpath.Path:
    circle = mpath.Path.circle((0.0, 0.0), 1.0)
    hands = mpath.Path([(0.0, 0.72), (0.0, 0.0), (0.52, 0.0)],
                       [mpath.Path.MOVETO, mpath.Path.LINETO, mpath.Path.LINETO])
    return mpath.Path.make_compound_path(circle, hands)


def _cancel_envelope() -> mpath.Path:
    """An envelope struck through: the cancellation email."""
    strike = mpath.Path([(-1.15, -0.9), (1.15, 0.9)], [mpath.Path.MOVETO, mpath.Path.LINETO])
    return mpath.Path.make_compound_path(_envelope(), strike)


ENVELOPE = _envelope()
CANCEL_ENVELOPE = _cancel_envelope()
HOURGLASS = _hourglass()
BIN = _bin()
CLOCK = _clock()
DOLLAR = r"$\$$"

# Marker styles: name -> (Line2D keyword arguments, legend text).
MARKERS: dict[str, tuple[dict[str, Any], str]] = {
    "claim_won": ({"marker": "D", "ms": 10, "mfc": OI_BLUE, "mec": "black", "mew": 1.0},
                  "claim won (PutItem ok)"),
    "claim_lost": ({"marker": "D", "ms": 10, "mfc": "white", "mec": OI_BLUE, "mew": 2.2},
                   "claim lost (ConditionalCheckFailed)"),
    "table_error": ({"marker": "d", "ms": 12, "mfc": "#9A9A9A", "mec": "black", "mew": 1.0},
                    "idempotency-table call failed"),
    "write_refused": ({"marker": r"$\oslash$", "ms": 15, "mfc": OI_BLUE, "mec": OI_BLUE, "mew": 0.6},
                      "update/delete refused (condition failed)"),
    "write": ({"marker": "s", "ms": 8, "mfc": OI_SKY, "mec": "black", "mew": 1.0},
              "record written, no condition (no claim)"),
    "stale_write": ({"marker": "d", "ms": 13, "mfc": OI_VERMILLION, "mec": "black", "mew": 1.0},
                    "STALE write (another invocation's record)"),
    # the holder deleted its own record (run_once's delete on failure): its lock band ends here, not at expiresAt
    "record_deleted": ({"marker": BIN, "ms": 13, "mfc": "white", "mec": LOCK_EDGE, "mew": 1.6},
                       "record deleted by its holder (DeleteItem)"),
    "read": ({"marker": "o", "ms": 8, "mfc": OI_SKY, "mec": "black", "mew": 1.0},
             "read (GetItem / Query)"),
    "email_done": ({"marker": ENVELOPE, "ms": 17, "mfc": "white", "mec": "black", "mew": 1.4}, "email sent"),
    "email_dup": ({"marker": ENVELOPE, "ms": 21, "mfc": DUPLICATE_COLOR, "mec": "black", "mew": 1.4},
                  "DUPLICATE email sent"),
    "email_dedup": ({"marker": ENVELOPE, "ms": 17, "mfc": "#E3E3E3", "mec": "#8C8C8C", "mew": 1.2},
                    "email deduplicated (not sent)"),
    "email_failed": ({"marker": ENVELOPE, "ms": 17, "mfc": "black", "mec": "white", "mew": 1.2},
                     "email failed / outcome unknown"),
    "cancellation_done": ({"marker": CANCEL_ENVELOPE, "ms": 17, "mfc": "white", "mec": "black", "mew": 1.4},
                          "cancellation email sent"),
    "cancellation_dup": ({"marker": CANCEL_ENVELOPE, "ms": 21, "mfc": DUPLICATE_COLOR, "mec": "black", "mew": 1.4},
                         "DUPLICATE or unasked-for cancellation"),
    "cancellation_dedup": ({"marker": CANCEL_ENVELOPE, "ms": 17, "mfc": "#E3E3E3", "mec": "#8C8C8C", "mew": 1.2},
                           "cancellation deduplicated (not sent)"),
    "cancellation_failed": ({"marker": CANCEL_ENVELOPE, "ms": 17, "mfc": "black", "mec": "white", "mew": 1.2},
                            "cancellation failed / outcome unknown"),
    "charge_done": ({"marker": DOLLAR, "ms": 18, "mfc": "black", "mec": "black", "mew": 0.6}, "card charged"),
    "charge_dup": ({"marker": DOLLAR, "ms": 22, "mfc": DUPLICATE_COLOR, "mec": "black", "mew": 0.6},
                   "DUPLICATE charge"),
    "charge_dedup": ({"marker": DOLLAR, "ms": 18, "mfc": "#D0D0D0", "mec": "#303030", "mew": 0.6},
                     "charge deduplicated (not charged)"),
    "charge_failed": ({"marker": DOLLAR, "ms": 18, "mfc": "white", "mec": "black", "mew": 1.0},
                      "charge failed / outcome unknown"),
    "effect_other": ({"marker": "P", "ms": 12, "mfc": "white", "mec": "black", "mew": 1.2}, "other effect"),
    "end_error": ({"marker": "X", "ms": 12, "mfc": "black", "mec": "white", "mew": 1.0}, ""),
    "end_timeout": ({"marker": HOURGLASS, "ms": 15, "mfc": "black", "mec": "white", "mew": 1.0}, ""),
    "end_crashed": ({"marker": "*", "ms": 16, "mfc": "black", "mec": "white", "mew": 1.0}, ""),
    RecordType.SWEEP: ({"marker": "v", "ms": 11, "mfc": "#6E6E6E", "mec": "black", "mew": 1.0},
              "TTL sweeper deleted a record"),
    # header rows: what a delivery source did besides invoking
    "receive": ({"marker": r"$\Downarrow$", "ms": 12, "mfc": "#5A5A5A", "mec": "#5A5A5A", "mew": 0.4},
                "poller received messages"),
    Delivery.REDELIVERY: ({"marker": r"$\circlearrowright$", "ms": 15, "mfc": "black", "mec": "black", "mew": 0.5},
                   "messages received AGAIN (redelivery)"),
    Delivery.DELETED: ({"marker": r"$\checkmark$", "ms": 13, "mfc": "#00795A", "mec": "#00795A", "mew": 0.5},
                "messages deleted (done)"),
    "deleted_late": ({"marker": r"$\checkmark$", "ms": 13, "mfc": OI_VERMILLION, "mec": OI_VERMILLION, "mew": 0.5},
                     "deleted too late: the copies received again run"),
    "batch_failed": ({"marker": r"$\boxtimes$", "ms": 13, "mfc": "black", "mec": "black", "mew": 0.4},
                     "batch failed: see the next mark"),
    "batch_partial": ({"marker": r"$\boxminus$", "ms": 13, "mfc": OI_VERMILLION, "mec": OI_VERMILLION, "mew": 0.4},
                      "partial failure: failed items come back"),
    "batch_checkpoint": ({"marker": r"$\boxminus$", "ms": 13, "mfc": OI_VERMILLION, "mec": OI_VERMILLION, "mew": 0.4},
                         "partial failure: retried from the lowest failed record on"),
    "retry_scheduled": ({"marker": CLOCK, "ms": 12, "mfc": "white", "mec": "black", "mew": 1.3},
                        Delivery.RETRY_SCHEDULED.value),
    "resend": ({"marker": r"$\rightrightarrows$", "ms": 15, "mfc": "black", "mec": "black", "mew": 0.5},
               "producer sent the order again (new id)"),
    "caller_resend": ({"marker": r"$\rightrightarrows$", "ms": 15, "mfc": "black", "mec": "black", "mew": 0.5},
                      "SDK re-sent Invoke: a second event queued"),
    "spont_dup": ({"marker": r"$\rightrightarrows$", "ms": 15, "mfc": "black", "mec": "black", "mew": 0.5},
                  "queue delivered the event again"),
    Delivery.THROTTLED: ({"marker": r"$\mathbf{429}$", "ms": 21, "mfc": OI_VERMILLION, "mec": OI_VERMILLION,
                          "mew": 0.3}, "throttled (429): Lambda keeps the event, tries again"),
    "handoff_ok": ({"marker": r"$\mathbf{202}$", "ms": 21, "mfc": "#00795A", "mec": "#00795A", "mew": 0.3},
                   "hand-off accepted (202)"),
    Delivery.DELIVERY_FAILED: ({"marker": r"$\mathbf{500}$", "ms": 21, "mfc": "#5A5A5A", "mec": "#5A5A5A",
                                "mew": 0.3}, "hand-off failed (500): EventBridge retries"),
    "answer_lost": ({"marker": r"$\mathbf{202?}$", "ms": 25, "mfc": OI_VERMILLION, "mec": OI_VERMILLION,
                     "mew": 0.3}, "accepted (202), answer lost: sent again"),
    "user_delete": ({"marker": r"$\ominus$", "ms": 15, "mfc": "black", "mec": "black", "mew": 0.5},
                    "customer deleted the item (REMOVE)"),
    "dropped": ({"marker": r"$\otimes$", "ms": 17, "mfc": "black", "mec": "black", "mew": 0.6},
                "order left the source (DLQ / discarded)"),
    "gave_up": ({"marker": r"$\otimes$", "ms": 17, "mfc": OI_VERMILLION, "mec": OI_VERMILLION, "mew": 0.6},
                "producer gave up sending: no attempts left, no re-send"),
    "stale_copy": ({"marker": r"$\checkmark$", "ms": 14, "mfc": "white", "mec": OI_VERMILLION, "mew": 1.1},
                   "delete missed a copy: it comes back"),
    "send_dedup": ({"marker": r"$\nrightarrow$", "ms": 15, "mfc": "#8C8C8C", "mec": "#8C8C8C", "mew": 0.5},
                   "re-send deduplicated by the FIFO queue"),
    "moved_back": ({"marker": r"$\hookleftarrow$", "ms": 15, "mfc": "black", "mec": "black", "mew": 0.5},
                 "moved back from the DLQ (a new message)"),
    Delivery.STACK_STATUS: ({"marker": "s", "ms": 8, "mfc": "#8C8C8C", "mec": "black", "mew": 1.0},
                            "stack's status changed"),
    Delivery.ORPHANED: ({"marker": r"$\emptyset$", "ms": 15, "mfc": OI_VERMILLION, "mec": OI_VERMILLION, "mew": 0.6},
                        "orphan: what the Create did, under no id the stack knows"),
    "delivery_other": ({"marker": "s", "ms": 8, "mfc": "white", "mec": "black", "mew": 1.0}, "other delivery event"),
    # synchronous caller
    "call_send": ({"marker": ">", "ms": 9, "mfc": "#3A3A3A", "mec": "#3A3A3A", "mew": 0.8}, "caller sends Invoke"),
    "call_timeout": ({"marker": "x", "ms": 10, "mfc": "black", "mec": "black", "mew": 2.4},
                     "read timed out (ReadTimeoutError)"),
    "call_answer": ({"marker": "o", "ms": 8, "mfc": "black", "mec": "black", "mew": 1.0}, "caller got the response"),
    "call_error": ({"marker": "o", "ms": 8, "mfc": OI_ORANGE, "mec": "black", "mew": 1.0},
                   "caller got a function error"),
    # a text glyph, so the client's row reads "504" where API Gateway gave up
    "gateway_timeout": ({"marker": r"$\mathbf{504}$", "ms": 21, "mfc": OI_VERMILLION, "mec": OI_VERMILLION,
                         "mew": 0.3}, "504 from API Gateway: it gave up, the function ran on"),
    "task_timeout": ({"marker": "x", "ms": 10, "mfc": OI_VERMILLION, "mec": OI_VERMILLION, "mew": 2.4},
                     "States.Timeout: the Task stopped waiting, the function ran on"),
}
LEGEND_MARKER_ORDER = ("claim_won", "claim_lost", "read", "write", "record_deleted", "write_refused", "stale_write",
                       "table_error",
                       "email_done", "email_dup", "email_dedup", "email_failed",
                       "charge_done", "charge_dup", "charge_dedup", "charge_failed",
                       "cancellation_done", "cancellation_dup", "cancellation_dedup", "cancellation_failed",
                       "effect_other", RecordType.SWEEP,
                       "receive", Delivery.REDELIVERY, Delivery.DELETED, "deleted_late", "batch_failed",
                       "batch_partial", "batch_checkpoint", "retry_scheduled",
                       "resend", "caller_resend", "spont_dup", "stale_copy", "send_dedup", "user_delete",
                       Delivery.THROTTLED, Delivery.DELIVERY_FAILED, "handoff_ok", "answer_lost", "dropped", "gave_up",
                       "moved_back", Delivery.STACK_STATUS, Delivery.ORPHANED, "delivery_other", "call_send",
                       "call_timeout", "call_answer", "call_error", "gateway_timeout", "task_timeout")

_RC: dict[RcKeyType, Any] = {
    "font.family": "DejaVu Sans",
    "mathtext.fontset": "dejavusans",
    "axes.unicode_minus": True,
    "hatch.linewidth": 1.2,
    "path.simplify": True,
    "savefig.facecolor": "white",
    "figure.facecolor": "white",
    "svg.hashsalt": "retries-will-happen",
}


@functools.cache
def ink_pt(style: str) -> tuple[float, float]:
    """(width, height) in points at full scale of what a marker draws: its path's extents at its size, plus the
    edge line. Measured, because a marker's size is not its width: a diamond ("D") is 1.41 times as wide as its
    size, a "$" glyph half as wide."""
    kw = MARKERS[style][0]
    with matplotlib_style():  # a glyph's path depends on the mathtext font
        marker = MarkerStyle(kw["marker"])
        ext = marker.get_path().transformed(marker.get_transform()).get_extents()
    edge = kw.get("mew", 1.0)
    return ext.width * kw["ms"] + edge, ext.height * kw["ms"] + edge

_inside = threading.local()  # set while a thread draws in matplotlib_style()


@contextlib.contextmanager
def matplotlib_style() -> Iterator[None]:
    """Matplotlib defaults + our overrides, whatever style the caller has set.

    Inside another ``matplotlib_style()`` block it changes nothing: the style is already ours, and
    setting every rcParam again costs about a millisecond, on every widget redraw.
    """
    if getattr(_inside, "active", False):
        yield
        return
    with mstyle.context("default"), matplotlib.rc_context(_RC):
        _inside.active = True
        try:
            yield
        finally:
            _inside.active = False
