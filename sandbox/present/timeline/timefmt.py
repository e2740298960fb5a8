"""How virtual seconds read on the timeline: the package's one place for time formats.

Three formats, because they answer different questions: :func:`duration` says how
long something took or waited ("30 s", "24 h"), :func:`clock` says when something
happened, in the axis' unit ("30.0 s", "25 ms", "3:00.8"), and :func:`tick_label` is a tick
on that axis ("30.1", "3:00", "6:00:03").
"""
from __future__ import annotations

SECONDS, MINUTES, HOURS = "s", "min", "h"  # the axis units


def _one_decimal(v: float) -> str:
    """4.5 -> "4.5", 30.0 -> "30"."""
    s = f"{v:.1f}"
    return s.removesuffix(".0")


def duration(sec: float) -> str:
    """A short duration: 8.1 ms, 0.25 s, 4.5 s, 30 s, 30.5 s, 2 min, 24 h, 3 d.

    Under two minutes, to a tenth of a second: "error after 31 s" for an attempt that ended at 30.5 s hid the half
    second that lesson 10's valid and invalid locks turn on (28 s and 29 s at 30 s of work)."""
    sec = abs(sec)
    if sec < 0.001:
        return "0 s"
    if sec < 0.1:
        return f"{sec * 1000:.2g} ms"
    if sec < 1:
        return f"{sec:.2g} s"
    if sec < 120:
        return f"{_one_decimal(sec)} s"
    if sec < 7200:
        return f"{_one_decimal(sec / 60)} min"
    if sec < 72 * 3600:
        return f"{_one_decimal(sec / 3600)} h"
    return f"{_one_decimal(sec / 86400)} d"


def tick_label(v: float, decimals: int, unit: str) -> str:
    """A tick on an axis in ``unit``: seconds as "30.1", minutes as "3:00.8", hours as "6:00:03"."""
    if abs(v) < 10 ** -(decimals + 1):
        v = 0.0
    if unit == SECONDS:
        return f"{v:.{decimals}f}"
    v = round(v, decimals)
    sign = "−" if v < 0 else ""
    v = abs(v)
    width = 2 + (decimals + 1 if decimals else 0)  # seconds field: "05", "05.3"
    if unit == HOURS:
        h = int(v // 3600)
        m = int((v - 3600 * h) // 60)
        s = v - 3600 * h - 60 * m
        return f"{sign}{h}:{m:02d}:{s:0{width}.{decimals}f}"
    m = int(v // 60)
    s = v - 60 * m
    return f"{sign}{m}:{s:0{width}.{decimals}f}"


def clock(t: float, unit: str) -> str:
    """A point in time for a label, in the axis' unit: "30.0 s", "25 ms", "3:00.8", "6:00:03", "0:01:00.4". Under a
    second, in milliseconds to three digits: "0.03 s" said 30 ms for a duplicate at 25 ms."""
    if unit == SECONDS:
        if abs(t) >= 1:
            return f"{t:.1f} s"
        return "0 s" if t == 0 else f"{t * 1000:.3g} ms"
    if unit == MINUTES:
        return tick_label(t, 1, unit)
    # to the second where it is one, else to the tenth: "0:01:00" hid a retry's 60.4 s (lesson 02, a new learner)
    return tick_label(t, 0 if abs(t - round(t)) < 0.05 else 1, unit)
