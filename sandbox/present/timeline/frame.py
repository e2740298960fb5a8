"""Opening the canvas: the time axis, the rows, the figure's size, and the axes' frame and ticks.

Everything the drawing stages take as given is decided here, once: how the time
axis maps seconds, which rows exist, how large the figure is (which depends on the
rows, the notes after the end of the history and the legend), and the axes' limits,
title and time ticks.
"""
from __future__ import annotations

from matplotlib.layout_engine import ConstrainedLayoutEngine

from .axis import TICK_CHAR_EM, TimeAxis
from .canvas import TICK_CLEAR_PX, Canvas
from .detail import open_details, plan_detail
from .figure import new_figure
from .legend import LegendPlan, legend_items
from .model import Model, Window
from .rows import layout_rows
from .sizing import (
    PLOT_SHARE,
    REFERENCE_DPI,
    Scale,
    figure_height,
    fit_title,
    legend_layout,
    make_room,
    mark_room,
    plot_width_in,
    stack_reach,
    strip_key_room,
    title_height,
    y_limits,
)
from .style import AXIS_LABEL_PT, GRID_COLOR, TICK_PT, TITLE_PT

BREAK_MIN_IN = 0.24  # in: a break is at least this wide (its label, upright in it, is 10 pt tall)
H_PAD_IN, W_PAD_IN = 0.06, 0.08  # in: constrained layout's padding around the axes
TITLE_PAD_PT = 12  # pt: between the title and the plot
CAPTION_PT = 20  # pt: the title stands this much higher over a caption (``lanes.draw_row_names``)
GRID_LW = 0.8  # pt
ROOM_TRIES = 3  # times the ticks are worked out again after the stretches took in room for them, at most
TICK_SLACK_PX = 2  # px at 100 dpi: a tick label's width, estimated from its characters, may be this much short


def open_canvas(model: Model, unit: str, title: str, width: float, gaps: bool,
                dpi: float, legend_shown: bool = True) -> tuple[Canvas, LegendPlan, list[Canvas]]:
    """A sized figure with its axes framed, the legend it has room for (or, when not ``legend_shown``, the
    legend a picture of its own would show: the figure then has no room for it), and the canvas of its detail
    rows (``detail.py``), when runs are too short for their marks at its scale."""
    taxis = TimeAxis(model, unit, gaps)
    rows = layout_rows(model)
    scale = Scale.for_rows(rows)
    room, notes = make_room(model, rows, width, scale)
    if room:
        taxis.extend_right(room, notes=notes)
    elif after := mark_room(model, taxis, plot_width_in(model, rows, width, scale), scale, end=True):
        taxis.extend_right(after, notes=False)  # a mark at the very end stays inside the plot
    plot_in = plot_width_in(model, rows, width, scale) * (1 - room)
    left = max(strip_key_room(model, rows, taxis, plot_in, scale), mark_room(model, taxis, plot_in, scale))
    if left:  # a lane's keys are named left of its first strip, and a mark at the start is whole: room for them
        taxis.extend_left(left)
    plot_in = plot_width_in(model, rows, width, scale)
    taxis.widen_breaks(BREAK_MIN_IN / plot_in * (taxis.x_hi - taxis.x_lo))  # room for each break's upright label
    _room_for_ticks(model, taxis, plot_in * dpi, scale.fs(TICK_PT) * dpi / 72, dpi / 100)
    reach = stack_reach(model, taxis, plot_width_in(model, rows, width, scale) * (1 - room) * (1 - left), scale)
    if reach:  # marks that crowd stack up and down: their rows grow to hold them
        rows = layout_rows(model, reach)
        scale = Scale.for_rows(rows)
    squeezed = bool(taxis.gaps)
    items = legend_items(model, squeezed=squeezed, seen=_seen(taxis, plot_width_in(model, rows, width, scale)))
    ncols, texts, legend_rows = legend_layout([text for _, text in items], width)
    legend = LegendPlan([(handle, text) for (handle, _), text in zip(items, texts)], ncols, legend_rows, legend_shown)
    title = fit_title(title, width, scale.fs(TITLE_PT))
    plan = plan_detail(model, taxis, plot_width_in(model, rows, width, scale), scale)
    fig = new_figure(width, figure_height(rows, scale, squeezed, legend_rows if legend_shown else 0.0,
                                          title_height(title, scale.fs(TITLE_PT))
                                          + (CAPTION_PT / 72 if rows.caption else 0.0),
                                          plan.height_in(scale) if plan else 0.0), dpi)
    engine = fig.get_layout_engine()
    assert isinstance(engine, ConstrainedLayoutEngine)  # new_figure's
    engine.set(h_pad=H_PAD_IN, w_pad=W_PAD_IN)
    details: list[Canvas] = []
    if plan is None:
        canvas = Canvas(model, taxis, rows, scale, fig, fig.add_subplot())
    else:  # the timeline over the rows of its detail, a lane as tall in each
        lo, hi = y_limits(rows, squeezed)
        grid = fig.add_gridspec(1 + len(plan.rows), 1, height_ratios=[lo - hi, *map(plan.height, plan.rows)])
        canvas = Canvas(model, taxis, rows, scale, fig, fig.add_subplot(grid[0]))
        details = open_details(model, plan, taxis, scale, fig, grid)
    _frame(canvas, title, squeezed)
    x_span = canvas.taxis.x_hi - canvas.taxis.x_lo
    set_time_ticks(canvas, width * PLOT_SHARE * dpi / x_span if x_span > 0 else 1.0)
    _axis_style(canvas)
    return canvas, legend, details


