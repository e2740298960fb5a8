"""Draw a :class:`~sandbox.history.History` as a swim-lane timeline.

One horizontal lane per Lambda invocation, grouped by the delivery source that
invoked it, so a learner can *see* a message being delivered twice, the second
email going out, and the idempotency lock that would have stopped it::

    from sandbox.timeline import plot_timeline, save_timeline
    plot_timeline(history)                    # in Jupyter: displays inline
    save_timeline(history, "run.png")         # byte-identical for the same history

What is drawn

* lanes: ``invoke_start`` ... ``invoke_end``, coloured by outcome (ok, error,
  timed out, crashed; hatched = still running when the history ends; green with
  orange hatching = ok, but the function reported failed batch items), labelled
  ``inv-3 · redelivery`` with the container and the orders the event carried
  underneath (``container c1 · o-1, o-2, o-3``), and the outcome in words at the
  right (``✓ ok · 409 after 0 s`` when a synchronous caller got an HTTP status);
* markers in the order they happened, kept inside their invocation's bar:
  idempotency-table claims won/lost, reads, emails and charges (a *duplicate*
  effect - the 2nd or later ``done`` for the same kind and key - is red and
  annotated "2nd email o-1");
* on each source's header row, what the delivery source did besides invoking
  (``delivery`` records): messages received, received again, deleted, a batch
  failing (wholly or partly), a retry scheduled, a producer re-send, a spontaneous
  duplicate, and where a lost order went (dead-lettered / discarded, with a label)
  or that it was still pending when the run stopped (hatched band);
* for a synchronous caller, each SDK attempt on its header row: sent, waiting,
  read timed out or answered, and what the caller finally saw;
* arrows from an invocation to the one that repeats it (``prev``), labelled with
  the cause and when the repeat started ("redelivery at 30.0 s"), routed around
  other lanes' content;
* shaded windows: the IN_PROGRESS lock each winning claim holds until it expires
  or is replaced, the COMPLETED record kept until its TTL (``expiresAt``,
  converted with ``meta["epoch"]``), and an expired record still sitting in the
  table until the TTL sweeper deletes it or a new claim replaces it (TTL lag);
  several keys on one lane get stacked sub-bands;
* a "TTL sweeper" lane when ``sweep`` records exist.

Lambda invocations last milliseconds while retries come seconds or minutes
later, so by default (``gaps="auto"``) long idle stretches are squeezed into a
narrow grey band labelled "29.8 s skipped" and short busy stretches are widened;
the tick labels always show true virtual time. Pass ``gaps=False`` for a strictly
linear axis. Times read as seconds, ``min:s`` (over 3 minutes) or ``h:mm:ss``
(over an hour).

The module uses :class:`matplotlib.figure.Figure` directly (no pyplot state).
The returned figure has ``_repr_png_`` so it displays when it is the value of a
Jupyter cell, whether or not pyplot/``%matplotlib inline`` was ever used.
"""
from __future__ import annotations

import contextlib
import io
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import matplotlib
import numpy as np
from matplotlib import lines as mlines
from matplotlib import patches as mpatches
from matplotlib import path as mpath
from matplotlib import style as mstyle
from matplotlib import text as mtext
from matplotlib import transforms as mtransforms
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.legend_handler import HandlerPatch, HandlerTuple
from matplotlib.transforms import Bbox

__all__ = ["plot_timeline", "save_timeline", "TimelineFigure", "SOURCE_LABELS"]

SCREEN_DPI = 100  # dpi of the returned figure (notebook display)
SAVE_DPI = 150  # dpi of save_timeline's PNG (projector-friendly)
DEFAULT_WIDTH = 13.0  # inches
UNITS = ("auto", "s", "min", "h")

SOURCE_LABELS = {
    "sqs": "SQS poller",
    "async": "Async event queue",
    "sync": "Synchronous caller (SDK retries)",
    "stream": "Kinesis stream poller",
    "direct": "Direct invoke (no retries)",
}

# Okabe-Ito colour-blind-safe palette.
OI_ORANGE = "#E69F00"
OI_SKY = "#56B4E9"
OI_GREEN = "#009E73"
OI_YELLOW = "#F0E442"
OI_BLUE = "#0072B2"
OI_VERMILLION = "#D55E00"
OI_PURPLE = "#CC79A7"

OUTCOME_COLORS = {
    "ok": OI_GREEN,
    "error": OI_ORANGE,
    "timeout": OI_PURPLE,
    "crashed": "#8F8F8F",
    None: OI_SKY,  # still running
}
OUTCOME_WORDS = {
    "ok": "ok",
    "error": "error",
    "timeout": "timed out",
    "crashed": "crashed",
    None: "still running",
}
DUPLICATE_COLOR = OI_VERMILLION
LOCK_COLOR = "#F7EC7E"  # Okabe-Ito yellow, lightened
LOCK_EDGE = "#B8A800"
KEPT_COLOR = "#CBE6F6"  # Okabe-Ito sky blue, lightened
KEPT_EDGE = "#6FA8CC"
EXPIRED_COLOR = "#FFFDF0"
EXPIRED_EDGE = "#C29A00"
PENDING_EDGE = "#8A8A8A"
GAP_COLOR = "#E4E4E4"
ARROW_COLOR = "#3A3A3A"
TEXT_GREY = "#505050"
WAIT_COLOR = "#8C8C8C"

READ_OPS = ("GetItem", "Query", "BatchGetItem", "Scan", "TransactGetItems")
WINDOW_STYLE = {  # kind -> (face, edge, hatch, legend text)
    "kept": (KEPT_COLOR, KEPT_EDGE, None, "result kept (COMPLETED, until TTL)"),
    "lock": (LOCK_COLOR, LOCK_EDGE, None, "lock held (IN_PROGRESS record)"),
    "expired": (EXPIRED_COLOR, EXPIRED_EDGE, "////", "expired, still in the table (TTL lag)"),
}


def _envelope() -> mpath.Path:
    w, h = 1.0, 0.66
    verts = [(-w, -h), (w, -h), (w, h), (-w, h), (-w, -h),  # body
             (-w, h), (0.0, -0.1), (w, h)]  # flap
    codes = [mpath.Path.MOVETO] + [mpath.Path.LINETO] * 3 + [mpath.Path.CLOSEPOLY] + \
            [mpath.Path.MOVETO, mpath.Path.LINETO, mpath.Path.LINETO]
    return mpath.Path(verts, codes)


def _hourglass() -> mpath.Path:
    verts = [(-0.7, 1.0), (0.7, 1.0), (0.0, 0.0), (-0.7, 1.0),
             (-0.7, -1.0), (0.7, -1.0), (0.0, 0.0), (-0.7, -1.0)]
    codes = [mpath.Path.MOVETO, mpath.Path.LINETO, mpath.Path.LINETO, mpath.Path.CLOSEPOLY] * 2
    return mpath.Path(verts, codes)


def _clock() -> mpath.Path:
    circle = mpath.Path.circle((0.0, 0.0), 1.0)
    hands = mpath.Path([(0.0, 0.72), (0.0, 0.0), (0.52, 0.0)],
                       [mpath.Path.MOVETO, mpath.Path.LINETO, mpath.Path.LINETO])
    return mpath.Path.make_compound_path(circle, hands)


ENVELOPE = _envelope()
HOURGLASS = _hourglass()
CLOCK = _clock()
DOLLAR = r"$\$$"

# Marker styles: name -> (Line2D keyword arguments, legend text).
MARKERS: dict[str, tuple[dict[str, Any], str]] = {
    "claim_won": (dict(marker="D", ms=10, mfc=OI_BLUE, mec="black", mew=1.0),
                  "claim won (PutItem ok)"),
    "claim_lost": (dict(marker="D", ms=10, mfc="white", mec=OI_BLUE, mew=2.2),
                   "claim lost (ConditionalCheckFailed)"),
    "table_error": (dict(marker="d", ms=12, mfc="#9A9A9A", mec="black", mew=1.0),
                    "idempotency-table call failed"),
    "read": (dict(marker="o", ms=8, mfc=OI_SKY, mec="black", mew=1.0),
             "read (GetItem / Query)"),
    "email_done": (dict(marker=ENVELOPE, ms=17, mfc="white", mec="black", mew=1.4), "email sent"),
    "email_dup": (dict(marker=ENVELOPE, ms=21, mfc=DUPLICATE_COLOR, mec="black", mew=1.4),
                  "DUPLICATE email sent"),
    "email_dedup": (dict(marker=ENVELOPE, ms=17, mfc="#E3E3E3", mec="#8C8C8C", mew=1.2),
                    "email deduplicated (not sent)"),
    "email_failed": (dict(marker=ENVELOPE, ms=17, mfc="black", mec="white", mew=1.2),
                     "email failed / outcome unknown"),
    "charge_done": (dict(marker=DOLLAR, ms=18, mfc="black", mec="black", mew=0.6), "card charged"),
    "charge_dup": (dict(marker=DOLLAR, ms=22, mfc=DUPLICATE_COLOR, mec="black", mew=0.6),
                   "DUPLICATE charge"),
    "charge_dedup": (dict(marker=DOLLAR, ms=18, mfc="#D0D0D0", mec="#303030", mew=0.6),
                     "charge deduplicated (not charged)"),
    "charge_failed": (dict(marker=DOLLAR, ms=18, mfc="white", mec="black", mew=1.0),
                      "charge failed / outcome unknown"),
    "effect_other": (dict(marker="P", ms=12, mfc="white", mec="black", mew=1.2), "other effect"),
    "end_error": (dict(marker="X", ms=12, mfc="black", mec="white", mew=1.0), ""),
    "end_timeout": (dict(marker=HOURGLASS, ms=13, mfc="black", mec="white", mew=1.0), ""),
    "end_crashed": (dict(marker="*", ms=16, mfc="black", mec="white", mew=1.0), ""),
    "sweep": (dict(marker="v", ms=11, mfc="#6E6E6E", mec="black", mew=1.0),
              "TTL sweeper deleted a record"),
    # header rows: what a delivery source did besides invoking
    "receive": (dict(marker=r"$\Downarrow$", ms=12, mfc="#5A5A5A", mec="#5A5A5A", mew=0.4),
                "poller received messages"),
    "redelivery": (dict(marker=r"$\circlearrowright$", ms=15, mfc="black", mec="black", mew=0.5),
                   "messages received AGAIN (redelivery)"),
    "deleted": (dict(marker=r"$\checkmark$", ms=13, mfc="#00795A", mec="#00795A", mew=0.5),
                "messages deleted (done)"),
    "batch_failed": (dict(marker=r"$\boxtimes$", ms=13, mfc="black", mec="black", mew=0.4),
                     "batch failed: the whole batch is retried"),
    "batch_partial": (dict(marker=r"$\boxminus$", ms=13, mfc=OI_VERMILLION, mec=OI_VERMILLION, mew=0.4),
                      "partial batch failure: failed items come back"),
    "retry_scheduled": (dict(marker=CLOCK, ms=12, mfc="white", mec="black", mew=1.3),
                        "retry scheduled"),
    "resend": (dict(marker=r"$\rightrightarrows$", ms=15, mfc="black", mec="black", mew=0.5),
               "producer sent the order again (new message)"),
    "spont_dup": (dict(marker=r"$\rightrightarrows$", ms=15, mfc="black", mec="black", mew=0.5),
                  "queue delivered the event again (duplicate)"),
    "dropped": (dict(marker=r"$\otimes$", ms=17, mfc="black", mec="black", mew=0.6),
                "order left the source (dead-lettered / discarded)"),
    "delivery_other": (dict(marker="s", ms=8, mfc="white", mec="black", mew=1.0), "other delivery event"),
    # synchronous caller
    "call_send": (dict(marker=">", ms=9, mfc="#3A3A3A", mec="#3A3A3A", mew=0.8), "caller sends Invoke"),
    "call_timeout": (dict(marker="x", ms=10, mfc="black", mec="black", mew=2.4),
                     "caller's read timed out (ReadTimeoutError)"),
    "call_answer": (dict(marker="o", ms=8, mfc="black", mec="black", mew=1.0), "caller got the response"),
    "call_error": (dict(marker="o", ms=8, mfc=OI_ORANGE, mec="black", mew=1.0), "caller got a function error"),
}
END_MARKER = {"error": "end_error", "timeout": "end_timeout", "crashed": "end_crashed"}
LEGEND_MARKER_ORDER = ("claim_won", "claim_lost", "table_error", "read",
                       "email_done", "email_dup", "email_dedup", "email_failed",
                       "charge_done", "charge_dup", "charge_dedup", "charge_failed",
                       "effect_other", "sweep",
                       "receive", "redelivery", "deleted", "batch_failed", "batch_partial", "retry_scheduled",
                       "resend", "spont_dup", "dropped", "delivery_other",
                       "call_send", "call_timeout", "call_answer", "call_error")
