"""The figure class the timeline returns, and what an empty history shows."""
from __future__ import annotations

import io
from collections.abc import Mapping
from types import MappingProxyType

from matplotlib import rc_context
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from .audit import Audited
from .legend import LegendPlan, add_legend
from .render import TimelineCanvas
from .sizing import LEGEND_ROW_IN, MARGIN_IN
from .style import LEGEND_PT, TEXT_GREY, matplotlib_style

EMPTY_MAX_WIDTH_IN = 10.0  # in: the empty figure is at most this wide ...
EMPTY_HEIGHT_IN = 3.0  # in: ... and this tall
EMPTY_TITLE_PT = 15
EMPTY_TEXT_PT = 14


class TimelineFigure(Audited):
    """A Figure that shows itself as PNG in Jupyter even without pyplot.

    For the figure audit (``audit.py``): ``lanes``, each invocation's lane y and the plot x where it started;
    ``mark_times``, for each marker line (by gid), the time (s) each of its markers stands for and the row it is
    on, in the line's order; ``band_times``, each band with the times (s) it starts and ends (None: it runs on
    past the plot) and the least width (px at 100 dpi) it is drawn; ``time_map``, the time axis' segments
    between its breaks, (t0, t1, x0, x1) in seconds and plot x; ``font_scale``, how much its fonts shrink (many
    lanes); ``arrow_labels``, ``arrow_kinds`` and ``lane_rows``, what each repeat arrow's label names, what kind of
    repeat each arrow is, and how far each lane's row reaches; ``head_rows``, how far each header row reaches.
    ``legend_plan``: the legend it shows, or would show when drawn without it."""

    lanes: Mapping[str, tuple[float, float]] = MappingProxyType({})
    mark_times: Mapping[str, list[tuple[float, str]]] = MappingProxyType({})
    band_times: tuple[tuple[Patch, float, float | None, float], ...] = ()
    time_map: tuple[tuple[float, float, float, float], ...] = ()
    legend_plan: LegendPlan | None = None
    arrow_labels: Mapping[int, str] = MappingProxyType({})  # id of an arrow's label -> the arrow's gid
    arrow_kinds: Mapping[str, str] = MappingProxyType({})  # an arrow's gid -> its kind (the repeat's cause)
    lane_rows: Mapping[str, tuple[float, float]] = MappingProxyType({})  # each lane's row: top and bottom (data y)
    head_rows: Mapping[str, tuple[float, float]] = MappingProxyType({})  # each header row, by name: top and separator
    font_scale: float = 1.0  # the fonts' scale (less than 1 with very many lanes), for the audit's least size
    # the detail's rows' (its axes after the first, ``detail.py``), by the axes' place in the figure: as time_map and
    # mark_times, for each
    detail_time_maps: Mapping[int, tuple[tuple[float, float, float, float], ...]] = MappingProxyType({})
    detail_mark_times: Mapping[int, Mapping[str, list[tuple[float, str]]]] = MappingProxyType({})

    canvas: FigureCanvasAgg  # new_figure gives it one

    def _repr_png_(self) -> bytes:
        buf = io.BytesIO()
        with matplotlib_style():
            self.savefig(buf, format="png", dpi=self.dpi, metadata={"Software": None})
        return buf.getvalue()


def new_figure(width: float, height: float, dpi: float) -> TimelineFigure:
    """A figure with its own Agg canvas (no pyplot; its text measured once a process, ``render.py``), laid out by
    constrained layout until frozen."""
    fig = TimelineFigure(figsize=(width, height), dpi=dpi, layout="constrained")
    TimelineCanvas(fig)
    return fig


def freeze_layout(fig: Figure) -> None:
    """Run constrained layout once, then keep it: what is placed afterwards must not move the axes.

    The engine measures every artist itself; a whole draw without rendering, as matplotlib's
    ``draw_without_rendering`` makes around it, would measure them all a second time.
    """
    engine = fig.get_layout_engine()
    if fig.axes and engine is not None:
        try:
            engine.execute(fig)
        except ValueError:  # as in Figure.draw: a layout that cannot be solved leaves the axes where they are
            pass
    drop_layout_engine(fig)


def drop_layout_engine(fig: Figure) -> None:
    """No layout engine at all, not matplotlib's "none" placeholder: with any engine set, every ``savefig`` draws
    the whole figure once more before it renders it (the same PNG, ~13% slower)."""
    with rc_context({"figure.autolayout": False, "figure.constrained_layout.use": False}):
        fig.set_layout_engine(None)


def legend_figure(plan: LegendPlan, width: float, dpi: float) -> TimelineFigure:
    """The legend of a timeline drawn without it, as a picture of its own ``width`` inches wide: placed under
    that timeline, the two read as the one figure ``plot_timeline`` draws with its legend."""
    fig = new_figure(width, plan.rows * LEGEND_ROW_IN + MARGIN_IN, dpi)
    drop_layout_engine(fig)
    with matplotlib_style():
        add_legend(fig, plan.items, plan.ncols, LEGEND_PT, loc="center")
    return fig


def empty_figure(title: str, width: float, dpi: float) -> TimelineFigure:
    """What a history without invocations shows: its title and a hint."""
    fig = new_figure(min(width, EMPTY_MAX_WIDTH_IN), EMPTY_HEIGHT_IN, dpi)
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.set_title(title, fontsize=EMPTY_TITLE_PT, fontweight="bold", parse_math=False)
    ax.text(0.5, 0.5, "No invocations in this history yet.\nRun a scenario, then plot its history.",
            ha="center", va="center", fontsize=EMPTY_TEXT_PT, color=TEXT_GREY, transform=ax.transAxes,
            gid="empty-message")
    freeze_layout(fig)
    return fig
