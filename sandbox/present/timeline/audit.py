"""The figure audit: where a finished figure's words and marks are drawn, and what a reader could not read.

:func:`faults` measures a figure, once drawn, in display pixels and names each fault it finds:

* a text (title, axis label, tick, lane name, note, legend entry) reaching out of the figure, or with a line
  that starts or ends with a "·" separator;
* two texts overlapping (a text with a box counts as its box);
* a text covering a mark, or two marks covering each other: their shapes, not their boxes, so two
  diamonds side by side may share their boxes' empty corners, while staggered ones that cross do not;
* neighbouring tick labels too close to tell apart;
* on a timeline (its gids): an arrow's label on a lock or kept band, a strip's key on any band, an arrow
  leaving the plot, a line (repeat arrow or note's leader) crossing a mark it does not point at, and a lane
  drawn before its invocation started (an arrow landing there reads as an earlier time);
* what two learners found on a projector: text under 10 pt or pale grey, a legend over 30% of the figure, a word
  standing in an axis break or on the axis line, a bar hidden under its marks in every axes that draws it (the
  timeline and its detail row), a band's label starting before its band, a tick off the axis' step, a mark out of
  the plot, an idempotency record drawn behind its bar rather than in its strip, arrow labels or duplicate notes
  standing different ways from what they name;
* what a new learner found: a stretch of a broken axis where a run starts, without a tick; a source row's label
  standing apart from its mark with nothing pointing at it; a leader line across an axis break; a repeat arrow's
  label on the row of a lane its arrow only passes; arrows of one kind, some labelled and some not; a stretch of
  the detail row with fewer than two ticks, or equal-length runs magnified differently;
* what a learner found last session: a repeat arrow ending inside an axis break; a run whose marks stand stacked
  for want of room with no detail row drawing it; marks stacked closer than 2 px; a tick label at a break's edge,
  or a break's label on a tick label;
* what a new learner found (5/5): the "history ends" line striking through the marks at its moment; a repeat
  arrow whose tip stands more than a pixel from the time its repeat started (it stopped short of the marks
  overhanging the repeat's bar: 13 s early on an hour-long axis);
* a repeat arrow's label nearer another arrow than its own;
* a header row with nothing of its own drawn on it (its group is named without a row: ``rows.layout_rows``);
* what a new learner found driving lesson 10's dashboard: a verdict map's dashed "lock = work" line running through
  a cell's words that stepped aside for the current setting's ring (it stops short of words, wherever they stand);
  a cell's words left out where no ring stands (the "now" tab had taken their place);
* true time, on a timeline (``TimelineFigure.time_map``, ``mark_times``, ``band_times``): the axis' segments
  not sharing one scale; a mark's centre, a band's start or end, or a tick more than a pixel from where
  its record's time is on the axis, or a time that falls inside an axis break (a break may only cut out
  a stretch in which nothing is drawn); ticks not at one round step, or with labels of unequal decimals; marks
  stacked at one instant out of their order, top to bottom; a bar too short to see with no cap centred on it.

Bands, bars and cells under marks and words are what those are drawn on: not faults.

With ``RWH_FIGURE_AUDIT=<dir>`` in the environment (read once, at import), every figure the sandbox
finishes (timelines, verdict maps, the capstone's scoreboard) writes ``<dir>/<pid>-<n>.json`` when it is
first drawn (shown or saved): its kind, title, size, the notebook cell that drew it (its source, when in
a kernel), what it drew where, and its faults. The notebook tests set it for the kernel and fail on any
fault.
"""
from __future__ import annotations

import functools
import itertools
import json
import os
import sys
from collections.abc import Collection, Mapping
from itertools import pairwise
from pathlib import Path
from typing import Any, cast

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.markers import MarkerStyle
from matplotlib.patches import FancyArrowPatch, Rectangle
from matplotlib.path import Path as MPath
from matplotlib.text import Annotation, Text
from matplotlib.transforms import Affine2D, Bbox

from ...vocab import Delivery
from .axis import NICE_STEPS
from .layout import levels, mixed_stacks, same_place

ENV = "RWH_FIGURE_AUDIT"
AUDIT_DIR: Path | None = Path(os.environ[ENV]) if os.environ.get(ENV) else None

TOUCH_PX = 1.0  # px at 100 dpi: boxes and shapes may share this much (anti-aliased edges)
TICK_GAP_PX = 6.0  # px at 100 dpi between neighbouring tick labels, at least
TICK_SHIFT_PX = 3.0  # px at 100 dpi: a tick label's centre stands this close to its tick, at most
SEEN_PX = 8.0  # px at 100 dpi: a bar narrower than this has a cap this wide, centred on it
TRUE_PX = 1.0  # px at 100 dpi: a mark's centre, a band's end and a tick stand this close to their time, at most
SCALE_TOLERANCE = 1e-6  # the segments of a time axis share one scale, to this relative difference
EARLY_PX = 3.0  # px at 100 dpi: a lane's bar or mark may begin this far before its invocation started
MARK_PREFIX = "marker:"
BAND_KINDS = ("bar", "lock", "kept", "expired")  # what an arrow's label keeps off
ROW_NAMES = ("strip-label",)  # a row's name inside the plot: on no band
KEYED_BANDS = (*BAND_KINDS, "batching", "hidden", Delivery.PENDING, Delivery.THROTTLED)  # ... of any of these
LINE_LABELS = ("arrow-label", "arrow-head-label")  # texts drawn on a line (or at its head) on purpose
LEADER_TARGETS = {"duplicate-note": "_dup", "warning-note": "stale_write", "refused-note": "write_refused"}  # what
#   a note's leader line points at (a note names a cluster of duplicates: its line may pass over them)
CLOCK_STEPS = frozenset(step for steps in NICE_STEPS.values() for step in steps)  # round on a clock too
SEPARATOR = "·"  # what joins the parts of a title or a subtitle: never at a line's end
END_PX = 8.0  # px at 100 dpi: a mark this close to either end of a line is what the line connects
CALLOUT_NEAR_PX = 12.0  # px at 100 dpi: a header-row label this close to its mark, beside or over it, names it ...
CALLOUT_LEADER = "event-leader:"  # ... else a leader line (this gid, and the label's style) points at it, or a
CALLOUT_CARET = "event-caret:"  # caret on the label's edge, over it

_count = itertools.count()


# -- what is drawn, in display px
def _px(fig: Figure, px: float) -> float:
    """``px`` at 100 dpi, at the figure's resolution."""
    return px * fig.dpi / 100


def text_box(t: Text, renderer) -> Bbox:
    """A text's box as seen: its rounded frame when it has one, else its text (an annotation without its line)."""
    if isinstance(t, Annotation):
        t.update_positions(renderer)
    patch = t.get_bbox_patch()
    if patch is None:
        return Text.get_window_extent(t, renderer)
    # fitted to the text as a draw fits it: a text moved since it was last drawn (a verdict map's words, measured and
    # put back between two pictures) still holds its old frame
    t.update_bbox_position_size(renderer)
    return patch.get_window_extent(renderer)


def text_shape(t: Text, renderer) -> MPath | None:
    """The outline of a text turned at an angle (not a multiple of 90°), in display px; None for one that is not.
    (Its box then holds much that is not the text: two turned tick labels side by side share most of theirs.)"""
    angle = t.get_rotation()
    if angle % 90 == 0 or t.get_rotation_mode() != "anchor":
        return None
    t.set_rotation(0)  # the same text, level, at the same anchor: then turned about the anchor
    try:
        level = text_box(t, renderer)
    finally:
        t.set_rotation(angle)
    ax, ay = t.get_transform().transform(t.get_unitless_position())
    corners = Affine2D().rotate_deg_around(ax, ay, angle).transform(level.corners()[[0, 1, 3, 2]])
    return MPath(np.vstack([corners, corners[:1]]), closed=True)


def texts(fig: Figure) -> list[Text]:
    """Every visible, non-empty text: the figure's own, each axes' title, labels, ticks and texts, the legends."""
    out: list[Text] = list(fig.texts)
    legends = list(fig.legends)
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        out += [ax.title, ax.xaxis.label, ax.yaxis.label, *ax.texts, *_tick_labels(ax.xaxis), *_tick_labels(ax.yaxis)]
        legend = ax.get_legend()
        if legend is not None:
            legends.append(legend)
    for leg in legends:
        if leg.get_visible():
            out += [*leg.get_texts(), leg.get_title()]
    return [t for t in out if t.get_visible() and t.get_text().strip()]


def _tick_labels(axis) -> list[Text]:
    """The tick labels an axis draws: those of its ticks within its view (a locator may place more beyond it)."""
    lo, hi = sorted(axis.get_view_interval())
    span = (hi - lo) * 1e-9
    ticks = axis.get_major_ticks() + axis.get_minor_ticks()
    return [label for tick in ticks if lo - span <= tick.get_loc() <= hi + span
            for label in (tick.label1, tick.label2) if label.get_visible()]


class Mark:
    """A marker as drawn: its style (gid), centre, width and outline (shrunk by what may touch) in display px, and
    its record's time (s) and its row, when the figure says (``TimelineFigure.mark_times``)."""

    def __init__(self, gid: str, x: float, y: float, width: float, path: MPath, t: float | None, row: str | None,
                 ax=None, box: Bbox | None = None):
        self.gid, self.x, self.y, self.width, self.path, self.t, self.row = gid, x, y, width, path, t, row
        self.ax = ax
        self.box = path.get_extents() if box is None else box

    def __repr__(self) -> str:
        return f"{self.gid[len(MARK_PREFIX):]} at {self.x:.0f},{self.y:.0f}"


def axes_maps(fig: Figure, ax) -> tuple[tuple, dict]:
    """(time_map, mark_times) of one of a timeline's axes: the timeline's own, or its detail row's (which has a
    scale of its own in each stretch)."""
    if fig.axes and ax is fig.axes[0]:
        return getattr(fig, "time_map", ()), getattr(fig, "mark_times", {})
    i = next((k for k, other in enumerate(fig.axes) if other is ax), 0)
    return getattr(fig, "detail_time_maps", {}).get(i, ()), getattr(fig, "detail_mark_times", {}).get(i, {})


def marks(fig: Figure) -> list[Mark]:
    """Every timeline marker drawn (lines whose gid starts with ``marker:``), with its time when the figure says."""
    out = []
    touch = _px(fig, TOUCH_PX)
    for i, ax in enumerate(fig.axes):
        meant_by_gid = axes_maps(fig, ax)[1]
        for ln in ax.lines:
            if not (ln.get_visible() and (ln.get_gid() or "").startswith(MARK_PREFIX)):
                continue
            # a line's points share their marker: its outline and extents are worked out once, then moved
            style: tuple[Any, ...] = (ln.get_marker(), ln.get_fillstyle(), ln.get_markersize(),
                                      ln.get_markeredgewidth(), fig.dpi / 72, touch)
            try:
                width, shrunk, box = _shrunk_outline(*style)
            except TypeError:  # a marker given as a list of vertices is not hashable: worked out afresh
                width, shrunk, box = _shrunk_outline.__wrapped__(*style)
            xy = ax.transData.transform(ln.get_xydata())
            meant = meant_by_gid.get(ln.get_gid())
            if meant is None or len(meant) != len(xy):
                meant = [(None, None)] * len(xy)
            for (x, y), (t, row) in zip(xy, meant):
                path = MPath(np.asarray(shrunk.vertices) + (x, y), shrunk.codes)
                row = f"{row}@{i}" if i and row is not None else row  # the detail row's lanes are rows of their own
                out.append(Mark(ln.get_gid() or "", float(x), float(y), width, path, t, row, ax, box.translated(x, y)))
    return out


