"""Arrows from an invocation to the one that repeats it, routed around other lanes' content.

Each arrow tries a straight line, two elbows and two arcs, sampled as display-space
polylines, and keeps the one that crosses the fewest obstacles (see ``layout.py``);
its path is then registered as an obstacle itself, so labels avoid it.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable
from itertools import pairwise
from typing import NamedTuple

import numpy as np
from matplotlib import patches as mpatches
from matplotlib.path import Path as MPath
from matplotlib.transforms import Bbox

from ...vocab import Cause
from .audit import ARROW_HEAD_HALF, Mark, marks
from .canvas import GAP_OWNER, Canvas
from .lanes import BAR_HALF
from .markers import MarkerPlacement
from .model import Invocation
from .style import Z_ARROW, arrow_look

Point = tuple[float, float]

# data units from a lane's centre: a repeat that started while the earlier one ran is a short vertical arrow
VERTICAL_FROM = 0.19  # leaves the earlier bar's edge ...
VERTICAL_TO = 0.24  # ... and stops this far short of the repeat's centre
STACK_CLEAR_PT = 1  # pt: an arrow's head stops this far short of the marks stacked on its repeat's lane
TRUE_PX = 1.0  # px: marks reaching this much before a repeat's start do not overhang its bar
ARROW_LW = 1.6  # pt
SHRINK_VERTICAL = (2.0, 1.0)  # pt: gap at the arrow's tail and head
SHRINK_ACROSS = (2.0, 0.0)  # pt: ... for an arrow from one bar's end to the next bar's start: its tip at the start
ELBOW_MIN_PX = 1  # px: ends closer than this in y get no elbow candidates
ARC_RADS = (0.3, -0.3)  # curvature of the two arc candidates
ENDS_CLEAR_PT = 3  # pt beyond the shrink: obstacles this close to either end do not count
SAMPLE_PX = 3.0  # px between the points a candidate is tested at ...
OBSTACLE_PX = 5.0  # ... and between the boxes the chosen path registers
HIT_COST = 10  # a candidate's score: hits * HIT_COST + its rank (so straight wins ties)
OUTSIDE_HITS = 1000  # a candidate leaving the axes is clipped there to a stray stub: only when nothing else is left
HEAD_SIZE = 16  # arrow head size at full scale (mutation scale); half its width is ARROW_HEAD_HALF of it
HEAD_LENGTH, HEAD_WIDTH = 0.4, 0.2  # matplotlib's "-|>" head reaches back this share of its size, out this each way
ALONG_PX = 12  # px at 100 dpi: a level run longer than this at a lane's height reads as part of that lane ...
ALONG_HITS = 50  # ... and costs as much as crossing this many obstacles
ALONG_CLEAR_PX = 4  # px at 100 dpi: a level run keeps this far beyond a lane's bar
SIBLING_CLEAR_PX = 24  # px at 100 dpi from its start, a stepped route crosses no arrow leaving with it
DROP_MIN_PT = 7  # pt: a stepped route's first and last legs are at least this long (its head comes in upright)
STEPS = 12  # heights a stepped route's level run is tried at, at most
FLAT_HEAD_HITS = 100  # a candidate whose head reaches into the marks it lands on crosses one: worse than brushing a
#   few obstacles
# obstacles an arrow may cross: row separators, gap labels and the end-of-history line
IGNORED_OWNERS = ("separator", "static", "endline", GAP_OWNER)
STEPPED = "stepped"  # a route with two elbows, drawn as a path
REPEAT = "repeat"  # what an arrow's label calls a repeat whose cause the history does not say
# what a copy's label calls it: short, so that it fits by its arrow (the lane's title names the cause in full)
COPY_WORDS: dict[str, str] = {Cause.SPONTANEOUS_DUPLICATE: "duplicate", Cause.CONCURRENT_DUPLICATE: "duplicate",
              Cause.PRODUCER_RESEND: "re-send", Cause.CALLER_RESEND: "re-send"}


class RoundTip(mpatches.ArrowStyle.CurveFilledB):
    """matplotlib's "-|>", its tip where the line ends: matplotlib pulls the head back for a mitred tip, and ours is
    stroked with round joins, so it stopped 1.4 px short of the repeat's start (at 100 dpi); half a line width back
    is where a round join's edge ends."""

    def _get_arrow_wedge(self, x0, y0, x1, y1, head_dist, cos_t, sin_t, linewidth):
        # matplotlib's stubs leave out this private method of _Curve
        vertices, codes, ddx, ddy = super()._get_arrow_wedge(  # type: ignore[misc]
            x0, y0, x1, y1, head_dist, cos_t, sin_t, linewidth)
        fx, fy = ddx * sin_t - ddx, ddy * sin_t - ddy  # from the mitre's pull-back (lw / 2 / sin_t) to lw / 2
        return [(x + fx, y + fy) for x, y in vertices], codes, ddx + fx, ddy + fy


