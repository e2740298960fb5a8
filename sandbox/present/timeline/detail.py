"""The detail row: runs too short for their marks at the timeline's scale, drawn again under it, magnified.

A run of 0.2 s in a run of minutes is a sliver, and the envelope sent during it, drawn at
its true time, covers it: the reader sees a mark, not the run it happened in. No mark may
move to make room, so the figure adds a second row under the plot instead: each stretch of
time where such runs happen, drawn at a scale where their bars are long enough to hold their
marks (a stretch's scale is written over it, "×40": forty times the scale above), with
axis breaks between the stretches. In it every bar and mark stands at its true time, and its
ticks read true time; each stretch has one linear scale of its own.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from matplotlib import patches as mpatches
from matplotlib import transforms as mtransforms
from matplotlib.gridspec import GridSpec

from .axis import TimeAxis, _decimals
from .canvas import Canvas
from .figure import TimelineFigure
from .lanes import BAR_HALF as BAR_HALF_ABOVE
from .lanes import MIN_BAR_PX, draw_bars, draw_gaps
from .layout import levels, mixed_stacks, stack_levels
from .model import Model
from .rows import Row, RowKind, Rows
from .sizing import MARKER_PAD_PT, REFERENCE_DPI, STACK_PAD_PT, Scale, text_width_in
from .style import AXIS_LABEL_PT, SMALL_PT, TEXT_GREY, TICK_PT, ink_pt
from .timefmt import tick_label

CROWDED = 0.4  # a run whose marks cover more than this share of its bar (or its cap) is drawn in the detail ...
ROOMY = 0.45  # ... where its marks cover at most this share of its bar
EDGE_IN = 0.14  # in: room at either end of a stretch (half a mark)
BREAK_IN = 0.2  # in: a break between two stretches
LANE = 0.8  # data units per lane in the detail (1.0 in the timeline), at least ...
LINE_ROOM = 0.15  # ... and this beyond its stacked marks
BAR_HALF = 0.24  # half a bar's height in the detail: taller than above, the marks sit on it
ZOOM_ROOM = 0.55  # data units above the first lane, for each stretch's "×40"
AXIS_IN = 0.62  # in: the detail's last row's tick labels and its axis label ...
ROW_AXIS_IN = 0.4  # in: ... every other row's tick labels
CAP_GROW = 0.05  # data units: a cap reaches this far above and below its bar (``markers.CAP_GROW``)
CLEARED = 2  # marks a detail stands clear of the stacks they stood in here, at least: fewer, it draws the run again
STACKED_SLACK_PX = 1.0  # px at 100 dpi: the plot is a little wider or narrower as laid out than estimated here
MEASURABLE_S = 0.001  # s: a shorter run has no length worth magnifying (it errors at once: its ✖ is the run)
EQUAL_RUNS = 0.05  # runs whose lengths differ by at most this share of the longer are magnified alike
MIN_ZOOM = 2.0  # a stretch is magnified at least this much ...
MAX_ZOOM = 5000.0  # ... and at most this much: a run of a tenth of a millisecond is a sliver at any scale,
#   and its cap (which holds its marks, in the detail) says where it is
STEPS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60)  # s between ticks
TICK_CHAR_IN = 0.62 * TICK_PT / 72  # in: a tick label's character, at most ...
TICK_GAP_IN = 0.15  # in: ... and between two labels
TICK_CLEAR_IN = 0.08  # in: between a label and a break beside its stretch (the audit asks 6 px at 100 dpi)


@dataclass(frozen=True)
class Stretch:
    """A stretch of time in the detail: from ``t0`` to ``t1`` (s, padded), ``per_s`` inches a second, and the runs
    in it (top to bottom: runs that overlap in time each take a line of their own)."""

    t0: float
    t1: float
    per_s: float
    invs: tuple[str, ...]
    line: float = 0.8  # data units each of its runs' lines takes: as tall as its marks, stacked at this scale

    @property
    def width_in(self) -> float:
        return (self.t1 - self.t0) * self.per_s


@dataclass(frozen=True)
class DetailPlan:
    """The detail's rows (each a line of stretches, as many as fit the plot's width), the timeline's own scale
    (inches a second) and the plot's width (in)."""

    rows: tuple[tuple[Stretch, ...], ...]
    main_per_s: float
    plot_in: float

    @staticmethod
    def lines(row: tuple[Stretch, ...]) -> int:
        """How many lines a row of the detail needs: as many as its most runs at once."""
        return max(len(s.invs) for s in row)

    def height(self, row: tuple[Stretch, ...]) -> float:
        """Data units of one row of the detail (its lines and the room for its stretches' names and scales)."""
        return self.lines(row) * max(s.line for s in row) + ZOOM_ROOM

    def height_in(self, scale: Scale) -> float:
        """Inches the detail adds to the figure."""
        return sum(self.height(row) * scale.lane_in + ROW_AXIS_IN for row in self.rows) + AXIS_IN - ROW_AXIS_IN


