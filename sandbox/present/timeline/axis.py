"""The time axis: virtual seconds to plot x, with long idle gaps cut out as labelled breaks, and tick labels.

Lambda invocations last milliseconds while retries come seconds or minutes later,
so by default a long stretch in which nothing is drawn becomes an axis break (a
narrow band saying how much time it cut out). Every segment between the breaks is
drawn at the same, linear scale, so a mark stands at its time and a second is as
wide everywhere; the tick labels show true virtual time, as seconds, ``min:s`` or
``h:mm:ss`` (``timefmt.py``). What is drawn (a mark, a band's end, a run's start
or end) always lies in a segment, never in a break (``_activity``).
"""
from __future__ import annotations

import math
from typing import Any

from ...vocab import Delivery, SourceKind, WorldMode
from .model import Model
from .timefmt import HOURS, MINUTES, SECONDS, clock, tick_label

UNITS = ("auto", SECONDS, MINUTES, HOURS)
AXIS_LABELS = {SECONDS: "time (s)", MINUTES: "time (min:s)", HOURS: "time (h:mm:ss)"}
AUTO_MINUTES_OVER = 180  # s: a longer history reads in min:s ...
AUTO_HOURS_OVER = 3600  # s: ... and a still longer one in h:mm:ss
MIN_SPAN = 1e-3  # s: the shortest axis (a history with one instant)
# s between ticks: round numbers in each unit (1-2-5 seconds; whole seconds, then minutes and hours on a clock) ...
_SUBSECOND = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5)
_CLOCK = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400)
NICE_STEPS = {SECONDS: _SUBSECOND + tuple(k * 10 ** e for e in range(6) for k in (1, 2, 5)),
              MINUTES: _CLOCK, HOURS: _CLOCK}
#: ... and, when a busy stretch is too short to hold one of those, finer ones (coarsest first): "1:00.5"
FALLBACK_STEPS = {SECONDS: (), MINUTES: _SUBSECOND[::-1], HOURS: _SUBSECOND[::-1]}
START_DECIMALS = 3  # a tick at a run's start takes at most this many more decimals than the axis' step
TICK_CHAR_EM = 0.62  # a tick label's characters are at most this wide (digits), in ems ...
TICK_GAP_EM = 1.2  # ... and neighbouring labels keep this far apart

# cutting idle gaps out as axis breaks (all fractions of the history's span or of the longest busy stretch)
LINEAR_PAD = 0.035  # linear axis: empty room at both ends, fraction of the span (half a mark at the ends)
JOIN_TOLERANCE = 0.002  # activity closer than this fraction of the span is one busy stretch
# An idle gap becomes a break only when it is all of: long in itself, a large share of the run, and much longer
# than the busy stretches it separates. A few seconds in a run of a few seconds is what a lesson talks about ("two
# seconds later"); only a quiet stretch that would squash everything else is worth leaving out.
BREAK_MIN_S = 10.0  # s: a gap shorter than this is never cut out ...
BREAK_MIN_SHARE = 0.2  # ... nor one shorter than this fraction of the run's span ...
GAP_FACTOR = 4  # ... nor one shorter than this many times the longest busy stretch
BREAK_KEEPS = 0.5  # a break leaves out at least this fraction of its gap (the stretches beside it grow into the rest)
MIN_LONGEST = 0.002  # the longest busy stretch counts as at least this fraction of the span
SEGMENT_PAD = 0.08  # room around each busy stretch, fraction of the longest one
MIN_SEGMENT = 0.25  # a busy stretch takes at least this fraction of all of them: its padding grows, in true time
#   and at the axis' one scale, into the idle time beside it (the two beside a gap, never more than half of it)
END_ROOM = 0.15  # the last busy stretch runs on this fraction of them all (idle time, at the one scale)
GAP_WIDTH = 0.05  # each break: this fraction of the axis width (its label stands upright in it) ...
GAPS_WIDTH = 0.2  # ... but all of them together at most this fraction