class Arrow(NamedTuple):
    """A drawn repeat arrow, for its label."""

    patch: mpatches.FancyArrowPatch
    text: str  # "redelivery at 30.0 s"
    path: list[Point]  # display px
    owner: str  # its obstacle owner
    vertical: bool
    #: the repeat's lane, display px: where its drawing ends (x), its centre (y), and how low and high its bar and
    #: the marks stacked on it reach
    head_lane: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)


def polyline(points: list[Point], step: float) -> np.ndarray:
    """Points every ``step`` px along a polyline (display coordinates)."""
    out = []
    for (x0, y0), (x1, y1) in pairwise(points):
        n = max(1, int(math.hypot(x1 - x0, y1 - y0) / step))
        for k in range(n):
            f = k / n
            out.append((x0 + f * (x1 - x0), y0 + f * (y1 - y0)))
    out.append(points[-1])
    return np.array(out)


def arc3(a: Point, b: Point, rad: float, n: int = 24) -> list[Point]:
    """The quadratic curve matplotlib's ``arc3`` connection draws from a to b (display px)."""
    (x1, y1), (x2, y2) = a, b
    cx, cy = (x1 + x2) / 2 + rad * (y2 - y1), (y1 + y2) / 2 - rad * (x2 - x1)
    pts = []
    for k in range(n + 1):
        s = k / n
        pts.append(((1 - s) ** 2 * x1 + 2 * (1 - s) * s * cx + s * s * x2,
                    (1 - s) ** 2 * y1 + 2 * (1 - s) * s * cy + s * s * y2))
    return pts


def path_length(points: list[Point]) -> float:
    return sum(math.hypot(x1 - x0, y1 - y0) for (x0, y0), (x1, y1) in pairwise(points))


def along(points: list[Point], f: float) -> Point:
    """The point a fraction ``f`` of the way along a polyline."""
    lengths = [math.hypot(x1 - x0, y1 - y0) for (x0, y0), (x1, y1) in pairwise(points)]
    total = sum(lengths)
    if total <= 0:
        return points[0]
    goal = f * total
    for ((x0, y0), (x1, y1)), seg in zip(pairwise(points), lengths):
        if goal <= seg and seg > 0:
            g = goal / seg
            return x0 + g * (x1 - x0), y0 + g * (y1 - y0)
        goal -= seg
    return points[-1]


def draw_arrows(c: Canvas, bars: dict[str, mpatches.Rectangle], placed: MarkerPlacement) -> list[Arrow]:
    """An arrow from each invocation to the one that repeats it, top to bottom."""
    arrows: list[Arrow] = []
    # The marks an arrow's head may land on, measured once: arrows add no marks (a figure with many repeats measured
    # every mark again for each arrow)
    drawn = functools.cache(lambda: [m for m in marks(c.fig) if m.ax is c.ax])
    for rec in sorted(c.model.invs.values(), key=lambda r: (c.rows.lane_y[r.inv], r.seq)):
        prev = c.model.invs.get(rec.prev) if rec.prev else None
        if prev is not None and prev.inv != rec.inv:
            # repeats of one invocation may share the line their arrows start on
            siblings = tuple(a.owner for a in arrows if a.owner.startswith(f"arrow:{prev.inv}->"))
            arrows.append(_arrow(c, prev, rec, bars, placed, siblings, drawn))
            c.fig.arrow_kinds = {**c.fig.arrow_kinds, arrows[-1].owner: rec.cause or REPEAT}
    return arrows