REQUIRED_LABELS = ("dropped", "pending")  # where a lost or stuck order went: always labelled

_RC = {
    "font.family": "DejaVu Sans",
    "mathtext.fontset": "dejavusans",
    "axes.unicode_minus": True,
    "hatch.linewidth": 1.2,
    "path.simplify": True,
    "savefig.facecolor": "white",
    "figure.facecolor": "white",
    "svg.hashsalt": "retries-will-happen",
}


@contextlib.contextmanager
def _style() -> Iterator[None]:
    """Matplotlib defaults + our overrides, whatever style the caller has set."""
    with mstyle.context("default"), matplotlib.rc_context(_RC):
        yield


# ---------------------------------------------------------------------------
# Reading the history into a plain model
# ---------------------------------------------------------------------------
@dataclass
class _Inv:
    inv: str
    seq: int
    start: float
    source: str
    cause: str | None
    container: str | None
    prev: str | None
    keys: list[str] = field(default_factory=list)
    end: float | None = None
    end_seq: int | None = None
    outcome: str | None = None
    error: str | None = None
    running: bool = True
    status_code: Any = None  # HTTP statusCode in a synchronous caller's response payload
    failed_items: list[str] = field(default_factory=list)  # partial batch response
    shard: str | None = None


@dataclass
class _Mark:
    inv: str | None  # None: sweeper lane
    t: float
    seq: int
    style: str
    dup_text: str | None = None  # "2nd email o-1" for duplicate effects
    label: str | None = None  # small text next to the marker (sweeps: the key)


@dataclass
class _Event:
    """Something a delivery source did besides invoking: drawn on its header row."""

    source: str
    t: float
    seq: int
    style: str
    label: str | None = None
    t0: float | None = None  # "pending": the band starts here
    running: list[str] = field(default_factory=list)  # redelivery: invocations still working on these keys
    labelled: bool = False  # drawing state: its label was already tried


@dataclass
class _Attempt:
    """One Invoke request a synchronous caller's SDK sent."""

    actor: str
    attempt: int | None
    sent: float
    t: float  # when the caller stopped waiting (read timeout or response)
    seq: int
    result: str
    inv: str | None
    status: Any = None
    function_error: str | None = None
    final: bool = False


@dataclass
class _Window:
    kind: str  # "lock", "kept" or "expired"
    inv: str
    key: str
    start: float
    expires: float | None  # relative seconds, None = no TTL
    end: float | None = None  # when it stopped (replaced/deleted/expired); None = open


@dataclass
class _Model:
    meta: dict[str, Any]
    invs: dict[str, _Inv]
    marks: list[_Mark] = field(default_factory=list)
    windows: list[_Window] = field(default_factory=list)
    events: list[_Event] = field(default_factory=list)
    attempts: list[_Attempt] = field(default_factory=list)
    t_end: float = 0.0


def _num(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)) and math.isfinite(v):
        return float(v)
    return None


def _ordinal(n: int) -> str:
    if 10 <= n % 100 <= 20:
        return f"{n}th"
    return f"{n}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th') }"


def _text(v: Any) -> str:
    return "" if v is None else str(v)


def _str_list(v: Any) -> list[str]:
    if not isinstance(v, (list, tuple)):
        return []
    return [str(x) for x in v if x is not None]


def _short_key(key: str) -> str:
    """"order-confirmation#o-1" -> "o-1"."""
    return key.rsplit("#", 1)[-1] or key


def _keys_text(keys: list[str], limit: int = 4) -> str:
    """"o-1, o-2, o-3", or "o-1, o-2 … o-8 (8)" when there are many."""
    ks = list(dict.fromkeys(_short_key(k) for k in keys))
    if len(ks) <= limit:
        return ", ".join(ks)
    return f"{ks[0]}, {ks[1]} … {ks[-1]} ({len(ks)})"


def _shard_text(shard: str) -> str:
    m = re.fullmatch(r"shardId-0*(\d+)", shard)
    return f"shard {m.group(1)}" if m else shard


def _read(history: Any) -> _Model:
    meta = dict(getattr(history, "meta", None) or {})
    table = meta.get("table") or "idempotency"
    epoch = _num(meta.get("epoch")) or 0.0
    records = list(history)
    invs: dict[str, _Inv] = {}
    model = _Model(meta=meta, invs=invs)
    times = [_num(r.get("t")) for r in records]
    times = [t for t in times if t is not None]
    model.t_end = max(times) if times else 0.0

    done_count: dict[tuple[str, str], int] = {}
    open_windows: dict[str, list[_Window]] = {}
    accepted: dict[str, float] = {}
    deliveries: list[tuple[float, int, dict]] = []
    receives: list[tuple[float, int, list[str]]] = []

    def close(key: str, t: float) -> None:
        for w in open_windows.pop(key, []):
            if w.expires is not None and w.expires < t:
                # the record outlived its expiresAt: it sat in the table until now
                w.end = w.expires
                model.windows.append(_Window("expired", w.inv, key, w.expires, None, end=t))
            else:
                w.end = t

    def open_window(kind: str, inv: str, key: str, t: float, rel: float | None) -> None:
        w = _Window(kind, inv, key, t, rel)
        open_windows.setdefault(key, []).append(w)
        model.windows.append(w)

    for i, r in enumerate(records):
        t = _num(r.get("t"))
        if t is None:
            continue
        seq = r.get("seq") if isinstance(r.get("seq"), int) else i
        typ = r.get("type")
        inv = r.get("inv")
        inv = None if inv is None else str(inv)
        if typ == "invoke_start" and inv is not None:
            if inv not in invs:
                invs[inv] = _Inv(inv=inv, seq=seq, start=t, source=_text(r.get("source")) or "direct",
                                 cause=r.get("cause") and str(r.get("cause")),
                                 container=r.get("container") and str(r.get("container")),
                                 prev=r.get("prev") and str(r.get("prev")),
                                 keys=_str_list(r.get("keys")))
        elif typ == "invoke_end" and inv in invs:
            rec = invs[inv]
            if rec.running and t >= rec.start:
                rec.running = False
                rec.end, rec.end_seq = t, seq
                outcome = r.get("outcome")
                rec.outcome = outcome if outcome in OUTCOME_WORDS and outcome is not None else "error"
                err = r.get("error")
                rec.error = None if err is None else str(err)
        elif typ == "accept":
            key = _text(r.get("key"))
            accepted.setdefault(key, t)
        elif typ == "delivery":
            deliveries.append((t, seq, r))
        elif typ == "aws" and inv is None and r.get("service") == "lambda" and r.get("op") == "Invoke":
            detail = r.get("detail") if isinstance(r.get("detail"), dict) else {}
            target = detail.get("invocation")
            sent = _num(detail.get("sent"))
            if sent is None or sent > t:
                sent = invs[str(target)].start if str(target) in invs else t
            attempt = detail.get("attempt")
            model.attempts.append(_Attempt(
                actor=_text(r.get("actor")) or "caller", attempt=attempt if isinstance(attempt, int) else None,
                sent=sent, t=t, seq=seq, result=_text(r.get("result")) or "?",
                inv=None if target is None else str(target), status=detail.get("statusCode"),
                function_error=None if detail.get("function_error") is None else str(detail["function_error"])))
        elif typ == "aws" and inv is None and r.get("service") == "sqs" and r.get("op") == "ReceiveMessage":
            detail = r.get("detail") if isinstance(r.get("detail"), dict) else {}
            got = _str_list(detail.get("received"))
            if got and r.get("result", "ok") == "ok":
                receives.append((t, seq, got))
        elif typ == "aws" and r.get("target") == table:
            key = _text(r.get("key"))
            op = _text(r.get("op"))
            result = r.get("result")
            detail = r.get("detail") if isinstance(r.get("detail"), dict) else {}
            status = detail.get("status")
            exp = _num(detail.get("expiresAt"))
            rel = None if exp is None else exp - epoch
            style = None
            if op in READ_OPS:
                style = "read" if result == "ok" else "table_error"
            elif op == "PutItem":
                if result == "ok":
                    close(key, t)
                    if status == "COMPLETED":
                        if inv is not None:
                            open_window("kept", inv, key, t, rel)
                    else:
                        style = "claim_won"
                        if inv is not None:
                            open_window("lock", inv, key, t, rel)
                elif result == "ConditionalCheckFailed":
                    style = "claim_lost"
                else:
                    style = "table_error"
            elif op == "UpdateItem":
                if result == "ok":
                    if status == "COMPLETED":
                        close(key, t)
                        if inv is not None:
                            open_window("kept", inv, key, t, rel)
                else:
                    style = "table_error"
            elif op == "DeleteItem":
                if result == "ok":
                    close(key, t)
                else:
                    style = "table_error"
            if style is not None and inv is not None:
                model.marks.append(_Mark(inv, t, seq, style))
        elif typ == "effect" and inv is not None:
            kind = _text(r.get("kind"))
            key = _text(r.get("key"))
            status = r.get("status")
            if kind not in ("email", "charge"):
                model.marks.append(_Mark(inv, t, seq, "effect_other"))
                continue
            if status == "done":
                n = done_count[(kind, key)] = done_count.get((kind, key), 0) + 1
                if n >= 2:
                    model.marks.append(_Mark(inv, t, seq, f"{kind}_dup", f"{_ordinal(n)} {kind} {key}"))
                else:
                    model.marks.append(_Mark(inv, t, seq, f"{kind}_done"))
            elif status == "deduplicated":
                model.marks.append(_Mark(inv, t, seq, f"{kind}_dedup"))
            else:
                model.marks.append(_Mark(inv, t, seq, f"{kind}_failed"))
        elif typ == "sweep":
            if r.get("target", table) == table:
                close(_text(r.get("key")), t)
            key = _text(r.get("key"))
            model.marks.append(_Mark(None, t, seq, "sweep", label=_short_key(key) or None))

    for ws in open_windows.values():
        for w in ws:
            if w.expires is not None and w.expires < model.t_end:
                w.end = w.expires  # expired, and nothing deleted it before the history ended
                model.windows.append(_Window("expired", w.inv, w.key, w.expires, None, end=model.t_end))
            else:
                w.end = w.expires  # may be None: never expires
    # windows whose claimer never started (malformed) or which are empty are dropped
    model.windows = [w for w in model.windows if w.inv in invs
                     and (w.end is None or w.end > w.start)]
    model.marks = [m for m in model.marks if m.inv is None or m.inv in invs]
    for rec in invs.values():
        if rec.outcome in END_MARKER and rec.end is not None:
            model.marks.append(_Mark(rec.inv, rec.end, rec.end_seq or 0, END_MARKER[rec.outcome]))
    _read_deliveries(model, deliveries, receives, accepted)
    last: dict[str, _Attempt] = {}
    for a in model.attempts:
        last[a.actor] = a
        if a.inv in invs and a.status is not None:
            invs[a.inv].status_code = a.status
    for a in last.values():
        a.final = True
    return model


