"""The time axis: virtual seconds to plot x, with long idle gaps squeezed, and tick labels.

Lambda invocations last milliseconds while retries come seconds or minutes later,
so by default long idle stretches are squeezed into narrow bands and short busy
stretches are widened (a piecewise-linear map); the tick labels always show true
virtual time, as seconds, ``min:s`` or ``h:mm:ss``.
"""
from __future__ import annotations

import math
from typing import Any

from .model import Model

UNITS = ("auto", "s", "min", "h")
_NICE_STEPS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60,
               120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400)
MIN_SEGMENT = 0.45  # squeezed axis: a busy stretch is drawn at least this fraction as wide as the widest


class TimeAxis:
    """Maps virtual seconds t to plot x (piecewise linear when gaps are squeezed)."""

    def __init__(self, model: Model, unit: str, gaps: Any):
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
        pad = 0.08 * longest  # segs did not change since longest was measured
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