def _arrow(c: Canvas, prev: Invocation, rec: Invocation, bars: dict[str, mpatches.Rectangle],
           placed: MarkerPlacement, siblings: tuple[str, ...], drawn: Callable[[], list[Mark]]) -> Arrow:
    a, b, shrink, vertical, onto = _ends(c, prev, rec, bars, placed)
    near = _marks_near(c, b, drawn()) if onto else None
    style, pts = _route(c, a, b, shrink, vertical, (f"lane:{prev.inv}", f"lane:{rec.inv}", *siblings), near)
    owner = f"arrow:{prev.inv}->{rec.inv}"
    color, linestyle = arrow_look(rec.cause)
    look = {"arrowstyle": RoundTip(), "mutation_scale": HEAD_SIZE * c.scale.factor, "color": color, "lw": ARROW_LW,
            "zorder": Z_ARROW, "gid": owner, "linestyle": linestyle}
    if style == STEPPED:  # a polyline in plot coordinates (no connection style has two elbows at given heights)
        start = (pts[0][0], pts[0][1] + math.copysign(shrink[0] * c.pt, pts[1][1] - pts[0][1]))
        patch = mpatches.FancyArrowPatch(path=MPath([c.data(*p) for p in [start, *pts[1:]]]), **look)
    else:
        patch = mpatches.FancyArrowPatch(c.data(*a), c.data(*b), shrinkA=shrink[0], shrinkB=shrink[1],
                                         connectionstyle=style, **look)
    c.ax.add_patch(patch)
    if vertical and a[0] < c.axes_box().x0 + HEAD_SIZE * c.scale.factor * ARROW_HEAD_HALF * c.pt:
        patch.set_clip_on(False)  # its head's half, left of the axis' start, into the room before the row names
    half = OBSTACLE_PX / 2
    for x, y in polyline(pts, OBSTACLE_PX):
        c.obs.add(Bbox.from_bounds(x - half, y - half, OBSTACLE_PX, OBSTACLE_PX), owner)
    text = f"{COPY_WORDS.get(rec.cause or '', rec.cause or REPEAT)} at {c.taxis.clock(rec.start)}"
    return Arrow(patch, text, pts, owner, vertical, _lane_reach(c, rec.inv, bars[rec.inv], placed))


def _lane_reach(c: Canvas, inv: str, bar: mpatches.Rectangle, placed: MarkerPlacement
                ) -> tuple[float, float, float, float]:
    """(end x, centre y, lowest y, highest y) of what a lane shows, in display px: its bar and its marks."""
    y = c.px(0, c.rows.lane_y[inv])[1]
    ya, yb = c.px(0, bar.get_y())[1], c.px(0, bar.get_y() + bar.get_height())[1]
    low, high = placed.lane_reach.get(inv, (y, y))
    return c.px(placed.drawn_end(inv, bar), 0)[0], y, min(low, ya, yb), max(high, ya, yb)


def _ends(c: Canvas, prev: Invocation, rec: Invocation, bars: dict[str, mpatches.Rectangle],
          placed: MarkerPlacement) -> tuple[Point, Point, tuple[float, float], bool, bool]:
    """(tail, head) in display px, the shrink at each end, whether the arrow is vertical and whether it lands on
    the repeat's marks from above or below. The tail leaves where the earlier lane's drawing ends (after a mark that
    overhangs the end of its bar); the head's tip stands at the repeat's start."""
    lane_left = placed.lane_left
    rr = bars[rec.inv]
    ya, yb = c.rows.lane_y[prev.inv], c.rows.lane_y[rec.inv]
    xb = rr.get_x()
    prev_end = placed.drawn_end(prev.inv, bars[prev.inv])
    down = 1 if yb > ya else -1  # data y grows downwards
    vertical = not (prev.end is not None and prev.end <= rec.start and prev_end <= xb + 1e-12)
    if vertical:  # the repeat started while the earlier one was still running
        # at the repeat's own start, even at the axis' very start (its head then reaches past the edge, unclipped:
        #   ``_arrow``): moved in off the edge, snapstart-cloned-init's copy arrow at 0 s stood 3.3 px late at 6 in
        x = c.px(xb, 0)[0]
        head = c.px(xb, yb - down * VERTICAL_TO)[1]
        low, high = placed.lane_reach.get(rec.inv, (head, head))  # marks stacked on the lane: stop short of them
        head = max(head, high + STACK_CLEAR_PT * c.pt) if down > 0 else min(head, low - STACK_CLEAR_PT * c.pt)
        tail = c.px(xb, ya + down * VERTICAL_FROM)[1]
        low, high = placed.lane_reach.get(prev.inv, (tail, tail))  # it leaves below (above) the marks stacked there
        tail = min(tail, low - STACK_CLEAR_PT * c.pt) if down > 0 else max(tail, high + STACK_CLEAR_PT * c.pt)
        return (x, tail), (x, head), SHRINK_VERTICAL, True, False
    b = c.px(xb, yb)
    onto = lane_left.get(rec.inv, b[0]) < b[0] - TRUE_PX
    if onto:  # marks overhang the bar: a head stopping short of them reads as an earlier time (13 s on an hour-long
        low, high = placed.lane_reach[rec.inv]  # axis), so it lands on them at the repeat's start, from above (below)
        b = (b[0], high + STACK_CLEAR_PT * c.pt if down > 0 else low - STACK_CLEAR_PT * c.pt)
    return c.px(prev_end, ya), b, SHRINK_ACROSS, False, onto