def _read_deliveries(model: _Model, deliveries: list[tuple[float, int, dict]],
                     receives: list[tuple[float, int, list[str]]], accepted: dict[str, float]) -> None:
    invs = model.invs
    redelivered: dict[float, set[str]] = {}
    shards: dict[str, str] = {}  # order key -> shard it was read from
    for t, seq, r in deliveries:
        source = _text(r.get("source")) or "direct"
        what = _text(r.get("what"))
        keys = _str_list(r.get("keys"))
        inv = None if r.get("inv") is None else str(r.get("inv"))
        detail = r.get("detail") if isinstance(r.get("detail"), dict) else {}
        kt = _keys_text(keys)
        label: str | None = None
        t0 = None
        if isinstance(detail.get("shard"), str):
            for k in keys:
                shards.setdefault(k, detail["shard"])
        if what == "redelivery":
            style = "redelivery"
            label = f"{kt} received again" if kt else "received again"
            running = [rec.inv for rec in invs.values() if set(rec.keys) & set(keys) and rec.start < t
                       and (rec.end is None or rec.end > t)]
            if running:
                label += f" while {', '.join(running)} still runs"
            redelivered.setdefault(t, set()).update(_str_list(detail.get("messageIds")))
        elif what == "deleted":
            style = "deleted"
        elif what == "batch failed":
            partial = detail.get("partial") is True
            style = "batch_partial" if partial else "batch_failed"
            if partial and inv in invs:
                invs[inv].failed_items += keys or _str_list(detail.get("messageIds"))
        elif what == "retry scheduled":
            style = "retry_scheduled"
            if detail.get("bisect"):  # a failed stream batch split in two: name the halves
                prev_ev = model.events[-1] if model.events else None
                if prev_ev is not None and prev_ev.style == "retry_scheduled" and prev_ev.t == t \
                        and prev_ev.label and prev_ev.label.startswith("batch split"):
                    prev_ev.label += f" | {kt}"
                    continue
                label = f"batch split: {kt}"
        elif what in ("dead-lettered", "discarded"):
            style = "dropped"
            who = kt or ("an unreadable message" if what == "dead-lettered" else "a batch")
            if what == "dead-lettered":
                prev_ev = model.events[-1] if model.events else None
                if prev_ev is not None and prev_ev.style == "dropped" and prev_ev.t == t \
                        and prev_ev.label and prev_ev.label.endswith(" → DLQ"):
                    # several messages moved at once: one marker, one label
                    prev_ev.label = prev_ev.label[:-len(" → DLQ")] + f", {who} → DLQ"
                    continue
                label = f"{who} → DLQ"
            else:
                dest = detail.get("destination")
                if not dest:
                    m = re.search(r"on-failure destination (\S+)", _text(detail.get("reason")))
                    dest = m.group(1) if m else None
                label = f"{who} discarded → {dest}" if dest else f"{who} discarded, no destination: event lost"
        elif what == "pending":
            style = "pending"
            where = {"stream": "in the stream", "sqs": "in the queue", "async": "in the queue"}.get(source)
            label = f"{kt or 'orders'} still pending" + (f" ({where})" if where else "")
            starts = [accepted[k] for k in keys if k in accepted]
            starts += [rec.start for rec in invs.values() if set(rec.keys) & set(keys)]
            t0 = min(starts + [t])
        elif what == "producer re-send":
            style = "resend"
            label = f"{kt} sent twice" if kt else "sent twice"
        elif what == "spontaneous duplicate":
            style = "spont_dup"
            label = f"{kt} delivered again" if kt else "delivered again"
        else:
            style = "delivery_other"
            label = what or None
        model.events.append(_Event(source, t, seq, style, label, t0))
        if style == "redelivery":
            model.events[-1].running = running
    for t, seq, got in receives:
        if set(got) <= redelivered.get(t, set()):
            continue  # drawn as "received again"
        model.events.append(_Event("sqs", t, seq, "receive"))
    model.events.sort(key=lambda e: (e.t, e.seq))
    known = set(shards.values())
    if len(known) > 1:
        for rec in invs.values():
            got = {shards[k] for k in rec.keys if k in shards}
            if len(got) == 1:
                rec.shard = got.pop()


# ---------------------------------------------------------------------------
# Time axis: linear, or with long idle gaps squeezed
# ---------------------------------------------------------------------------
_NICE_STEPS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60,
               120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400)
MIN_SEGMENT = 0.45  # squeezed axis: a busy stretch is drawn at least this fraction as wide as the widest


def _human(sec: float) -> str:
    """A short duration: 0.25 s, 4.5 s, 30 s, 2 min, 24 h, 3 d."""
    sec = abs(sec)

    def one(v: float) -> str:
        s = f"{v:.1f}"
        return s[:-2] if s.endswith(".0") else s

    if sec < 0.001:
        return "0 s"
    if sec < 1:
        return f"{sec:.2g} s"
    if sec < 10:
        return f"{one(sec)} s"
    if sec < 120:
        return f"{sec:.0f} s"
    if sec < 7200:
        return f"{one(sec / 60)} min"
    if sec < 72 * 3600:
        return f"{one(sec / 3600)} h"
    return f"{one(sec / 86400)} d"