class TimeAxis:
    """Maps virtual seconds t to plot x: one linear scale, with idle stretches between segments cut out (breaks)."""

    def __init__(self, model: Model, unit: str, gaps: Any):
        spans = _activity(model)
        lo = min(a for a, _ in spans)
        hi = max(max(b for _, b in spans), model.t_end)
        self.span = max(hi - min(lo, 0.0), MIN_SPAN)
        self.t_min = lo  # when the history's first activity happened
        if unit == "auto":
            unit = HOURS if self.span > AUTO_HOURS_OVER else MINUTES if self.span > AUTO_MINUTES_OVER else SECONDS
        if unit not in UNITS[1:]:
            raise ValueError(f"unit must be one of {UNITS}, not {unit!r}")
        self.unit = unit
        # a world on the wall clock (real threads, an endpoint) records real seconds, not virtual ones
        self.clock_name = "wall-clock" if model.meta.get("mode") in tuple(WorldMode) else "virtual"
        segs = _busy(spans, lo, hi, self.span) if gaps else None
        if not segs or len(segs) < 2:
            pad = LINEAR_PAD * self.span
            self.segments = [(min(lo, 0.0) - pad, hi + pad)]
        else:
            self.segments = _widened(segs)
        # One scale for the whole axis: a second is as wide in every segment, and only the breaks cut time out.
        self._breakpoints([b - a for a, b in self.segments])
        self.tail = 0.0

    def _breakpoints(self, widths: list[float], frac: float | None = None) -> None:
        """Lay the segments out ``widths`` wide, with breaks of equal width between them: each ``frac`` of the axis
        (by default :data:`GAP_WIDTH`, all of them at most :data:`GAPS_WIDTH`)."""
        busy = sum(widths)
        n = len(self.segments) - 1
        frac = (min(GAP_WIDTH, GAPS_WIDTH / n) if frac is None else frac) if n else 0.0
        gap_w = busy * frac / (1 - n * frac) if n else 0.0
        self.bp_t: list[float] = []
        self.bp_x: list[float] = []
        self.gaps: list[tuple[float, float, float, float]] = []  # (ta, tb, xa, xb)
        x = self.segments[0][0]  # linear axis: x == t; with breaks: x == t up to the first
        for i, ((a, b), w) in enumerate(zip(self.segments, widths)):
            if i:
                ta = self.segments[i - 1][1]
                self.gaps.append((ta, a, x - gap_w, x))
            self.bp_t += [a, b]
            self.bp_x += [x, x + w]
            x += w + gap_w
        self.x_lo, self.x_hi = self.bp_x[0], self.bp_x[-1]
        self.t_hi = self.bp_t[-1]

    def widen_breaks(self, least: float) -> None:
        """Each break at least ``least`` wide (plot x), the segments after it moved right: its upright label must
        fit it, however much room the axis' ends took."""
        for i, (ta, tb, xa, xb) in enumerate(self.gaps):
            grow = least - (xb - xa)
            if grow <= 0:
                continue
            self.gaps[i] = (ta, tb, xa, xb + grow)
            self.gaps[i + 1:] = [(a, b, x0 + grow, x1 + grow) for a, b, x0, x1 in self.gaps[i + 1:]]
            k = 2 * (i + 1)  # the breakpoints of the segments after this break
            self.bp_x[k:] = [x + grow for x in self.bp_x[k:]]
        self.x_hi = self.bp_x[-1]

    def clear_ticks(self, ticks: list[tuple[float, float]], clear: float) -> None:
        """Room between each break and a tick beside it for the tick's label centred on it: ``ticks`` is each tick's
        time and half its label's width, ``clear`` what a label keeps from a break (both in plot x). A label aligned
        away from a break reads as a time some seconds off (lesson 10's "60", 10 px right of its tick), so the
        stretch takes in a little more of the idle time the break leaves out, at the axis' one scale, and the
        segments after it move right; where the break has too little idle time to give, the label is aligned away
        (``Canvas.ticks_off_breaks``)."""
        for v, half in sorted(ticks):
            for i, (ta, tb, xa, xb) in enumerate(self.gaps):
                k = 2 * i
                slope = (self.bp_t[k + 1] - self.bp_t[k]) / max(self.bp_x[k + 1] - self.bp_x[k], 1e-12)
                grow = half + clear - (self.x(v) - xb if v >= tb else xa - self.x(v))
                if grow <= 0 or (tb - ta) - grow * slope < BREAK_KEEPS * (tb - ta):
                    continue  # clear of it, or the break would leave too little out to say time was cut
                self._grow_into_gap(i, grow, grow * slope, after=v >= tb)

    def _grow_into_gap(self, i: int, dx: float, dt: float, *, after: bool) -> None:
        """Break ``i`` leaves ``dt`` seconds less out: the segment after it starts (before it ends) that much
        earlier (later), ``dx`` wider, and everything right of it moves ``dx`` right."""
        ta, tb, xa, xb = self.gaps[i]
        k = 2 * i + 2 if after else 2 * i + 1  # the breakpoint that takes the time in
        if after:
            self.bp_t[k] -= dt
            self.segments[i + 1] = (self.segments[i + 1][0] - dt, self.segments[i + 1][1])
            self.gaps[i] = (ta, tb - dt, xa, xb)
            self.bp_x[k + 1:] = [x + dx for x in self.bp_x[k + 1:]]
        else:
            self.bp_t[k] += dt
            self.segments[i] = (self.segments[i][0], self.segments[i][1] + dt)
            self.gaps[i] = (ta + dt, tb, xa + dx, xb + dx)
            self.bp_x[k:] = [x + dx for x in self.bp_x[k:]]
        self.gaps[i + 1:] = [(a, b, x0 + dx, x1 + dx) for a, b, x0, x1 in self.gaps[i + 1:]]
        self.x_hi = self.bp_x[-1]

    def extend_right(self, frac: float, *, notes: bool = True) -> None:
        """Add empty room (``frac`` of the final width) after the end: for notes (``tail``: marked by an "end of
        history" line, no ticks in it) or only for the last markers."""
        extra = (self.x_hi - self.x_lo) * frac / (1 - frac)
        self.tail = extra if notes else 0.0
        slope = (self.bp_t[-1] - self.bp_t[-2]) / (self.bp_x[-1] - self.bp_x[-2])
        self.bp_x[-1] += extra
        self.bp_t[-1] += extra * slope
        self.x_hi, self.t_hi = self.bp_x[-1], self.bp_t[-1]
        self.segments[-1] = (self.segments[-1][0], self.t_hi)

    def extend_left(self, frac: float) -> None:
        """Add idle room (``frac`` of the final width) before the first activity, at the axis' one scale: for the
        keys named left of a lane's strips when a strip starts at the very beginning."""
        extra = (self.x_hi - self.x_lo) * frac / (1 - frac)
        slope = (self.bp_t[1] - self.bp_t[0]) / (self.bp_x[1] - self.bp_x[0])
        self.bp_x[0] -= extra
        self.bp_t[0] -= extra * slope
        self.x_lo = self.bp_x[0]
        self.segments[0] = (self.bp_t[0], self.segments[0][1])

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

    def t_at(self, x: float) -> float:
        """The time at plot ``x`` in a segment (the inverse of :meth:`x`)."""
        bt, bx = self.bp_t, self.bp_x
        i = next((k for k in range(0, len(bx) - 2, 2) if x <= bx[k + 1]), len(bx) - 2)
        return bt[i] + (x - bx[i]) * (bt[i + 1] - bt[i]) / max(bx[i + 1] - bx[i], 1e-12)

    def segment_widths(self) -> list[float]:
        """Each segment's width in plot x (data units)."""
        return [self.bp_x[2 * i + 1] - self.bp_x[2 * i] for i in range(len(self.segments))]

    @property
    def label(self) -> str:
        return f"{self.clock_name} {AXIS_LABELS[self.unit]}"

    def ticks(self, seg_px: list[float], em_px: float, until: float | None = None,
              starts: tuple[float, ...] = (), marks: tuple[float, ...] = ()) -> tuple[list[float], list[str]]:
        """Tick positions and labels: ``seg_px`` is each segment's width in px, ``em_px`` the tick font's size in px,
        ``until`` the last time a tick may show, ``starts`` when the runs started, ``marks`` when the marks stand (a
        segment with no run's start in it is ticked at its first mark: lesson 10's TTL sweeper's ▼). Every segment is at
        the axis' one scale, so every segment gets the one step, the finest round one whose labels do not touch, and
        every label the same decimals. Where a segment holds two ticks at that step, a segment too short to hold one is
        ticked where its first run started, at that instant ("2:04:34", the retry the title names: a round time beside
        it, "2:04:25", read as the retry's time, and no tick left the stretch unread); where none holds two, each gets
        one, the roundest time near its middle."""
        spans = []
        for (a, b), px in zip(self.segments, seg_px):
            spans.append((a, min(b, until) if until is not None else b, px / max(b - a, 1e-12)))
        spans = [(a, b, per) for a, b, per in spans if b >= a]
        if not spans:
            return [], []
        px_per_s = max(per for _, _, per in spans)  # one scale: the widths only differ by rounding
        step = self._axis_step(spans, px_per_s, em_px)
        dec = _decimals(step) if step else 0
        stepped = [self._tick_values(a, b, step) if step else [] for a, b, _ in spans]
        values: list[float] = []
        lone: list[int] = []  # decimals each lone tick needs
        if any(len(vals) > 1 for vals in stepped):  # the axis reads at its step: its multiples, and the runs' starts
            at_starts = _start_ticks(spans, stepped, starts, dec, marks)
            values = sorted([v for vals in stepped for v in vals] + [v for v, _ in at_starts])
            dec = max([dec, *(d for _, d in at_starts)])
        else:  # no stretch holds two: each gets its own, the roundest time near its middle
            for (a, b, _), vals in zip(spans, stepped):
                if not vals:
                    vals, at = self._lone_tick(a, b)
                    lone += [self._fewest_decimals(v, at) for v in vals]
                values += vals
        if step is None or len(values) == len(lone):  # no step on the axis: its ticks read as the lone ones need
            dec = max(lone, default=0)
        else:
            dec = max([dec, *lone])
        return [self.x(v) for v in values], [tick_label(v, dec, self.unit) for v in values]

    def _axis_step(self, spans: list[tuple[float, float, float]], px_per_s: float, em_px: float) -> float | None:
        """The finest round step whose labels, as wide as the widest of them, keep apart (None: none fits)."""
        narrowest = (TICK_CHAR_EM + TICK_GAP_EM) * em_px  # px: no label is narrower than one character and a gap
        for step in NICE_STEPS[self.unit]:
            if step * px_per_s < narrowest:
                continue  # cannot fit: not worth formatting (a 90 s axis has 90000 ms ticks)
            dec = _decimals(step)
            vals = [v for a, b, _ in spans for v in self._tick_values(a, b, step)]
            wide = max((len(tick_label(v, dec, self.unit)) for v in vals), default=1)
            if step * px_per_s >= (wide * TICK_CHAR_EM + TICK_GAP_EM) * em_px:
                return step
        return None

    def _lone_tick(self, a: float, b: float) -> tuple[list[float], float]:
        """One tick for a segment too short for the axis' step, the roundest time near its middle, and the step it
        lies on (which says how many decimals it needs)."""
        for step in NICE_STEPS[self.unit][::-1]:
            near = [v for v in self._tick_values(a, b, step) if abs(v - (a + b) / 2) <= (b - a) / 4]
            if near:
                return near[:1], step
        for step in FALLBACK_STEPS[self.unit]:  # a stretch too short for a whole second
            vals = self._tick_values(a, b, step)
            if vals:
                return vals[:1], step
        return [], 1.0

    def _fewest_decimals(self, v: float, step: float) -> int:
        """A lone tick at ``v`` reads with the fewest decimals any coarser step it lies on needs: "2", not "2.00"."""
        coarser = [s for s in NICE_STEPS[self.unit] + FALLBACK_STEPS[self.unit]
                   if s >= step and abs(v / s - round(v / s)) < 1e-9]
        return _decimals(max(coarser, default=step))

    def _tick_values(self, a: float, b: float, step: float) -> list[float]:
        first = math.ceil(a / step - 1e-9)
        last = math.floor(b / step + 1e-9)
        vals = [round(k * step, 9) for k in range(first, last + 1)]
        # no negative ticks, unless the history itself starts before 0
        return [v for v in vals if v >= 0 or self.t_min < 0]

    def clock(self, t: float) -> str:
        """A point in time for a label, in the axis' unit: "30.0 s", "3:00.8", "6:00:03"."""
        return clock(t, self.unit)