def _route(c: Canvas, a: Point, b: Point, shrink: tuple[float, float], vertical: bool,
           exclude: tuple[str, ...], onto_marks: list[MPath] | None = None) -> tuple[str, list[Point]]:
    """The connection style and display path of the candidate that crosses the fewest obstacles; ``onto_marks``:
    the outlines of the marks its head lands on, which the head keeps out of."""
    cands: list[tuple[str, list[Point]]] = [("arc3,rad=0", [a, b])]
    if not vertical and abs(a[1] - b[1]) > ELBOW_MIN_PX:
        if onto_marks is None:  # its head would come in flat across the marks it lands on
            cands.append(("angle,angleA=90,angleB=0,rad=6", [a, (a[0], b[1]), b]))
        cands.append(("angle,angleA=0,angleB=90,rad=6", [a, (b[0], a[1]), b]))
    lanes = _lane_lines(c)
    rank = {id(pts): float(i) for i, (_, pts) in enumerate(cands)}
    base = len(cands)
    if not vertical:  # before the arcs: an arc sweeps through the room beside it the other arrows' labels need
        for pts in _stepped(a, b, DROP_MIN_PT * c.pt):  # nearest the head first: it drops onto its repeat's row
            rank[id(pts)] = base + 0.5 * abs(pts[2][1] - b[1]) / max(abs(a[1] - b[1]), 1e-9)
            cands.append((STEPPED, pts))
    for k, rad in enumerate(ARC_RADS):
        cands.append((f"arc3,rad={rad}", arc3(a, b, rad)))
        rank[id(cands[-1][1])] = base + 1.0 + k
    best = None
    # in rank order: the first that crosses nothing is the best (a score is its crossings' cost, then its rank)
    for style, pts in sorted(cands, key=lambda cand: rank[id(cand[1])]):
        i = rank[id(pts)]
        samples = polyline(pts, SAMPLE_PX)
        ends = np.hypot(samples[:, 0] - a[0], samples[:, 1] - a[1]) > (shrink[0] + ENDS_CLEAR_PT) * c.pt
        ends &= np.hypot(samples[:, 0] - b[0], samples[:, 1] - b[1]) > (shrink[1] + ENDS_CLEAR_PT) * c.pt
        hits = c.obs.points_hit(samples[ends], exclude=exclude + IGNORED_OWNERS)
        if style == STEPPED:  # it shares its start with its siblings, but crossing one further on reads as a knot
            far = np.hypot(samples[:, 0] - a[0], samples[:, 1] - a[1]) > SIBLING_CLEAR_PX * c.fig.dpi / 100
            hits += c.obs.points_hit(samples[ends & far], exclude=exclude[:2] + IGNORED_OWNERS) - \
                c.obs.points_hit(samples[ends & far], exclude=exclude + IGNORED_OWNERS)
        box = c.axes_box()
        outside = (samples[:, 0] < box.x0) | (samples[:, 0] > box.x1) | (samples[:, 1] < box.y0) | \
            (samples[:, 1] > box.y1)
        # cut off by the axes, an arrow is hardly seen; landing flat, its head's wing crosses the marks it lands on
        flat = onto_marks is not None and _head_into(pts, onto_marks, HEAD_SIZE * c.scale.factor * c.pt,
                                                     ARROW_LW / 2 * c.pt)
        along = ALONG_HITS * _along(pts, lanes, ALONG_PX * c.fig.dpi / 100)
        cost = (hits + OUTSIDE_HITS * bool(outside.any()) + FLAT_HEAD_HITS * flat + along) * HIT_COST
        if best is None or cost + i < best[0]:
            best = (cost + i, style, pts)
        if cost == 0:
            break
    assert best is not None  # there is always the straight arc
    return best[1], best[2]


