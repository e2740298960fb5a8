"""Drawing stages that work in data coordinates, before the layout is frozen.

Row names and subtitles, the outcome in words at the right, group separators, the
"history ends" line, squeezed-gap bands, the idempotency-table windows, the
invocation bars and pending bands. Each stage returns what later stages need;
:func:`register_static_obstacles` runs once the layout is frozen and tells the
labels what to keep clear of.
"""
from __future__ import annotations

from typing import NamedTuple

from matplotlib import lines as mlines
from matplotlib import patches as mpatches
from matplotlib import text as mtext
from matplotlib import transforms as mtransforms
from matplotlib.transforms import Bbox

from ...vocab import Delivery, Outcome
from .canvas import GAP_OWNER, Canvas
from .model import Batching, Event, Hidden, Window
from .rows import MAX_STRIPS, MESSAGE_TOP, Row, RowKind, lane_keys
from .style import (
    BATCHING_STYLE,
    END_LINE_COLOR,
    GAP_COLOR,
    GAP_EDGE,
    HEADING_PT,
    HIDDEN_DONE_STYLE,
    HIDDEN_STYLE,
    LANE_PT,
    MESSAGE_PT,
    OI_ORANGE,
    OUTCOME_COLORS,
    PENDING_BAND,
    RUNNING_BAR,
    SEPARATOR_COLOR,
    SMALL_PT,
    TEXT_GREY,
    THROTTLED_BAND,
    WINDOW_STYLE,
    Z_BAR,
    Z_END_LINE,
    Z_GAP,
    Z_GAP_LABEL,
    Z_HIDDEN,
    Z_PENDING,
    Z_SEPARATOR,
    Z_WINDOW,
)
from .text import outcome_text
from .timefmt import duration

# y offsets and heights in data units (lanes are 1.0 apart; y grows downwards)
NAME_LIFT = 0.13  # a lane's name (and outcome) moves up to make room for a second line ...
SUB_DROP = 0.25  # ... which sits this far below the lane's centre
BAR_HALF = 0.19  # half an invocation bar's height
BAND_HALF = 0.36  # half a full-height window band
CROWDED_ALPHA = 0.55  # more keys on a lane than it has strips for: full-height bands, see-through
MESSAGE_LINESPACING = 1.1
PENDING_HALF = 0.3  # half a pending band's height

TICK_PAD_PT = 8  # pt: between a row's name and the axes
CAPTION_LIFT_PT = 4  # pt: the only source's name stands this far over the axes' top
OUTCOME_GAP_PT = 8  # pt: between the axes and the outcome column
GAP_LABEL_Y = 0.02  # axes fraction: "30 s skipped" starts just above the bottom, upright
SEPARATOR_LW, END_LINE_LW, GAP_EDGE_LW, BAR_LW, WINDOW_LW = 1.0, 1.3, 0.9, 0.7, 0.7  # pt
GAP_ALPHA = 0.85
SEPARATOR_HALF_PX = 1.5  # px: a separator's obstacle reaches this far above and below it
MIN_BAR_PX = 8  # px at 100 dpi: a narrower bar (a 14 ms run) is drawn true, with a cap this wide centred on it


class WindowBox(NamedTuple):
    """Where a window band was drawn (data coordinates)."""

    window: Window
    x0: float
    x1: float
    y0: float
    h: float


def draw_row_names(c: Canvas) -> list[float]:
    """Row names and subtitles on the y axis, outcomes at the right; returns the separators' y."""
    ax = c.ax
    ys = [r.y - (NAME_LIFT if (r.sub and not c.compact) else 0.0) for r in c.rows.all]
    ax.set_yticks(ys, labels=[r.label for r in c.rows.all])
    ax.tick_params(axis="y", which="both", length=0, pad=TICK_PAD_PT)
    for r, lbl in zip(c.rows.all, ax.get_yticklabels()):
        lbl.set_parse_math(False)
        lbl.set_fontsize(c.fs(LANE_PT) if r.kind == RowKind.LANE else c.fs(HEADING_PT))
        if r.kind != RowKind.LANE:
            lbl.set_fontweight("bold")
    subs = [(r.y, r.sub) for r in c.rows.all if r.sub] if not c.compact else []
    if subs:
        ax.set_yticks([y + SUB_DROP for y, _ in subs], labels=[sub for _, sub in subs], minor=True)
        for lbl in ax.get_yticklabels(minor=True):
            lbl.set_parse_math(False)
            lbl.set_fontsize(c.fs(SMALL_PT))
            lbl.set_color(TEXT_GREY)
    if c.rows.caption:  # the only source's name, over the column of lane names (its row would hold nothing)
        over = ax.transAxes + mtransforms.ScaledTranslation(-TICK_PAD_PT / 72, CAPTION_LIFT_PT / 72,
                                                            c.fig.dpi_scale_trans)
        ax.text(0, 1, c.rows.caption, transform=over, ha="right", va="bottom", fontsize=c.fs(HEADING_PT),
                fontweight="bold", parse_math=False, clip_on=False, gid="source-caption")
    blend = mtransforms.blended_transform_factory(ax.transAxes, ax.transData)
    right = blend + mtransforms.ScaledTranslation(OUTCOME_GAP_PT / 72, 0, c.fig.dpi_scale_trans)
    separators: list[float] = []
    for r in c.rows.all:
        if r.kind == RowKind.LANE:
            _outcome(c, r, right)
        else:
            separators.append(_separator(c, r))
    return separators