def time_x(fig: Figure, t: float, ax=None) -> float | None:
    """Display x of time ``t`` (s) on a timeline's axis (``ax``: the timeline's, or its detail row's), read from its
    segments (``fig.time_map``: (t0, t1, x0, x1) in seconds and plot x, one per stretch between breaks); None when
    ``t`` lies in a break or off the axis."""
    if not fig.axes:
        return None
    ax = fig.axes[0] if ax is None else ax
    segments = axes_maps(fig, ax)[0]
    if not segments:
        return None
    span = max(segments[-1][1] - segments[0][0], 1e-12)
    for t0, t1, x0, x1 in segments:
        if t0 - 1e-9 * span <= t <= t1 + 1e-9 * span:
            x = x0 if t1 <= t0 else x0 + (t - t0) * (x1 - x0) / (t1 - t0)
            return float(ax.transData.transform((x, 0))[0])
    return None


def _marker_outline(marker: Any, fillstyle: Any, size_pt: float, edge_pt: float, px_per_pt: float) -> MPath:
    """A line's marker centred on 0, in display px, grown by half its edge."""
    m = MarkerStyle(marker, fillstyle)
    path = m.get_path().transformed(m.get_transform())
    ext = path.get_extents()
    size = max(ext.width, ext.height, 1e-9)
    scale = (size_pt + edge_pt / size) * px_per_pt
    return path.transformed(Affine2D().scale(scale))


@functools.lru_cache(maxsize=512)
def _shrunk_outline(marker: Any, fillstyle: Any, size_pt: float, edge_pt: float, px_per_pt: float,
                    touch: float) -> tuple[float, MPath, Bbox]:
    """(the outline's width, the outline shrunk by what may touch it, and its box), centred on 0."""
    outline = _marker_outline(marker, fillstyle, size_pt, edge_pt, px_per_pt)
    ext = outline.get_extents()
    shrunk = outline.transformed(Affine2D().scale(max(0.0, 1 - 2 * touch / max(ext.width, ext.height, 1e-9))))
    return ext.width, shrunk, shrunk.get_extents()


class Drawn:
    """A drawn figure, measured once for every check: its renderer, texts (with boxes and turned outlines) and
    marks."""

    def __init__(self, fig: Figure, renderer=None):
        # The sandbox's figures draw on matplotlib's Agg canvas, the one with a renderer to hand.
        self.fig, self.r = fig, renderer if renderer is not None else cast(FigureCanvasAgg, fig.canvas).get_renderer()
        self.texts = [(t, text_box(t, self.r), text_shape(t, self.r)) for t in texts(fig)]
        self.marks = marks(fig)

    def px(self, px: float) -> float:
        return _px(self.fig, px)

    def overlap(self, a: Bbox, b: Bbox) -> bool:
        w, h = _shared(a, b)
        return w > self.px(TOUCH_PX) and h > self.px(TOUCH_PX)

    def rows(self) -> dict[str, list[Mark]]:
        """The marks of each row."""
        out: dict[str, list[Mark]] = {}
        for m in self.marks:
            if m.row is not None:
                out.setdefault(m.row, []).append(m)
        return out


def _shared(a: Bbox, b: Bbox) -> tuple[float, float]:
    """Width and height two boxes share (0 when apart)."""
    return (max(0.0, min(a.x1, b.x1) - max(a.x0, b.x0)), max(0.0, min(a.y1, b.y1) - max(a.y0, b.y0)))


def _name(t: Text) -> str:
    text = t.get_text().replace("\n", " ")
    return repr(text if len(text) <= 40 else text[:39] + "…")


def _shrunk(path: MPath, by: float) -> MPath:
    """``path`` shrunk about its centre by ``by`` px on each side."""
    ext = path.get_extents()
    cx, cy = (ext.x0 + ext.x1) / 2, (ext.y0 + ext.y1) / 2
    f = max(0.0, 1 - 2 * by / max(ext.width, ext.height, 1e-9))
    return path.transformed(Affine2D().translate(-cx, -cy).scale(f).translate(cx, cy))


def _box_path(box: Bbox) -> MPath:
    return MPath.unit_rectangle().transformed(Affine2D().scale(box.width, box.height).translate(box.x0, box.y0))


# -- the checks: each returns what it found wrong
def outside_figure(d: Drawn) -> list[str]:
    page = d.fig.bbox.padded(d.px(TOUCH_PX))
    return [f"{_name(t)} reaches out of the figure" for t, box, _ in d.texts
            if not (page.contains(*box.p0) and page.contains(*box.p1))]


def separators_dangling(d: Drawn) -> list[str]:
    """A line of text that starts or ends with a "·": a separator joins what stands either side of it, and one left
    at a line's end (a title broken after it) reads as something missing."""
    return [f"{_name(t)} has a line that starts or ends with {SEPARATOR!r}" for t, _, _ in d.texts
            if any(line.strip().startswith(SEPARATOR) or line.strip().endswith(SEPARATOR)
                   for line in t.get_text().split("\n"))]


def texts_overlapping(d: Drawn) -> list[str]:
    out = []
    for i, (t1, b1, s1) in enumerate(d.texts):
        for t2, b2, s2 in d.texts[i + 1:]:
            if not d.overlap(b1, b2):
                continue
            if s1 is not None or s2 is not None:  # turned: their outlines, shrunk by what may touch
                p1 = _shrunk(s1 if s1 is not None else _box_path(b1), d.px(TOUCH_PX))
                p2 = _shrunk(s2 if s2 is not None else _box_path(b2), d.px(TOUCH_PX))
                if not p1.intersects_path(p2, filled=True):
                    continue
            out.append(f"{_name(t1)} overlaps {_name(t2)}")
    return out


def texts_on_marks(d: Drawn) -> list[str]:
    return [f"{_name(t)} covers {m}" for t, box, _ in d.texts for m in d.marks
            if d.overlap(box, m.box) and m.path.intersects_bbox(box, filled=True)]


def marks_overlapping(d: Drawn) -> list[str]:
    out = []
    for i, a in enumerate(d.marks):
        for b in d.marks[i + 1:]:
            w, h = _shared(a.box, b.box)
            if w > 0 and h > 0 and a.path.intersects_path(b.path, filled=True):
                out.append(f"{a} and {b} overlap")
    return out


def marks_piled(d: Drawn) -> list[str]:
    """Marks of one row that stand at one place (``layout.same_place``) are stacked, the earlier on top: one drawn
    below a later one there reads as having come after it."""
    out = []
    for row, ms in d.rows().items():
        ms.sort(key=lambda m: m.x)
        for i, a in enumerate(ms):
            for b in ms[i + 1:]:
                if b.box.x0 > a.box.x1:
                    break
                if not same_place(a.x, a.width / 2, b.x, b.width / 2) or a.t is None or b.t is None:
                    continue
                if a.t != b.t:
                    early, late = (a, b) if a.t < b.t else (b, a)
                    if early.y < late.y:
                        out.append(f"{early} is stacked under {late}, which came after it, on {row}")
    return out


def marks_off_time(d: Drawn) -> list[str]:
    """Every mark stands at its time: its centre within a pixel of its record's time on the axis, and that time
    in a segment of the axis, not inside a break."""
    out = []
    for m in d.marks:
        if m.t is None:
            continue
        want = time_x(d.fig, m.t, m.ax)
        if want is None:
            out.append(f"{m} stands for {m.t:g} s, inside an axis break")
        elif abs(m.x - want) > d.px(TRUE_PX):
            out.append(f"{m} is drawn {abs(m.x - want):.0f} px {'before' if m.x < want else 'after'} its time")
    return out


def bands_off_time(d: Drawn) -> list[str]:
    """Every band (a run's bar, an idempotency-table window, messages held invisible, a batching window, orders
    pending or throttled) starts and ends where its record says, within a pixel, and neither end inside a break
    (``fig.band_times``: (patch, start, end or None when it runs on past the plot, the least width it is drawn,
    px at 100 dpi)). A bar too short to see is drawn at its true length too, with a cap (:func:`bars_unseen`)."""
    out = []
    for patch, t0, t1, least in getattr(d.fig, "band_times", ()):
        box = patch.get_window_extent(d.r)
        gid = patch.get_gid()
        for side, t, drawn in (("starts", t0, box.x0), ("ends", t1, box.x1)):
            if t is None:
                continue
            want = time_x(d.fig, t, patch.axes)
            if want is None:
                out.append(f"{gid} {side.rstrip('s')}s at {t:g} s, inside an axis break")
                continue
            if side == "ends" and box.width <= d.px(least) + d.px(TRUE_PX):
                want = max(want, box.x0 + d.px(least))
            if abs(drawn - want) > d.px(TRUE_PX):
                out.append(f"{gid} {side} {abs(drawn - want):.0f} px {'before' if drawn < want else 'after'} its time")
    return out


def bars_unseen(d: Drawn) -> list[str]:
    """A run's bar too short to see at the axis' scale (a run that errors in 14 ms) is drawn at its true length,
    with a cap at least :data:`SEEN_PX` wide centred on it (gid ``cap:<inv>``); not widened, which would move its
    end, and not left a sliver no one can find."""
    out = []
    for ax in d.fig.axes:
        caps = {(p.get_gid() or "")[len("cap:"):]: p.get_window_extent(d.r) for p in ax.patches
                if (p.get_gid() or "").startswith("cap:")}
        for p in ax.patches:
            gid = p.get_gid() or ""
            if not gid.startswith("bar:"):
                continue
            box = p.get_window_extent(d.r)
            if box.width >= d.px(SEEN_PX):
                continue
            cap = caps.get(gid.split(":")[1])
            if cap is None or cap.width < d.px(SEEN_PX) - d.px(TRUE_PX):
                out.append(f"{gid} is {box.width:.1f} px wide, with nothing that shows where it is")
            elif abs((cap.x0 + cap.x1) / 2 - (box.x0 + box.x1) / 2) > d.px(TRUE_PX):
                out.append(f"{gid}'s cap is not centred on it")
    return out