def _stepped(a: Point, b: Point, drop: float) -> list[list[Point]]:
    """Routes down (up) from the tail, level across between the rows, and down (up) onto the head: the elbow along
    the tail's lane read as part of that run (lesson 10's retry at lock 0 s ran along inv-1's line to 90 s), a
    diagonal crossed inv-2's marks, and an elbow level at the head ran along inv-3's row."""
    lo, hi = sorted((a[1], b[1]))
    if hi - lo < 2 * drop:
        return []
    return [[a, (a[0], y), (b[0], y), b] for y in np.linspace(lo + drop, hi - drop, STEPS)]


def _lane_lines(c: Canvas) -> list[tuple[float, float]]:
    """(display y, reach px) of each lane's bar line and each of its strips' (lock, kept...): a route running level
    that near one reads as part of that lane (lesson 10: a level run just right of inv-1's lock band continued it)."""
    clear = ALONG_CLEAR_PX * c.fig.dpi / 100
    out = []
    for inv, y in c.rows.lane_y.items():
        out.append((c.px(0, y)[1], abs(c.px(0, BAR_HALF)[1] - c.px(0, 0)[1]) + clear))
        if inv is None:
            continue
        for key in c.rows.strips.get(inv, ()):
            top, h = c.rows.strip(inv, key) or (y, 0.0)
            out.append((c.px(0, top + h / 2)[1], abs(c.px(0, h / 2)[1] - c.px(0, 0)[1]) + clear))
    return out


def _along(pts: list[Point], lanes: list[tuple[float, float]], least: float) -> bool:
    """Whether a route runs level, ``least`` px or more, within reach of a lane's line (``_lane_lines``): it reads
    as part of that lane's run."""
    return any(abs(y1 - y0) < 1 and abs(x1 - x0) > least and any(abs(y0 - y) < r for y, r in lanes)
               for (x0, y0), (x1, y1) in pairwise(pts))


def _marks_near(c: Canvas, tip: Point, drawn: list[Mark]) -> list[MPath]:
    """The outlines (display px, as the audit measures them) of the marks ``drawn`` on the timeline's axes that a
    head at ``tip`` could reach."""
    reach = HEAD_SIZE * c.scale.factor * c.pt
    return [m.path for m in drawn if m.box.padded(reach).contains(*tip)]


def _head_into(pts: list[Point], outlines: list[MPath], size: float, stroke: float) -> bool:
    """Whether the head (``size`` px, its outline stroked ``stroke`` px either side) at the end of a path reaches
    into the marks it lands on: coming in flatter than its wings, the lower (upper) one dips below its tip, onto
    marks that overhang the repeat's bar (async-late-retry, sqs-low-traffic-wait: the retry's envelope)."""
    (x0, y0), (x1, y1) = pts[-2], pts[-1]
    run = math.hypot(x1 - x0, y1 - y0) or 1.0
    ux, uy = (x1 - x0) / run, (y1 - y0) / run
    bx, by = x1 - HEAD_LENGTH * size * ux, y1 - HEAD_LENGTH * size * uy
    wx, wy = HEAD_WIDTH * size * uy, -HEAD_WIDTH * size * ux
    f = np.linspace(0.0, 1.0, 24)[:, None]
    head = np.vstack([(x1, y1) + f * (bx + s * wx - x1, by + s * wy - y1) for s in (1, -1)])  # its two edges
    return any(outline.contains_points(head).any() or _nearest(head, outline) < stroke for outline in outlines)


def _nearest(points: np.ndarray, outline: MPath) -> float:
    """The least distance from ``points`` (n x 2) to the segments of ``outline`` (its curves flattened)."""
    out = math.inf
    for poly in outline.to_polygons(closed_only=False):
        segs = np.asarray(poly, float)
        a, ab = segs[:-1][None], np.diff(segs, axis=0)[None]  # each segment's start and run
        rel = points[:, None] - a
        t = np.clip((rel * ab).sum(-1) / np.maximum((ab * ab).sum(-1), 1e-12), 0.0, 1.0)
        out = min(out, float(np.linalg.norm(rel - t[..., None] * ab, axis=-1).min(initial=math.inf)))
    return out