def _separator(c: Canvas, r: Row) -> float:
    """The line under a header row (or the sweeper), between two groups of lanes."""
    y = r.y + r.sep
    c.ax.axhline(y, color=SEPARATOR_COLOR, lw=SEPARATOR_LW, zorder=Z_SEPARATOR, gid="separator")
    return y


def _outcome(c: Canvas, r: Row, right: mtransforms.Transform) -> None:
    """The outcome in words right of the axes (``right``), with the error (or failed items) below if there is room."""
    ax = c.ax
    assert r.inv is not None  # a lane's row
    rec = c.model.invs[r.inv]
    text, lines = outcome_text(rec)
    two = bool(lines) and not c.compact
    ax.text(1, r.y - (NAME_LIFT if two else 0.0), text, transform=right, ha="left", va="center",
            fontsize=c.fs(LANE_PT), parse_math=False, clip_on=False, gid=f"outcome:{rec.inv}")
    if two:
        ax.text(1, r.y + MESSAGE_TOP, "\n".join(lines), transform=right, ha="left", va="top",
                fontsize=c.fs(MESSAGE_PT), color=TEXT_GREY, parse_math=False, clip_on=False,
                linespacing=MESSAGE_LINESPACING, gid=f"error:{rec.inv}")


def draw_end_line(c: Canvas) -> mlines.Line2D | None:
    """The "history ends" line, when there is room after the end for notes (``guides.settle_end_line`` moves it
    past the last run's markers, ``labels.label_end_line`` names it)."""
    if not c.taxis.tail:
        return None
    return c.ax.axvline(c.taxis.x(c.model.t_end), color=END_LINE_COLOR, lw=END_LINE_LW, ls=(0, (1.5, 2)),
                        zorder=Z_END_LINE, gid="end-of-history")


def draw_gaps(c: Canvas) -> list[mtext.Text]:
    """Grey bands where idle time was squeezed out, labelled with how much; returns the labels."""
    ax = c.ax
    trans = mtransforms.blended_transform_factory(ax.transData, ax.transAxes)
    labels = []
    for ta, tb, xa, xb in c.taxis.gaps:
        ax.axvspan(xa, xb, facecolor=GAP_COLOR, alpha=GAP_ALPHA, lw=0, zorder=Z_GAP, gid="gap")
        for x in (xa, xb):
            ax.axvline(x, color=GAP_EDGE, lw=GAP_EDGE_LW, ls=(0, (4, 3)), zorder=Z_GAP)
        # Turned upright, on one line, from the bottom up: a break is narrow, and "58.7 min skipped" written across
        # it spilled over the stretches either side, where it read as standing at their times.
        labels.append(ax.text(
            # the detail's rows are short: there, what the break cut out reads from its length alone
            (xa + xb) / 2, GAP_LABEL_Y, duration(tb - ta) + ("" if c.detail else " skipped"), transform=trans,
            rotation=90, rotation_mode="anchor", ha="left", va="center", fontsize=c.fs(SMALL_PT), color=TEXT_GREY,
            zorder=Z_GAP_LABEL, gid="gap-label"))
    return labels


def _band(c: Canvas, w: Window, keys: list[str]) -> tuple[float, float, float]:
    """(top, height, alpha) of a window band: its key's strip under the bar when the lane has strips, else the
    full height of the lane behind the bar (see-through when more keys share it than it has strips for)."""
    strip = c.rows.strip(w.inv, w.key)
    if strip is not None:
        return strip[0], strip[1], 1.0
    y = c.rows.lane_y[w.inv]
    return y - BAND_HALF, 2 * BAND_HALF, CROWDED_ALPHA if len(keys) > MAX_STRIPS else 1.0


