"""Draw a :class:`~sandbox.history.History` as a swim-lane timeline.

One horizontal lane per Lambda invocation, grouped by the delivery source that
invoked it, so a learner can *see* a message being delivered twice, the second
email going out, and the idempotency lock that would have stopped it::

    from sandbox.timeline import plot_timeline, save_timeline
    plot_timeline(history)                    # in Jupyter: displays inline
    save_timeline(history, "run.png")         # byte-identical for the same history

What is drawn

* lanes: ``invoke_start`` ... ``invoke_end``, coloured by outcome (ok, error,
  timed out, crashed; hatched = still running when the history ends), labelled
  ``inv-3 · redelivery`` with the container id underneath, and the outcome in
  words at the right;
* markers in the order they happened: idempotency-table claims won/lost, reads,
  emails and charges (a *duplicate* effect - the 2nd or later ``done`` for the
  same kind and key - is red and annotated "2nd email o-1");
* arrows from an invocation to the one that repeats it (``prev``), labelled with
  the cause and the delay;
* shaded windows: the IN_PROGRESS lock each winning claim holds until it expires
  or is replaced, and the COMPLETED record kept until its TTL (``expiresAt``,
  converted with ``meta["epoch"]``);
* a "TTL sweeper" lane when ``sweep`` records exist.

Lambda invocations last milliseconds while retries come seconds or minutes
later, so by default (``gaps="auto"``) long idle stretches are squeezed into a
narrow grey band labelled "29.8 s skipped"; the tick labels always show true
virtual time. Pass ``gaps=False`` for a strictly linear axis.

The module uses :class:`matplotlib.figure.Figure` directly (no pyplot state).
The returned figure has ``_repr_png_`` so it displays when it is the value of a
Jupyter cell, whether or not pyplot/``%matplotlib inline`` was ever used.
"""
from __future__ import annotations

import contextlib
import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

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

SOURCE_LABELS = {
    "sqs": "SQS poller",
    "async": "Async event queue",
    "sync": "Synchronous caller (SDK retries)",
    "stream": "Kinesis stream poller",
    "direct": "Direct",
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
GAP_COLOR = "#E4E4E4"
ARROW_COLOR = "#3A3A3A"
TEXT_GREY = "#505050"

READ_OPS = ("GetItem", "Query", "BatchGetItem", "Scan", "TransactGetItems")


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


ENVELOPE = _envelope()
HOURGLASS = _hourglass()
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
}
END_MARKER = {"error": "end_error", "timeout": "end_timeout", "crashed": "end_crashed"}
LEGEND_MARKER_ORDER = ("claim_won", "claim_lost", "table_error", "read",
                       "email_done", "email_dup", "email_dedup", "email_failed",
                       "charge_done", "charge_dup", "charge_dedup", "charge_failed",
                       "effect_other", "sweep")

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
    end: float | None = None
    end_seq: int | None = None
    outcome: str | None = None
    error: str | None = None
    running: bool = True


@dataclass
class _Mark:
    inv: str | None  # None: sweeper lane
    t: float
    seq: int
    style: str
    dup_text: str | None = None  # "2nd email o-1" for duplicate effects
    label: str | None = None  # small text next to the marker (sweeps: the key)


@dataclass
class _Window:
    kind: str  # "lock" or "kept"
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

    def close(key: str, t: float) -> None:
        for w in open_windows.pop(key, []):
            w.end = t if w.expires is None else min(w.expires, t)

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
                                 prev=r.get("prev") and str(r.get("prev")))
        elif typ == "invoke_end" and inv in invs:
            rec = invs[inv]
            if rec.running and t >= rec.start:
                rec.running = False
                rec.end, rec.end_seq = t, seq
                outcome = r.get("outcome")
                rec.outcome = outcome if outcome in OUTCOME_WORDS and outcome is not None else "error"
                err = r.get("error")
                rec.error = None if err is None else str(err)
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
                            open_windows.setdefault(key, []).append(_Window("kept", inv, key, t, rel))
                            model.windows.append(open_windows[key][-1])
                    else:
                        style = "claim_won"
                        if inv is not None:
                            open_windows.setdefault(key, []).append(_Window("lock", inv, key, t, rel))
                            model.windows.append(open_windows[key][-1])
                elif result == "ConditionalCheckFailed":
                    style = "claim_lost"
                else:
                    style = "table_error"
            elif op == "UpdateItem":
                if result == "ok":
                    if status == "COMPLETED":
                        close(key, t)
                        if inv is not None:
                            open_windows.setdefault(key, []).append(_Window("kept", inv, key, t, rel))
                            model.windows.append(open_windows[key][-1])
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
            model.marks.append(_Mark(None, t, seq, "sweep", label=key.rsplit("#", 1)[-1] or key or None))

    for ws in open_windows.values():
        for w in ws:
            w.end = w.expires  # may be None: never expires
    # windows whose claimer never started (malformed) or which are empty are dropped
    model.windows = [w for w in model.windows if w.inv in invs
                     and (w.end is None or w.end > w.start)]
    model.marks = [m for m in model.marks if m.inv is None or m.inv in invs]
    for rec in invs.values():
        if rec.outcome in END_MARKER and rec.end is not None:
            model.marks.append(_Mark(rec.inv, rec.end, rec.end_seq or 0, END_MARKER[rec.outcome]))
    return model


