"""Arrows from an invocation to the one that repeats it, routed around other lanes' content.

Each arrow tries a straight line, two elbows and two arcs, sampled as display-space
polylines, and keeps the one that crosses the fewest obstacles (see ``layout.py``);
its path is then registered as an obstacle itself, so labels avoid it.
"""
from __future__ import annotations

import math

import numpy as np
from matplotlib import patches as mpatches
from matplotlib.transforms import Bbox

from .layout import Canvas
from .style import ARROW_COLOR


def polyline(points: list[tuple[float, float]], step: float) -> np.ndarray:
    """Points every ``step`` px along a polyline (display coordinates)."""
    out = []
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        n = max(1, int(math.hypot(x1 - x0, y1 - y0) / step))
        for k in range(n):
            f = k / n
            out.append((x0 + f * (x1 - x0), y0 + f * (y1 - y0)))
    out.append(points[-1])
    return np.array(out)


def arc3(a: tuple[float, float], b: tuple[float, float], rad: float, n: int = 24) -> list[tuple[float, float]]:
    """The quadratic curve matplotlib's ``arc3`` connection draws from a to b (display px)."""
    (x1, y1), (x2, y2) = a, b
    cx, cy = (x1 + x2) / 2 + rad * (y2 - y1), (y1 + y2) / 2 - rad * (x2 - x1)
    pts = []
    for k in range(n + 1):
        s = k / n
        pts.append(((1 - s) ** 2 * x1 + 2 * (1 - s) * s * cx + s * s * x2,
                    (1 - s) ** 2 * y1 + 2 * (1 - s) * s * cy + s * s * y2))
    return pts


def along(points: list[tuple[float, float]], f: float) -> tuple[float, float]:
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


class ArrowStage(Canvas):
    """Drawing stage: the repeat arrows (after the markers, before the labels)."""

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
                cands.append((f"arc3,rad={rad}", arc3(a, b, rad)))
            mine = (f"lane:{prev.inv}", f"lane:{rec.inv}")
            best = None
            for i, (style, pts) in enumerate(cands):
                samples = polyline(pts, 3.0)
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
            for x, y in polyline(pts, 5.0):
                self.obs.add(Bbox.from_bounds(x - 2.5, y - 2.5, 5, 5), owner)
            cause = rec.cause or "repeat"
            text = f"{cause} at {self.taxis.clock(rec.start)}"
            self.arrows.append((arrow, text, pts, owner, vertical))