def timed(c: Canvas, patch: mpatches.Rectangle, start: float, end: float | None, least: float = 0.0) -> None:
    """Tell the true-time audit where ``patch`` starts and ends (s; ``end`` None: it runs on past the plot), and the
    least width (px at 100 dpi) it is drawn."""
    c.fig.band_times = (*c.fig.band_times, (patch, start, end, least))


def draw_windows(c: Canvas) -> list[WindowBox]:
    """The idempotency-table windows behind the bars: kept records, expired ones, locks on top."""
    tx = c.taxis
    keys = lane_keys(c.model.windows)
    boxes: list[WindowBox] = []
    for kind, z in Z_WINDOW.items():
        face, edge, hatch, _ = WINDOW_STYLE[kind]
        for w in c.model.windows:
            if w.kind != kind:
                continue
            x0 = tx.x(w.start)
            x1 = tx.x_hi if w.end is None else min(tx.x(w.end), tx.x_hi)
            if x1 <= x0:
                continue
            y0, h, alpha = _band(c, w, keys[w.inv])
            band = mpatches.Rectangle((x0, y0), x1 - x0, h, facecolor=face, edgecolor=edge, hatch=hatch,
                                      lw=WINDOW_LW, zorder=z, alpha=alpha, gid=f"{kind}:{w.inv}:{w.key}")
            c.ax.add_patch(band)
            timed(c, band, w.start, w.end if w.end is not None and tx.x(w.end) <= tx.x_hi else None)
            boxes.append(WindowBox(w, x0, x1, y0, h))
    return boxes


class QueueBox(NamedTuple):
    """Where a poller's window was drawn (data coordinates): messages invisible, or a batching window."""

    window: Hidden | Batching
    x0: float
    x1: float
    y0: float
    h: float


def queue_owner(box: QueueBox, i: int) -> str:
    """The obstacle owner of a poller's window: a batching window belongs to its invocation's lane."""
    return f"lane:{box.window.inv}" if isinstance(box.window, Batching) else f"hidden:{i}"


def _stack(hidden: list[Hidden]) -> tuple[list[tuple[Hidden, int]], int]:
    """Each window with the sub-strip it goes in (overlapping ones stack), and how many sub-strips."""
    ends: list[float] = []  # the end of the last window in each sub-strip
    out = []
    for w in sorted(hidden, key=lambda w: (w.start, w.end)):
        i = next((k for k, end in enumerate(ends) if end <= w.start), len(ends))
        ends[i:i + 1] = [w.end]
        out.append((w, i))
    return out, max(1, len(ends))


def draw_queue_windows(c: Canvas) -> list[QueueBox]:
    """On an SQS poller's row, how long the messages of each receive stayed invisible (stacked when several
    overlap); on a lane, the batching window its poller waited out before invoking."""
    tx, out = c.taxis, []
    stacked, n = _stack([w for w in c.model.hidden if w.source in c.rows.head_y])
    for w, i in stacked:
        top, h = c.rows.hidden_strip(w.source)
        y0, x0, x1 = top + i * h / n, tx.x(w.start), tx.x(w.end)
        style = HIDDEN_STYLE if w.ran_out else HIDDEN_DONE_STYLE
        band = mpatches.Rectangle((x0, y0), x1 - x0, h / n, **style, zorder=Z_HIDDEN, gid=f"hidden:{w.source}")
        c.ax.add_patch(band)
        timed(c, band, w.start, w.end)
        out.append(QueueBox(w, x0, x1, y0, h / n))
    for b in c.model.batching:
        if b.inv not in c.rows.lane_y:
            continue
        x0, x1, y = tx.x(b.start), tx.x(b.end), c.rows.lane_y[b.inv]
        style = THROTTLED_BAND if b.kind == Delivery.THROTTLED else BATCHING_STYLE  # 429s, or waiting to invoke
        band = mpatches.Rectangle((x0, y - BAR_HALF), x1 - x0, 2 * BAR_HALF, **style, zorder=Z_BAR,
                                  gid=f"batching:{b.inv}")
        c.ax.add_patch(band)
        timed(c, band, b.start, b.end)
        out.append(QueueBox(b, x0, x1, y - BAR_HALF, 2 * BAR_HALF))
    return out