class _TimeAxis:
    """Maps virtual seconds t to plot x (piecewise linear when gaps are squeezed)."""

    def __init__(self, model: _Model, unit: str, gaps: Any):
        spans: list[tuple[float, float]] = []
        for rec in model.invs.values():
            spans.append((rec.start, rec.end if rec.end is not None else max(model.t_end, rec.start)))
        for m in model.marks:
            spans.append((m.t, m.t))
        for e in model.events:
            spans.append((e.t, e.t))
        for a in model.attempts:
            spans.append((a.sent, a.t))
        spans.append((model.t_end, model.t_end))  # "history ends" must be on the axis
        lo = min(a for a, _ in spans)
        hi = max(b for _, b in spans)
        hi = max(hi, model.t_end)
        self.span = max(hi - min(lo, 0.0), 1e-3)
        if unit == "auto":
            unit = "h" if self.span > 3600 else "min" if self.span > 180 else "s"
        if unit not in UNITS[1:]:
            raise ValueError(f"unit must be one of {UNITS}, not {unit!r}")
        self.unit = unit
        segs = self._busy(spans, lo, hi) if gaps else None
        if not segs or len(segs) < 2:
            lo0 = min(lo, 0.0)
            pad = 0.025 * self.span
            self.segments = [(lo0 - pad, hi + pad)]
            widths = [self.segments[0][1] - self.segments[0][0]]
        else:
            self.segments = segs
            longest = max(b - a for a, b in segs)
            widths = [max(b - a, MIN_SEGMENT * longest) for a, b in segs]
        # breakpoints
        busy = sum(widths)
        n = len(self.segments) - 1
        frac = min(0.095, 0.3 / n) if n else 0.0
        gap_w = busy * frac / (1 - n * frac) if n else 0.0
        self.bp_t: list[float] = []
        self.bp_x: list[float] = []
        self.gaps: list[tuple[float, float, float, float]] = []  # (ta, tb, xa, xb)
        x = self.segments[0][0]  # linear axis: x == t; squeezed: x == t up to the first gap
        for i, ((a, b), w) in enumerate(zip(self.segments, widths)):
            if i:
                ta = self.segments[i - 1][1]
                self.gaps.append((ta, a, x - gap_w, x))
            self.bp_t += [a, b]
            self.bp_x += [x, x + w]
            x += w + gap_w
        self.x_lo, self.x_hi = self.bp_x[0], self.bp_x[-1]
        self.t_lo, self.t_hi = self.bp_t[0], self.bp_t[-1]
        self.tail = 0.0

    def extend_right(self, frac: float) -> None:
        """Add empty room (``frac`` of the final width) after the end."""
        extra = (self.x_hi - self.x_lo) * frac / (1 - frac)
        self.tail = extra
        slope = (self.bp_t[-1] - self.bp_t[-2]) / (self.bp_x[-1] - self.bp_x[-2])
        self.bp_x[-1] += extra
        self.bp_t[-1] += extra * slope
        self.x_hi, self.t_hi = self.bp_x[-1], self.bp_t[-1]
        a, b = self.segments[-1]
        self.segments[-1] = (a, self.t_hi)

    @staticmethod
    def _busy(spans: list[tuple[float, float]], lo: float, hi: float) -> list[tuple[float, float]] | None:
        span = max(hi - lo, 1e-9)
        ivs = sorted(spans)
        tol = 0.1 * span
        segs: list[list[float]] = []
        for a, b in ivs:
            if segs and a - segs[-1][1] <= tol:
                segs[-1][1] = max(segs[-1][1], b)
            else:
                segs.append([a, b])
        while True:  # only squeeze gaps much longer than the busy stretches they separate
            longest = max(max(b - a for a, b in segs), 0.01 * span)
            merged: list[list[float]] = []
            for a, b in segs:
                if merged and a - merged[-1][1] <= 4 * longest:
                    merged[-1][1] = max(merged[-1][1], b)
                else:
                    merged.append([a, b])
            if len(merged) == len(segs):
                break
            segs = merged
        if len(segs) < 2:
            return None
        longest = max(max(b - a for a, b in segs), 0.01 * span)
        pad = 0.08 * longest
        return [(a - pad, b + pad) for a, b in segs]

    def x(self, t: float) -> float:
        bt, bx = self.bp_t, self.bp_x
        if t <= bt[0]:
            return bx[0] + (t - bt[0]) * (bx[1] - bx[0]) / (bt[1] - bt[0])
        if t >= bt[-1]:
            return bx[-1] + (t - bt[-1]) * (bx[-1] - bx[-2]) / (bt[-1] - bt[-2])
        for i in range(1, len(bt)):
            if t <= bt[i]:
                ta, tb, xa, xb = bt[i - 1], bt[i], bx[i - 1], bx[i]
                if tb == ta:
                    return xb
                return xa + (t - ta) * (xb - xa) / (tb - ta)
        return bx[-1]  # pragma: no cover

    @property
    def label(self) -> str:
        return {"s": "virtual time (s)", "min": "virtual time (min:s)", "h": "virtual time (h:mm:ss)"}[self.unit]

    def ticks(self, width_in: float) -> tuple[list[float], list[str]]:
        total = self.x_hi - self.x_lo
        xs: list[float] = []
        labels: list[str] = []
        for i, (a, b) in enumerate(self.segments):
            w = self.bp_x[2 * i + 1] - self.bp_x[2 * i]
            frac = w / total if total > 0 else 1.0
            nbins = max(1, round(frac * width_in * (1.5 if self.unit == "h" else 2.2)))
            step = next((s for s in _NICE_STEPS if (b - a) / s <= nbins), _NICE_STEPS[-1])
            if self.unit == "min":
                step = max(step, 0.01)
            elif self.unit == "h":
                step = max(step, 1)
            first = math.ceil(a / step - 1e-9)
            last = math.floor(b / step + 1e-9)
            vals = [k * step for k in range(first, last + 1)]
            if len(self.segments) == 1:
                vals = [v for v in vals if v >= 0 or a < -step]
            if not vals:
                vals = [round((a + b) / 2, max(0, -math.floor(math.log10(step))))]
            dec = max(0, -math.floor(math.log10(step) + 1e-9))
            for v in vals:
                xs.append(self.x(v))
                labels.append(self._fmt(v, dec))
        return xs, labels

    def _fmt(self, v: float, dec: int) -> str:
        if abs(v) < 10 ** -(dec + 1):
            v = 0.0
        if self.unit == "s":
            return f"{v:.{dec}f}"
        v = round(v, dec)
        sign = "−" if v < 0 else ""
        v = abs(v)
        width = 2 + (dec + 1 if dec else 0)
        if self.unit == "h":
            h = int(v // 3600)
            m = int((v - 3600 * h) // 60)
            s = v - 3600 * h - 60 * m
            return f"{sign}{h}:{m:02d}:{s:0{width}.{dec}f}"
        m = int(v // 60)
        s = v - 60 * m
        return f"{sign}{m}:{s:0{width}.{dec}f}"

    def clock(self, t: float) -> str:
        """A point in time for a label, in the axis' unit: "30.0 s", "3:00.8", "6:00:03"."""
        if self.unit == "s":
            return f"{t:.2f} s" if abs(t) < 1 else f"{t:.1f} s"
        if self.unit == "min":
            return self._fmt(t, 1)
        return self._fmt(t, 0)


# ---------------------------------------------------------------------------
# The figure
# ---------------------------------------------------------------------------
class TimelineFigure(Figure):
    """A Figure that shows itself as PNG in Jupyter even without pyplot."""

    def _repr_png_(self) -> bytes:
        buf = io.BytesIO()
        with _style():
            self.savefig(buf, format="png", dpi=self.dpi, metadata={"Software": None})
        return buf.getvalue()


class _ArrowHandler(HandlerPatch):
    def create_artists(self, legend, orig_handle, xdescent, ydescent, width, height, fontsize, trans):
        y = height / 2 - ydescent
        p = mpatches.FancyArrowPatch((-xdescent, y), (width - xdescent, y), arrowstyle="-|>",
                                     mutation_scale=fontsize * 1.1, color=ARROW_COLOR, lw=1.6)
        p.set_transform(trans)
        return [p]


class _WaitHandler(HandlerPatch):
    """Legend entry for a synchronous caller's attempt: send, wait, read timeout."""

    def create_artists(self, legend, orig_handle, xdescent, ydescent, width, height, fontsize, trans):
        y = height / 2 - ydescent
        x0, x1 = -xdescent + 2, width - xdescent - 2
        line = mlines.Line2D([x0, x1], [y, y], color=WAIT_COLOR, lw=3, solid_capstyle="butt")
        kw = dict(MARKERS["call_send"][0])
        send = mlines.Line2D([x0], [y], ls="none", **kw)
        for a in (line, send):
            a.set_transform(trans)
        return [line, send]


@dataclass
class _Lane:
    y: float
    kind: str  # "lane", "heading", "sweeper"
    label: str
    inv: str | None = None
    sub: str | None = None
    source: str | None = None


def _lane_sub(rec: _Inv) -> str | None:
    parts = []
    if rec.container:
        parts.append(f"container {rec.container.rsplit('/', 1)[-1] or rec.container}")
    if rec.shard:
        parts.append(_shard_text(rec.shard))
    if rec.keys:
        parts.append(_keys_text(rec.keys))
    return " · ".join(parts) or None


HEAD_BUSY = 1.3  # height of a header row that shows delivery events


def _busy_sources(model: _Model) -> set[str]:
    return {e.source for e in model.events if e.label} | ({"sync"} if model.attempts else set())


def _layout_rows(model: _Model) -> list[_Lane]:
    rows: list[_Lane] = []
    y = 0.0
    if any(m.style == "sweep" for m in model.marks):
        rows.append(_Lane(y, "sweeper", "TTL sweeper"))
        y += 1.15
    groups: dict[str, list[_Inv]] = {}
    for rec in model.invs.values():  # history order = start order
        groups.setdefault(rec.source, []).append(rec)
    for e in model.events:  # a source that only did things besides invoking still gets its row
        groups.setdefault(e.source, [])
    if model.attempts:
        groups.setdefault("sync", [])
    busy = _busy_sources(model)
    for source, recs in groups.items():
        recs = sorted(recs, key=lambda r: (r.start, r.seq))
        if rows:
            y += 0.35 if source in busy else 0.2  # busy header rows: room for labels above the markers
        rows.append(_Lane(y, "heading", SOURCE_LABELS.get(source, source), source=source))
        y += HEAD_BUSY if source in busy else 0.9
        for rec in recs:
            label = rec.inv if not rec.cause else f"{rec.inv} · {rec.cause}"
            rows.append(_Lane(y, "lane", label, rec.inv, _lane_sub(rec), source))
            y += 1.0
    return rows


def _spread(want: list[float], gaps: list[float], lower: float | None,
            upper: float | None = None) -> list[float]:
    """Positions as close as possible (least squares) to ``want``, in the same order,
    with at least ``gaps[i]`` between item i-1 and i, the first not before ``lower``
    and the last not after ``upper`` (when the gaps fit between them).

    Pool-adjacent-violators on the positions minus their cumulative minimum gaps.
    """
    offsets: list[float] = []
    acc = 0.0
    for g in gaps:
        acc += g
        offsets.append(acc)
    blocks: list[list[float]] = []  # [sum, count]
    for w, off in zip(want, offsets):
        blocks.append([w - off, 1.0])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            total, count = blocks.pop()
            blocks[-1][0] += total
            blocks[-1][1] += count
    q: list[float] = []
    for total, count in blocks:
        q += [total / count] * int(count)
    out = [qi + off for qi, off in zip(q, offsets)]
    if not out:
        return out
    if lower is not None and out[0] < lower:
        out[0] = lower
        for i in range(1, len(out)):
            out[i] = max(out[i], out[i - 1] + gaps[i])
    if upper is not None and out[-1] > upper:
        out[-1] = upper
        for i in range(len(out) - 2, -1, -1):
            out[i] = min(out[i], out[i + 1] - gaps[i + 1])
        if lower is not None and out[0] < lower:  # does not fit: centre the block
            shift = (lower - out[0] + upper - out[-1]) / 2
            out = [v + shift for v in out]
    return out


def _outcome_text(rec: _Inv) -> tuple[str, str | None]:
    """(outcome in words, second line or None) for the right-hand column."""
    if rec.outcome is None:
        return "… still running", None
    dur = _human(rec.end - rec.start) if rec.end is not None else ""
    mark = "✓" if rec.outcome == "ok" else "✗"
    what = OUTCOME_WORDS[rec.outcome]
    msg = None
    if rec.outcome == "ok" and rec.status_code is not None:
        what += f" · {rec.status_code}"
    if rec.outcome == "ok" and rec.failed_items:
        n = len(rec.failed_items)
        what += f" · {n} item{'s' if n != 1 else ''} failed"
        msg = f"batchItemFailures: {_keys_text(rec.failed_items)}"
    text = f"{mark} {what}" + (f" after {dur}" if dur else "")
    if rec.outcome == "ok" and rec.failed_items:  # "✓ ok after 0.6 s · 1 item failed"
        n = len(rec.failed_items)
        text = text.replace(f" · {n} item{'s' if n != 1 else ''} failed", "") + \
            f" · {n} item{'s' if n != 1 else ''} failed"
    if rec.outcome != "ok" and rec.error and rec.error.strip():
        msg = rec.error.strip().splitlines()[0]
    if msg is not None and len(msg) > 30:
        msg = msg[:29] + "…"
    return text, msg


def _empty_figure(title: str, width: float, dpi: float) -> TimelineFigure:
    fig = TimelineFigure(figsize=(min(width, 10.0), 3.0), dpi=dpi, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.set_title(title, fontsize=15, fontweight="bold")
    ax.text(0.5, 0.5, "No invocations in this history yet.\nRun a scenario, then plot its history.",
            ha="center", va="center", fontsize=14, color=TEXT_GREY, transform=ax.transAxes,
            gid="empty-message")
    fig.draw_without_rendering()
    fig.set_layout_engine("none")
    return fig


def plot_timeline(history: Any, *, unit: str = "auto", title: str | None = None,
                  width: float | None = None, gaps: Any = "auto", dpi: float = SCREEN_DPI) -> TimelineFigure:
    """Draw ``history`` as a swim-lane timeline and return the Figure.

    ``unit``: "auto" (min:s when the history spans more than 3 minutes, h:mm:ss over
    an hour), "s", "min" or "h".
    ``title``: defaults to "<scenario> · seed <seed>" from ``history.meta``.
    ``width``: figure width in inches (default 13); the height follows the lane count.
    ``gaps``: "auto" squeezes long idle stretches into labelled grey bands; False keeps
    the time axis strictly linear.
    ``dpi``: resolution the layout is computed for (and the notebook shows).
    """
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {UNITS}, not {unit!r}")
    if gaps not in ("auto", True, False, None):
        raise ValueError(f"gaps must be 'auto', True or False, not {gaps!r}")
    with _style():
        model = _read(history)
        if title is None:
            scenario = model.meta.get("scenario")
            seed = model.meta.get("seed")
            parts = [str(scenario) if scenario not in (None, "") else "timeline"]
            if seed is not None:
                parts.append(f"seed {seed}")
            title = " · ".join(parts)
        width = float(width) if width else DEFAULT_WIDTH
        if not model.invs:
            return _empty_figure(title, width, dpi)
        return _Drawing(model, unit, title, width, bool(gaps), dpi).fig


def save_timeline(history: Any, path: str | Path, *, dpi: int = SAVE_DPI, **kw: Any) -> Path:
    """Write the timeline PNG to ``path``; the same history always gives the same bytes."""
    path = Path(path)
    with _style():
        fig = plot_timeline(history, dpi=dpi, **kw)  # lay out at the output resolution
        fig.savefig(path, format="png", dpi=dpi, metadata={"Software": None})
    return path


class _Obstacles:
    """Display-space boxes that labels must not cover, each tagged with an owner."""

    def __init__(self) -> None:
        self.boxes: list[Bbox] = []
        self.owners: list[str] = []
        self._cache: tuple[np.ndarray, np.ndarray] | None = None

    def add(self, box: Bbox, owner: str) -> None:
        self.boxes.append(box)
        self.owners.append(owner)
        self._cache = None

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if self._cache is None:
            ext = np.array([b.extents for b in self.boxes]) if self.boxes else np.zeros((0, 4))
            self._cache = (ext, np.array(self.owners, dtype=object))
        return self._cache

    def hits(self, box: Bbox, exclude: tuple[str, ...] = ()) -> int:
        arr, owners = self.arrays()
        if not len(arr):
            return 0
        x0, y0, x1, y1 = box.extents
        mask = (arr[:, 0] < x1) & (arr[:, 2] > x0) & (arr[:, 1] < y1) & (arr[:, 3] > y0)
        if exclude and mask.any():
            mask &= ~np.isin(owners, list(exclude))
        return int(np.count_nonzero(mask))

    def points_hit(self, pts: np.ndarray, exclude: tuple[str, ...]) -> int:
        """How many distinct obstacles (not owned by ``exclude``) any of the points fall in."""
        arr, owners = self.arrays()
        if not len(arr) or not len(pts):
            return 0
        keep = ~np.isin(owners, list(exclude)) if exclude else np.ones(len(arr), bool)
        a = arr[keep]
        if not len(a):
            return 0
        px, py = pts[:, 0][:, None], pts[:, 1][:, None]
        inside = (px > a[None, :, 0]) & (px < a[None, :, 2]) & (py > a[None, :, 1]) & (py < a[None, :, 3])
        return int(np.count_nonzero(inside.any(axis=0)))


def _polyline(points: list[tuple[float, float]], step: float) -> np.ndarray:
    """Points every ``step`` px along a polyline (display coordinates)."""
    out = []
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        n = max(1, int(math.hypot(x1 - x0, y1 - y0) / step))
        for k in range(n):
            f = k / n
            out.append((x0 + f * (x1 - x0), y0 + f * (y1 - y0)))
    out.append(points[-1])
    return np.array(out)


def _arc3(a: tuple[float, float], b: tuple[float, float], rad: float, n: int = 24) -> list[tuple[float, float]]:
    """The quadratic curve matplotlib's ``arc3`` connection draws from a to b (display px)."""
    (x1, y1), (x2, y2) = a, b
    cx, cy = (x1 + x2) / 2 + rad * (y2 - y1), (y1 + y2) / 2 - rad * (x2 - x1)
    pts = []
    for k in range(n + 1):
        s = k / n
        pts.append(((1 - s) ** 2 * x1 + 2 * (1 - s) * s * cx + s * s * x2,
                    (1 - s) ** 2 * y1 + 2 * (1 - s) * s * cy + s * s * y2))
    return pts


def _along(points: list[tuple[float, float]], f: float) -> tuple[float, float]:
    """The point a fraction ``f`` of the way along a polyline."""
    lengths = [math.hypot(x1 - x0, y1 - y0) for (x0, y0), (x1, y1) in zip(points, points[1:])]
    total = sum(lengths)
    if total <= 0:
        return points[0]
    goal = f * total
    for ((x0, y0), (x1, y1)), seg in zip(zip(points, points[1:]), lengths):
        if goal <= seg and seg > 0:
            g = goal / seg
            return x0 + g * (x1 - x0), y0 + g * (y1 - y0)
        goal -= seg
    return points[-1]


class _Drawing:
    def __init__(self, model: _Model, unit: str, title: str, width: float, gaps: bool, dpi: float):
        self.model = model
        self.taxis = _TimeAxis(model, unit, gaps)
        self.rows = _layout_rows(model)
        self.lane_y = {r.inv: r.y for r in self.rows if r.kind == "lane"}
        self.head_y = {r.source: r.y for r in self.rows if r.kind == "heading"}
        self.sweeper_y = next((r.y for r in self.rows if r.kind == "sweeper"), None)
        n_units = self.rows[-1].y + 1.0 + (0.3 if self.rows[0].source in _busy_sources(model) else 0.0)
        bottom_extra = 0.8 if self.taxis.gaps else 0.0
        # vertical scale: 0.5 in per lane, shrinking for very many lanes
        per = 0.5
        if n_units * per > 22:
            per = max(22 / n_units, min(0.16, 44 / n_units))
        self.scale = max(0.55, min(1.0, per / 0.5))
        self.compact = per < 0.36
        fs = self.fs = lambda base: max(6.0, round(base * self.scale, 1))
        # windows that outlive the history get a note ("o-1 kept 24 h →") in extra room
        # at the right, after an "end of history" line, so the note never covers a lane
        long_windows = [w for w in model.windows if w.end is None or w.end > model.t_end]
        if long_windows:
            longest = max(len(self._note_text([w.key], self._note_what(w))) for w in long_windows)
            note_in = longest * 0.6 * fs(10) / 72 + 0.3
            self.taxis.extend_right(min(0.4, note_in / (width * 0.6)))
        present = self._legend_items()
        ncols = 3 if width >= 11 else 2
        legend_rows = math.ceil(len(present) / ncols)
        height = 0.85 + (n_units + 0.6 + bottom_extra) * per + 0.75 + legend_rows * 0.3 + 0.3
        height = min(max(height, 3.2), 50.0)

        fig = self.fig = TimelineFigure(figsize=(width, height), dpi=dpi, layout="constrained")
        FigureCanvasAgg(fig)
        fig.get_layout_engine().set(h_pad=0.06, w_pad=0.08)
        ax = self.ax = fig.add_subplot()
        ax.set_title(title, fontsize=fs(16), fontweight="bold", pad=12)
        ax.set_xlim(self.taxis.x_lo, self.taxis.x_hi)
        first = self.rows[0]
        self.y_top = -0.8 if first.kind == "heading" and first.source in _busy_sources(model) else -0.5
        ax.set_ylim(self.rows[-1].y + 0.6 + bottom_extra, self.y_top)
        for side in ("left", "right", "top"):
            ax.spines[side].set_visible(False)
        xt, xl = self.taxis.ticks(width * 0.62)
        if self.taxis.tail:  # no ticks after the end of the history
            x_end = self.taxis.x(model.t_end)
            xl = [lbl for x, lbl in zip(xt, xl) if x <= x_end + 1e-12]
            xt = [x for x in xt if x <= x_end + 1e-12]
        ax.set_xticks(xt, labels=xl)
        ax.tick_params(axis="x", labelsize=fs(11))
        ax.set_xlabel(self.taxis.label, fontsize=fs(12))
        ax.grid(axis="x", color="#DDDDDD", lw=0.8, zorder=0)
        ax.set_axisbelow(True)

        self._yaxis()
        self._end_line()
        self._gaps()
        self._windows()
        self._bars()
        self._pending()
        self._legend(present, ncols)

        fig.draw_without_rendering()  # run constrained layout once, then freeze it
        fig.set_layout_engine("none")
        self.renderer = fig.canvas.get_renderer()
        self.pt = fig.dpi / 72.0
        self._thin_xticks()
        self.obs = _Obstacles()
        self._static_obstacles()
        self._markers()
        self._caller_lines()
        self._guides()
        self._arrows()
        # labels, most important first: each avoids everything placed before it
        self._clip_notes()
        self._event_labels(required=True)
        self._duplicate_notes()
        self._caller_labels()
        self._event_labels(required=False, styles=("redelivery",))
        self._arrow_labels()
        self._event_labels(required=False)
        self._expired_labels()
        self._sweep_labels()

    # -- helpers ---------------------------------------------------------
    def _legend_items(self) -> list[tuple[Any, str]]:
        m = self.model
        items: list[tuple[Any, str]] = []
        outcomes = {rec.outcome for rec in m.invs.values()}
        for outcome in ("ok", "error", "timeout", "crashed", None):
            if outcome not in outcomes:
                continue
            if outcome is None:
                patch = mpatches.Patch(facecolor="#DCEFFA", edgecolor=OI_SKY, hatch="///", lw=1.0)
                items.append((patch, "still running when the history ends"))
                continue
            patch = mpatches.Patch(facecolor=OUTCOME_COLORS[outcome], edgecolor="black", lw=0.6)
            if outcome in END_MARKER:
                kw = dict(MARKERS[END_MARKER[outcome]][0])
                marker = mlines.Line2D([], [], ls="none", **kw)
                items.append(((patch, marker), f"invocation → {OUTCOME_WORDS[outcome]}"))
            else:
                items.append((patch, f"invocation → {OUTCOME_WORDS[outcome]}"))
        if any(rec.outcome == "ok" and rec.failed_items for rec in m.invs.values()):
            patch = mpatches.Patch(facecolor=OUTCOME_COLORS["ok"], edgecolor="black", lw=0.6,
                                   hatch="\\\\", hatchcolor=OI_ORANGE)
            items.append((patch, "ok, but reported failed batch items"))
        kinds = {w.kind for w in m.windows}
        for kind in ("lock", "kept", "expired"):
            if kind in kinds:
                face, edge, hatch, text = WINDOW_STYLE[kind]
                items.append((mpatches.Patch(facecolor=face, edgecolor=edge, hatch=hatch, lw=0.8), text))
        styles = {mk.style for mk in m.marks} | {e.style for e in m.events}
        if m.attempts:
            styles |= {self._attempt_style(a) for a in m.attempts}
        for name in LEGEND_MARKER_ORDER:
            if name in styles and name != "call_send":
                kw, text = MARKERS[name]
                items.append((mlines.Line2D([], [], ls="none", **kw), text))
        if "pending" in styles:
            items.append((mpatches.Patch(facecolor="white", edgecolor=PENDING_EDGE, hatch="xx", lw=0.8),
                          "still pending when the run stopped"))
        if m.attempts:
            items.append((mpatches.Rectangle((0, 0), 1, 1), "caller sends Invoke, waits for the answer"))
        if any(rec.prev in m.invs and rec.prev != rec.inv for rec in m.invs.values()):
            items.append((mpatches.FancyArrowPatch((0, 0), (1, 1)), "repeats an earlier invocation"))
        if self.taxis.gaps:
            items.append((mpatches.Patch(facecolor=GAP_COLOR, edgecolor="#9A9A9A", ls="--", lw=0.8),
                          "long idle time, squeezed (read the ticks)"))
        return items

    @staticmethod
    def _attempt_style(a: _Attempt) -> str:
        if a.result == "ReadTimeout":
            return "call_timeout"
        return "call_answer" if a.result == "ok" else "call_error"

    def _legend(self, items: list[tuple[Any, str]], ncols: int) -> None:
        if not items:
            return
        handles = [h for h, _ in items]
        labels = [t for _, t in items]
        self.fig.legend(handles, labels, loc="outside lower center", ncols=ncols, frameon=False,
                        fontsize=self.fs(11), handlelength=2.2, handleheight=1.1, columnspacing=2.0,
                        borderaxespad=0.2,
                        handler_map={tuple: HandlerTuple(ndivide=1),
                                     mpatches.FancyArrowPatch: _ArrowHandler(),
                                     mpatches.Rectangle: _WaitHandler()})

    def _yaxis(self) -> None:
        ax, fs = self.ax, self.fs
        ys = [r.y - (0.13 if (r.sub and not self.compact) else 0.0) for r in self.rows]
        ax.set_yticks(ys, labels=[r.label for r in self.rows])
        ax.tick_params(axis="y", which="both", length=0, pad=8)
        for r, lbl in zip(self.rows, ax.get_yticklabels()):
            lbl.set_parse_math(False)
            if r.kind == "lane":
                lbl.set_fontsize(fs(12))
            else:
                lbl.set_fontsize(fs(13))
                lbl.set_fontweight("bold")
        subs = [r for r in self.rows if r.sub] if not self.compact else []
        if subs:
            ax.set_yticks([r.y + 0.25 for r in subs], labels=[r.sub for r in subs], minor=True)
            for lbl in ax.get_yticklabels(minor=True):
                lbl.set_parse_math(False)
                lbl.set_fontsize(fs(10))
                lbl.set_color(TEXT_GREY)
        # group separators and outcome words on the right
        blend = mtransforms.blended_transform_factory(ax.transAxes, ax.transData)
        right = blend + mtransforms.ScaledTranslation(8 / 72, 0, self.fig.dpi_scale_trans)
        self.separators: list[float] = []
        for r in self.rows:
            if r.kind in ("heading", "sweeper"):
                y = r.y + (0.45 if r.kind == "heading" else 0.55)
                if r.kind == "heading" and r.source in _busy_sources(self.model):
                    y = r.y + HEAD_BUSY / 2
                ax.axhline(y, color="#B5B5B5", lw=1.0, zorder=0.5, gid="separator")
                self.separators.append(y)
            if r.kind == "lane":
                rec = self.model.invs[r.inv]
                text, msg = _outcome_text(rec)
                two = msg is not None and not self.compact
                ax.text(1, r.y - (0.13 if two else 0.0), text, transform=right, ha="left", va="center",
                        fontsize=fs(12), parse_math=False, clip_on=False, gid=f"outcome:{rec.inv}")
                if two:
                    ax.text(1, r.y + 0.25, msg, transform=right, ha="left", va="center",
                            fontsize=fs(10), color=TEXT_GREY, parse_math=False, clip_on=False,
                            gid=f"error:{rec.inv}")

    def _gaps(self) -> None:
        ax = self.ax
        trans = mtransforms.blended_transform_factory(ax.transData, ax.transAxes)
        self.gap_labels = []
        for ta, tb, xa, xb in self.taxis.gaps:
            ax.axvspan(xa, xb, facecolor=GAP_COLOR, alpha=0.85, lw=0, zorder=2.6, gid="gap")
            for x in (xa, xb):
                ax.axvline(x, color="#9A9A9A", lw=0.9, ls=(0, (4, 3)), zorder=2.6)
            self.gap_labels.append(ax.text(
                (xa + xb) / 2, 0.012, f"{_human(tb - ta)}\nskipped", transform=trans,
                ha="center", va="bottom", fontsize=self.fs(10), color=TEXT_GREY, zorder=2.7,
                linespacing=1.1, gid="gap-label"))

    def _windows(self) -> None:
        ax, tx = self.ax, self.taxis
        x_hi = tx.x_hi
        lane_keys: dict[str, list[str]] = {}
        for w in sorted(self.model.windows, key=lambda w: w.start):
            keys = lane_keys.setdefault(w.inv, [])
            if w.key not in keys:
                keys.append(w.key)
        self.window_boxes: list[tuple[_Window, float, float, float, float]] = []  # (w, x0, x1, y0, h)
        # draw "kept" first so a lock on the same lane and key shows on top
        for kind, z in (("kept", 1.0), ("expired", 1.1), ("lock", 1.2)):
            face, edge, hatch, _ = WINDOW_STYLE[kind]
            for w in self.model.windows:
                if w.kind != kind:
                    continue
                y = self.lane_y[w.inv]
                keys = lane_keys[w.inv]
                x0 = tx.x(w.start)
                x1 = x_hi if w.end is None else min(tx.x(w.end), x_hi)
                if x1 <= x0:
                    continue
                if 1 < len(keys) <= 4:  # thin bands above and below the bar, so no key hides another
                    top, bottom = keys[:(len(keys) + 1) // 2], keys[(len(keys) + 1) // 2:]
                    if w.key in top:
                        h = 0.21 / len(top)
                        y0 = y - 0.40 + top.index(w.key) * h
                    else:
                        h = 0.21 / len(bottom)
                        y0 = y + 0.19 + bottom.index(w.key) * h
                    alpha = 1.0
                else:
                    h, y0 = 0.72, y - 0.36
                    alpha = 0.55 if len(keys) > 4 else 1.0
                ax.add_patch(mpatches.Rectangle((x0, y0), x1 - x0, h, facecolor=face, edgecolor=edge, hatch=hatch,
                                                lw=0.7, zorder=z, alpha=alpha, gid=f"{kind}:{w.inv}:{w.key}"))
                self.window_boxes.append((w, x0, x1, y0, h))

    def _bars(self) -> None:
        ax, tx = self.ax, self.taxis
        self.bars: dict[str, mpatches.Rectangle] = {}
        for rec in self.model.invs.values():
            y = self.lane_y[rec.inv]
            x0 = tx.x(rec.start)
            if rec.outcome is None:
                x1 = tx.x(max(self.model.t_end, rec.start))
                rect = mpatches.Rectangle((x0, y - 0.19), max(x1 - x0, 0.0), 0.38, facecolor="#DCEFFA",
                                          edgecolor=OI_SKY, hatch="///", lw=1.0, zorder=2,
                                          gid=f"bar:{rec.inv}:running")
            else:
                x1 = tx.x(rec.end)
                partial = rec.outcome == "ok" and bool(rec.failed_items)
                rect = mpatches.Rectangle((x0, y - 0.19), max(x1 - x0, 0.0), 0.38,
                                          facecolor=OUTCOME_COLORS[rec.outcome], edgecolor="black",
                                          hatch="\\\\" if partial else None,
                                          hatchcolor=OI_ORANGE if partial else "edge",
                                          lw=0.7, zorder=2, gid=f"bar:{rec.inv}:{rec.outcome}")
            ax.add_patch(rect)
            self.bars[rec.inv] = rect

    def _pending(self) -> None:
        """Orders still waiting in a source when the run stopped: a hatched band on its header row."""
        ax, tx = self.ax, self.taxis
        self.pending_bands: list[tuple[_Event, mpatches.Rectangle]] = []
        for e in self.model.events:
            if e.style != "pending" or e.source not in self.head_y:
                continue
            y = self.head_y[e.source]
            x0 = tx.x(e.t0 if e.t0 is not None else e.t)
            x1 = tx.x(self.model.t_end)
            rect = mpatches.Rectangle((x0, y - 0.3), max(x1 - x0, 0.0), 0.6, facecolor="white",
                                      edgecolor=PENDING_EDGE, hatch="xx", lw=0.8, zorder=1.5,
                                      gid=f"pending:{e.source}")
            ax.add_patch(rect)
            self.pending_bands.append((e, rect))

    # -- after layout: things that must not overlap -------------------------
    def _px(self, x: float, y: float) -> tuple[float, float]:
        px, py = self.ax.transData.transform((x, y))
        return float(px), float(py)

    def _data(self, px: float, py: float) -> tuple[float, float]:
        x, y = self.ax.transData.inverted().transform((px, py))
        return float(x), float(y)

    def _static_obstacles(self) -> None:
        axbox = self.ax.get_window_extent(self.renderer)
        for y in self.separators:
            _, py = self._px(0, y)
            self.obs.add(Bbox.from_extents(axbox.x0, py - 1.5, axbox.x1, py + 1.5), "separator")
        for t in self.gap_labels + ([self.end_label] if self.end_label is not None else []):
            self.obs.add(t.get_window_extent(self.renderer), "static")
        if self.end_label is not None:
            px, _ = self._px(self.taxis.x(self.model.t_end), 0)
            self.obs.add(Bbox.from_extents(px - 1, axbox.y0, px + 1, axbox.y1), "endline")

    def _row_positions(self, want: list[float], halves: list[float], lo: float,
                       hi: float) -> tuple[list[float], list[int]]:
        """Marker centres inside [lo, hi] (display px), in time order, not overlapping if they
        fit; if not, they overlap a little, then alternate up and down (the returned signs)."""
        n = len(want)
        pad = 2 * self.pt
        gaps = [0.0] + [halves[i - 1] + halves[i] + pad for i in range(1, n)]
        signs = [0] * n
        left, right = lo + halves[0], hi - halves[-1]
        room = max(right - left, 0.0)
        need = sum(gaps)
        if need > room + 1e-9:
            f = room / need
            if f >= 0.6:
                gaps = [g * f for g in gaps]
            else:
                signs = [-1 if i % 2 == 0 else 1 for i in range(n)]
                gaps = [g * 0.45 for g in gaps]
                need = sum(gaps)
                if need > room and need > 0:
                    gaps = [g * room / need for g in gaps]
        if right < left:
            left = right = (lo + hi) / 2
        return _spread(want, gaps, left, right), signs

    def _marker_half(self, style: str) -> float:
        kw = MARKERS[style][0]
        size = kw["ms"] * self.scale * 0.5 * self.pt
        if kw["marker"] is ENVELOPE:
            return size * 1.05
        if isinstance(kw["marker"], str) and kw["marker"].startswith("$"):
            return size * 0.75
        return size * 0.8

    def _markers(self) -> None:
        ax, tx, fig = self.ax, self.taxis, self.fig
        pt = self.pt
        axbox = ax.get_window_extent(self.renderer)
        end_px = self._px(tx.x(self.model.t_end), 0)[0]
        # bars: at least 3 px wide so a 1 ms invocation is still visible
        min_w = 3 * fig.dpi / 100
        for rect in self.bars.values():
            x0, y0 = self._px(rect.get_x(), 0)
            x1, _ = self._px(rect.get_x() + rect.get_width(), 0)
            if x1 - x0 < min_w:
                right = min(x0 + min_w, max(end_px, x1))
                left = right - min_w
                rect.set_x(self._data(left, y0)[0])
                rect.set_width(self._data(right, y0)[0] - rect.get_x())
        # rows of markers: (owner, y, dy for staggering, items [(t, seq, style, payload)], lo, hi, bar)
        rows: list[tuple[str, float, float, list[tuple[float, int, str, Any]], float, float, Any]] = []
        lanes: dict[str, list[tuple[float, int, str, Any]]] = {}
        sweeps: list[tuple[float, int, str, Any]] = []
        for m in self.model.marks:
            if m.inv is None:
                sweeps.append((m.t, m.seq, m.style, m))
            else:
                lanes.setdefault(m.inv, []).append((m.t, m.seq, m.style, m))
        for inv, items in lanes.items():
            rows.append((f"lane:{inv}", self.lane_y[inv], 0.11, items, 0.0, 0.0, self.bars[inv]))
        top_lo, top_hi = axbox.x0 + 3 * pt, max(end_px - 2 * pt, axbox.x0 + 3 * pt)
        if sweeps and self.sweeper_y is not None:
            rows.append(("sweeper", self.sweeper_y, 0.15, sweeps, top_lo, top_hi, None))
        heads: dict[str, list[tuple[float, int, str, Any]]] = {}
        for e in self.model.events:
            if e.style != "pending" and e.source in self.head_y:
                heads.setdefault(e.source, []).append((e.t, e.seq, e.style, e))
        for source, items in heads.items():
            rows.append((f"head:{source}", self.head_y[source], 0.16, items, top_lo, top_hi, None))
        # the synchronous caller's attempts: one sub-row per caller
        self.attempt_rows: dict[str, float] = {}
        if self.model.attempts and "sync" in self.head_y:
            actors = list(dict.fromkeys(a.actor for a in self.model.attempts))
            offsets = [0.0] if len(actors) == 1 else [-0.22, 0.0, 0.22]
            for i, actor in enumerate(actors):
                y = self.head_y["sync"] + offsets[i % len(offsets)]
                self.attempt_rows[actor] = y
                items = []
                for a in self.model.attempts:
                    if a.actor == actor:
                        items.append((a.sent, a.seq, "call_send", (a, "send")))
                        items.append((a.t, a.seq, self._attempt_style(a), (a, "end")))
                rows.append((f"caller:{actor}", y, 0.0, sorted(items, key=lambda it: (it[0], it[1])),
                             top_lo, top_hi, None))

        by_style: dict[str, list[tuple[float, float]]] = {}
        self.dup_points: list[tuple[str, float, float, str]] = []  # (inv, x, y, text) display px
        self.sweep_points: list[tuple[float, float, str]] = []
        self.event_points: list[tuple[_Event, float, float, float]] = []  # (event, x, y, half) px
        self.attempt_px: dict[tuple[int, str], tuple[float, float]] = {}
        self.lane_left: dict[str, float] = {}  # display x where a lane's first marker begins
        for owner, y, dy, items, lo, hi, bar in rows:
            items = sorted(items, key=lambda it: (it[0], it[1]))
            halves = [self._marker_half(it[2]) for it in items]
            want = [self._px(tx.x(it[0]), y)[0] for it in items]
            if bar is not None:
                lo, _ = self._px(bar.get_x(), y)
                hi, _ = self._px(bar.get_x() + bar.get_width(), y)
                need = sum(halves) * 2 + 2 * pt * (len(items) - 1)
                if need > hi - lo:  # widen the bar by at most one marker, never past the end of history
                    ext = min(need - (hi - lo), 2 * max(halves))
                    r = min(ext, max(0.0, end_px - hi))
                    hi += r
                    lo -= ext - r
                    bar.set_x(self._data(lo, y)[0])
                    bar.set_width(self._data(hi, y)[0] - bar.get_x())
                squeezed = need * 0.5 - 2 * max(halves)  # staggered up and down, they still need this
                if squeezed > hi - lo:  # too many for the bar: let them overhang it a little
                    extra = squeezed - (hi - lo)
                    r = min(extra / 2, max(0.0, end_px - hi))
                    hi += r
                    lo -= extra - r
            placed, signs = self._row_positions(want, halves, lo, hi)
            if bar is not None and placed:
                self.lane_left[owner[5:]] = placed[0] - halves[0]
            for (t, seq, style, payload), px, sign, half in zip(items, placed, signs, halves):
                yd = y + sign * dy
                py = self._px(0.0, yd)[1]
                xd = self._data(px, py)[0]
                by_style.setdefault(style, []).append((xd, yd))
                size = 2 * half / (1.05 if MARKERS[style][0]["marker"] is ENVELOPE else 0.8)
                mine = f"{owner}:{payload.seq}" if isinstance(payload, _Event) else owner
                self.obs.add(Bbox.from_bounds(px - size / 2, py - size / 2, size, size), mine)
                if isinstance(payload, _Mark):
                    if payload.dup_text:
                        self.dup_points.append((payload.inv, px, py, payload.dup_text))
                    if payload.label:
                        self.sweep_points.append((px, py, payload.label))
                elif isinstance(payload, _Event):
                    if payload.label:
                        self.event_points.append((payload, px, py, half))
                elif isinstance(payload, tuple):
                    self.attempt_px[(id(payload[0]), payload[1])] = (px, py)
        for name in MARKERS:  # fixed order: deterministic z-order
            pts = by_style.get(name)
            if not pts:
                continue
            kw = dict(MARKERS[name][0])
            kw["ms"] = kw["ms"] * self.scale
            line = mlines.Line2D([p[0] for p in pts], [p[1] for p in pts], ls="none", zorder=4,
                                 gid=f"marker:{name}", **kw)
            line.set_in_layout(False)
            ax.add_line(line)
        for inv, rect in self.bars.items():
            self.obs.add(rect.get_window_extent(self.renderer), f"lane:{inv}")

    def _guides(self) -> None:
        """A dotted line from "received again" down through the invocation still working on
        those messages: the visibility timeout ran out while it was busy."""
        ax = self.ax
        for e, px, py, half in self.event_points:
            if not e.running:
                continue
            ys = [self.lane_y[i] for i in e.running if i in self.lane_y]
            if not ys:
                continue
            y0 = self._data(px, py - half - 1 * self.pt)[1]
            y1 = max(ys) + 0.3
            x = self._data(px, py)[0]
            line = mlines.Line2D([x, x], [y0, y1], color="black", lw=1.3, ls=(0, (2, 2)), zorder=3.7,
                                 gid=f"guide:{e.style}")
            line.set_in_layout(False)
            ax.add_line(line)
            top, bottom = self._px(x, y0)[1], self._px(x, y1)[1]
            self.obs.add(Bbox.from_extents(px - 2, bottom, px + 2, top), "guide")

    def _caller_lines(self) -> None:
        """A synchronous caller's wait for each attempt, from send to read timeout or answer."""
        ax = self.ax
        self.caller_points: list[tuple[_Attempt, float, float]] = []
        for a in self.model.attempts:
            if a.actor not in self.attempt_rows:
                continue
            sx, sy = self.attempt_px[(id(a), "send")]
            ex, ey = self.attempt_px[(id(a), "end")]
            x0 = self._data(sx, sy)[0]
            x1 = self._data(ex, ey)[0]
            y = self.attempt_rows[a.actor]
            line = mlines.Line2D([x0, x1], [y, y], color=WAIT_COLOR, lw=3 * self.scale, zorder=3,
                                 solid_capstyle="butt", gid=f"caller-wait:{a.inv}")
            line.set_in_layout(False)
            ax.add_line(line)
            self.obs.add(Bbox.from_extents(sx, sy - 2 * self.pt, ex, sy + 2 * self.pt), f"caller:{a.actor}")
            self.caller_points.append((a, sx, ex))

    def _arrows(self) -> None:
        """Arrows from an invocation to the one that repeats it, routed around other lanes."""
        ax, pt = self.ax, self.pt
        self.arrows: list[tuple[mpatches.FancyArrowPatch, str, list[tuple[float, float]], str, bool]] = []
        order = sorted(self.model.invs.values(), key=lambda r: (self.lane_y[r.inv], r.seq))
        for rec in order:
            prev = self.model.invs.get(rec.prev) if rec.prev else None
            if prev is None or prev.inv == rec.inv:
                continue
            rp, rr = self.bars[prev.inv], self.bars[rec.inv]
            ya, yb = self.lane_y[prev.inv], self.lane_y[rec.inv]
            xb = rr.get_x()
            prev_end = rp.get_x() + rp.get_width()
            down = 1 if yb > ya else -1  # data y grows downwards
            vertical = not (prev.end is not None and prev.end <= rec.start and prev_end <= xb + 1e-12)
            if vertical:  # the repeat started while the earlier one was still running
                a = self._px(xb, ya + down * 0.19)
                b = self._px(xb, yb - down * 0.24)
                shrink = (2.0, 1.0)
            else:
                a = self._px(prev_end, ya)
                b = self._px(xb, yb)
                b = (min(b[0], self.lane_left.get(rec.inv, b[0])), b[1])  # markers may overhang the bar
                shrink = (7.0, 9.0)
            cands: list[tuple[str, list[tuple[float, float]]]] = [("arc3,rad=0", [a, b])]
            if not vertical and abs(a[1] - b[1]) > 1:
                cands.append(("angle,angleA=90,angleB=0,rad=6", [a, (a[0], b[1]), b]))
                cands.append(("angle,angleA=0,angleB=90,rad=6", [a, (b[0], a[1]), b]))
            for rad in (0.3, -0.3):
                cands.append((f"arc3,rad={rad}", _arc3(a, b, rad)))
            mine = (f"lane:{prev.inv}", f"lane:{rec.inv}")
            best = None
            for i, (style, pts) in enumerate(cands):
                samples = _polyline(pts, 3.0)
                ends = np.hypot(samples[:, 0] - a[0], samples[:, 1] - a[1]) > (shrink[0] + 3) * pt
                ends &= np.hypot(samples[:, 0] - b[0], samples[:, 1] - b[1]) > (shrink[1] + 3) * pt
                hits = self.obs.points_hit(samples[ends], exclude=mine + ("separator", "static", "endline"))
                score = hits * 10 + i
                if best is None or score < best[0]:
                    best = (score, style, pts)
            _, style, pts = best
            da, db = self._data(*a), self._data(*b)
            arrow = mpatches.FancyArrowPatch(da, db, arrowstyle="-|>", mutation_scale=16 * self.scale,
                                             color=ARROW_COLOR, lw=1.6, shrinkA=shrink[0], shrinkB=shrink[1],
                                             connectionstyle=style, zorder=3.5,
                                             gid=f"arrow:{prev.inv}->{rec.inv}")
            ax.add_patch(arrow)
            owner = f"arrow:{prev.inv}->{rec.inv}"
            for x, y in _polyline(pts, 5.0):
                self.obs.add(Bbox.from_bounds(x - 2.5, y - 2.5, 5, 5), owner)
            cause = rec.cause or "repeat"
            text = f"{cause} at {self.taxis.clock(rec.start)}"
            self.arrows.append((arrow, text, pts, owner, vertical))

    def _thin_xticks(self) -> None:
        """Drop tick labels that would touch their left neighbour (e.g. across a squeezed gap)."""
        ax = self.ax
        ticks = list(ax.get_xticks())
        labels = [lbl.get_text() for lbl in ax.get_xticklabels()]
        boxes = [lbl.get_window_extent(self.renderer) for lbl in ax.get_xticklabels()]
        keep: list[int] = []
        gap = 8 * self.fig.dpi / 72
        for i, box in enumerate(boxes):
            if keep and box.x0 < boxes[keep[-1]].x1 + gap:
                continue
            keep.append(i)
        if len(keep) < len(ticks):
            ax.set_xticks([ticks[i] for i in keep], labels=[labels[i] for i in keep])

    def _text_box(self, artist: mtext.Text) -> Bbox:
        """Display box of a text (without an annotation's arrow), padded for its bbox patch."""
        if isinstance(artist, mtext.Annotation):
            artist.update_positions(self.renderer)
        box = mtext.Text.get_window_extent(artist, self.renderer)
        return box.padded(0.35 * artist.get_fontsize() * self.fig.dpi / 72)

    def _place(self, make: Callable[[Any], Any], candidates: list[Any], *, required: bool,
               exclude: tuple[str, ...] = (), owner: str = "label") -> Any:
        """Try candidate placements; keep the first that overlaps nothing already drawn."""
        axbox = self.ax.get_window_extent(self.renderer)
        best = None
        for i, cand in enumerate(candidates):
            artist = make(cand)
            box = self._text_box(artist)
            tol = 0.35 * artist.get_fontsize() * self.pt + 1
            inside = (box.x0 >= axbox.x0 - tol and box.x1 <= axbox.x1 + tol and
                      box.y0 >= axbox.y0 - tol and box.y1 <= axbox.y1 + tol)
            hits = self.obs.hits(box, exclude)
            score = hits + (0 if inside else 100)
            if score == 0:
                self.obs.add(box, owner)
                return artist
            if best is None or score < best[0]:
                best = (score, i, box)
            artist.remove()
        if required and best is not None:
            artist = make(candidates[best[1]])
            self.obs.add(best[2], owner)
            return artist
        return None

    def _duplicate_notes(self) -> None:
        ax = self.ax
        pt = self.pt
        # cluster duplicates that sit close together on one lane into one note
        clusters: list[list[tuple[str, float, float, str]]] = []
        for p in self.dup_points:
            if clusters and clusters[-1][-1][0] == p[0] and p[1] - clusters[-1][-1][1] < 70 * pt:
                clusters[-1].append(p)
            else:
                clusters.append([p])
        for cl in clusters:
            text = self._dup_text([p[3] for p in cl])
            px = (cl[0][1] + cl[-1][1]) / 2
            py = cl[0][2]
            xy = self._data(px, py)
            off = 15 * self.scale
            cands = [((0, off + 4), "center", "bottom"), ((0, -off - 4), "center", "top"),
                     ((off, off), "left", "bottom"), ((off, -off), "left", "top"),
                     ((-off, off), "right", "bottom"), ((-off, -off), "right", "top"),
                     ((off * 1.6, 0), "left", "center"), ((-off * 1.6, 0), "right", "center"),
                     ((2 * off, 1.6 * off), "left", "bottom"), ((2 * off, -1.6 * off), "left", "top"),
                     ((-2 * off, 1.6 * off), "right", "bottom"), ((-2 * off, -1.6 * off), "right", "top"),
                     ((0, 2.4 * off), "center", "bottom"), ((0, -2.4 * off), "center", "top")]

            def make(c, xy=xy, text=text):
                (dx, dy), ha, va = c
                return ax.annotate(text, xy=xy, xytext=(dx, dy), textcoords="offset points",
                                   ha=ha, va=va, fontsize=self.fs(11), fontweight="bold",
                                   color=DUPLICATE_COLOR, zorder=6, annotation_clip=False,
                                   parse_math=False, gid="duplicate-note",
                                   bbox=dict(boxstyle="round,pad=0.25", fc="white", ec=DUPLICATE_COLOR, lw=1.2),
                                   arrowprops=dict(arrowstyle="-", color=DUPLICATE_COLOR, lw=1.4,
                                                   shrinkA=0, shrinkB=9 * self.scale))

            self._place(make, cands, required=True)

    @staticmethod
    def _dup_text(texts: list[str]) -> str:
        """["2nd email o-1", "2nd email o-2", "3rd email o-1", "3rd email o-2"] -> "2nd & 3rd email o-1, o-2"."""
        per_key: dict[tuple[str, str], list[str]] = {}  # (kind, key) -> ordinals
        for text in texts:
            ordinal, kind, key = (text.split(" ", 2) + ["", ""])[:3]
            per_key.setdefault((kind, _short_key(key)), []).append(ordinal)
        grouped: dict[tuple[str, tuple[str, ...]], list[str]] = {}
        for (kind, key), ordinals in per_key.items():
            grouped.setdefault((kind, tuple(ordinals)), []).append(key)
        return "; ".join(f"{' & '.join(ordinals)} {kind} {', '.join(keys)}"
                         for (kind, ordinals), keys in grouped.items())

    @staticmethod
    def _note_what(w: _Window) -> str:
        if w.expires is None:
            return "kept, no TTL" if w.kind == "kept" else "locked, no expiry"
        return f"{'kept' if w.kind == 'kept' else 'locked'} {_human(w.expires - w.start)}"

    @staticmethod
    def _note_text(keys: list[str], what: str) -> str:
        short = [_short_key(k) for k in keys]  # "order-confirmation#o-1" -> "o-1"
        if len(set(short)) == len(short):
            keys = short
        shown = ", ".join(keys[:3]) + (f" +{len(keys) - 3} more" if len(keys) > 3 else "")
        return f"{shown} {what} →"

    def _end_line(self) -> None:
        self.end_label = None
        if not self.taxis.tail:
            return
        ax = self.ax
        x = self.taxis.x(self.model.t_end)
        ax.axvline(x, color="#6E6E6E", lw=1.3, ls=(0, (1.5, 2)), zorder=2.5, gid="end-of-history")
        trans = mtransforms.blended_transform_factory(ax.transData, ax.transAxes) + \
            mtransforms.ScaledTranslation(4 / 72, 0, self.fig.dpi_scale_trans)
        label = ax.text(x, 0.995, "history ends", transform=trans, ha="left", va="top",
                        fontsize=self.fs(10), color=TEXT_GREY, fontstyle="italic", zorder=2.7)
        label.set_in_layout(False)
        self.end_label = label

    def _clip_notes(self) -> None:
        """"o-1 kept 24 h →" for windows that outlive the history, in the room after its end."""
        ax, tx = self.ax, self.taxis
        per_lane: dict[str, dict[tuple[str, str], list[str]]] = {}
        for w in self.model.windows:
            if w.kind == "expired" or (w.end is not None and w.end <= tx.t_hi):
                continue
            keys = per_lane.setdefault(w.inv, {}).setdefault((w.kind, self._note_what(w)), [])
            if w.key not in keys:
                keys.append(w.key)
        blend = mtransforms.blended_transform_factory(ax.transAxes, ax.transData)
        for inv, notes in per_lane.items():
            y = self.lane_y[inv]
            n = len(notes)
            step = 0.62 / n if n > 1 else 0.0
            for i, ((kind, what), keys) in enumerate(notes.items()):
                dy = (i - (n - 1) / 2) * step
                text = self._note_text(keys, what)
                cands = [(dy, 10 if n < 3 else 8), (dy - 0.3, 9), (dy + 0.3, 9), (dy, 8)]

                def make(c, y=y, text=text, kind=kind):
                    yy, size = c
                    return ax.text(0.995, y + yy, text, transform=blend, ha="right", va="center",
                                   fontsize=self.fs(size), color="#1F1F1F", zorder=5, parse_math=False,
                                   gid=f"clip-note:{kind}",
                                   bbox=dict(boxstyle="round,pad=0.15", ec="none",
                                             fc=KEPT_COLOR if kind == "kept" else LOCK_COLOR))

                self._place(make, cands, required=True)

    def _event_labels(self, *, required: bool, styles: tuple[str, ...] | None = None) -> None:
        """Short labels next to header-row markers: where a lost order went, what came back."""
        ax = self.ax
        todo: list[tuple[_Event, float, float, float]] = []
        if required:
            todo = [p for p in self.event_points if p[0].style in REQUIRED_LABELS]
            for e, rect in self.pending_bands:
                if e.label:
                    todo.append((e, -1.0, 0.0, 0.0))
        else:
            todo = [p for p in self.event_points if p[0].style not in REQUIRED_LABELS
                    and (styles is None or p[0].style in styles)
                    and not p[0].labelled]
            if self.compact:
                return
        for e, px, py, half in todo:
            e.labelled = True
            strong = e.style in REQUIRED_LABELS
            kw = dict(fontsize=self.fs(11 if strong else 10), color="black" if strong else "#2A2A2A",
                      fontweight="bold" if strong else "normal", zorder=5.6, parse_math=False,
                      gid=f"event-label:{e.style}",
                      bbox=dict(boxstyle="round,pad=0.2", fc="white", ec="black" if strong else "#BBBBBB",
                                lw=1.0 if strong else 0.6))
            if e.style == "pending":
                rect = next(r for ev, r in self.pending_bands if ev is e)
                x0, y0 = self._px(rect.get_x(), self.head_y[e.source])
                x1, _ = self._px(rect.get_x() + rect.get_width(), self.head_y[e.source])
                off = 6 * self.pt
                top = self._px(0, self.head_y[e.source] - 0.3)[1] + 2 * self.pt
                cands = [(x1 - off, y0, "right", "center"), ((x0 + x1) / 2, y0, "center", "center"),
                         (x0 + off, y0, "left", "center"), (x1 + off, y0, "left", "center"),
                         (x1 - off, top, "right", "bottom"), ((x0 + x1) / 2, top, "center", "bottom"),
                         (x0 + off, top, "left", "bottom")]

                def make(c, e=e, kw=kw):
                    x, y, ha, va = c
                    xd, yd = self._data(x, y)
                    return ax.text(xd, yd, e.label, ha=ha, va=va, **kw)
            else:
                pt = self.pt
                off = half + 5 * pt
                clear = max(half, 7 * pt * self.scale) + 6 * pt
                up, down = clear, -clear
                cands = [(off, 0, "left", "center"), (-off, 0, "right", "center"),
                         (-half, up, "left", "bottom"), (half, up, "right", "bottom"), (0, up, "center", "bottom"),
                         (-half, down, "left", "top"), (half, down, "right", "top"), (0, down, "center", "top")]
                cands += [(off + k * 14 * pt, 0, "left", "center") for k in (1, 2, 3)]
                cands += [(-off - k * 14 * pt, 0, "right", "center") for k in (1, 2, 3)]

                def make(c, e=e, px=px, py=py, kw=kw):
                    dx, dy, ha, va = c
                    xd, yd = self._data(px + dx, py + dy)
                    return ax.text(xd, yd, e.label, ha=ha, va=va, **kw)

            self._place(make, cands, required=required or strong, exclude=(f"head:{e.source}:{e.seq}",))

    def _caller_labels(self) -> None:
        """What each synchronous caller finally saw: "gave up: ReadTimeoutError", "got 409"."""
        ax = self.ax
        for a, sx, ex in self.caller_points:
            if not a.final:
                continue
            y = self.attempt_rows[a.actor]
            _, py = self._px(0, y)
            if a.result == "ReadTimeout":
                text = "gave up: ReadTimeoutError"
            elif a.result == "ok":
                text = f"got {a.status}" if a.status is not None else "got the response"
            else:
                text = f"got {a.function_error or a.result}"
            pt = self.pt
            off, up = 9 * pt, 9 * pt
            cands = [(ex + off, py, "left", "center"), (ex, py + up, "right", "bottom"),
                     (ex, py - up, "right", "top"), (ex - off, py, "right", "center"),
                     (ex, py + up, "left", "bottom"), (ex, py - up, "left", "top")]

            def make(c, text=text):
                x, yy, ha, va = c
                xd, yd = self._data(x, yy)
                return ax.text(xd, yd, text, ha=ha, va=va, zorder=5.6, parse_math=False, gid="caller-label",
                               fontsize=self.fs(11), fontweight="bold", color="black",
                               bbox=dict(boxstyle="round,pad=0.2", fc="white", ec="black", lw=1.0))

            self._place(make, cands, required=True)

    def _expired_labels(self) -> None:
        """Name the expired-but-not-yet-deleted record where its band has room."""
        if self.compact:
            return
        ax = self.ax
        done: set[tuple[str, str]] = set()
        for w, x0, x1, y0, h in self.window_boxes:
            if w.kind != "expired" or (w.inv, w.key) in done:
                continue
            done.add((w.inv, w.key))
            p0 = self._px(x0, y0 + h / 2)
            p1 = self._px(x1, y0 + h / 2)
            y = self.lane_y[w.inv]
            text = f"{_short_key(w.key)} expired, still in the table (TTL lag) →"
            off = 6 * self.pt
            bar = self.bars[w.inv]
            bar_end = self._px(bar.get_x() + bar.get_width(), y)[0]
            start = max(p0[0], bar_end) + off
            cands = [(start, y), (start, y - 0.26), (start, y + 0.26)]

            def make(c, text=text, p1=p1):
                x, yy = c
                xd = self._data(x, 0)[0]
                return ax.text(xd, yy, text, ha="left", va="center", fontsize=self.fs(10), color="#5A4600",
                               zorder=5, parse_math=False, gid="expired-label",
                               bbox=dict(boxstyle="round,pad=0.15", fc=EXPIRED_COLOR, ec="none"))

            artist = self._place(make, cands, required=False)
            if artist is not None and self._text_box(artist).x1 > p1[0] + 2:
                artist.remove()  # the band is too short for its label

    def _sweep_labels(self) -> None:
        ax = self.ax
        for px, py, label in self.sweep_points:
            xy = self._data(px, py)
            off = 10 * self.scale
            cands = [((off, 0), "left"), ((-off, 0), "right")]

            def make(c, xy=xy, label=label):
                (dx, dy), ha = c
                return ax.annotate(label, xy=xy, xytext=(dx, dy), textcoords="offset points", ha=ha,
                                   va="center", fontsize=self.fs(10), color=TEXT_GREY, zorder=5,
                                   parse_math=False, annotation_clip=False, gid="sweep-label")

            self._place(make, cands, required=False)

    def _arrow_labels(self) -> None:
        if self.compact:
            return
        ax = self.ax
        for arrow, text, pts, owner, vertical in self.arrows:
            length = sum(math.hypot(x1 - x0, y1 - y0) for (x0, y0), (x1, y1) in zip(pts, pts[1:]))
            if length < 30 * self.fig.dpi / 100:
                continue
            two_lines = text.replace(" at ", "\nat ", 1)
            side = 6 * self.pt
            cands = []
            if not vertical:
                cands += [(f, 0, "center", text) for f in (0.5, 0.4, 0.6, 0.3, 0.7)]
                cands += [(f, 0, "center", two_lines) for f in (0.5, 0.35, 0.65)]
            cands += [(f, dx, ha, label) for f in (0.5, 0.35, 0.65) for label in (text, two_lines)
                      for dx, ha in ((side, "left"), (-side, "right"))]
            if vertical:
                cands += [(f, 0, "center", two_lines) for f in (0.5,)]

            def make(c, pts=pts):
                f, dx, ha, label = c
                px, py = _along(pts, f)
                xd, yd = self._data(px + dx, py)
                return ax.text(xd, yd, label, ha=ha, va="center", linespacing=1.05,
                               fontsize=self.fs(10), color=ARROW_COLOR, zorder=5.5, parse_math=False,
                               gid="arrow-label", fontstyle="italic",
                               bbox=dict(boxstyle="round,pad=0.2", fc="white", ec="#BBBBBB", lw=0.6))

            self._place(make, cands, required=False, exclude=(owner,))