def scale_bent(d: Drawn) -> list[str]:
    """Between the breaks, a second is as wide everywhere: the axis' segments share one scale."""
    scales = [(x1 - x0) / (t1 - t0) for t0, t1, x0, x1 in getattr(d.fig, "time_map", ()) if t1 > t0]  # the
    #   timeline's own axis: its detail row's stretches are each at a scale of their own, written over them
    if scales and max(scales) - min(scales) > SCALE_TOLERANCE * max(scales):
        return [f"the time axis' segments have different scales ({min(scales):.4g} to {max(scales):.4g} x per s)"]
    return []


def _time_axes(fig: Figure) -> list[tuple[Any, tuple, bool]]:
    """(axes, segments, each segment at a scale of its own) of a timeline's time axes: its own, and its detail
    row's, whose stretches are each magnified as much as they need."""
    out = []
    for ax in fig.axes:
        segments = axes_maps(fig, ax)[0]
        if segments:
            out.append((ax, segments, ax is not fig.axes[0]))
    return out


def _segment_groups(times: list[tuple[float, str]], segments: tuple, own_scales: bool) -> list[list]:
    """The ticks to compare with each other: all of them, or those of each segment when each has a scale of its
    own."""
    if not own_scales:
        return [times]
    return [[(t, label) for t, label in times if t0 - 1e-9 <= t <= t1 + 1e-9] for t0, t1, _, _ in segments]


def ticks_off_time(d: Drawn) -> list[str]:
    """A timeline's tick stands where the time it reads is on the axis, within a pixel, never inside a break."""
    out = []
    for ax, _, _ in _time_axes(d.fig):
        for x, label in zip(ax.get_xticks(), ax.get_xticklabels()):
            t = _tick_seconds(label.get_text())
            if t is None:
                continue
            want = time_x(d.fig, t, ax)
            drawn = float(ax.transData.transform((x, 0))[0])
            if want is None or abs(drawn - want) > d.px(TRUE_PX):
                out.append(f"tick {label.get_text()!r} does not stand at its time")
    return out


def _tick_seconds(label: str) -> float | None:
    """A tick label's time in seconds: "30.2", "3:00", "2:04:30" (None when it is not a time)."""
    value = 0.0
    try:
        for part in label.replace("\u2212", "-").split(":"):
            value = value * 60 + float(part)
    except ValueError:
        return None
    return value


def ticks_uneven(d: Drawn) -> list[str]:
    """A timeline's ticks read at one step: between the breaks, neighbouring ticks are one round step apart
    (1, 2 or 5 times a power of ten, or a clock's 15 and 30), the same step in every stretch, and every label
    has as many decimals as the others (a stretch too short for the step may hold a single tick)."""
    out = []
    for ax, segments, own in _time_axes(d.fig):
        labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
        times = [(t, label) for label in labels if (t := _tick_seconds(label)) is not None]
        for group in _segment_groups(times, segments, own):
            out += _uneven(group, segments)
    return out


def _uneven(times: list[tuple[float, str]], segments: tuple) -> list[str]:
    out = []
    decimals = {len(label.rpartition(".")[2]) if "." in label else 0 for _, label in times}
    if len(decimals) > 1:
        out.append(f"tick labels have {sorted(decimals)} decimals: {[label for _, label in times]}")
    steps = set()
    for t0, t1, _, _ in segments:
        inside = sorted(t for t, _ in times if t0 - 1e-9 <= t <= t1 + 1e-9)
        steps |= {round(b - a, 9) for a, b in zip(inside, inside[1:])}
    if len(steps) > 1:
        out.append(f"the ticks change step along the axis: {sorted(steps)} s")
    out += [f"ticks {step:g} s apart: not a round step" for step in steps if not _round_step(step)]
    return out


def _round_step(step: float) -> bool:
    """1, 2 or 5 times a power of ten (s), or a clock's round step (15 s, 1 min, 30 min, 3 h...)."""
    if step <= 0:
        return False
    mantissa = step / 10 ** np.floor(np.log10(step) + 1e-9)
    return any(abs(mantissa - k) < 1e-6 for k in (1, 2, 5)) or any(abs(step - s) < 1e-9 for s in CLOCK_STEPS)


def ticks_colliding(d: Drawn) -> list[str]:
    out = []
    for ax in d.fig.axes:
        ticks = sorted(((t.get_window_extent(d.r), t.get_text()) for t in ax.get_xticklabels()
                        if t.get_visible() and t.get_text() and t.get_rotation() == 0), key=lambda bt: bt[0].x0)
        out += [f"ticks {a!r} and {b!r} are {bb.x0 - ba.x1:.0f} px apart"
                for (ba, a), (bb, b) in zip(ticks, ticks[1:]) if bb.x0 - ba.x1 < d.px(TICK_GAP_PX)]
    return out


def arrow_labels_on_bands(d: Drawn) -> list[str]:
    out = []
    for ax in d.fig.axes:
        bands = [(p.get_gid(), p.get_window_extent(d.r)) for p in ax.patches
                 if (p.get_gid() or "").split(":")[0] in BAND_KINDS]
        out += [f"{_name(t)} covers {gid}" for t, box, _ in d.texts if t.axes is ax and t.get_gid() in LINE_LABELS
                for gid, band in bands if d.overlap(box, band)]
    return out


def keys_on_bands(d: Drawn) -> list[str]:
    """A row's name drawn in the plot (the key of a strip under a lane's bar) covering a band: the band is what
    the name labels, and the name over it hides where it starts."""
    out = []
    for ax in d.fig.axes:
        bands = [(p.get_gid(), p.get_window_extent(d.r)) for p in ax.patches
                 if (p.get_gid() or "").split(":")[0] in KEYED_BANDS]
        out += [f"{_name(t)} covers {gid}" for t, box, _ in d.texts if t.axes is ax and t.get_gid() in ROW_NAMES
                for gid, band in bands if d.overlap(box, band)]
    return out


#: Half an arrow head's width, as a share of its size (its mutation scale, in points): more than the line's.
ARROW_HEAD_HALF = 0.3


def arrows_cut_off(d: Drawn) -> list[str]:
    """An arrow is drawn inside the plot: one that leaves it is clipped to a stray stub. One straight down (up) at the
    axis' very start stands at its time, unclipped, its head's half past the plot's left edge: so far, and no more."""
    out = []
    for ax in d.fig.axes:
        box = ax.get_window_extent(d.r).padded(d.px(TOUCH_PX))
        for p in ax.patches:
            if (p.get_gid() or "").startswith("arrow:"):
                ext = p.get_window_extent(d.r)  # the arrow as drawn, before the plot clips it
                scale = p.get_mutation_scale() if isinstance(p, FancyArrowPatch) else 0.0
                head = 0.0 if p.get_clip_on() else scale * ARROW_HEAD_HALF * d.fig.dpi / 72
                if ext.x0 < box.x0 - head or ext.x1 > box.x1 or ext.y0 < box.y0 or ext.y1 > box.y1:
                    out.append(f"{p.get_gid()} leaves the plot")
    return out


def _lines(fig: Figure) -> list[tuple[str, MPath, str | None]]:
    """(gid, path in display px, the marks it points at) of each repeat arrow and each note's leader line."""
    out: list[tuple[str, MPath, str | None]] = []
    for ax in fig.axes:
        out += [(p.get_gid() or "", p.get_transform().transform_path(p.get_path()), None) for p in ax.patches
                if (p.get_gid() or "").startswith("arrow:")]
        out += [(t.get_gid() or "", t.arrow_patch.get_transform().transform_path(t.arrow_patch.get_path()),
                 LEADER_TARGETS.get(t.get_gid() or "")) for t in ax.texts
                if isinstance(t, Annotation) and t.arrow_patch is not None and t.get_visible()]
        out += [(ln.get_gid() or "", MPath(ax.transData.transform(ln.get_xydata())), None) for ln in ax.lines
                if (ln.get_gid() or "").startswith(CALLOUT_LEADER) and ln.get_visible()]
    return out


ALONG_PX = 12.0  # px at 100 dpi: an arrow running level this far, or further, at a lane's bar ...
ALONG_CLEAR_PX = 3.0  # ... (its height, and this beyond it) reads as part of that lane's run


def arrows_along_lanes(d: Drawn) -> list[str]:
    """A repeat arrow runs level along no lane's bar line: lesson 10 at lock 0 s, the retry's elbow ran from
    inv-1's end along inv-1's line to 90 s, and read as inv-1 running on (lesson 02 cell 20's rollback arrow too)."""
    out = []
    for ax in d.fig.axes:
        bars = [(p.get_gid() or "", p.get_window_extent(d.r)) for p in ax.patches
                if (p.get_gid() or "").startswith("bar:")]
        for p in ax.patches:
            gid = p.get_gid() or ""
            if not gid.startswith("arrow:"):
                continue
            pts = np.asarray(p.get_transform().transform_path(p.get_path()).vertices)
            for (x0, y0), (x1, y1) in pairwise(pts):
                if abs(y1 - y0) >= d.px(TOUCH_PX) or abs(x1 - x0) < d.px(ALONG_PX):
                    continue
                near = [bar for bar, box in bars if box.y0 - d.px(ALONG_CLEAR_PX) < y0 < box.y1 + d.px(ALONG_CLEAR_PX)]
                out += [f"{gid} runs along {bar.split(':')[1]}'s line" for bar in near[:1]]
    return out


def lines_through_marks(d: Drawn) -> list[str]:
    """A repeat arrow or a note's leader line crossing a mark: it reads as pointing there. The marks at either
    end of a line are what it connects, and a note's leader may pass over the marks it names."""
    out = []
    for gid, path, targets in _lines(d.fig):
        vertices = np.asarray(path.vertices)
        if not len(vertices):
            continue
        ext = path.get_extents().padded(d.px(TOUCH_PX))  # a line straight up or across has no width of its own
        ends = ((float(vertices[0][0]), float(vertices[0][1])), (float(vertices[-1][0]), float(vertices[-1][1])))
        for m in d.marks:
            w, h = _shared(ext, m.box)
            if not (w > 0 and h > 0) or (targets and targets in m.gid):
                continue
            if any(m.path.contains_point(e, radius=d.px(END_PX)) for e in ends):
                continue
            if path.intersects_path(m.path, filled=False):
                out.append(f"{gid} crosses {m}")
    return out


def end_line_through_marks(d: Drawn) -> list[str]:
    """The "history ends" line strikes through no mark: the marks at the history's last moment stand on it, and
    struck through they read as crossed out (lesson 10: inv-2's claim and email at 2:04:34)."""
    out = []
    for ax in d.fig.axes:
        for ln in ax.lines:
            if ln.get_gid() != "end-of-history":
                continue
            pts = ln.get_transform().transform(ln.get_xydata())
            runs = np.split(pts, np.flatnonzero(np.isnan(pts).any(axis=1)))
            for run in (r[~np.isnan(r).any(axis=1)] for r in runs):
                if len(run) > 1:
                    out += [f"the end line strikes through {m}" for m in d.marks
                            if m.ax is ax and MPath(run).intersects_path(m.path, filled=True)]
    return out


NOT_CONTENT = ("gap", "gap-label", "separator", "end-of-history", "end-label", "source-caption")  # on no row