def draw_bars(c: Canvas) -> dict[str, mpatches.Rectangle]:
    """One bar per invocation, coloured by outcome; returns them by invocation id."""
    tx, model = c.taxis, c.model
    bars: dict[str, mpatches.Rectangle] = {}
    for rec in model.invs.values():
        y = c.rows.lane_y[rec.inv]
        x0 = tx.x(rec.start)
        if rec.outcome is None:
            x1 = tx.x(max(model.t_end, rec.start))
            rect = mpatches.Rectangle((x0, y - BAR_HALF), max(x1 - x0, 0.0), 2 * BAR_HALF, **RUNNING_BAR,
                                      zorder=Z_BAR, gid=f"bar:{rec.inv}:running")
        else:
            assert rec.end is not None  # an ended invocation's
            x1 = tx.x(rec.end)
            partial = rec.outcome == Outcome.OK and bool(rec.failed_items)  # ok, but some items failed
            rect = mpatches.Rectangle((x0, y - BAR_HALF), max(x1 - x0, 0.0), 2 * BAR_HALF,
                                      facecolor=OUTCOME_COLORS[rec.outcome], edgecolor="black",
                                      hatch="\\\\" if partial else None,
                                      hatchcolor=OI_ORANGE if partial else "edge",
                                      lw=BAR_LW, zorder=Z_BAR, gid=f"bar:{rec.inv}:{rec.outcome}")
        c.ax.add_patch(rect)
        timed(c, rect, rec.start, max(model.t_end, rec.start) if rec.end is None else rec.end)
        bars[rec.inv] = rect
    return bars


def draw_pending(c: Canvas) -> list[tuple[Event, mpatches.Rectangle]]:
    """Orders still waiting in a source when the run stopped: a hatched band on its header row."""
    tx = c.taxis
    bands: list[tuple[Event, mpatches.Rectangle]] = []
    for e in c.model.events:
        if e.style != Delivery.PENDING or e.source not in c.rows.head_y:
            continue
        y = c.rows.head_y[e.source]
        x0 = tx.x(e.t0 if e.t0 is not None else e.t)
        x1 = tx.x(c.model.t_end)
        rect = mpatches.Rectangle((x0, y - PENDING_HALF), max(x1 - x0, 0.0), 2 * PENDING_HALF, **PENDING_BAND,
                                  zorder=Z_PENDING, gid=f"pending:{e.source}")
        c.ax.add_patch(rect)
        timed(c, rect, e.t0 if e.t0 is not None else e.t, c.model.t_end)
        bands.append((e, rect))
    return bands


def draw_throttled(c: Canvas) -> None:
    """How long a source kept an event while Lambda throttled it: a dotted band on its header row, up to the
    marker that ends it."""
    tx = c.taxis
    for e in c.model.events:
        if e.style != Delivery.THROTTLED or e.t0 is None or e.source not in c.rows.head_y:
            continue
        y = c.rows.head_y[e.source]
        x0, x1 = tx.x(e.t0), tx.x(e.t)
        band = mpatches.Rectangle((x0, y - PENDING_HALF), max(x1 - x0, 0.0), 2 * PENDING_HALF, **THROTTLED_BAND,
                                  zorder=Z_PENDING, gid=f"throttled:{e.source}")
        c.ax.add_patch(band)
        timed(c, band, e.t0, e.t)


def register_static_obstacles(c: Canvas, separators: list[float], gap_labels: list[mtext.Text],
                              queue_boxes: list[QueueBox]) -> None:
    """What labels must keep clear of that was drawn before the layout was frozen."""
    axbox = c.axes_box()
    for i, box in enumerate(queue_boxes):
        (x0, y0), (x1, y1) = c.px(box.x0, box.y0), c.px(box.x1, box.y0 + box.h)
        c.obs.add(Bbox.from_extents(min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)), queue_owner(box, i))
    for y in separators:
        _, py = c.px(0, y)
        c.obs.add(Bbox.from_extents(axbox.x0, py - SEPARATOR_HALF_PX, axbox.x1, py + SEPARATOR_HALF_PX), "separator")
    for t in gap_labels:
        c.obs.add(t.get_window_extent(c.renderer), "static")
    for _, _, xa, xb in c.taxis.gaps:  # a label on a break would read as standing at a time the axis left out
        (x0, _), (x1, _) = c.px(xa, 0), c.px(xb, 0)
        c.obs.add(Bbox.from_extents(x0, axbox.y0, x1, axbox.y1), GAP_OWNER)
