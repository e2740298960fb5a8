"""Lines placed by the markers: a redelivery's guide, a synchronous caller's waits, the end of the history.

All are drawn after the markers (they start at a marker's final position, or pass after
the last) and before the arrows and labels, which must avoid them.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from matplotlib import lines as mlines
from matplotlib import patches as mpatches
from matplotlib.transforms import Bbox

from .canvas import Canvas
from .markers import MarkerPlacement
from .model import Attempt
from .style import WAIT_COLOR, Z_CALLER_WAIT, Z_GUIDE

GUIDE_GAP_PT = 1  # pt between the redelivery marker and the top of its guide
GUIDE_BELOW = 0.3  # data units: the guide ends this far below the lowest running lane's centre
GUIDE_LW = 1.3  # pt
GUIDE_HALF_PX = 2  # px: the guide's obstacle reaches this far left and right
WAIT_LW = 3  # pt at full scale
WAIT_HALF_PT = 2  # pt: a wait's obstacle reaches this far above and below it
END_LINE_HALF_PX = 1  # px: the end line's obstacle reaches this far left and right
END_LINE_CLEAR_PT = 2  # pt: the end line breaks off this far from the marks standing on it


class CallerWait(NamedTuple):
    """One attempt of a caller, from send to end, in display x."""

    attempt: Attempt
    sent_x: float
    end_x: float


def draw_guides(c: Canvas, placed: MarkerPlacement) -> None:
    """A dotted line from "received again" down through the invocation still working on
    those messages: the visibility timeout ran out while it was busy."""
    for p in placed.event_points:
        if not p.event.running:
            continue
        ys = [c.rows.lane_y[i] for i in p.event.running if i in c.rows.lane_y]
        if not ys:
            continue
        y0 = c.data(p.x, p.y - p.half - GUIDE_GAP_PT * c.pt)[1]
        y1 = max(ys) + GUIDE_BELOW
        x = c.data(p.x, p.y)[0]
        line = mlines.Line2D([x, x], [y0, y1], color="black", lw=GUIDE_LW, ls=(0, (2, 2)), zorder=Z_GUIDE,
                             gid=f"guide:{p.event.style}")
        line.set_in_layout(False)
        c.ax.add_line(line)
        top, bottom = c.px(x, y0)[1], c.px(x, y1)[1]
        c.obs.add(Bbox.from_extents(p.x - GUIDE_HALF_PX, bottom, p.x + GUIDE_HALF_PX, top), "guide")


def draw_caller_waits(c: Canvas, placed: MarkerPlacement) -> list[CallerWait]:
    """A caller's wait for each attempt, from send to read timeout or answer."""
    waits: list[CallerWait] = []
    for a in c.model.attempts:
        if a.actor not in placed.attempt_rows:
            continue
        sx, sy = placed.attempt_px[(id(a), "send")]
        ex, ey = placed.attempt_px[(id(a), "end")]
        x0 = c.data(sx, sy)[0]
        x1 = c.data(ex, ey)[0]
        y = placed.attempt_rows[a.actor]
        line = mlines.Line2D([x0, x1], [y, y], color=WAIT_COLOR, lw=WAIT_LW * c.scale.factor, zorder=Z_CALLER_WAIT,
                             solid_capstyle="butt", gid=f"caller-wait:{a.inv or f'{a.actor}#{a.attempt}'}")
        line.set_in_layout(False)
        c.ax.add_line(line)
        half, py = WAIT_HALF_PT * c.pt, c.px(x0, y)[1]
        c.obs.add(Bbox.from_extents(sx, py - half, ex, py + half), f"wait:{a.actor}")
        waits.append(CallerWait(a, sx, ex))
    return waits


def settle_end_line(c: Canvas, end_line: mlines.Line2D | None, bars: dict[str, mpatches.Rectangle],
                    placed: MarkerPlacement) -> None:
    """The "history ends" line after all the history drew: a run that ends with the history may have more steps
    than its bar holds, and its markers run on past the end (``markers._on_bar``); the line follows them."""
    if end_line is None:
        return
    # The line stays at the history's last moment: marks now stand at their true times, so nothing runs on past it,
    # and a line moved clear of a mark's glyph would claim a later end than the run had. It breaks off around the
    # marks standing at that moment: struck through, they read as crossed out.
    xd = float(np.asarray(end_line.get_xdata())[0])
    x = c.px(xd, 0)[0]
    box = c.axes_box()
    c.obs.add(Bbox.from_extents(x - END_LINE_HALF_PX, box.y0, x + END_LINE_HALF_PX, box.y1), "endline")
    ys = [box.y0]
    for y0, y1 in _spans_on(c, x, END_LINE_CLEAR_PT * c.pt):
        ys += [y0, np.nan, y1]
    ys.append(box.y1)
    end_line.set_data([xd] * len(ys), [(y - box.y0) / box.height for y in ys])


def _spans_on(c: Canvas, x: float, clear: float) -> list[tuple[float, float]]:
    """The display y spans (bottom up, overlapping ones merged) of the marks that display x ``x`` passes through,
    each grown by ``clear``."""
    spans = []
    for ln in c.ax.lines:
        if not (ln.get_gid() or "").startswith("marker:"):
            continue
        half = (ln.get_markersize() / 2 + ln.get_markeredgewidth() / 2) * c.pt + clear
        for px, py in ln.get_transform().transform(ln.get_xydata()):
            if abs(px - x) < half:
                spans.append((py - half, py + half))
    merged: list[tuple[float, float]] = []
    for y0, y1 in sorted(spans):
        if merged and y0 <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], y1))
        else:
            merged.append((y0, y1))
    return merged