def _covered(box: tuple[float, float, float, float], covers: list[tuple[float, float, float, float]],
             n: int = 24) -> float:
    """The share of ``box`` (x0, x1, y0, y1) that ``covers`` cover together (sampled on an n x n grid), as the
    audit measures a bar hidden under its marks."""
    x0, x1, y0, y1 = box
    xs = x0 + (np.arange(n) + 0.5) * (x1 - x0) / n
    ys = y0 + (np.arange(n) + 0.5) * (y1 - y0) / n
    gx, gy = np.meshgrid(xs, ys)
    hit = np.zeros_like(gx, dtype=bool)
    for a, b, c, d in covers:
        hit |= (gx > a) & (gx < b) & (gy > c) & (gy < d)
    return float(hit.mean())


Crowded = tuple[str, float, float, float, list[float], list[float], list[float]]


def _crowded(model: Model, taxis: TimeAxis, per_x: float, scale: Scale, room_in: float) -> list[Crowded]:
    """(inv, start, end, inches its marks take, and their times, half widths and heights in inches) of each run
    its marks hide at the timeline's scale (``per_x`` inches a plot x)."""
    marks: dict[str, list] = {}
    for m in model.marks:
        if m.inv is not None:
            marks.setdefault(m.inv, []).append(m)
    out = []
    for rec in model.invs.values():
        mine = marks.get(rec.inv)
        if rec.end is None or not mine or rec.end - rec.start < MEASURABLE_S:
            continue  # a run of no measurable length is where its end's mark is, at any scale
        x0, x1 = taxis.x(rec.start) * per_x, taxis.x(rec.end) * per_x
        w = max(x1 - x0, MIN_BAR_PX / REFERENCE_DPI)  # a bar too short to see has a cap this wide
        lo, half = (x0 + x1 - w) / 2, (BAR_HALF_ABOVE + CAP_GROW) * scale.lane_in
        mine.sort(key=lambda m: (m.t, m.seq))
        xs = [taxis.x(m.t) * per_x for m in mine]
        halves = [ink_pt(m.style)[0] * scale.factor / 144 for m in mine]
        talls = [ink_pt(m.style)[1] * scale.factor / 72 for m in mine]
        lifts = stack_levels(xs, halves, talls, MARKER_PAD_PT / 72, STACK_PAD_PT / 72)  # as the marks will stand
        covers = [(x - h, x + h, lift - t / 2, lift + t / 2) for x, h, t, lift in zip(xs, halves, talls, lifts)]
        most_per_s = room_in / (rec.end - rec.start)  # the run as wide as the plot
        if _covered((lo, lo + w, -half, half), covers) > CROWDED or _stacked(mine, xs, halves, most_per_s):
            out.append((rec.inv, rec.start, rec.end, 2 * sum(halves), [m.t for m in mine], halves, talls))
    return out