def rows_empty(d: Drawn) -> list[str]:
    """A header row (``fig.head_rows``: name -> its top and separator, data y) with nothing of its own drawn on it:
    a row that only names its group takes room and reads as something the source did (issue 31)."""
    heads = getattr(d.fig, "head_rows", None)
    if not heads or not d.fig.axes:
        return []
    ax = d.fig.axes[0]
    ys = [m.y for m in d.marks if m.ax is ax]
    for art in [*ax.patches, *ax.texts, *ax.lines]:
        gid = art.get_gid()  # marks are counted above; grid lines and frames have no gid
        if art.get_visible() and gid and gid not in NOT_CONTENT and not gid.startswith(MARK_PREFIX):
            box = art.get_window_extent(d.r)
            ys += [box.y0, box.y1, (box.y0 + box.y1) / 2]
    out = []
    for name, (top, sep) in heads.items():
        y_top, y_sep = (ax.transData.transform((0, v))[1] for v in (top, sep))
        lo, hi = min(y_top, y_sep), max(y_top, y_sep)
        if not any(lo < y < hi for y in ys):
            out.append(f"the row {name!r} has nothing drawn on it")
    return out


def lanes_drawn_early(d: Drawn) -> list[str]:
    """A lane's bar and marks begin where its invocation started (``fig.lanes``: inv -> (y, start x) in data
    units), not before: the arrow from the run it repeats lands on the first of them."""
    lanes = getattr(d.fig, "lanes", None)
    if not lanes or not d.fig.axes:
        return []
    ax = d.fig.axes[0]
    rows = d.rows()
    out = []
    for inv, (y, x_start) in lanes.items():
        start = ax.transData.transform((x_start, y))[0]
        first = [p.get_window_extent(d.r).x0 for p in ax.patches if (p.get_gid() or "").startswith(f"bar:{inv}:")]
        first += [m.x for m in rows.get(f"lane:{inv}", [])]
        if first and min(first) < start - d.px(EARLY_PX):
            out.append(f"{inv} is drawn from {start - min(first):.0f} px before it started")
    return out


# -- what two learners still found, reading lessons on a projector (issue 31)
READ_PT = 10.0  # pt at full scale: no text on a timeline smaller than this (a projector's back row)
GREY_CONTRAST = 9.0  # a grey text against white, at least this contrast ratio (a projector halves it)
GREY_SATURATION = 0.15  # a colour this little saturated is a grey
LEGEND_SHARE_MAX = 0.3  # a timeline's legend takes at most this fraction of the figure's height
HIDDEN_SHARE = 0.5  # a bar (or its cap) more than this much covered by marks is hidden under them ...
MEASURABLE_S = 0.001  # s: ... unless its run is shorter than this: no scale shows it, its end's mark stands there
RELATION_SLACK_PX = 2.0  # px at 100 dpi: a label this close to its arrow's line is on it
STRIP_OVERLAP_PX = 1.0  # px at 100 dpi: a window band may share this much height with its lane's bar


def _timeline(d: Drawn) -> bool:
    return bool(getattr(d.fig, "time_map", ()))