SEEN_PX = 1.0  # px at 100 dpi: a table window narrower than this is drawn, but no reader sees it


def _seen(taxis: TimeAxis, plot_in: float):
    """Whether a table window is drawn wide enough to see on the axis (``plot_in`` wide): the legend lists only
    what can be seen (lesson 02 cell 14: a 0.2 s lock on an hour's axis, in no detail row, was listed)."""
    span = taxis.x_hi - taxis.x_lo
    px_per_x = plot_in * REFERENCE_DPI / span if span > 0 else 0.0

    def seen(w: Window) -> bool:
        x1 = taxis.x_hi if w.end is None else min(taxis.x(w.end), taxis.x_hi)
        return (x1 - taxis.x(w.start)) * px_per_x >= SEEN_PX
    return seen


def _frame(c: Canvas, title: str, squeezed: bool) -> None:
    ax = c.ax
    pad = TITLE_PAD_PT + (CAPTION_PT if c.rows.caption else 0)
    # y=1.0 is where matplotlib puts a title over an axes with no ticks above it; given, it stops matplotlib from
    # measuring every row name again (all of the y axis) to check that, at each layout pass and at each draw
    ax.set_title(title, fontsize=c.fs(TITLE_PT), fontweight="bold", pad=pad, parse_math=False, y=1.0)
    ax.set_xlim(c.taxis.x_lo, c.taxis.x_hi)
    ax.set_ylim(*y_limits(c.rows, squeezed))
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)


def set_time_ticks(c: Canvas, px_per_x: float) -> None:
    """Round time ticks for ``px_per_x`` display px per plot x unit; none after the end of the history."""
    taxis = c.taxis
    em_px = c.fs(TICK_PT) * c.fig.dpi / 72
    until = tick_until(c.model, taxis)
    starts = tuple(rec.start for rec in c.model.invs.values())
    marks = tuple(m.t for m in c.model.marks)  # a stretch with no run's start is read at its first mark
    xt, xl = taxis.ticks([w * px_per_x for w in taxis.segment_widths()], em_px, until, starts, marks)
    c.ax.set_xticks(xt, labels=xl)


def tick_until(model: Model, taxis: TimeAxis) -> float | None:
    """The last time a tick may show (None: the axis' end). The room after the history, which holds notes, has no
    ticks: nothing happened there. Where a band ends in that room, ticks go as far as the latest such end, so its
    end can be read off the axis (lesson 02: o-1's record, kept an hour, ended at 3:04:34 with no tick after
    2:00:00)."""
    if not taxis.tail:
        return None
    ends = [w.end for w in model.windows if w.end is not None and model.t_end < w.end <= taxis.t_hi]
    return max([model.t_end, *ends])


def _room_for_ticks(model: Model, taxis: TimeAxis, plot_px: float, em_px: float, px: float) -> None:
    """The ticks ``set_time_ticks`` will set, each centred on its tick clear of the breaks: the stretches beside a
    break take in the room (``TimeAxis.clear_ticks``). ``plot_px``: the plot's width in px, roughly; ``px``: display
    px per px at 100 dpi."""
    if not taxis.gaps:
        return
    until = tick_until(model, taxis)
    starts = tuple(rec.start for rec in model.invs.values())
    marks = tuple(m.t for m in model.marks)
    for _ in range(ROOM_TRIES):  # the room changes the scale a little, and so the step: "62.5" became "62"
        before = list(taxis.gaps)
        px_per_x = plot_px / (taxis.x_hi - taxis.x_lo)
        xs, labels = taxis.ticks([w * px_per_x for w in taxis.segment_widths()], em_px, until, starts, marks)
        half = [(len(label) * TICK_CHAR_EM * em_px / 2 + TICK_SLACK_PX * px) / px_per_x for label in labels]
        taxis.clear_ticks(list(zip(map(taxis.t_at, xs), half)), TICK_CLEAR_PX * px / px_per_x)
        if taxis.gaps == before:
            return


def _axis_style(c: Canvas) -> None:
    ax = c.ax
    ax.tick_params(axis="x", labelsize=c.fs(TICK_PT))
    ax.set_xlabel(c.taxis.label, fontsize=c.fs(AXIS_LABEL_PT))
    # the y axis has no label: placed by hand, matplotlib stops measuring every row name to place it beside them
    ax.yaxis.set_label_coords(0.0, 0.5)
    ax.grid(axis="x", color=GRID_COLOR, lw=GRID_LW, zorder=0)
    ax.set_axisbelow(True)