def _stacked(marks: list, xs: list[float], halves: list[float], most_per_s: float) -> bool:
    """Marks of a run stacked one above the other here, at least :data:`CLEARED` of which a scale of at most
    ``most_per_s`` inches a second (the whole run as wide as the plot) stands clear of any stack of marks of other
    times (``layout.mixed_stacks``; a stack of one instant reads, top to bottom): the run is too
    short for them here (lesson 02 cell 16: inv-1's 0.4 s bar under an envelope over it and one on its end, and no
    detail drew it). Marks a few ms apart in a run of seconds stay stacked: no detail could part them, and one that
    parts a single mark off such a stack draws the run again as it stands (lesson 05 cell 5: inv-1's 3 s run "×2",
    its claims and email stacked as above). A mark stands stacked within :data:`STACKED_SLACK_PX` of its neighbours'
    inks (sqs-visibility-timeout seed 2: two
    envelopes stacked 0.1 px further apart than that, by the plot's width estimated here, overlapped as laid
    out)."""
    slack = STACKED_SLACK_PX / REFERENCE_DPI
    here = levels(xs, halves, MARKER_PAD_PT / 72 + slack)
    t0 = min(m.t for m in marks)
    wide = levels([(m.t - t0) * most_per_s for m in marks], halves, MARKER_PAD_PT / 72)
    times = [m.t for m in marks]
    return mixed_stacks(here, times) - mixed_stacks(wide, times) >= CLEARED


def parting_per_s(times: list[float], halves: list[float], most: float) -> float:
    """Inches a second at which a run's marks at different times stand side by side (``MARKER_PAD_PT`` apart),
    but for those no scale up to ``most`` parts: a detail drawn for its stacks must part them, not draw them stacked
    again at ×2 (lesson 05 cell 5's inv-2 at ×11)."""
    pad = MARKER_PAD_PT / 72
    needs = [(halves[i] + halves[j] + pad) / abs(times[j] - times[i])
             for i in range(len(times)) for j in range(i + 1, len(times)) if times[i] != times[j]]
    return max((n for n in needs if n <= most), default=0.0)


def plan_detail(model: Model, taxis: TimeAxis, plot_in: float, scale: Scale) -> DetailPlan | None:
    """The detail the timeline needs, ``plot_in`` inches wide (None: every run reads at the timeline's scale)."""
    per_x = plot_in / max(taxis.x_hi - taxis.x_lo, 1e-12)
    main_per_s = per_x * (taxis.bp_x[1] - taxis.bp_x[0]) / max(taxis.bp_t[1] - taxis.bp_t[0], 1e-12)
    crowded = sorted(_crowded(model, taxis, per_x, scale, plot_in - 2 * EDGE_IN), key=lambda c: (c[1], c[0]))
    if not crowded:
        return None
    groups: list[list] = []  # [t0, t1, inches a second, invs] of runs that overlap in time
    needs: dict[str, float] = {}
    for inv, start, end, marks_in, ts, hs, _ in crowded:
        parting = parting_per_s(ts, hs, (plot_in - 2 * EDGE_IN) / max(end - start, 1e-6))  # stacks it can part
        need = max(marks_in / ROOMY / max(end - start, 1e-6), MIN_ZOOM * main_per_s, parting)
        need = min(need, MAX_ZOOM * main_per_s)
        needs[inv] = need
        if groups and start <= groups[-1][1]:
            groups[-1][1] = max(groups[-1][1], end)
            groups[-1][2] = max(groups[-1][2], need)
            groups[-1][3].append(inv)
        else:
            groups.append([start, end, need, [inv]])
    stretches = _fitted(_apart(groups, crowded, needs, plot_in), crowded, main_per_s, plot_in, taxis.unit, scale)
    rows: list[list[Stretch]] = [[]]
    used = 0.0
    for stretch in stretches:
        # A new row where the plot is full, and for another magnification: runs side by side on one axis read as
        # drawn to one scale (×218 beside ×12 made a 14 ms run as long as a 220 ms one); and for runs at the time
        # of the stretch before it (a run standing apart, ``_apart``): a row's time runs one way.
        if rows[-1] and (used + BREAK_IN + stretch.width_in > plot_in or not _same_zoom(rows[-1][0], stretch)
                         or _overlapping(rows[-1][-1], stretch, crowded)):
            rows.append([])
            used = 0.0
        used += (BREAK_IN if rows[-1] else 0.0) + stretch.width_in
        rows[-1].append(stretch)
    return DetailPlan(tuple(tuple(row) for row in rows), main_per_s, plot_in)