def _luminance(rgb) -> float:
    def lin(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (lin(float(v)) for v in rgb[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(rgb) -> float:
    """WCAG's contrast ratio of a colour against white."""
    return 1.05 / (_luminance(rgb) + 0.05)


def _grey(rgb) -> bool:
    hi, lo = max(rgb[:3]), min(rgb[:3])
    return hi == 0 or (hi - lo) / hi < GREY_SATURATION


def texts_unreadable(d: Drawn) -> list[str]:
    """On a timeline, no text smaller than :data:`READ_PT` (scaled with the figure's lanes, ``fig.font_scale``), and
    no grey text paler than :data:`GREY_CONTRAST` against white: on a projector, small grey words are lost."""
    if not _timeline(d):
        return []
    from matplotlib.colors import to_rgba
    least = max(6.0, READ_PT * getattr(d.fig, "font_scale", 1.0))
    out = []
    for t, _, _ in d.texts:
        if float(t.get_fontsize()) < least - 0.05:
            out.append(f"{_name(t)} is {float(t.get_fontsize()):g} pt, under {least:g} pt")
        rgb = to_rgba(t.get_color())
        if _grey(rgb) and contrast(rgb) < GREY_CONTRAST:
            out.append(f"{_name(t)} is grey at {contrast(rgb):.1f}:1 contrast, under {GREY_CONTRAST:g}:1")
    return out


def legend_sprawling(d: Drawn) -> list[str]:
    """A timeline's legend stays compact: at most :data:`LEGEND_SHARE_MAX` of the figure's height, and an entry on
    one line where the figure is a notebook's width or wider (8 in)."""
    if not _timeline(d):
        return []
    out = []
    for leg in d.fig.legends:
        box = leg.get_window_extent(d.r)
        if box.height > LEGEND_SHARE_MAX * d.fig.bbox.height:
            out.append(f"the legend takes {box.height / d.fig.bbox.height:.0%} of the figure's height")
        if d.fig.get_figwidth() >= 8:
            out += [f"legend entry {_name(t)} takes two lines" for t in leg.get_texts() if "\n" in t.get_text()]
    return out


def _breaks(d: Drawn, ax) -> list[Bbox]:
    return [p.get_window_extent(d.r) for p in ax.patches if p.get_gid() == "gap"]


def texts_in_breaks(d: Drawn) -> list[str]:
    """A word drawn on an axis break reads as standing at a time the axis left out: only the break's own label
    ("58 s skipped") stands there, and it fits inside its band; no other label is centred in a break or covers its
    label (a long label that must cross one, where an order went, may pass over its band)."""
    out = []
    for ax in d.fig.axes:
        breaks = _breaks(d, ax)
        if not breaks:
            continue
        own = [text_box(t, d.r) for t in ax.texts if t.get_gid() == "gap-label" and t.get_visible()]
        for t, box, _ in d.texts:
            if t.axes is not ax or t.get_gid() == "gap-label" or t not in ax.texts:
                continue
            cx = (box.x0 + box.x1) / 2
            if any(b.x0 < cx < b.x1 for b in breaks) or any(d.overlap(box, g) for g in own):
                out.append(f"{_name(t)} stands in an axis break")
        for t in ax.texts:
            if t.get_gid() != "gap-label" or not t.get_visible():
                continue
            box = text_box(t, d.r)
            if not any(b.x0 - d.px(TOUCH_PX) <= box.x0 and box.x1 <= b.x1 + d.px(TOUCH_PX) for b in breaks):
                out.append(f"{_name(t)} is wider than its break")
    return out


def texts_on_axis_line(d: Drawn) -> list[str]:
    """A label in the plot keeps off the time axis' line: standing on it, it reads as a tick."""
    if not _timeline(d):
        return []
    out = []
    for ax in d.fig.axes:
        bottom = ax.get_window_extent(d.r).y0
        out += [f"{_name(t)} sits on the time axis' line" for t, box, _ in d.texts
                if t in ax.texts and box.y0 < bottom + d.px(TOUCH_PX) and box.y1 > bottom - d.px(TOUCH_PX)]
    return out


def _coverage(box: Bbox, covers: list[Bbox], n: int = 24) -> float:
    """The share of ``box`` that ``covers`` cover (sampled on an n x n grid)."""
    if box.width <= 0 or box.height <= 0 or not covers:
        return 0.0
    xs = box.x0 + (np.arange(n) + 0.5) * box.width / n
    ys = box.y0 + (np.arange(n) + 0.5) * box.height / n
    gx, gy = np.meshgrid(xs, ys)
    hit = np.zeros_like(gx, dtype=bool)
    for c in covers:
        hit |= (gx > c.x0) & (gx < c.x1) & (gy > c.y0) & (gy < c.y1)
    return float(hit.mean())


def bars_hidden(d: Drawn) -> list[str]:
    """A run's bar (with its cap, when it has one) is seen: marks drawn over it hide at most :data:`HIDDEN_SHARE`
    of it in one of the axes that draw it (the timeline, or its detail row at a finer scale)."""
    seen: dict[str, bool] = {}
    boxes = [m.box for m in d.marks]
    instant = {p.get_gid() for p, t0, t1, _ in getattr(d.fig, "band_times", ())
               if (p.get_gid() or "").startswith("bar:") and t1 is not None and t1 - t0 < MEASURABLE_S}
    for ax in d.fig.axes:
        caps = {(p.get_gid() or "")[len("cap:"):]: p.get_window_extent(d.r) for p in ax.patches
                if (p.get_gid() or "").startswith("cap:")}
        for p in ax.patches:
            gid = p.get_gid() or ""
            if not gid.startswith("bar:") or not p.get_visible() or gid in instant:
                continue  # a run of no measurable length (it errors at once) is where its end's mark is
            box = p.get_window_extent(d.r)
            cap = caps.get(gid.split(":")[1])
            shown = Bbox.union([box, cap]) if cap is not None else box
            seen[gid] = seen.get(gid, False) or _coverage(shown, boxes) <= HIDDEN_SHARE
    return [f"{gid} is hidden under its marks" for gid, ok in seen.items() if not ok]


def labels_before_band(d: Drawn) -> list[str]:
    """The label of a band (how long Lambda throttled an event, what was still pending) starts where its band does,
    or later: one that starts before it reads as the band starting earlier."""
    out = []
    for ax in d.fig.axes:
        for style in (Delivery.THROTTLED, Delivery.PENDING):
            bands = [p.get_window_extent(d.r) for p in ax.patches if (p.get_gid() or "").startswith(f"{style}:")]
            if not bands:
                continue
            for t, box, _ in d.texts:
                if t.axes is not ax or t.get_gid() != f"event-label:{style}":
                    continue
                cy = (box.y0 + box.y1) / 2
                band = min(bands, key=lambda b: abs((b.y0 + b.y1) / 2 - cy))
                if box.x0 < band.x0 - d.px(TOUCH_PX):
                    out.append(f"{_name(t)} starts {band.x0 - box.x0:.0f} px before its band")
    return out


def ticks_off_step(d: Drawn) -> list[str]:
    """Every tick of a timeline falls on a round value of the axis' step (the step its ticks keep where a stretch
    holds two or more): a lone tick at a finer step ("2:04:25" on an axis of minutes) reads as an event's time;
    unless it is that event's time, a run's start to the label's last digit ("2:04:34", the retry)."""
    out = []
    for ax, segments, own in _time_axes(d.fig):
        starts = _start_xs(d, ax)
        labels = [(t, lb.get_text()) for lb in ax.get_xticklabels() if (t := _tick_seconds(lb.get_text())) is not None]
        at_starts = {t for t, text in labels if _at_a_start(d, ax, t, _last_digit(text), starts)}
        for group in _segment_groups(labels, segments, own):
            out += _off_step([t for t, _ in group], segments, at_starts)
    return out


def _start_xs(d: Drawn, ax) -> list[float]:
    """Display x where each run starts on ``ax``, when it is the timeline's own axis (``fig.lanes``), and where
    each of its marks stands (a stretch where no run starts is ticked at its first mark)."""
    if ax is not d.fig.axes[0]:
        return []
    return [float(ax.transData.transform((x, y))[0]) for y, x in getattr(d.fig, "lanes", {}).values()] + [
        m.x for m in d.marks if m.ax is ax]


def _last_digit(label: str) -> float:
    """What a tick label's last digit counts, in seconds: "2:04:34" 1, "61.2" 0.1."""
    return 10.0 ** -len(label.rpartition(".")[2]) if "." in label else 1.0


def _at_a_start(d: Drawn, ax, t: float, digit: float, starts: list[float]) -> bool:
    """A tick reading ``t`` stands at a run's start, to its label's last digit."""
    lo, hi = time_x(d.fig, t - digit / 2, ax), time_x(d.fig, t + digit / 2, ax)
    at = time_x(d.fig, t, ax)
    if at is None:
        return False
    lo, hi = at if lo is None else lo, at if hi is None else hi
    return any(lo - d.px(TRUE_PX) <= x <= hi + d.px(TRUE_PX) for x in starts)


def _off_step(times: list[float], segments: tuple, exempt: Collection[float] = ()) -> list[str]:
    """The ticks off the step their neighbours keep; ``exempt``: ticks at a run's start, which may stand off it
    (the step is the spacing of all the ticks, or of the others, whichever leaves fewer off it)."""
    def steps_of(ts: list[float]) -> list[float]:
        out = []
        for t0, t1, _, _ in segments:
            inside = sorted(t for t in ts if t0 - 1e-9 <= t <= t1 + 1e-9)
            out += [round(b - a, 9) for a, b in zip(inside, inside[1:])]  # 2:04:34.02 - 2:04:34.00 is not 0.02
        return out

    found = []
    for steps in (steps_of(times), steps_of([t for t in times if t not in exempt])):
        if steps:
            step = min(steps)
            found.append([f"tick at {t:g} s is not on the axis' {step:g} s step" for t in times
                          if abs(t / step - round(t / step)) > 1e-6 and t not in exempt])
    return min(found, key=len, default=[])


def marks_touching_names(d: Drawn) -> list[str]:
    """A mark stays within the plot's width: one reaching out of its left edge stands against the row's name (a
    "500" read as part of "EventBridge rule → Lambda 500"), one out of its right edge against the outcome."""
    if not _timeline(d):
        return []
    out = []
    for m in d.marks:
        box = (m.ax or d.fig.axes[0]).get_window_extent(d.r)
        if m.box.x0 < box.x0 - d.px(TOUCH_PX) or m.box.x1 > box.x1 + d.px(TOUCH_PX):
            out.append(f"{m} reaches out of the plot, towards the {'row names' if m.box.x0 < box.x0 else 'outcomes'}")
    return out


def bands_behind_bars(d: Drawn) -> list[str]:
    """An idempotency-table window is drawn one way in every figure: in its key's strip under its lane's bar, never
    behind the bar, where the bar hides its start."""
    out = []
    for ax in d.fig.axes:
        bars = {(p.get_gid() or "").split(":")[1]: p.get_window_extent(d.r) for p in ax.patches
                if (p.get_gid() or "").startswith("bar:")}
        for p in ax.patches:
            gid = p.get_gid() or ""
            kind, _, rest = gid.partition(":")
            if kind not in ("lock", "kept", "expired"):
                continue
            bar = bars.get(rest.split(":")[0])
            if bar is None:
                continue
            box = p.get_window_extent(d.r)
            if min(box.y1, bar.y1) - max(box.y0, bar.y0) > d.px(STRIP_OVERLAP_PX):
                out.append(f"{gid} is drawn behind its lane's bar, not in a strip")
    return out


def _relation(box: Bbox, path: MPath, slack: float) -> str:
    """Where a label stands from a line: "on" it (the line runs through the middle half of the label's width), else
    on its "left" or its "right", as seen facing along the line where it passes nearest (which side of a
    slanting arrow, whatever the label's shape)."""
    pts = getattr(path, "_rwh_dense", None)
    if pts is None:  # worked out once per line: a label's placement asks this for each of its candidates
        pts = _drawn_points(path)
        if len(pts) > 1:  # sample the line densely: a straight arrow has only two vertices
            seg = [np.linspace(a, b, 24, endpoint=False) for a, b in zip(pts[:-1], pts[1:])]
            pts = np.vstack([*seg, pts[-1:]])
        path._rwh_dense = pts  # type: ignore[attr-defined]  # a path's vertices are not changed once drawn
    cx, cy = (box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2
    # on it: the line runs through the middle half of the label (one that only touches its edge stands beside it)
    middle = (np.abs(pts[:, 0] - cx) <= box.width / 4 + slack) & (np.abs(pts[:, 1] - cy) <= box.height / 2 + slack)
    if middle.any() or len(pts) < 2:
        return "on"
    # which side of the chord from the line's start to its farthest point (its head): a label near the head is
    # nearest to the head's outline, whose edges run every way
    a = pts[0]
    b = pts[int(np.argmax(np.hypot(pts[:, 0] - a[0], pts[:, 1] - a[1])))]
    cross = (b[0] - a[0]) * (cy - a[1]) - (b[1] - a[1]) * (cx - a[0])
    return "left" if cross > 0 else "right"


def arrow_relation(box: Bbox, path: MPath, slack: float) -> str:
    """An arrow label's place from its arrow (shared with ``labels.py``, which places them one way)."""
    return _relation(box, path, slack)


def labels_uneven(d: Drawn) -> list[str]:
    """The labels of one kind stand one way from what they name, in the whole figure: every arrow's label on its
    arrow (or every one beside it, on the same side), every duplicate's note on the same side of its mark. Labels
    placed each where it first fits, one above and the next below, read as saying different things."""
    out = []
    for ax in d.fig.axes:
        arrows = {p.get_gid(): p.get_transform().transform_path(p.get_path()) for p in ax.patches
                  if (p.get_gid() or "").startswith("arrow:")}
        named = getattr(d.fig, "arrow_labels", {})  # which arrow each label names, when the figure says
        found: dict[str, set[str]] = {}
        for t, box, _ in d.texts:
            if t.axes is not ax:
                continue
            if t.get_gid() == "arrow-label" and arrows:
                path = arrows.get(named.get(id(t))) or min(arrows.values(), key=lambda a: _distance(a, box))
                found.setdefault("arrow labels", set()).add(_relation(box, path, d.px(RELATION_SLACK_PX)))
            elif t.get_gid() == "duplicate-note" and isinstance(t, Annotation):
                x, y = t.get_transform().transform(t.xy) if t.xycoords == "data" else ax.transData.transform(t.xy)
                cy = (box.y0 + box.y1) / 2
                found.setdefault("duplicate notes", set()).add("above" if cy > y else "below")
        out += [f"{kind} stand {len(ways)} ways from what they name: {sorted(ways)}"
                for kind, ways in found.items() if len(ways) > 1]
    return out


def _drawn_points(path: MPath) -> np.ndarray:
    """A path's vertices that are drawn: a closed shape's last vertex (an arrow head's) is a code, not a point."""
    pts = np.asarray(path.vertices, float)
    return pts if path.codes is None else pts[np.asarray(path.codes) != MPath.CLOSEPOLY]


def _distance(path: MPath, box: Bbox) -> float:
    pts = _samples(path)
    cx, cy = (box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2
    return float(np.min(np.hypot(pts[:, 0] - cx, pts[:, 1] - cy)))


# -- what a new learner found (4/5)
EQUAL_RUNS = 0.05  # runs whose lengths differ by at most this share of the longer are equal-length ...
EQUAL_SCALE = 0.02  # ... and are drawn in the detail at scales that differ by at most this share


def detail_strips_uneven(d: Drawn) -> list[str]:
    """The detail row's stretches: each reads its times from two ticks at least (one tick gives no scale), and
    equal-length runs are magnified alike, in one figure (0.2 s runs at ×4.6 and ×5.6 read as different lengths)."""
    out = []
    for ax, segments, own in _time_axes(d.fig):
        if not own:
            continue
        times = [t for lb in ax.get_xticklabels() if (t := _tick_seconds(lb.get_text())) is not None]
        for t0, t1, _, _ in segments:
            n = sum(t0 - 1e-9 <= t <= t1 + 1e-9 for t in times)
            if n < 2:
                out.append(f"the detail's stretch {t0:g}..{t1:g} s has {n} tick{'' if n == 1 else 's'}")
    rates = []  # (gid, seconds, px a second) of each detail bar drawn at its length
    for patch, t0, t1, least in getattr(d.fig, "band_times", ()):
        gid = patch.get_gid() or ""
        if not gid.startswith("bar:") or t1 is None or t1 <= t0 or patch.axes is d.fig.axes[0]:
            continue
        box = patch.get_window_extent(d.r)
        if box.width > d.px(least) + d.px(TRUE_PX):
            rates.append((gid, t1 - t0, box.width / (t1 - t0)))
    for i, (g1, s1, r1) in enumerate(rates):
        for g2, s2, r2 in rates[i + 1:]:
            if abs(s1 - s2) <= EQUAL_RUNS * max(s1, s2) and abs(r1 - r2) > EQUAL_SCALE * max(r1, r2):
                out.append(f"{g1} and {g2} last as long, and are magnified {max(r1, r2) / min(r1, r2):.2f} times "
                           "apart")
    return out


def segments_unticked(d: Drawn) -> list[str]:
    """Each stretch of a broken time axis in which a run starts or a mark stands holds a tick: one with none (the
    retry two hours later, after two breaks; lesson 10's TTL sweeper deleting the record between two breaks) cannot
    be read at all, and the reader counts breaks to guess its time."""
    segments = getattr(d.fig, "time_map", ())
    if len(segments) < 2:
        return []
    ax = d.fig.axes[0]
    ticks = [x for x, lb in zip(ax.get_xticks(), ax.get_xticklabels()) if lb.get_text()]
    held = [(m.gid[len(MARK_PREFIX):], float(ax.transData.inverted().transform((m.x, m.y))[0]))
            for m in d.marks if m.ax is ax]
    out = []
    for t0, t1, x0, x1 in segments:
        if any(x0 - 1e-9 <= x <= x1 + 1e-9 for x in ticks):
            continue
        runs = [inv for inv, (_, x) in getattr(d.fig, "lanes", {}).items() if x0 - 1e-9 <= x <= x1 + 1e-9]
        if runs:
            out.append(f"the stretch {t0:g}..{t1:g} s, where {runs[0]} starts, has no tick")
        elif mark := next((name for name, x in held if x0 - 1e-9 <= x <= x1 + 1e-9), None):
            out.append(f"the stretch {t0:g}..{t1:g} s, where {mark} stands, has no tick")
    return out


def callout_near(box: Bbox, mark: Bbox, near: float) -> bool:
    """A label stands next to a mark: beside it (sharing some of its height) or over or under it (sharing some of
    its width), at most ``near`` px away (shared with ``labels.py``, which draws a leader where it is not)."""
    gx = max(0.0, box.x0 - mark.x1, mark.x0 - box.x1)
    gy = max(0.0, box.y0 - mark.y1, mark.y0 - box.y1)
    return (gx == 0 and gy <= near) or (gy == 0 and gx <= near)


def callouts_unpointed(d: Drawn) -> list[str]:
    """A label on a source's row names the mark it stands next to: one placed farther off (stepped out along the
    row, past other marks) has a leader line from it to its mark, or it names nothing ("o-2 sent twice" 70 px left
    of its ⇉, across an axis break)."""
    out = []
    for ax in d.fig.axes:
        leaders = [ax.transData.transform(ln.get_xydata()) for ln in ax.lines
                   if (ln.get_gid() or "").startswith((CALLOUT_LEADER, CALLOUT_CARET)) and ln.get_visible()]
        for t, box, _ in d.texts:
            gid = t.get_gid() or ""
            if t.axes is not ax or not gid.startswith("event-label:"):
                continue
            mine = [m for m in d.marks if m.ax is ax and m.gid == MARK_PREFIX + gid.split(":", 1)[1]]
            if not mine:
                continue  # a band's label (pending, throttled): on its band
            if not any(_pointed(d, box, m.box, leaders) for m in mine):  # it names one of its kind's marks
                m = min(mine, key=lambda m: _distance(_box_path(m.box), box))
                out.append(f"{_name(t)} stands apart from the {m} it names, with nothing pointing at it")
    return out


def _pointed(d: Drawn, box: Bbox, mark: Bbox, leaders: list[np.ndarray]) -> bool:
    """A label next to ``mark``, or with a leader line from its edge to it, or a caret on its edge over it."""
    if callout_near(box, mark, d.px(CALLOUT_NEAR_PX)):
        return True
    edge, reach = box.padded(d.px(TOUCH_PX) * 3), mark.padded(d.px(END_PX))
    return any(edge.contains(*pts[0]) and (reach.contains(*pts[-1]) or
                                           len(pts) == 1 and reach.x0 <= pts[0][0] <= reach.x1) for pts in leaders)


def carets_astray(d: Drawn) -> list[str]:
    """A callout's caret points at its own mark: the first mark under a "▽" (over a "△") in its column is one of
    the callout's kind (lesson 02 cell 20: the orphan's caret pointed at the stack's grey status square over its ∅).
    """
    out = []
    carets = [(ax, ln) for ax in d.fig.axes for ln in ax.lines if (ln.get_gid() or "").startswith(CALLOUT_CARET)]
    for ax, ln in carets:
        style, down = MARK_PREFIX + (ln.get_gid() or "")[len(CALLOUT_CARET):], ln.get_marker() == "v"
        for x, y in ax.transData.transform(ln.get_xydata()):
            column = [m for m in d.marks if m.ax is ax and m.box.x0 <= x <= m.box.x1
                      and (m.box.y1 <= y + d.px(TOUCH_PX) if down else m.box.y0 >= y - d.px(TOUCH_PX))]
            first = min(column, key=lambda m: abs(m.y - y), default=None)
            if first is not None and first.gid != style:
                out.append(f"the caret of {style[len(MARK_PREFIX):]} points at {first}")
    return out


def leaders_across_breaks(d: Drawn) -> list[str]:
    """A note's leader line keeps to the stretch of the axis its mark is on: one across an axis break joins a
    label standing at one time to a mark at another, over time the axis left out (repeat arrows cross breaks:
    the repeat came later)."""
    out = []
    for gid, path, _ in _lines(d.fig):
        if gid.startswith("arrow:"):
            continue
        pts = _drawn_points(path)
        if len(pts) > 1:
            pts = np.vstack([np.linspace(a, b, 24) for a, b in zip(pts[:-1], pts[1:])])
        for ax in d.fig.axes:
            for gap in _breaks(d, ax):
                inside = (pts[:, 0] > gap.x0 + d.px(TOUCH_PX)) & (pts[:, 0] < gap.x1 - d.px(TOUCH_PX))
                inside &= (pts[:, 1] > gap.y0) & (pts[:, 1] < gap.y1)
                if inside.any():
                    out.append(f"{gid}'s leader line crosses an axis break")
    return out


def arrow_labels_off_their_lanes(d: Drawn) -> list[str]:
    """A repeat arrow's label stands by the lanes its arrow joins (``fig.lane_rows``): one on a third lane's row,
    which the arrow only passes, reads as that lane's ("retry 1 at 90.5 s" beside inv-2, of inv-1's retry inv-3)."""
    rows = getattr(d.fig, "lane_rows", {})
    named = getattr(d.fig, "arrow_labels", {})
    if not rows or not d.fig.axes:
        return []
    ax = d.fig.axes[0]
    out = []
    for t, box, _ in d.texts:
        gid = named.get(id(t))
        if t.axes is not ax or gid is None:
            continue
        joins = set(gid[len("arrow:"):].split("->"))
        cy = (box.y0 + box.y1) / 2
        for inv, (top, bottom) in rows.items():
            y0, y1 = sorted(float(ax.transData.transform((0, v))[1]) for v in (top, bottom))
            if y0 < cy < y1 and inv not in joins:
                out.append(f"{_name(t)} stands on {inv}'s lane, not by {' or '.join(sorted(joins))}")
    return out


NEARER_PX = 2.0  # px at 100 dpi: a label this much nearer another arrow than its own reads as the other's ...
CLEAR_PX = 20.0  # ... and so does one this close to another arrow, wherever its own is


def _samples(path: MPath) -> np.ndarray:
    """Points along a drawn line, 24 to each of its segments; kept on the path, which label placement asks about
    for every candidate of every label (a figure with many arrows spent a second of its drawing sampling lines)."""
    pts = getattr(path, "_rwh_samples", None)
    if pts is None:
        pts = _drawn_points(path)
        if len(pts) > 1:
            pts = np.vstack([np.linspace(a, b, 24) for a, b in zip(pts[:-1], pts[1:])])
        path._rwh_samples = pts  # type: ignore[attr-defined]  # a path's vertices are not changed once drawn
    return pts


def box_gap(path: MPath, box: Bbox) -> float:
    """Display px between a drawn line and a box (0 where the line enters it)."""
    pts = _samples(path)
    dx = np.maximum(np.maximum(box.x0 - pts[:, 0], pts[:, 0] - box.x1), 0.0)
    dy = np.maximum(np.maximum(box.y0 - pts[:, 1], pts[:, 1] - box.y1), 0.0)
    return float(np.min(np.hypot(dx, dy)))


def nearer_arrow(box: Bbox, own: str, arrows: list[tuple[str, MPath]], kinds: Mapping[str, str],
                 slack: float, clear: float) -> str | None:
    """Another arrow that ``box``, the label of arrow ``own``, stands by: nearer than its own (by more than
    ``slack`` px), or within ``clear`` px of one that leaves from elsewhere, if any. The repeats of one run for one
    cause share a label: each of them is its own."""
    prev = own.split("->")[0]

    def mine(gid: str) -> bool:
        return gid == own or (gid.split("->")[0] == prev and kinds.get(gid) == kinds.get(own))
    paths = [path for gid, path in arrows if mine(gid)]
    if not paths:
        return None
    near, tail = min(box_gap(path, box) for path in paths), _drawn_points(paths[0])[0]

    def keep_off(path: MPath) -> float:  # arrows leaving from one point share the room by it: nearer is enough
        return clear if float(np.hypot(*(_drawn_points(path)[0] - tail))) > clear else 0.0
    return next((gid for gid, path in arrows
                 if not mine(gid) and box_gap(path, box) < max(near - slack, keep_off(path))), None)


def arrow_labels_astray(d: Drawn) -> list[str]:
    """A repeat arrow's label stands nearer its own arrow than any other, and clear of the others: "retry 1 at
    90.5 s" stood between its own arrow and the copy arrow at 22 s, and read as naming the copy (lesson 10, a new
    learner)."""
    named = getattr(d.fig, "arrow_labels", {})
    arrows = [(gid, path) for gid, path, _ in _lines(d.fig) if gid.startswith("arrow:")]
    kinds = getattr(d.fig, "arrow_kinds", {})
    out = []
    for t, box, _ in d.texts:
        own = named.get(id(t))
        other = nearer_arrow(box, own, arrows, kinds, d.px(NEARER_PX), d.px(CLEAR_PX)) if own is not None else None
        if other is not None:
            out.append(f"{_name(t)} stands nearer {other} than its own arrow")
    return out


def arrow_labels_partial(d: Drawn) -> list[str]:
    """Repeat arrows of one kind (``fig.arrow_kinds``: the repeat's cause) are all labelled, or none is: where one
    "retry 1" arrow says when and the next says nothing, the reader looks for a difference that is not there."""
    kinds = getattr(d.fig, "arrow_kinds", {})
    shown = {id(t) for t, _, _ in d.texts}
    said = {gid for key, gid in getattr(d.fig, "arrow_labels", {}).items() if key in shown}
    # repeats of one run for one cause share a label (said once, on the first of their arrows)
    said_for = {(gid.split("->")[0], kinds.get(gid)) for gid in said}
    out = []
    for kind in sorted(set(kinds.values())):
        mine = sorted(gid for gid, k in kinds.items() if k == kind)
        bare = [gid for gid in mine if (gid.split("->")[0], kind) not in said_for]
        if bare and len(bare) < len(mine):
            out.append(f"{len(mine) - len(bare)} of {len(mine)} {kind!r} arrows are labelled: not {', '.join(bare)}")
    return out


# -- what a learner found last session
def _arrow_tips(d: Drawn):
    """(axes, gid, tip in display px) of each repeat arrow: the point of its drawn outline nearest where it was
    asked to go (``_posA_posB``, data units; an arrow drawn along a path of its own has none and is left out)."""
    for ax in d.fig.axes:
        for p in ax.patches:
            gid = p.get_gid() or ""
            ends = getattr(p, "_posA_posB", None)
            if not gid.startswith("arrow:") or ends is None:
                continue
            pts = _drawn_points(p.get_transform().transform_path(p.get_path()))
            bx, by = ax.transData.transform(ends[1])
            yield ax, p, gid, pts[int(np.argmin(np.hypot(pts[:, 0] - bx, pts[:, 1] - by)))]


def arrows_ending_in_breaks(d: Drawn) -> list[str]:
    """A repeat arrow's head ends at its repeat, at a time on the axis: one whose tip stands in an axis break points
    at a time the axis left out (lesson 00 cell 18: "retry 1 at 61.0 s" ended in "58 s skipped", short of the
    claim drawn over inv-3's start)."""
    out = []
    for ax, _, gid, tip in _arrow_tips(d):
        gaps = _breaks(d, ax)
        if any(g.x0 + d.px(TOUCH_PX) < tip[0] < g.x1 - d.px(TOUCH_PX) and g.y0 <= tip[1] <= g.y1 for g in gaps):
            out.append(f"{gid} ends inside an axis break")
    return out


def arrows_off_time(d: Drawn) -> list[str]:
    """A repeat arrow's tip stands at the time its repeat started, within :data:`TRUE_PX` (``fig.lanes`` has each
    lane's start): lesson 10's retry arrow on an hour-long axis stopped short of the marks overhanging the retry's
    bar, 13 s early. The head is stroked with round joins: what shows of it reaches half its line width past the tip
    of its outline."""
    lanes = getattr(d.fig, "lanes", {})
    out = []
    for ax, p, gid, tip in _arrow_tips(d):
        inv = gid.rpartition("->")[2]
        if ax is not d.fig.axes[0] or inv not in lanes:
            continue
        x = float(ax.transData.transform((lanes[inv][1], 0))[0])
        round_tip = p.get_linewidth() * d.fig.dpi / 72 / 2  # its outline's tip stands this far back along it
        if not x - round_tip - d.px(TRUE_PX) <= tip[0] <= x + d.px(TRUE_PX):
            out.append(f"{gid} ends {tip[0] - x:+.1f} px from the time its repeat started")
    return out


def ticks_by_breaks(d: Drawn) -> list[str]:
    """A tick label keeps :data:`TICK_GAP_PX` from an axis break, and a break's label from the tick labels: a label
    at a break's edge reads as a time inside it, and the labels either side of a break ("3" and "61") crowd into
    one run of numbers. A label too wide for its stretch between two breaks, with a gap either side, cannot keep off
    them, nor one whose tick stands at the break's edge (its time is there) aligned away from it, its end at its
    tick: those are exempt."""
    out = []
    for ax in d.fig.axes:
        gaps = sorted(_breaks(d, ax), key=lambda g: g.x0)
        if not gaps:
            continue
        plot = ax.get_window_extent(d.r)
        edges = [plot.x0, *[v for g in gaps for v in (g.x0, g.x1)], plot.x1]
        stretches = list(zip(edges[::2], edges[1::2]))  # (from, to) between the breaks
        gap = d.px(TICK_GAP_PX)
        for x, label in zip(ax.get_xticks(), ax.get_xticklabels()):
            if not (label.get_visible() and label.get_text()):
                continue
            box, tick = label.get_window_extent(d.r), float(ax.transData.transform((x, 0))[0])
            cx = (box.x0 + box.x1) / 2
            room = next((b - a for a, b in stretches if a <= cx <= b), plot.width)
            near = [g for g in gaps if box.x1 > g.x0 - gap and box.x0 < g.x1 + gap]
            away = all(box.x1 <= tick + d.px(TOUCH_PX) if g.x0 >= tick else box.x0 >= tick - d.px(TOUCH_PX)
                       for g in near)
            if box.width + 2 * gap < room and near and not away:
                out.append(f"tick {label.get_text()!r} stands within {TICK_GAP_PX:g} px of an axis break")
        names = [text_box(t, d.r) for t in ax.texts if t.get_gid() == "gap-label" and t.get_visible()]
        ticks = [label.get_window_extent(d.r) for label in _tick_labels(ax.xaxis)]
        out += ["a break's label stands on a tick label" for n in names for b in ticks
                if _shared(n.padded(gap / 2), b.padded(gap / 2))[0] > 0 and _shared(n.padded(gap / 2),
                                                                                     b.padded(gap / 2))[1] > 0]
    return out


def ticks_off_centre(d: Drawn) -> list[str]:
    """A tick label is centred on its tick, within :data:`TICK_SHIFT_PX`: aligned away from a break beside it,
    lesson 10's "60" stood 10 px right of its tick and read as a time some seconds later. The axis makes room for
    it instead (``TimeAxis.clear_ticks``). A slanted label is read from where it starts, at its tick (the capstone's
    scoreboard columns): its box's middle says nothing of its place."""
    out = []
    for ax in d.fig.axes:
        for x, label in zip(ax.get_xticks(), ax.get_xticklabels()):
            if not (label.get_visible() and label.get_text()) or label.get_rotation() % 180:
                continue
            box, tick = label.get_window_extent(d.r), float(ax.transData.transform((x, 0))[0])
            off = (box.x0 + box.x1) / 2 - tick
            if abs(off) > d.px(TICK_SHIFT_PX):
                out.append(f"tick {label.get_text()!r} stands {off:+.1f} px off its tick")
    return out


STACK_GAP_PX = 4.0  # px at 100 dpi between the outlines of two marks stacked one above the other, at least (their
#   outlines shrunk by what may touch: about 2 px of white between them as drawn)


def marks_stacked_tight(d: Drawn) -> list[str]:
    """Marks stacked one above the other on a row keep a gap: two ✓ (or ⇓) touching read as one mark, or as marks on
    each other (lesson 05 cells 9 and 17: ⇓⇓ and ✓✓ on the SQS poller's row)."""
    out = []
    for row, ms in d.rows().items():
        for i, a in enumerate(ms):
            for b in ms[i + 1:]:
                w, h = _shared(a.box, b.box)
                if a.ax is not b.ax or w <= d.px(TOUCH_PX) or h > 0:
                    continue
                gap = max(a.box.y0 - b.box.y1, b.box.y0 - a.box.y1)
                if gap < d.px(STACK_GAP_PX):
                    out.append(f"{a} and {b} are stacked {gap:.0f} px apart on {row}")
    return out


DETAIL_CLEARS = 2  # marks a detail row must stand clear of stacks to be worth drawing (``detail.CLEARED``)
PARTED_SHARE = 0.8  # marks stacked on a run are parted by a detail that draws the run this share of the plot wide
#   (the detail's own plan lets the run take the plot's width, less a margin: a run on the edge is not a fault)


def runs_stacked_undetailed(d: Drawn) -> list[str]:
    """A run whose marks at different times stand stacked on its lane, for want of room, where the plot's width
    could stand them side by side (the whole run nearly as wide as the plot), is drawn again in the detail row
    (lesson 02 cell 16: inv-1's 0.4 s bar under an envelope over it and one on its end, and no detail drew it);
    where the plot's width would stand at least :data:`DETAIL_CLEARS` of them clear of any stack (lesson 05 cell 5:
    a "×2" row drew inv-1's 3 s run again, its marks stacked as before: only one could stand clear)."""
    if not _timeline(d):
        return []
    main = d.fig.axes[0]
    width = main.get_window_extent(d.r).width
    runs = {(p.get_gid() or "").split(":")[1]: t1 - t0 for p, t0, t1, _ in getattr(d.fig, "band_times", ())
            if (p.get_gid() or "").startswith("bar:") and p.axes is main and t1 is not None and t1 > t0}
    detailed = {(p.get_gid() or "").split(":")[1] for ax in d.fig.axes[1:] for p in ax.patches
                if (p.get_gid() or "").startswith("bar:")}
    out = []
    for row, ms in d.rows().items():
        inv = row[len("lane:"):]
        if not row.startswith("lane:") or inv not in runs or inv in detailed:
            continue
        most = PARTED_SHARE * width / runs[inv]  # px a second, the run nearly as wide as the plot
        timed = sorted((m for m in ms if m.ax is main and m.t is not None), key=lambda m: cast(float, m.t))
        if not timed:
            continue
        halves = [m.width / 2 for m in timed]
        here = levels([m.x for m in timed], halves, 0.0)
        t0 = cast(float, timed[0].t)
        wide = levels([(cast(float, m.t) - t0) * most for m in timed], halves, 0.0)
        # marks ms apart in a run of seconds stay stacked at any scale: a detail parting one mark off them would
        #   draw the run again as it is (lesson 05 cell 5)
        times = [cast(float, m.t) for m in timed]
        if mixed_stacks(here, times) - mixed_stacks(wide, times) >= DETAIL_CLEARS:
            out.append(f"{inv}'s marks stand stacked for want of room, and no detail row draws it")
    return out


# -- what a new learner found on lesson 10's verdict map, driving the dashboard
UNDER_WORDS = "under-words"  # gid of a line drawn under words, which stops short of them (the map's "lock = work")
CELL_WORDS = "cell-words"  # gid of a map cell's words
NOW_RING = "now-ring"  # gid of the ring marking the current setting between a map's cells
WORDS_CLEAR_PX = 3.0  # px at 100 dpi: a line under words stops this far from their letters, at least


def _opaque(patch) -> bool:
    from matplotlib.colors import to_rgba
    return patch.get_visible() and patch.get_fill() and to_rgba(patch.get_facecolor(), patch.get_alpha())[3] >= 1


def lines_through_words(d: Drawn) -> list[str]:
    """A line drawn under words (gid ``under-words``) stops :data:`WORDS_CLEAR_PX` short of their letters: where
    its dashes come closer they read as striking the words through (lesson 10: the dashed "lock = work" line ran
    through a diagonal cell's "✓ valid" once the ring moved it aside). Under words, something opaque drawn over the
    line covers it that far round them: a patch, or the words' own box. A box of the line's own colour (the map's
    black "now" tab) swallows the line: its letters are not struck."""
    out = []
    for ax in d.fig.axes:
        lines = [ln for ln in ax.lines if ln.get_visible() and (ln.get_gid() or "").startswith(UNDER_WORDS)]
        for ln in lines:
            path = ln.get_transform().transform_path(ln.get_path())
            for t in ax.texts:
                if not t.get_visible() or not t.get_text().strip() or t.get_zorder() <= ln.get_zorder():
                    continue
                near = Text.get_window_extent(t, d.r).padded(d.px(WORDS_CLEAR_PX))
                if not path.intersects_bbox(near, filled=False):
                    continue
                own = t.get_bbox_patch()
                if own is not None and _opaque(own) and _alike(own.get_facecolor(), ln.get_color()):
                    continue
                covers = [p for p in [*ax.patches, *([own] if own is not None else [])]
                          if _opaque(p) and ln.get_zorder() < p.get_zorder() <= t.get_zorder()]
                if not any(_contains(p.get_window_extent(d.r), near) for p in covers):
                    out.append(f"{ln.get_gid()} runs through {_name(t)}")
    return out


def _alike(a, b) -> bool:
    """Two colours a reader cannot tell apart where they meet: WCAG contrast under 1.5:1 (black, and #1F1F1F)."""
    from matplotlib.colors import to_rgba
    la, lb = sorted((_luminance(to_rgba(a)), _luminance(to_rgba(b))))
    return (lb + 0.05) / (la + 0.05) < 1.5


def _contains(outer: Bbox, inner: Bbox) -> bool:
    return outer.x0 <= inner.x0 and inner.x1 <= outer.x1 and outer.y0 <= inner.y0 and inner.y1 <= outer.y1


def words_left_out(d: Drawn) -> list[str]:
    """A map cell's words (gid ``cell-words``) are left out only where the ring (gid ``now-ring``) stands on their
    place: its colour still says the verdict. Left out for anything else, the cell reads as having none (lesson 10
    at lock 25: the black "now: ✗ invalid" tab stood where the (30, 45) cell's words were)."""
    out = []
    for ax in d.fig.axes:
        rings = [ln.get_window_extent(d.r).padded(ln.get_markeredgewidth() / 2 * d.fig.dpi / 72)
                 for ln in ax.lines if ln.get_visible() and ln.get_gid() == NOW_RING]
        for t in ax.texts:
            if t.get_visible() or not (t.get_gid() or "").startswith(CELL_WORDS):
                continue
            t.set_visible(True)  # measured where it would stand (a hidden text has no extent)
            try:
                place = Text.get_window_extent(t, d.r)
            finally:
                t.set_visible(False)
            if not any(d.overlap(place, ring) for ring in rings):
                out.append(f"{_name(t)} ({t.get_gid()}) is left out where no ring stands")
    return out


HEADER_LABELS = ("event-label:", "caller-label")  # gids of the labels of a source's (or a caller's) row


def _lane_spans_px(d: Drawn, ax) -> dict[str, tuple[float, float]]:
    """Each lane's row (``fig.lane_rows``), display y from and to."""
    return {inv: (min(a, b), max(a, b)) for inv, (top, bottom) in getattr(d.fig, "lane_rows", {}).items()
            for a, b in [(float(ax.transData.transform((0, v))[1]) for v in (top, bottom))]}


def header_labels_among_lanes(d: Drawn) -> list[str]:
    """A label of a source's or a caller's row stands on a source's row (``fig.head_rows``), or at least by none of a
    lane's marks: off its row next to one it reads as that mark's (durable-esm-start: "o-1, o-2, o-3 received
    again", of the poller's ↻ at 10:00, stood down under inv-3's ✖, its caret on it)."""
    if not d.fig.axes:
        return []
    ax = d.fig.axes[0]
    lanes = [m for m in d.marks if m.ax is ax and (m.row or "").startswith("lane:")]
    heads = [sorted(float(ax.transData.transform((0, v))[1]) for v in span)
             for span in getattr(d.fig, "head_rows", {}).values()]
    out = []
    for t, box, _ in d.texts:
        if t.axes is not ax or not (t.get_gid() or "").startswith(HEADER_LABELS):
            continue
        if any(box.y0 <= hi and lo <= box.y1 for lo, hi in heads):
            continue  # on a source's row (across its separator, at worst), over the line from the lanes
        out += [f"{_name(t)} stands by {m} on {m.row}, not on its own row" for m in lanes
                if callout_near(box, m.box, d.px(CALLOUT_NEAR_PX))]
    return out


def caller_labels_over_marks(d: Drawn) -> list[str]:
    """What a caller saw ("got 200", "502") stands by the one mark that says when: a label over marks of two moments
    of its row reads as the earlier one's (alb-client-retry: "got 200", of the answer at 35 s, over the 30 s error;
    sync-sdk-retry: "gave up: ReadTimeoutError" over the 2:00 ✖, of the last one at 3:00)."""
    out = []
    for t, box, _ in d.texts:
        gid = t.get_gid() or ""
        if not gid.startswith("caller-label:"):
            continue
        row = f"caller:{gid.split(':', 1)[1]}"
        under = sorted((m.x, m.t) for m in d.marks if m.row == row and m.t is not None and box.x0 <= m.x <= box.x1)
        places = [at for i, (x, at) in enumerate(under) if not i or x - under[i - 1][0] > d.px(END_PX)]  # stacked
        #   marks (a read timeout, the next send and its answer at one instant) stand at one place
        if len(places) > 1:
            out.append(f"{_name(t)} stands over marks at {', '.join(f'{at:g}' for at in places)} s")
    return out


def notes_off_their_lanes(d: Drawn) -> list[str]:
    """A note with a leader ("2nd email o-1") stands nearer the line of the lane whose mark it names than any other
    lane's (``fig.lanes``): nearer another, beside its "✓ ok", it reads as that lane's, whatever its leader says
    (s3-notification-duplicate's inv-2 note stood beside inv-1's outcome)."""
    if not d.fig.axes:
        return []
    ax = d.fig.axes[0]
    spans = _lane_spans_px(d, ax)
    ys = {inv: float(ax.transData.transform((0, y))[1]) for inv, (y, _) in getattr(d.fig, "lanes", {}).items()}
    out = []
    for t, box, _ in d.texts:
        if t.axes is not ax or t.get_gid() not in LEADER_TARGETS or not isinstance(t, Annotation):
            continue
        my = float(ax.transData.transform(t.xy)[1])
        own = next((inv for inv, (lo, hi) in spans.items() if lo <= my <= hi), None)
        if own is None or own not in ys:
            continue
        middle = (box.y0 + box.y1) / 2
        nearer = min(ys, key=lambda inv: abs(middle - ys[inv]))
        if abs(middle - ys[nearer]) < abs(middle - ys[own]) - d.px(TOUCH_PX):
            out.append(f"{_name(t)} names a mark on {own}'s lane but stands nearer {nearer}'s")
    return out


SEEN_LEGEND_PX = 1.0  # px at 100 dpi: a band the legend lists is drawn at least this wide somewhere
TABLE_BANDS = ("lock held", "result kept", "expired")  # the bands it asks that of: the table's (a bar under a pixel
#   has a cap of its look drawn; a poller's invisible stretch under one is still to be left out of the legend)


def _look(p) -> tuple:
    """What a band looks like to a reader: its fill and hatch (its edge may be drawn thinner or dashed)."""
    from matplotlib.colors import to_hex
    return to_hex(p.get_facecolor()), p.get_hatch()  # see-through or not: the colour a reader matches


def legend_unseen(d: Drawn) -> list[str]:
    """A legend lists only what the figure shows: a table band's entry ("lock held (IN_PROGRESS)") has a band of its
    look drawn at least a pixel wide in the timeline or its detail (lesson 02 cell 14: a 0.2 s lock on an hour's axis,
    in no detail row, listed but nowhere to be seen)."""
    if not _timeline(d):
        return []
    drawn: dict[tuple, float] = {}
    for ax in d.fig.axes:
        for p in ax.patches:
            if p.get_visible():
                look = _look(p)
                drawn[look] = max(drawn.get(look, 0.0), p.get_window_extent(d.r).width)
    out = []
    for leg in d.fig.legends:
        for handle, text in zip(leg.legend_handles, leg.get_texts()):
            if type(handle) is Rectangle and text.get_text().startswith(TABLE_BANDS) \
                    and drawn.get(_look(handle), 0.0) < d.px(SEEN_LEGEND_PX):
                out.append(f"the legend lists {_name(text)}, drawn nowhere a pixel wide")
    return out


CHECKS = (outside_figure, separators_dangling, texts_overlapping, texts_on_marks, marks_overlapping, marks_piled,
          marks_off_time, bands_off_time, bars_unseen, scale_bent, ticks_off_time, ticks_uneven, ticks_colliding,
          arrow_labels_on_bands, keys_on_bands, arrows_cut_off, lines_through_marks, end_line_through_marks,
          lanes_drawn_early, texts_unreadable, legend_sprawling, texts_in_breaks, texts_on_axis_line, bars_hidden,
          labels_before_band,
          ticks_off_step, marks_touching_names, bands_behind_bars, labels_uneven, detail_strips_uneven,
          segments_unticked, callouts_unpointed, carets_astray, leaders_across_breaks, arrow_labels_off_their_lanes,
          arrow_labels_partial, arrows_ending_in_breaks, arrows_off_time, runs_stacked_undetailed,
          marks_stacked_tight, ticks_by_breaks, ticks_off_centre, arrows_along_lanes,
          rows_empty, arrow_labels_astray, lines_through_words,
          words_left_out, header_labels_among_lanes, caller_labels_over_marks, notes_off_their_lanes, legend_unseen)


#: What the true-time audit checks: every mark, band end and tick at its time, one scale, stacks in time order.
TRUE_TIME_CHECKS = (marks_off_time, bands_off_time, bars_unseen, scale_bent, ticks_off_time, ticks_uneven, marks_piled,
                    arrows_off_time)


def true_time_faults(fig: Figure | Drawn) -> list[str]:
    """Where ``fig`` (a timeline, drawn) does not tell the true time: the part of :func:`faults` about time."""
    d = fig if isinstance(fig, Drawn) else Drawn(fig)
    return [f for check in TRUE_TIME_CHECKS for f in check(d)]


def faults(fig: Figure | Drawn) -> list[str]:
    """What a reader could not read in ``fig``, as it was last drawn (draw it first)."""
    d = fig if isinstance(fig, Drawn) else Drawn(fig)
    return [f for check in CHECKS for f in check(d)]


def extents(fig: Figure | Drawn) -> dict[str, Any]:
    """What is drawn where, in display px: each text's box and each mark's."""
    d = fig if isinstance(fig, Drawn) else Drawn(fig)
    return {"texts": [[t.get_text(), [round(v, 1) for v in box.extents]] for t, box, _ in d.texts],
            "marks": [[m.gid, [round(v, 1) for v in m.box.extents]] for m in d.marks]}


# -- the opt-in record
def _cell() -> str | None:
    """The source of the notebook cell running now (None outside IPython): execution counts differ between
    IPython's versions while the cell runs, its source does not."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    history = getattr(getattr(shell, "history_manager", None), "input_hist_raw", None)
    return history[-1] if history else None


class Audited(Figure):
    """The base of the sandbox's Figure classes: with the audit on, a figure's first draw after :func:`finish`
    is measured and recorded, so the audit costs no drawing of its own."""

    audit_kind: str | None = None

    def draw(self, renderer) -> None:
        super().draw(renderer)
        kind, self.audit_kind = self.audit_kind, None
        if kind is not None:
            record(self, kind, renderer=renderer)


def finish(fig: Audited, kind: str) -> None:
    """``fig`` is complete: with the audit on, its next draw (when it is shown or saved) is recorded as ``kind``."""
    if AUDIT_DIR is not None:
        fig.audit_kind = kind


def record(fig: Figure, kind: str, *, renderer=None) -> None:
    """When the audit is on, measure ``fig`` as last drawn (with ``renderer``, else its canvas') and write what
    was found."""
    if AUDIT_DIR is None:
        return
    title = next((t.get_text() for ax in fig.axes for t in [ax.title] if t.get_text()), "")
    title = title or next((t.get_text() for t in fig.texts if t.get_text()), "")
    w, h = fig.get_size_inches()
    d = Drawn(fig, renderer)
    out = {"kind": kind, "title": title, "width_in": round(float(w), 3), "height_in": round(float(h), 3),
           "dpi": fig.dpi, "cell": _cell(), "faults": faults(d), **extents(d)}
    AUDIT_DIR.mkdir(parents=True, exist_ok=True)
    path = AUDIT_DIR / f"{os.getpid()}-{next(_count)}.json"
    path.write_text(json.dumps(out, ensure_ascii=False, default=_plain))


def _plain(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else str(v)
