"""The figure: sizing it, freezing its layout, and running the drawing stages in order.

:class:`Drawing` sizes the figure from the lane count and the legend, draws
everything that lives in data coordinates (``lanes.py``) and the legend, runs
constrained layout once and freezes it, then places everything that must not
overlap in display space: markers, guide lines and caller waits (``markers.py``),
repeat arrows (``arrows.py``) and labels, most important first (``labels.py``).
"""
from __future__ import annotations

import io
import math

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .arrows import ArrowStage
from .axis import TimeAxis
from .labels import LabelStage
from .lanes import LaneStage, busy_sources, layout_rows
from .layout import Obstacles
from .legend import add_legend, legend_items
from .markers import MarkerStage
from .model import Model
from .style import TEXT_GREY, matplotlib_style
from .text import note_text, note_what


class TimelineFigure(Figure):
    """A Figure that shows itself as PNG in Jupyter even without pyplot."""

    def _repr_png_(self) -> bytes:
        buf = io.BytesIO()
        with matplotlib_style():
            self.savefig(buf, format="png", dpi=self.dpi, metadata={"Software": None})
        return buf.getvalue()


def empty_figure(title: str, width: float, dpi: float) -> TimelineFigure:
    """What a history without invocations shows: its title and a hint."""
    fig = TimelineFigure(figsize=(min(width, 10.0), 3.0), dpi=dpi, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.set_title(title, fontsize=15, fontweight="bold")
    ax.text(0.5, 0.5, "No invocations in this history yet.\nRun a scenario, then plot its history.",
            ha="center", va="center", fontsize=14, color=TEXT_GREY, transform=ax.transAxes,
            gid="empty-message")
    fig.draw_without_rendering()
    fig.set_layout_engine("none")
    return fig


class Drawing(LaneStage, MarkerStage, ArrowStage, LabelStage):
    """Draws one model; the finished figure is ``.fig``."""

    def __init__(self, model: Model, unit: str, title: str, width: float, gaps: bool, dpi: float):
        self.model = model
        self.taxis = TimeAxis(model, unit, gaps)
        self.rows = layout_rows(model)
        self.lane_y = {r.inv: r.y for r in self.rows if r.kind == "lane"}
        self.head_y = {r.source: r.y for r in self.rows if r.kind == "heading"}
        self.sweeper_y = next((r.y for r in self.rows if r.kind == "sweeper"), None)
        self.busy = busy_sources(model)
        n_units = self.rows[-1].y + 1.0 + (0.3 if self.rows[0].source in self.busy else 0.0)
        bottom_extra = 0.8 if self.taxis.gaps else 0.0
        # vertical scale: 0.5 in per lane, shrinking for very many lanes
        per = 0.5
        if n_units * per > 22:
            per = max(22 / n_units, min(0.16, 44 / n_units))
        self.scale = max(0.55, min(1.0, per / 0.5))
        self.compact = per < 0.36
        fs = self.fs = lambda base: max(6.0, round(base * self.scale, 1))
        # windows that outlive the history get a note ("o-1 kept 24 h →") in extra room
        # at the right, after an "end of history" line, so the note never covers a lane
        long_windows = [w for w in model.windows if w.end is None or w.end > model.t_end]
        if long_windows:
            longest = max(len(note_text([w.key], note_what(w))) for w in long_windows)
            note_in = longest * 0.6 * fs(10) / 72 + 0.3
            self.taxis.extend_right(min(0.4, note_in / (width * 0.6)))
        present = legend_items(model, squeezed=bool(self.taxis.gaps))
        ncols = 3 if width >= 11 else 2
        legend_rows = math.ceil(len(present) / ncols)
        height = 0.85 + (n_units + 0.6 + bottom_extra) * per + 0.75 + legend_rows * 0.3 + 0.3
        height = min(max(height, 3.2), 50.0)

        fig = self.fig = TimelineFigure(figsize=(width, height), dpi=dpi, layout="constrained")
        FigureCanvasAgg(fig)
        fig.get_layout_engine().set(h_pad=0.06, w_pad=0.08)
        ax = self.ax = fig.add_subplot()
        ax.set_title(title, fontsize=fs(16), fontweight="bold", pad=12)
        ax.set_xlim(self.taxis.x_lo, self.taxis.x_hi)
        first = self.rows[0]
        self.y_top = -0.8 if first.kind == "heading" and first.source in self.busy else -0.5
        ax.set_ylim(self.rows[-1].y + 0.6 + bottom_extra, self.y_top)
        for side in ("left", "right", "top"):
            ax.spines[side].set_visible(False)
        xt, xl = self.taxis.ticks(width * 0.62)
        if self.taxis.tail:  # no ticks after the end of the history
            x_end = self.taxis.x(model.t_end)
            xl = [lbl for x, lbl in zip(xt, xl) if x <= x_end + 1e-12]
            xt = [x for x in xt if x <= x_end + 1e-12]
        ax.set_xticks(xt, labels=xl)
        ax.tick_params(axis="x", labelsize=fs(11))
        ax.set_xlabel(self.taxis.label, fontsize=fs(12))
        ax.grid(axis="x", color="#DDDDDD", lw=0.8, zorder=0)
        ax.set_axisbelow(True)

        self._yaxis()
        self._end_line()
        self._gaps()
        self._windows()
        self._bars()
        self._pending()
        add_legend(fig, present, ncols, fs(11))

        fig.draw_without_rendering()  # run constrained layout once, then freeze it
        fig.set_layout_engine("none")
        self.renderer = fig.canvas.get_renderer()
        self.pt = fig.dpi / 72.0
        self._thin_xticks()
        self.obs = Obstacles()
        self._static_obstacles()
        self._markers()
        self._caller_lines()
        self._guides()
        self._arrows()
        # labels, most important first: each avoids everything placed before it
        self._clip_notes()
        self._event_labels(required=True)
        self._duplicate_notes()
        self._caller_labels()
        self._event_labels(required=False, styles=("redelivery",))
        self._arrow_labels()
        self._event_labels(required=False)
        self._expired_labels()
        self._sweep_labels()

    def _thin_xticks(self) -> None:
        """Drop tick labels that would touch their left neighbour (e.g. across a squeezed gap)."""
        ax = self.ax
        ticks = list(ax.get_xticks())
        labels = [lbl.get_text() for lbl in ax.get_xticklabels()]
        boxes = [lbl.get_window_extent(self.renderer) for lbl in ax.get_xticklabels()]
        keep: list[int] = []
        gap = 8 * self.fig.dpi / 72
        for i, box in enumerate(boxes):
            if keep and box.x0 < boxes[keep[-1]].x1 + gap:
                continue
            keep.append(i)
        if len(keep) < len(ticks):
            ax.set_xticks([ticks[i] for i in keep], labels=[labels[i] for i in keep])