def _apart(groups: list[list], crowded: list[Crowded], needs: dict[str, float], plot_in: float) -> list[list]:
    """The groups, with each run that its group's stretch would draw shorter than its marks side by side in a group
    of its own: runs that overlap in time share a stretch at one scale, at most the plot's width, and a short one
    beside a long one was hidden under its marks (producer-resend seed 4: the 5 ms re-send beside a 0.22 s run,
    both ×13, under its ◇). Its own stretch overlaps the other's in time, so it stands on a row of its own."""
    runs = {c[0]: c for c in crowded}
    out: list[list] = []
    for a, b, need, invs in groups:
        rate = min(need, (plot_in - 2 * EDGE_IN) / max(b - a, 1e-12))  # at most: the group shares it
        hidden = [inv for inv in invs if len(invs) > 1 and rate * (runs[inv][2] - runs[inv][1]) < runs[inv][3]]
        out += [[runs[inv][1], runs[inv][2], needs[inv], [inv]] for inv in hidden]
        kept = [inv for inv in invs if inv not in hidden]
        if kept:
            out.append([min(runs[inv][1] for inv in kept), max(runs[inv][2] for inv in kept),
                        max(needs[inv] for inv in kept), kept])
    return sorted(out, key=lambda g: (g[0], g[1]))


FIT_TRIES = 4  # times the stretches wider than the plot are narrowed (each by what it was over) ...
FIT_LEAST = 0.5  # ... their runs to no less than this share of their first width: narrower, their marks crowd
#   again, and a stretch whose name and ticks alone are wider than the plot is drawn squeezed, as it was


def _fitted(groups: list[list], crowded: list[Crowded], main_per_s: float, plot_in: float, unit: str,
            scale: Scale) -> list[Stretch]:
    """The stretch of each group, each at most the plot's width once padded for its name and ticks: a wider one
    made its row's axis wider than the plot, drawn squeezed, and its runs at another scale than equal runs in other
    rows (producer-resend: three 0.22 s runs "×13", one drawn 3% shorter). A group whose stretch is too wide has
    that much less room for its runs, and the stretches it shares a scale with follow it; one that could only fit
    with its runs under :data:`FIT_LEAST` of their width (a plot 1.6 in wide) keeps its room."""
    needs = [g[2] for g in groups]
    full = plot_in - 2 * EDGE_IN
    rooms = [full] * len(groups)  # inches each group's runs may take
    first: list[float] = []  # inches each group's runs took at first
    stuck = [False] * len(groups)  # narrowing cannot fit it
    tries = 0
    while True:
        for g, need, room in zip(groups, needs, rooms):
            g[2] = min(need, room / max(g[1] - g[0], 1e-12))
        _alike(groups, crowded, rooms)
        stretches = [_stretch(g, crowded, main_per_s, unit, scale) for g in groups]
        runs = [(g[1] - g[0]) * g[2] for g in groups]
        first = first or runs
        over = [s.width_in - plot_in for s in stretches]
        narrow = [i for i, o in enumerate(over) if o > 1e-9 and not stuck[i]]
        if not narrow or tries == FIT_TRIES:
            return stretches
        tries += 1
        for i in narrow:
            stuck[i] = runs[i] - over[i] < FIT_LEAST * first[i]
            rooms[i] = full if stuck[i] else runs[i] - over[i]


def _stretch(group: list, crowded: list[Crowded], main_per_s: float, unit: str, scale: Scale) -> Stretch:
    """A group's stretch: its runs, padded for its name and scale over it and for two ticks under it."""
    a, b, per_s, invs = group
    named = text_width_in(stretch_name(invs, per_s / main_per_s), scale.fs(SMALL_PT)) + 2 * EDGE_IN
    pad = max(EDGE_IN, (named - (b - a) * per_s) / 2) / per_s  # wide enough for its name and scale
    line = max(_line(c, per_s, scale) for c in crowded if c[0] in invs)
    return Stretch(*_two_ticks(a - pad, b + pad, per_s, unit), per_s, tuple(invs), line)