def _start_ticks(spans: list[tuple[float, float, float]], stepped: list[list[float]], starts: tuple[float, ...],
                 dec: int, marks: tuple[float, ...] = ()) -> list[tuple[float, int]]:
    """A tick for each segment the axis' step leaves without one, where its first run started (a run starting there
    is what the segment is kept for), and its decimals: the axis', or as many more as keep it in its segment
    (kafka-producer-resend: the re-send at 121.66 s, in a stretch that ends with the history at 121.67 s, is
    "121.66"; "122" stood after the history, where no tick is, and the stretch had none); where no run starts,
    at its first mark (``marks``)."""
    out = []
    for (a, b, _), vals in zip(spans, stepped):
        first = next((t for t in [*sorted(starts), *sorted(marks)] if a <= t <= b), None)
        if vals or first is None:
            continue
        at = next(((round(first, d), d) for d in range(dec, dec + START_DECIMALS + 1) if a <= round(first, d) <= b),
                  None)
        if at is not None:
            out.append(at)
    return out


def _decimals(step: float) -> int:
    """Decimals a tick label needs for ticks ``step`` seconds apart: 0.05 -> 2, 0.5 -> 1, 5 -> 0."""
    return max(0, -math.floor(math.log10(step) + 1e-9))


def _activity(model: Model) -> list[tuple[float, float]]:
    """(start, end) of everything drawn: invocations, markers, source events, caller attempts, and the ends of every
    band (idempotency-table windows, invisible messages, pending orders): a break never hides one of those. A
    throttled event's whole band is activity: its source kept trying, so no break may call any of it idle."""
    spans: list[tuple[float, float]] = []
    for w in model.windows:
        spans += [(t, t) for t in (w.start, w.end) if t is not None and t <= model.t_end]
    for h in model.hidden:
        spans += [(h.start, h.start), (h.end, h.end)]
    for rec in model.invs.values():
        spans.append((rec.start, rec.end if rec.end is not None else max(model.t_end, rec.start)))
    for m in model.marks:
        spans.append((m.t, m.t))
    for e in model.events:
        spans.append((e.t, e.t))
        if e.t0 is not None and e.style == Delivery.THROTTLED:
            # Lambda tried again and again all along (lesson 02: "32 tries over 2.1 h"): not idle time to cut out
            spans.append((e.t0, e.t))
        elif e.t0 is not None and e.style == Delivery.PENDING:  # where its band begins
            spans.append((e.t0, e.t0))
    for a in model.attempts:
        if a.source == SourceKind.ASYNC:
            # An Event invoke's caller waits only for a 202 that was lost: nothing happens meanwhile, so only
            # the ends are activity, and a long read timeout can be squeezed like any idle stretch.
            spans += [(a.sent, a.sent), (a.t, a.t)]
        else:
            spans.append((a.sent, a.t))
    for b in model.batching:  # a poller holding its batch is what some runs are about: never squeezed away
        spans.append((b.start, b.end))
    spans.append((model.t_end, model.t_end))  # "history ends" must be on the axis
    return spans


