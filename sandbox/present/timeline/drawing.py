"""The drawing pipeline: every stage, in the order it runs, with what it reads and adds.

:func:`draw` opens the canvas (``frame.py``: sized figure, framed axes), then runs
:data:`PIPELINE`. A stage is a function ``run(canvas, *reads)``; its return value is
stored under ``adds`` for the stages after it, and it gets nothing else, so the
table below is the whole data flow. The first stages draw in data coordinates;
``freeze`` runs constrained layout once and fixes it; the stages after it place
markers, arrows and labels in display space, each avoiding what came before, so
the labels run most important first.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .arrow_labels import label_arrows
from .arrows import draw_arrows
from .canvas import Canvas
from .detail import draw_details, place_detail_markers, time_map
from .figure import TimelineFigure
from .frame import open_canvas, set_time_ticks
from .guides import draw_caller_waits, draw_guides, settle_end_line
from .labels import (
    label_caller_results,
    label_end_line,
    label_other_events,
    label_queue_windows,
    label_redeliveries,
    label_required_events,
    label_sweeps,
)
from .lanes import (
    draw_bars,
    draw_end_line,
    draw_gaps,
    draw_pending,
    draw_queue_windows,
    draw_row_names,
    draw_throttled,
    draw_windows,
    register_static_obstacles,
)
from .legend import LegendPlan, add_legend
from .markers import place_markers
from .model import Model
from .notes import label_duplicates, label_expired, label_strips, label_window_notes
from .style import LEGEND_PT

THIN_TICKS_PT = 8  # pt: a tick label closer than this to its left neighbour is dropped


@dataclass(frozen=True)
class Stage:
    """One drawing step: ``run(canvas, *products named in reads)``, its result kept as ``adds``."""

    run: Callable[..., Any]
    reads: tuple[str, ...] = ()
    adds: str | None = None

    @property
    def name(self) -> str:
        return self.run.__name__


def draw_legend(c: Canvas, legend: LegendPlan) -> None:
    if legend.shown:
        add_legend(c.fig, legend.items, legend.ncols, LEGEND_PT)


def freeze(c: Canvas) -> None:
    """Run constrained layout once and keep it; from here on, positions are display pixels."""
    c.freeze()
    _keep_title_on_the_page(c)


def _keep_title_on_the_page(c: Canvas) -> None:
    """A title centred over the plot area can run off the figure when the lane names are long and the
    figure narrow: slide it back inside (a title that fits stays where it was)."""
    title = c.ax.title
    box, page = title.get_window_extent(c.renderer), c.fig.bbox
    shift = max(0.0, page.x0 - box.x0) - max(0.0, box.x1 - page.x1)
    if shift:
        to_axes = c.ax.transAxes.inverted()
        x0, _ = to_axes.transform((0, 0))
        x1, _ = to_axes.transform((shift, 0))
        title.set_x(title.get_position()[0] + (x1 - x0))


def fit_xticks(c: Canvas) -> None:
    """Choose the time ticks again for the plot's real width, then drop a label that would still touch its left
    neighbour (across a squeezed gap, where two segments' ticks meet, closer than a label's width): the neighbour,
    when it is not its busy stretch's only tick and the label is the first of the next (the time a retry came is
    worth more)."""
    x0, _ = c.px(c.taxis.x_lo, 0)
    x1, _ = c.px(c.taxis.x_hi, 0)
    set_time_ticks(c, (x1 - x0) / (c.taxis.x_hi - c.taxis.x_lo))
    ax = c.ax
    ticks = list(ax.get_xticks())
    labels = [lbl.get_text() for lbl in ax.get_xticklabels()]
    boxes = [lbl.get_window_extent(c.renderer) for lbl in ax.get_xticklabels()]
    ends = c.taxis.bp_x[1::2]
    stretch = [next((k for k, end in enumerate(ends) if x <= end + 1e-9), len(ends) - 1) for x in ticks]
    left = {k: stretch.count(k) for k in set(stretch)}  # ticks each stretch still has
    keep: list[int] = []
    gap = THIN_TICKS_PT * c.fig.dpi / 72
    for i, box in enumerate(boxes):
        # across a break, ticks closer than a label's width read as neighbours on one scale: "0:01:00" beside
        #   "1:00:00" (lesson 02 cell 20) read alike, a minute and an hour
        while keep and box.x0 < boxes[keep[-1]].x1 + (box.width if stretch[keep[-1]] != stretch[i] else gap):
            j = keep[-1]
            first_of_next = stretch[j] != stretch[i] and (i == 0 or stretch[i - 1] != stretch[i])
            if not (first_of_next and left[stretch[j]] > 1):
                break
            keep.pop()
            left[stretch[j]] -= 1
        if keep and box.x0 < boxes[keep[-1]].x1 + gap:
            left[stretch[i]] -= 1
            continue
        keep.append(i)
    if len(keep) < len(ticks):
        ax.set_xticks([ticks[i] for i in keep], labels=[labels[i] for i in keep])
    c.ticks_off_breaks()


PIPELINE: tuple[Stage, ...] = (
    # data coordinates, before the layout is frozen
    Stage(draw_row_names, adds="separators"),
    Stage(draw_end_line, adds="end_line"),
    Stage(draw_gaps, adds="gap_labels"),
    Stage(draw_windows, adds="window_boxes"),
    Stage(draw_queue_windows, adds="queue_boxes"),
    Stage(draw_bars, adds="bars"),
    Stage(draw_pending, adds="pending_bands"),
    Stage(draw_throttled),
    Stage(draw_details, reads=("details",), adds="detail_bars"),
    Stage(draw_legend, reads=("legend",)),
    Stage(freeze),
    # display space: each stage avoids the obstacles registered before it
    Stage(fit_xticks),
    Stage(register_static_obstacles, reads=("separators", "gap_labels", "queue_boxes")),
    Stage(place_markers, reads=("bars",), adds="markers"),
    Stage(place_detail_markers, reads=("details", "detail_bars")),
    Stage(settle_end_line, reads=("end_line", "bars", "markers")),
    Stage(draw_caller_waits, reads=("markers",), adds="caller_waits"),
    Stage(draw_guides, reads=("markers",)),
    Stage(draw_arrows, reads=("bars", "markers"), adds="arrows"),
    # labels, most important first
    Stage(label_window_notes),
    Stage(label_strips),
    Stage(label_required_events, reads=("markers", "pending_bands")),
    Stage(label_end_line, reads=("end_line",)),
    Stage(label_duplicates, reads=("markers",)),
    Stage(label_queue_windows, reads=("queue_boxes",)),
    Stage(label_caller_results, reads=("markers", "caller_waits")),
    Stage(label_redeliveries, reads=("markers",)),
    Stage(label_arrows, reads=("arrows",)),
    Stage(label_other_events, reads=("markers",)),
    Stage(label_expired, reads=("window_boxes", "bars", "markers")),
    Stage(label_sweeps, reads=("markers",)),
)


def run_pipeline(c: Canvas, stages: tuple[Stage, ...], products: dict[str, Any]) -> dict[str, Any]:
    """Run ``stages`` in order on ``c``; returns every product by name."""
    for stage in stages:
        missing = [name for name in stage.reads if name not in products]
        if missing:
            raise RuntimeError(f"stage {stage.name} reads {missing}, which no earlier stage adds")
        result = stage.run(c, *(products[name] for name in stage.reads))
        if stage.adds is not None:
            products[stage.adds] = result
    return products


def draw(model: Model, unit: str, title: str, width: float, gaps: bool, dpi: float,
         legend: bool = True) -> TimelineFigure:
    """The finished figure for ``model`` (without its legend unless ``legend``: ``fig.legend_plan`` says what it
    would show)."""
    canvas, plan, details = open_canvas(model, unit, title, width, gaps, dpi, legend_shown=legend)
    run_pipeline(canvas, PIPELINE, {"legend": plan, "details": details})
    canvas.fig.legend_plan = plan
    canvas.fig.font_scale = canvas.scale.factor
    canvas.fig.lanes = {inv: (canvas.rows.lane_y[inv], canvas.taxis.x(rec.start)) for inv, rec in model.invs.items()}
    canvas.fig.lane_rows = canvas.rows.lane_spans()
    canvas.fig.head_rows = canvas.rows.head_spans()
    canvas.fig.time_map = time_map(canvas)
    canvas.fig.detail_time_maps = {canvas.fig.axes.index(d.ax): time_map(d) for d in details}
    return canvas.fig