def _overlapping(a: Stretch, b: Stretch, crowded: list[Crowded]) -> bool:
    """Whether a run of stretch ``a`` and one of ``b`` overlap in time."""
    spans = {c[0]: (c[1], c[2]) for c in crowded}
    return any(spans[i][0] <= spans[j][1] and spans[j][0] <= spans[i][1] for i in a.invs for j in b.invs)


def _same_zoom(a: Stretch, b: Stretch) -> bool:
    return abs(a.per_s - b.per_s) <= EQUAL_RUNS * max(a.per_s, b.per_s)


def _alike(groups: list[list], crowded: list[Crowded], rooms: list[float]) -> None:
    """Runs of one length (within :data:`EQUAL_RUNS`) are magnified alike: the stretches that hold them, and any
    stretch that shares such a run with those, take one scale, the largest they need, within each one's cap, its
    runs ``rooms`` inches wide at most (two 0.2 s runs at ×4.6 and ×5.6, the duplicate's wider envelope needing more
    room, read as unequal)."""
    owner = list(range(len(groups)))  # union-find: the stretches that must share a scale

    def root(i: int) -> int:
        while owner[i] != i:
            i = owner[i]
        return i

    where = {inv: i for i, (_, _, _, invs) in enumerate(groups) for inv in invs}
    runs = [(end - start, inv) for inv, start, end, *_ in crowded]
    for k, (s1, inv1) in enumerate(runs):
        for s2, inv2 in runs[k + 1:]:
            if abs(s1 - s2) <= EQUAL_RUNS * max(s1, s2):
                owner[root(where[inv1])] = root(where[inv2])
    for r in {root(i) for i in range(len(groups))}:
        mine = [g for i, g in enumerate(groups) if root(i) == r]
        cap = min(rooms[i] / max(g[1] - g[0], 1e-12) for i, g in enumerate(groups) if root(i) == r)
        rate = min(max(g[2] for g in mine), cap)
        for g in mine:
            g[2] = rate


def _legible_steps(per_s: float) -> list[float]:
    """The tick steps, finest first, leaving out those too fine for even a one-character label at ``per_s`` inches a
    second (listing their ticks only to reject the step formatted thousands of labels a figure)."""
    return [step for step in STEPS if step * per_s >= TICK_CHAR_IN + TICK_GAP_IN]


def _two_ticks(t0: float, t1: float, per_s: float, unit: str) -> tuple[float, float]:
    """A stretch from ``t0`` to ``t1`` s, widened where it must be to hold two ticks at the finest step whose labels
    keep apart at ``per_s`` inches a second (one tick says where a stretch is, not how long its runs last): by the
    multiples either side, and half a label and :data:`TICK_CLEAR_IN` beyond them, so that both keep off a break
    beside it (durable-esm-start: "15:00.0" and "15:00.2", at its very ends, were each aligned away from their
    break, onto each other)."""
    for step in _legible_steps(per_s):
        dec = _decimals(step)
        k0, k1 = math.ceil(t0 / step - 1e-9), math.floor(t1 / step + 1e-9)
        if k1 == k0:  # one inside: and the nearer of its neighbours
            k0, k1 = (k0 - 1, k0) if t0 - (k0 - 1) * step < (k0 + 1) * step - t1 else (k0, k0 + 1)
        elif k1 < k0:  # none inside: the two either side
            k0, k1 = k1, k0
        vals = [round(k * step, 9) for k in range(k0, k1 + 1)]
        wide = max(len(tick_label(v, dec, unit)) for v in vals) * TICK_CHAR_IN
        if step * per_s >= wide + TICK_GAP_IN:
            half = (wide / 2 + TICK_CLEAR_IN) / per_s
            return min(t0, vals[0] - half), max(t1, vals[-1] + half)
    return t0, t1