def _widened(segs: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The busy stretches, each at least :data:`MIN_SEGMENT` of them all: a short one takes more of the idle time
    on either side (the two beside a gap leave :data:`BREAK_KEEPS` of it to the break), so its marks have room at
    their true times and the scale stays one."""
    total = sum(b - a for a, b in segs)
    out = []
    for i, (a, b) in enumerate(segs):
        grow = max(0.0, MIN_SEGMENT * total - (b - a))
        before = (a - segs[i - 1][1]) * (1 - BREAK_KEEPS) / 2 if i else 0.0
        after = (segs[i + 1][0] - b) * (1 - BREAK_KEEPS) / 2 if i + 1 < len(segs) else 0.0
        sides = (1 if i else 0) + (1 if i + 1 < len(segs) else 0)
        share = grow / sides if sides else 0.0
        out.append((a - min(share, before), b + min(share, after)))
    a, b = out[-1]
    out[-1] = (a, b + END_ROOM * total)  # after the last of it: room for the labels of what happened at the end
    return out


def breakable(gap: float, span: float) -> bool:
    """Whether an idle ``gap`` (s) in a run ``span`` s long is long enough, in itself and as a share of the run, to
    be cut out as a break (it must also dwarf the busy stretches beside it, :func:`_busy`)."""
    return gap >= BREAK_MIN_S and gap >= BREAK_MIN_SHARE * span


def _busy(spans: list[tuple[float, float]], lo: float, hi: float,
          run: float | None = None) -> list[tuple[float, float]] | None:
    """The busy stretches, padded, when there are long idle gaps between them (else None); ``run``: the axis' span
    (s), which a gap must be a large share of (by default ``hi - lo``)."""
    span = max(hi - lo, 1e-9)
    run = span if run is None else run
    segs: list[list[float]] = []
    for a, b in sorted(spans):
        if segs and (a - segs[-1][1] <= JOIN_TOLERANCE * span or not breakable(a - segs[-1][1], run)):
            segs[-1][1] = max(segs[-1][1], b)
        else:
            segs.append([a, b])
    while True:  # only squeeze gaps much longer than the busy stretches they separate
        longest = max(max(b - a for a, b in segs), MIN_LONGEST * span)
        merged: list[list[float]] = []
        for a, b in segs:
            if merged and a - merged[-1][1] <= GAP_FACTOR * longest:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        if len(merged) == len(segs):
            break
        segs = merged
    if len(segs) < 2:
        return None
    pad = SEGMENT_PAD * longest  # segs did not change since longest was measured
    return [(a - pad, b + pad) for a, b in segs]
