"""Opening the canvas: the time axis, the rows, the figure's size, and the axes' frame and ticks.

Everything the drawing stages take as given is decided here, once: how the time
axis maps seconds, which rows exist, how large the figure is (which depends on the
rows, the notes after the end of the history and the legend), and the axes' limits,
title and time ticks.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .axis import TimeAxis
from .canvas import Canvas
from .figure import new_figure
from .legend import legend_items
from .model import Model
from .rows import layout_rows
from .sizing import TICKS_SHARE, Scale, figure_height, legend_columns, note_room, y_limits
from .style import AXIS_LABEL_PT, GRID_COLOR, TICK_PT, TITLE_PT

H_PAD_IN, W_PAD_IN = 0.06, 0.08  # in: constrained layout's padding around the axes
TITLE_PAD_PT = 12  # pt: between the title and the plot
GRID_LW = 0.8  # pt


@dataclass(frozen=True)
class LegendPlan:
    """The legend the figure was sized for: its entries and columns."""

    items: list[tuple[Any, str]]
    ncols: int


def open_canvas(model: Model, unit: str, title: str, width: float, gaps: bool,
                dpi: float) -> tuple[Canvas, LegendPlan]:
    """A sized figure with its axes framed, and the legend it has room for."""
    taxis = TimeAxis(model, unit, gaps)
    rows = layout_rows(model)
    scale = Scale.for_rows(rows)
    room = note_room(model, width, scale)
    if room:
        taxis.extend_right(room)
    squeezed = bool(taxis.gaps)
    legend = LegendPlan(legend_items(model, squeezed=squeezed), legend_columns(width))
    fig = new_figure(width, figure_height(rows, scale, squeezed, len(legend.items), width), dpi)
    fig.get_layout_engine().set(h_pad=H_PAD_IN, w_pad=W_PAD_IN)
    canvas = Canvas(model, taxis, rows, scale, fig, fig.add_subplot())
    _frame(canvas, title, squeezed)
    _time_ticks(canvas, width)
    return canvas, legend


def _frame(c: Canvas, title: str, squeezed: bool) -> None:
    ax = c.ax
    ax.set_title(title, fontsize=c.fs(TITLE_PT), fontweight="bold", pad=TITLE_PAD_PT, parse_math=False)
    ax.set_xlim(c.taxis.x_lo, c.taxis.x_hi)
    ax.set_ylim(*y_limits(c.rows, squeezed))
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)


def _time_ticks(c: Canvas, width: float) -> None:
    ax, taxis = c.ax, c.taxis
    xt, xl = taxis.ticks(width * TICKS_SHARE)
    if taxis.tail:  # no ticks after the end of the history
        x_end = taxis.x(c.model.t_end)
        xl = [lbl for x, lbl in zip(xt, xl) if x <= x_end + 1e-12]
        xt = [x for x in xt if x <= x_end + 1e-12]
    ax.set_xticks(xt, labels=xl)
    ax.tick_params(axis="x", labelsize=c.fs(TICK_PT))
    ax.set_xlabel(taxis.label, fontsize=c.fs(AXIS_LABEL_PT))
    ax.grid(axis="x", color=GRID_COLOR, lw=GRID_LW, zorder=0)
    ax.set_axisbelow(True)