def _line(run: Crowded, per_s: float, scale: Scale) -> float:
    """Data units a run's line needs in the detail, at ``per_s`` inches a second: its marks stacked where they
    still crowd (``layout.levels``), and a little room."""
    _, _, _, _, times, halves, talls = run
    depth = max(n for _, n, _ in levels([t * per_s for t in times], halves, MARKER_PAD_PT / 72))
    tall = max(talls)
    return max(LANE, ((depth - 1) * (tall + STACK_PAD_PT / 72) + tall) / scale.lane_in + LINE_ROOM)


def detail_axis(row: tuple[Stretch, ...], unit: str, clock_name: str, plot_in: float) -> TimeAxis:
    """A time axis whose plot x is inches: each stretch at its own scale, breaks of :data:`BREAK_IN` between."""
    axis = TimeAxis.__new__(TimeAxis)
    axis.unit, axis.clock_name, axis.tail = unit, clock_name, 0.0
    axis.segments = [(s.t0, s.t1) for s in row]
    axis.bp_t, axis.bp_x, axis.gaps = [], [], []
    x = 0.0
    for i, s in enumerate(row):
        if i:
            axis.gaps.append((row[i - 1].t1, s.t0, x - BREAK_IN, x))
        axis.bp_t += [s.t0, s.t1]
        axis.bp_x += [x, x + s.width_in]
        x += s.width_in + BREAK_IN
    # the row is as wide as the plot: each stretch at its own scale, and empty room after the last
    axis.x_lo, axis.x_hi, axis.t_hi = axis.bp_x[0], max(axis.bp_x[-1], plot_in), axis.bp_t[-1]
    axis.t_min, axis.span = axis.bp_t[0], axis.bp_t[-1] - axis.bp_t[0]
    return axis


def open_details(model: Model, plan: DetailPlan, main: TimeAxis, scale: Scale, fig: TimelineFigure,
                 grid: GridSpec) -> list[Canvas]:
    """The canvas of each row of the detail, in the grid's rows after the first: only its runs, each on the line
    of its stretch its start order gives it."""
    out = []
    for i, row in enumerate(plan.rows):
        invs = {inv: model.invs[inv] for s in row for inv in s.invs}
        sub = Model(model.meta, invs, marks=[m for m in model.marks if m.inv in invs],
                    t_end=max(rec.end or rec.start for rec in invs.values()))
        line = max(s.line for s in row)
        lines = [Row(ZOOM_ROOM + (k + 0.5) * line, RowKind.LANE, inv, inv, above=line / 2, below=line / 2)
                 for s in row for k, inv in enumerate(s.invs)]
        zooms = tuple(s.per_s / plan.main_per_s for s in row)
        axis = detail_axis(row, main.unit, main.clock_name, plan.plot_in)
        out.append(Canvas(sub, axis, Rows(lines, set()), scale, fig, fig.add_subplot(grid[i + 1]), zooms=zooms))
    return out


def draw_details(_: Canvas, details: list[Canvas]) -> list[dict[str, mpatches.Rectangle]]:
    """A pipeline stage (``drawing.py``): each detail row's frame, breaks, scales and bars; their marks are placed
    with the timeline's, once laid out."""
    return [_draw_row(c, last=i == len(details) - 1) for i, c in enumerate(details)]