# ---------------------------------------------------------------------------
# Time axis: linear, or with long idle gaps squeezed
# ---------------------------------------------------------------------------
_NICE_STEPS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60,
               120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400)


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
        spans.append((model.t_end, model.t_end))  # "history ends" must be on the axis
        lo = min(a for a, _ in spans)
        hi = max(b for _, b in spans)
        hi = max(hi, model.t_end)
        self.span = max(hi - min(lo, 0.0), 1e-3)
        if unit == "auto":
            unit = "min" if self.span > 180 else "s"
        if unit not in ("s", "min"):
            raise ValueError(f"unit must be 'auto', 's' or 'min', not {unit!r}")
        self.unit = unit
        segs = self._busy(spans, lo, hi) if gaps else None
        if not segs or len(segs) < 2:
            lo0 = min(lo, 0.0)
            pad = 0.025 * self.span
            self.segments = [(lo0 - pad, hi + pad)]
        else:
            self.segments = segs
        # breakpoints
        busy = sum(b - a for a, b in self.segments)
        n = len(self.segments) - 1
        frac = min(0.095, 0.3 / n) if n else 0.0
        gap_w = busy * frac / (1 - n * frac) if n else 0.0
        self.bp_t: list[float] = []
        self.bp_x: list[float] = []
        self.gaps: list[tuple[float, float, float, float]] = []  # (ta, tb, xa, xb)
        x = self.segments[0][0]  # linear axis: x == t; squeezed: x == t up to the first gap
        for i, (a, b) in enumerate(self.segments):
            if i:
                ta = self.segments[i - 1][1]
                self.gaps.append((ta, a, x - gap_w, x))
            self.bp_t += [a, b]
            self.bp_x += [x, x + (b - a)]
            x += (b - a) + gap_w
        self.x_lo, self.x_hi = self.bp_x[0], self.bp_x[-1]
        self.t_lo, self.t_hi = self.bp_t[0], self.bp_t[-1]
        self.tail = 0.0

    def extend_right(self, frac: float) -> None:
        """Add empty room (``frac`` of the final width) after the end, in real time."""
        extra = (self.x_hi - self.x_lo) * frac / (1 - frac)
        self.tail = extra
        self.x_hi += extra
        self.t_hi += extra
        a, b = self.segments[-1]
        self.segments[-1] = (a, b + extra)

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
            return bx[0] + (t - bt[0])
        if t >= bt[-1]:
            return bx[-1] + (t - bt[-1])
        for i in range(1, len(bt)):
            if t <= bt[i]:
                ta, tb, xa, xb = bt[i - 1], bt[i], bx[i - 1], bx[i]
                if tb == ta:
                    return xb
                return xa + (t - ta) * (xb - xa) / (tb - ta)
        return bx[-1]  # pragma: no cover

    @property
    def label(self) -> str:
        return "virtual time (s)" if self.unit == "s" else "virtual time (min:s)"

    def ticks(self, width_in: float) -> tuple[list[float], list[str]]:
        total = self.x_hi - self.x_lo
        xs: list[float] = []
        labels: list[str] = []
        for a, b in self.segments:
            frac = (b - a) / total if total > 0 else 1.0
            nbins = max(1, round(frac * width_in * 2.2))
            step = next((s for s in _NICE_STEPS if (b - a) / s <= nbins), _NICE_STEPS[-1])
            if self.unit == "min":
                step = max(step, 0.01)
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
        m = int(v // 60)
        s = v - 60 * m
        width = 2 + (dec + 1 if dec else 0)
        return f"{sign}{m}:{s:0{width}.{dec}f}"


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


@dataclass
class _Lane:
    y: float
    kind: str  # "lane", "heading", "sweeper"
    label: str
    inv: str | None = None
    sub: str | None = None


def _layout_rows(model: _Model) -> list[_Lane]:
    rows: list[_Lane] = []
    y = 0.0
    if any(m.style == "sweep" for m in model.marks):
        rows.append(_Lane(y, "sweeper", "TTL sweeper"))
        y += 1.15
    groups: dict[str, list[_Inv]] = {}
    for rec in model.invs.values():  # history order = start order
        groups.setdefault(rec.source, []).append(rec)
    for source, recs in groups.items():
        recs = sorted(recs, key=lambda r: (r.start, r.seq))
        if rows:
            y += 0.2
        rows.append(_Lane(y, "heading", SOURCE_LABELS.get(source, source)))
        y += 0.9
        for rec in recs:
            label = rec.inv if not rec.cause else f"{rec.inv} · {rec.cause}"
            sub = f"container {rec.container}" if rec.container else None
            rows.append(_Lane(y, "lane", label, rec.inv, sub))
            y += 1.0
    return rows


def _spread(want: list[float], gaps: list[float], lower: float | None) -> list[float]:
    """Positions as close as possible (least squares) to ``want``, in the same order,
    with at least ``gaps[i]`` between item i-1 and i, and the first not before ``lower``.

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
    if lower is not None and out and out[0] < lower:
        out[0] = lower
        for i in range(1, len(out)):
            out[i] = max(out[i], out[i - 1] + gaps[i])
    return out


def _outcome_text(rec: _Inv) -> tuple[str, str | None]:
    """(outcome in words, error message or None) for the right-hand column."""
    if rec.outcome is None:
        return "… still running", None
    dur = _human(rec.end - rec.start) if rec.end is not None else ""
    mark = "✓" if rec.outcome == "ok" else "✗"
    text = f"{mark} {OUTCOME_WORDS[rec.outcome]}" + (f" after {dur}" if dur else "")
    msg = None
    if rec.outcome != "ok" and rec.error and rec.error.strip():
        msg = rec.error.strip().splitlines()[0]
        if len(msg) > 30:
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

    ``unit``: "auto" (minutes when the history spans more than 3 minutes), "s" or "min".
    ``title``: defaults to "<scenario> · seed <seed>" from ``history.meta``.
    ``width``: figure width in inches (default 13); the height follows the lane count.
    ``gaps``: "auto" squeezes long idle stretches into labelled grey bands; False keeps
    the time axis strictly linear.
    ``dpi``: resolution the layout is computed for (and the notebook shows).
    """
    if unit not in ("auto", "s", "min"):
        raise ValueError(f"unit must be 'auto', 's' or 'min', not {unit!r}")
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


class _Drawing:
    def __init__(self, model: _Model, unit: str, title: str, width: float, gaps: bool, dpi: float):
        self.model = model
        self.taxis = _TimeAxis(model, unit, gaps)
        self.rows = _layout_rows(model)
        self.lane_y = {r.inv: r.y for r in self.rows if r.kind == "lane"}
        self.sweeper_y = next((r.y for r in self.rows if r.kind == "sweeper"), None)
        n_units = self.rows[-1].y + 1.0
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
        ax.set_ylim(self.rows[-1].y + 0.6 + bottom_extra, -0.5)
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
        self._arrows()
        self._legend(present, ncols)

        fig.draw_without_rendering()  # run constrained layout once, then freeze it
        fig.set_layout_engine("none")
        self.renderer = fig.canvas.get_renderer()
        self._thin_xticks()
        self.obstacles: list[Bbox] = []
        self.placed: list[Bbox] = []
        self._markers()
        self._clip_notes()
        self._duplicate_notes()
        self._sweep_labels()
        self._arrow_labels()

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
        kinds = {w.kind for w in m.windows}
        if "lock" in kinds:
            items.append((mpatches.Patch(facecolor=LOCK_COLOR, edgecolor=LOCK_EDGE, lw=0.8),
                          "lock held (IN_PROGRESS record)"))
        if "kept" in kinds:
            items.append((mpatches.Patch(facecolor=KEPT_COLOR, edgecolor=KEPT_EDGE, lw=0.8),
                          "result kept (COMPLETED, until TTL)"))
        styles = {mk.style for mk in m.marks}
        for name in LEGEND_MARKER_ORDER:
            if name in styles:
                kw, text = MARKERS[name]
                items.append((mlines.Line2D([], [], ls="none", **kw), text))
        if any(rec.prev in m.invs and rec.prev != rec.inv for rec in m.invs.values()):
            items.append((mpatches.FancyArrowPatch((0, 0), (1, 1)), "repeats an earlier invocation"))
        if self.taxis.gaps:
            items.append((mpatches.Patch(facecolor=GAP_COLOR, edgecolor="#9A9A9A", ls="--", lw=0.8),
                          "long idle time, squeezed (read the ticks)"))
        return items

    def _legend(self, items: list[tuple[Any, str]], ncols: int) -> None:
        if not items:
            return
        handles = [h for h, _ in items]
        labels = [t for _, t in items]
        self.fig.legend(handles, labels, loc="outside lower center", ncols=ncols, frameon=False,
                        fontsize=self.fs(11), handlelength=2.2, handleheight=1.1, columnspacing=2.0,
                        borderaxespad=0.2,
                        handler_map={tuple: HandlerTuple(ndivide=1),
                                     mpatches.FancyArrowPatch: _ArrowHandler()})

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
        for r in self.rows:
            if r.kind in ("heading", "sweeper"):
                ax.axhline(r.y + (0.45 if r.kind == "heading" else 0.55), color="#B5B5B5", lw=1.0, zorder=0.5)
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
        for ta, tb, xa, xb in self.taxis.gaps:
            ax.axvspan(xa, xb, facecolor=GAP_COLOR, alpha=0.85, lw=0, zorder=2.6, gid="gap")
            for x in (xa, xb):
                ax.axvline(x, color="#9A9A9A", lw=0.9, ls=(0, (4, 3)), zorder=2.6)
            ax.text((xa + xb) / 2, 0.012, f"{_human(tb - ta)}\nskipped", transform=trans,
                    ha="center", va="bottom", fontsize=self.fs(10), color=TEXT_GREY, zorder=2.7,
                    linespacing=1.1, gid="gap-label")

    def _windows(self) -> None:
        ax, tx = self.ax, self.taxis
        x_hi = tx.x_hi
        # draw "kept" first so a lock on the same lane shows on top; opaque colours do not stack
        for kind, color, edge, z in (("kept", KEPT_COLOR, KEPT_EDGE, 1.0), ("lock", LOCK_COLOR, LOCK_EDGE, 1.2)):
            for w in self.model.windows:
                if w.kind != kind:
                    continue
                y = self.lane_y[w.inv]
                x0 = tx.x(w.start)
                x1 = x_hi if w.end is None else min(tx.x(w.end), x_hi)
                if x1 <= x0:
                    continue
                ax.add_patch(mpatches.Rectangle((x0, y - 0.36), x1 - x0, 0.72, facecolor=color,
                                                edgecolor=edge, lw=0.7, zorder=z,
                                                gid=f"{kind}:{w.inv}:{w.key}"))

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
                rect = mpatches.Rectangle((x0, y - 0.19), max(x1 - x0, 0.0), 0.38,
                                          facecolor=OUTCOME_COLORS[rec.outcome], edgecolor="black",
                                          lw=0.7, zorder=2, gid=f"bar:{rec.inv}:{rec.outcome}")
            ax.add_patch(rect)
            self.bars[rec.inv] = rect

    def _arrows(self) -> None:
        ax, tx = self.ax, self.taxis
        self.arrows: list[tuple[mpatches.FancyArrowPatch, str, tuple[float, float], tuple[float, float]]] = []
        for rec in self.model.invs.values():
            prev = self.model.invs.get(rec.prev) if rec.prev else None
            if prev is None or prev.inv == rec.inv:
                continue
            if prev.end is not None and prev.end <= rec.start:
                t0 = prev.end
            else:
                t0 = min(prev.start, rec.start)
            a = (tx.x(t0), self.lane_y[prev.inv])
            b = (tx.x(rec.start), self.lane_y[rec.inv])
            arrow = mpatches.FancyArrowPatch(a, b, arrowstyle="-|>", mutation_scale=16 * self.scale,
                                             color=ARROW_COLOR, lw=1.6, shrinkA=7, shrinkB=9,
                                             connectionstyle="arc3,rad=0", zorder=3.5,
                                             gid=f"arrow:{prev.inv}->{rec.inv}")
            ax.add_patch(arrow)
            cause = rec.cause or "repeat"
            delay = rec.start - t0
            text = f"{cause} after {_human(delay)}" if delay >= 0.001 else cause
            self.arrows.append((arrow, text, a, b))

    # -- after layout: things that must not overlap -------------------------
    def _px(self, x: float, y: float) -> tuple[float, float]:
        px, py = self.ax.transData.transform((x, y))
        return float(px), float(py)

    def _markers(self) -> None:
        ax, tx, fig = self.ax, self.taxis, self.fig
        pt = fig.dpi / 72.0
        inv_data = ax.transData.inverted()
        lanes: dict[str | None, list[_Mark]] = {}
        for m in self.model.marks:
            lanes.setdefault(m.inv, []).append(m)
        by_style: dict[str, list[tuple[float, float]]] = {}
        self.dup_points: list[tuple[str, float, float, str]] = []  # (inv, x, y, text) display px
        self.sweep_points: list[tuple[float, float, str]] = []
        for inv, marks in lanes.items():
            y = self.sweeper_y if inv is None else self.lane_y[inv]
            marks = sorted(marks, key=lambda m: (m.t, m.seq))
            halves = []
            for m in marks:
                kw = MARKERS[m.style][0]
                halves.append(kw["ms"] * self.scale * 0.5 * pt * (1.05 if kw["marker"] is ENVELOPE else 0.8))
            want = [self._px(tx.x(m.t), y)[0] for m in marks]
            lower = self._px(tx.x(self.model.invs[inv].start), y)[0] if inv is not None else None
            placed = _spread(want, [halves[i - 1] + halves[i] + 3 * pt if i else 0.0
                                    for i in range(len(marks))], lower)
            py = self._px(0.0, y)[1]
            last_x = None
            for m, px in zip(marks, placed):
                kw = MARKERS[m.style][0]
                xd = float(inv_data.transform((px, py))[0])
                by_style.setdefault(m.style, []).append((xd, y))
                size = kw["ms"] * self.scale * pt
                self.obstacles.append(Bbox.from_bounds(px - size / 2, py - size / 2, size, size))
                if m.dup_text:
                    self.dup_points.append((inv, px, py, m.dup_text))
                if m.label:
                    self.sweep_points.append((px, py, m.label))
                last_x = xd
            if inv is not None and last_x is not None:
                bar = self.bars[inv]  # keep dodged markers on the bar
                x_end = bar.get_x() + bar.get_width()
                rec = self.model.invs[inv]
                if rec.outcome is not None and last_x > x_end:
                    bar.set_width(last_x - bar.get_x())
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
        # bars: at least 3 px wide so a 1 ms invocation is still visible
        min_w = 3 * fig.dpi / 100
        for rect in self.bars.values():
            x0, y0 = self._px(rect.get_x(), 0)
            x1, _ = self._px(rect.get_x() + rect.get_width(), 0)
            if x1 - x0 < min_w:
                rect.set_width(float(inv_data.transform((x0 + min_w, y0))[0]) - rect.get_x())
            b = rect.get_window_extent(self.renderer)
            self.obstacles.append(b)

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

    def _hits(self, box: Bbox) -> int:
        """How many obstacles or placed labels ``box`` overlaps (vectorised: many lanes)."""
        boxes = self.obstacles + self.placed
        if not boxes:
            return 0
        if getattr(self, "_box_cache", (None, 0))[1] != len(boxes):
            arr = np.array([b.extents for b in boxes])
            self._box_cache = (arr, len(boxes))
        arr = self._box_cache[0]
        x0, y0, x1, y1 = box.extents
        return int(np.count_nonzero((arr[:, 0] < x1) & (arr[:, 2] > x0) & (arr[:, 1] < y1) & (arr[:, 3] > y0)))

    def _place(self, make, candidates, *, required: bool) -> Any:
        """Try candidate placements; keep the first that overlaps nothing already drawn."""
        axbox = self.ax.get_window_extent(self.renderer)
        best = None
        for i, cand in enumerate(candidates):
            artist = make(cand)
            box = self._text_box(artist)
            inside = (box.x0 >= axbox.x0 - 1 and box.x1 <= axbox.x1 + 1 and
                      box.y0 >= axbox.y0 - 1 and box.y1 <= axbox.y1 + 1)
            hits = self._hits(box)
            score = hits + (0 if inside else 100)
            if score == 0:
                self.placed.append(box)
                return artist
            if best is None or score < best[0]:
                best = (score, i, box)
            artist.remove()
        if required and best is not None:
            artist = make(candidates[best[1]])
            self.placed.append(best[2])
            return artist
        return None

    def _duplicate_notes(self) -> None:
        ax = self.ax
        pt = self.fig.dpi / 72.0
        # cluster duplicates that sit close together on one lane into one note
        clusters: list[list[tuple[str, float, float, str]]] = []
        for p in self.dup_points:
            if clusters and clusters[-1][-1][0] == p[0] and p[1] - clusters[-1][-1][1] < 70 * pt:
                clusters[-1].append(p)
            else:
                clusters.append([p])
        inv_data = ax.transData.inverted()
        for cl in clusters:
            grouped: dict[str, list[str]] = {}
            for _, _, _, text in cl:
                head, _, key = text.rpartition(" ")
                grouped.setdefault(head, []).append(key)
            text = "; ".join(f"{head} {', '.join(keys)}" for head, keys in grouped.items())
            px = (cl[0][1] + cl[-1][1]) / 2
            py = cl[0][2]
            xy = tuple(float(v) for v in inv_data.transform((px, py)))
            off = 15 * self.scale
            cands = [((0, off + 4), "center", "bottom"), ((0, -off - 4), "center", "top"),
                     ((off, off), "left", "bottom"), ((off, -off), "left", "top"),
                     ((-off, off), "right", "bottom"), ((-off, -off), "right", "top"),
                     ((off * 1.6, 0), "left", "center"), ((0, 2.4 * off), "center", "bottom"),
                     ((0, -2.4 * off), "center", "top")]

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
    def _note_what(w: _Window) -> str:
        if w.expires is None:
            return "kept, no TTL" if w.kind == "kept" else "locked, no expiry"
        return f"{'kept' if w.kind == 'kept' else 'locked'} {_human(w.expires - w.start)}"

    @staticmethod
    def _note_text(keys: list[str], what: str) -> str:
        short = [k.rsplit("#", 1)[-1] or k for k in keys]  # "order-confirmation#o-1" -> "o-1"
        if len(set(short)) == len(short):
            keys = short
        shown = ", ".join(keys[:3]) + (f" +{len(keys) - 3} more" if len(keys) > 3 else "")
        return f"{shown} {what} →"

    def _end_line(self) -> None:
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

    def _clip_notes(self) -> None:
        ax, tx = self.ax, self.taxis
        per_lane: dict[str, dict[tuple[str, str], list[str]]] = {}
        for w in self.model.windows:
            if w.end is not None and w.end <= tx.t_hi:
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
                text = ax.text(0.995, y + dy, self._note_text(keys, what), transform=blend,
                               ha="right", va="center", fontsize=self.fs(10 if n < 3 else 8),
                               color="#1F1F1F", zorder=5, parse_math=False, gid=f"clip-note:{kind}",
                               bbox=dict(boxstyle="round,pad=0.15", ec="none",
                                         fc=KEPT_COLOR if kind == "kept" else LOCK_COLOR))
                self.placed.append(self._text_box(text))

    def _sweep_labels(self) -> None:
        ax = self.ax
        for px, py, label in self.sweep_points:
            xy = tuple(float(v) for v in ax.transData.inverted().transform((px, py)))
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
        inv_data = ax.transData.inverted()
        for arrow, text, a, b in self.arrows:
            pa, pb = self._px(*a), self._px(*b)
            if math.hypot(pb[0] - pa[0], pb[1] - pa[1]) < 30 * self.fig.dpi / 100:
                continue
            two_lines = text.replace(" after ", "\nafter ", 1)
            side = 6 * self.fig.dpi / 72
            cands = [(f, 0, "center", text) for f in (0.5, 0.4, 0.6, 0.3, 0.7)]
            cands += [(f, dx, ha, two_lines) for f in (0.5, 0.35, 0.65)
                      for dx, ha in ((0, "center"), (side, "left"), (-side, "right"))]

            def make(c, pa=pa, pb=pb):
                f, dx, ha, label = c
                px = pa[0] + f * (pb[0] - pa[0]) + dx
                py = pa[1] + f * (pb[1] - pa[1])
                xy = inv_data.transform((px, py))
                return ax.text(float(xy[0]), float(xy[1]), label, ha=ha, va="center", linespacing=1.05,
                               fontsize=self.fs(10), color=ARROW_COLOR, zorder=5.5, parse_math=False,
                               gid="arrow-label", fontstyle="italic",
                               bbox=dict(boxstyle="round,pad=0.2", fc="white", ec="#BBBBBB", lw=0.6))

            self._place(make, cands, required=False)