def _draw_row(c: Canvas, last: bool) -> dict[str, mpatches.Rectangle]:
    ax = c.ax
    ax.set_xlim(c.taxis.x_lo, c.taxis.x_hi)
    ax.set_ylim(max(r.y + r.below for r in c.rows.all), 0.0)
    ax.set_yticks([])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    _detail_ticks(c)
    if last:
        ax.set_xlabel(f"detail: short runs magnified ×N ({c.taxis.clock_name} time)", fontsize=c.fs(AXIS_LABEL_PT))
    draw_gaps(c)
    top = mtransforms.blended_transform_factory(ax.transData, ax.transAxes)
    for (t0, t1), zoom, a, b in zip(c.taxis.segments, c.zooms, c.taxis.bp_x[::2], c.taxis.bp_x[1::2]):
        invs = [r.inv for r in c.rows.all if r.inv is not None and t0 <= c.model.invs[r.inv].start <= t1]
        ax.text((a + b) / 2, 0.99, stretch_name(invs, zoom), transform=top, ha="center", va="top",
                fontsize=c.fs(SMALL_PT), color=TEXT_GREY, gid="detail-zoom", parse_math=False)
    bars = draw_bars(c)
    for inv, rect in bars.items():  # taller than above: the marks sit on it, and it shows round them
        y = c.rows.lane_y[inv]
        rect.set_y(y - BAR_HALF)
        rect.set_height(2 * BAR_HALF)
    return bars


def stretch_name(invs: list[str] | tuple[str, ...], zoom: float) -> str:
    """What a stretch of the detail says over it: its runs and how many times the timeline's scale it is drawn at,
    rounded: "inv-1 ×40", "inv-3, inv-4 ×2.5"."""
    times = f"{zoom:.0f}" if zoom >= 10 else f"{zoom:.1f}".removesuffix(".0")
    return f"{', '.join(invs)} ×{times}"


def _detail_ticks(c: Canvas) -> None:
    """Ticks at true times: in each stretch, the finest round step whose labels keep apart, on multiples of it, and
    whose labels keep off the breaks beside the stretch, where two such ticks fit ("30.6" centred on its tick stood
    at the edge of "30 s", and aligned away from it, on "30.8")."""
    xs: list[float] = []
    labels: list[str] = []
    n = len(c.taxis.segments)
    for i, ((a, b), x0, x1) in enumerate(zip(c.taxis.segments, c.taxis.bp_x[::2], c.taxis.bp_x[1::2])):
        per_s = (x1 - x0) / max(b - a, 1e-12)
        found = None
        for step in _legible_steps(per_s):
            dec = _decimals(step)
            vals = [round(k * step, 9) for k in range(math.ceil(a / step - 1e-9), math.floor(b / step + 1e-9) + 1)]
            wide = max((len(tick_label(v, dec, c.taxis.unit)) for v in vals), default=0)
            if vals and step * per_s >= wide * TICK_CHAR_IN + TICK_GAP_IN:
                off = (wide * TICK_CHAR_IN / 2 + TICK_CLEAR_IN) / per_s  # s: a label's half, and room to a break
                clear = [v for v in vals if (i == 0 or v >= a + off - 1e-9) and (i == n - 1 or v <= b - off + 1e-9)]
                found = found or (vals, dec)  # the finest that keeps apart, should none keep off the breaks
                if len(clear) >= 2:
                    found = (clear, dec)
                    break
        if found is not None:
            xs += [c.taxis.x(v) for v in found[0]]
            labels += [tick_label(v, found[1], c.taxis.unit) for v in found[0]]
    c.ax.set_xticks(xs, labels=labels)
    c.ax.tick_params(axis="x", labelsize=c.fs(TICK_PT))


def place_detail_markers(_: Canvas, details: list[Canvas], bars: list[dict[str, mpatches.Rectangle]]) -> None:
    """A pipeline stage: each detail row's marks, at their true times on its scale (stacked where they crowd)."""
    from .markers import place_markers  # markers reads the canvas this module's callers make
    for c, mine in zip(details, bars):
        place_markers(c, mine)
        c.ticks_off_breaks(least=2)  # the row's layout is final: its tick labels keep off its breaks


def time_map(c: Canvas) -> tuple[tuple[float, float, float, float], ...]:
    """The segments of ``c``'s time axis, (t0, t1, x0, x1): what the audit maps marks and ticks back with."""
    tx = c.taxis
    return tuple((tx.bp_t[i], tx.bp_t[i + 1], tx.bp_x[i], tx.bp_x[i + 1]) for i in range(0, len(tx.bp_t), 2))


__all__ = ["DetailPlan", "draw_details", "open_details", "place_detail_markers", "plan_detail", "time_map"]
