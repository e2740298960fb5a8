"""A verdict map: one scenario run over a grid of two settings, each cell coloured by its verdict.

    fig = verdict_map("lock-shorter-than-work", "examples/article.py:handler",
                      x=("lock_seconds", [5, 10, 20, 30, 40]),
                      y=("slow_email_seconds", [10, 20, 30, 45]),
                      mark={"lock_seconds": 10, "slow_email_seconds": 30})
    fig                     # in Jupyter: the map, with the current setting framed

``settings`` is what every cell shares: a dict, or a function from a cell's values to the
settings it runs with (to move a third setting with the two on the axes, say). A cell whose
combination the scenario refuses shows "refused". Results are remembered per scenario, handler
file, seed and settings, so redrawing a map, or moving its marker, runs nothing again.

``linked_verdict_map(explorer, handler, x=..., y=...)`` ties a map to a ``SettingsExplorer`` and
shows both, one above the other: the frame follows the explorer's two controls, and moving any
other control reruns the grid.
"""
from __future__ import annotations

import io
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .errors import BadInput
from .vocab import Status

#: What a cell shows when the scenario refuses its combination of settings.
REFUSED = "refused"
#: Cell colours (Okabe-Ito, as the timelines use) and the word written in each cell.
COLOURS = {Status.VALID: "#009E73", Status.INVALID: "#D55E00", Status.UNKNOWN: "#9A9A9A", REFUSED: "#E4E4E4"}
CELL_TEXT = {Status.VALID: "✓ valid", Status.INVALID: "✗ invalid", Status.UNKNOWN: "? unknown", REFUSED: "refused"}
TEXT_COLOURS = {Status.VALID: "white", Status.INVALID: "white", Status.UNKNOWN: "white", REFUSED: "#505050"}
WIDTH_IN, ROW_IN, HEAD_IN = 8.0, 0.62, 1.9  # figure width; height per grid row and for title, axes and legend
DPI = 100
TITLE_PT, LABEL_PT, CELL_PT = 15, 13, 11.5
LEGEND_ROW_CHARS = 60  # legend labels longer than this in all go two to a row

_remembered: dict[tuple, tuple[str, tuple[str, ...]]] = {}


@dataclass(frozen=True)
class Axis:
    """One setting along one side of the map: its name, the values tried, and how to label it."""

    name: str
    values: tuple
    label: str
    #: Tick labels for some values, in words ({0: "rest of the run"}); the others are written as numbers.
    ticks: tuple = ()

    @classmethod
    def of(cls, spec: Any) -> Axis:
        """From ``(name, values)``, ``(name, values, label)`` or ``(name, values, label, {value: tick label})``."""
        if isinstance(spec, Axis):
            return spec
        name, values, *rest = spec
        values = tuple(values)
        if not values:
            raise BadInput(f"the axis {name!r} has no values to try")
        ticks = tuple((rest[1] if len(rest) > 1 else {}).items())
        return cls(name, values, rest[0] if rest else name, ticks)

    def tick(self, value: Any) -> str:
        return dict(self.ticks).get(value) or _label(value)

    def position(self, value: Any) -> float:
        """Where ``value`` sits along the axis, in cell units (between cells when it is between values)."""
        values = self.values
        if value in values:
            return float(values.index(value))
        numeric = [v for v in values if isinstance(v, (int, float))]
        if len(numeric) != len(values) or not isinstance(value, (int, float)):
            raise BadInput(f"{value!r} is not one of the values of {self.name}: {list(values)}")
        if value <= values[0]:
            return 0.0 if value == values[0] else -0.45
        if value >= values[-1]:
            return len(values) - 0.55
        i = next(k for k in range(1, len(values)) if values[k] >= value)
        return i - 1 + (value - values[i - 1]) / (values[i] - values[i - 1])


@dataclass
class VerdictGrid:
    """The verdict of every cell: ``status(x, y)``, and the checker's notes (lock overlap, stale write)."""

    scenario: str
    x: Axis
    y: Axis
    cells: dict[tuple, str] = field(default_factory=dict)
    notes: dict[tuple, tuple[str, ...]] = field(default_factory=dict)

    def status(self, x: Any, y: Any) -> str:
        return self.cells[(x, y)]

    def rows(self) -> list[dict[str, Any]]:
        """One row per cell: both settings, the verdict and the notes."""
        return [{self.x.name: xv, self.y.name: yv, "verdict": self.cells[(xv, yv)],
                 "notes": list(self.notes[(xv, yv)])} for yv in self.y.values for xv in self.x.values]

    def where(self, status: str) -> list[tuple]:
        """The cells (x, y) with this verdict."""
        return [cell for cell, s in self.cells.items() if s == status]


def _cell_settings(settings: Any, values: dict[str, Any]) -> dict[str, Any]:
    if callable(settings):
        return dict(settings(dict(values)))
    return {**(settings or {}), **values}


def _judge(scenario: str, handler: Any, seed: int, cfg: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    """Run one cell (or remember it): its verdict and the kinds of note the checker made."""
    from .scenarios import run_scenario

    key = (scenario, handler, seed, tuple(sorted(cfg.items()))) if isinstance(handler, str) else None
    if key is not None and key in _remembered:
        return _remembered[key]
    try:
        result = run_scenario(scenario, handler, seed=seed, settings=cfg)
        judged = (str(result.status), tuple(dict.fromkeys(str(n.kind) for n in result.verdict.notes)))
    except BadInput:
        judged = (REFUSED, ())
    if key is not None:
        _remembered[key] = judged
    return judged


def verdict_grid(scenario: str, handler: Any, x: Any, y: Any, *, settings: Any = None, seed: int = 0) -> VerdictGrid:
    """Run ``scenario`` against ``handler`` once per cell of ``x`` × ``y`` (see the module docstring)."""
    grid = VerdictGrid(scenario, Axis.of(x), Axis.of(y))
    for yv in grid.y.values:
        for xv in grid.x.values:
            cfg = _cell_settings(settings, {grid.x.name: xv, grid.y.name: yv})
            grid.cells[(xv, yv)], grid.notes[(xv, yv)] = _judge(scenario, handler, seed, cfg)
    return grid


class VerdictMapFigure(Figure):
    """A Figure that shows itself as PNG in Jupyter without pyplot; ``grid`` holds the verdicts drawn."""

    grid: VerdictGrid

    def _repr_png_(self) -> bytes:
        buf = io.BytesIO()
        self.savefig(buf, format="png", dpi=self.dpi)
        return buf.getvalue()


def _label(value: Any) -> str:
    """A tick label: whole hours or minutes as such (3600 -> "1 h", 1800 -> "30 min"), other values as they are."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        if value >= 3600 and value % 900 == 0:
            return f"{value / 3600:g} h"
        if value >= 120 and value % 60 == 0:
            return f"{value // 60} min"
    return f"{value:g}" if isinstance(value, (int, float)) else str(value)


def _draw_cells(ax, grid: VerdictGrid) -> None:
    from matplotlib.patches import Rectangle

    for (xv, yv), status in grid.cells.items():
        i, j = grid.x.values.index(xv), grid.y.values.index(yv)
        ax.add_patch(Rectangle((i - 0.5, j - 0.5), 1, 1, facecolor=COLOURS[status], edgecolor="white", lw=2.5))
        ax.text(i, j, CELL_TEXT[status], ha="center", va="center", fontsize=CELL_PT, color=TEXT_COLOURS[status],
                fontweight="bold", zorder=4)
    ax.set_xlim(-0.5, len(grid.x.values) - 0.5)
    ax.set_ylim(-0.5, len(grid.y.values) - 0.5)
    ax.set_xticks(range(len(grid.x.values)), [grid.x.tick(v) for v in grid.x.values], fontsize=LABEL_PT)
    ax.set_yticks(range(len(grid.y.values)), [grid.y.tick(v) for v in grid.y.values], fontsize=LABEL_PT)
    ax.set_xlabel(grid.x.label, fontsize=LABEL_PT)
    ax.set_ylabel(grid.y.label, fontsize=LABEL_PT)
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)


def _draw_equal_line(ax, grid: VerdictGrid) -> bool:
    """A dashed line where the two settings are equal (both axes numeric, in the same unit)."""
    lo = max(min(grid.x.values), min(grid.y.values))
    hi = min(max(grid.x.values), max(grid.y.values))
    if lo >= hi:
        return False
    points = [lo + (hi - lo) * k / 100 for k in range(101)]
    ax.plot([grid.x.position(v) for v in points], [grid.y.position(v) for v in points], ls="--", lw=2.2,
            color="#1F1F1F", zorder=2)
    return True


def _draw_mark(ax, grid: VerdictGrid, mark: Mapping[str, Any]) -> str:
    """Frame the cell of the current setting (a frame between cells for a value between theirs)."""
    from matplotlib.patches import Rectangle

    xv, yv = mark[grid.x.name], mark[grid.y.name]
    px, py = grid.x.position(xv), grid.y.position(yv)
    for colour, lw in (("black", 5.0), ("white", 1.5)):
        ax.add_patch(Rectangle((px - 0.47, py - 0.45), 0.94, 0.9, facecolor="none", edgecolor=colour, lw=lw,
                               zorder=5))
    ax.text(px - 0.47, py + 0.45, " now ", ha="left", va="center", fontsize=CELL_PT - 1, fontweight="bold", zorder=7,
            bbox={"boxstyle": "square,pad=0.15", "fc": "black", "ec": "black"}, color="white")
    return f"now: {grid.x.name} {grid.x.tick(xv)}, {grid.y.name} {grid.y.tick(yv)}".replace("\n", " ")


def _legend(fig, grid: VerdictGrid, now: str | None, equal_line: str | None) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    shown = [s for s in (Status.VALID, Status.INVALID, Status.UNKNOWN, REFUSED) if s in grid.cells.values()]
    handles = [Patch(facecolor=COLOURS[s], edgecolor="none", label=CELL_TEXT[s]) for s in shown]
    if now:
        handles.append(Patch(facecolor="white", edgecolor="black", lw=3, label=now))
    if equal_line:
        handles.append(Line2D([], [], ls="--", lw=2.2, color="#1F1F1F", label=equal_line))
    wide = sum(len(h.get_label()) for h in handles) > LEGEND_ROW_CHARS
    fig.legend(handles=handles, loc="outside lower center", ncols=min(2 if wide else 3, len(handles)),
               fontsize=LABEL_PT - 1, frameon=False)


def draw_verdict_map(grid: VerdictGrid, *, mark: Mapping[str, Any] | None = None, title: str | None = None,
                     equal_line: str | None = None, width: float = WIDTH_IN) -> VerdictMapFigure:
    """The map of ``grid``: a cell per combination, ``mark`` framed, ``equal_line`` naming the dashed x = y line."""
    height = HEAD_IN + ROW_IN * max(3, len(grid.y.values))
    fig = VerdictMapFigure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    fig.grid = grid
    ax = fig.add_subplot()
    _draw_cells(ax, grid)
    if equal_line and not _draw_equal_line(ax, grid):
        equal_line = None
    now = _draw_mark(ax, grid, mark) if mark else None
    title = title or f"{grid.scenario}: the verdict for each {grid.x.name} and {grid.y.name}"
    ax.set_title(textwrap.fill(title, int(width * 72 / (TITLE_PT * 0.6))), fontsize=TITLE_PT, fontweight="bold",
                 pad=14, parse_math=False)
    _legend(fig, grid, now, equal_line)
    return fig


def verdict_map(scenario: str, handler: Any, x: Any, y: Any, *, mark: Mapping[str, Any] | None = None,
                settings: Any = None, seed: int = 0, title: str | None = None,
                equal_line: str | None = None) -> VerdictMapFigure:
    """Run the grid (``verdict_grid``) and draw it (``draw_verdict_map``); ``fig.grid`` holds the verdicts."""
    grid = verdict_grid(scenario, handler, x, y, settings=settings, seed=seed)
    return draw_verdict_map(grid, mark=mark, title=title, equal_line=equal_line)


class LinkedVerdictMap:
    """A ``SettingsExplorer`` with a verdict map under it that follows its controls: see the module docstring.

    The cells run with the explorer's current values (``settings``, a dict or a function of a
    cell's values, shapes them further, as the explorer's own ``run`` does).
    """

    def __init__(self, explorer: Any, handler: Any, *, x: Any, y: Any, settings: Any = None, seed: int = 0,
                 title: str | None = None, equal_line: str | None = None):
        import ipywidgets as widgets

        self.explorer, self.handler, self.seed = explorer, handler, seed
        self.x, self.y = Axis.of(x), Axis.of(y)
        self.settings, self.title, self.equal_line = settings, title, equal_line
        self.image = widgets.Image(format="png", layout={"max_width": "100%"})
        self.widget = widgets.VBox([explorer.widget, self.image])
        self.grid: VerdictGrid | None = None
        self.figure: VerdictMapFigure | None = None
        self._shared: dict[str, Any] | None = None
        for control in explorer.controls.values():
            control.observe(self._changed, names="value")
        self.redraw()

    @property
    def mark(self) -> dict[str, Any]:
        values = self.explorer.values()
        return {self.x.name: values[self.x.name], self.y.name: values[self.y.name]}

    def _cell(self, shared: dict[str, Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
        return lambda values: _cell_settings(self.settings, {**shared, **values})

    def _changed(self, change: dict) -> None:
        self.redraw()

    def redraw(self) -> VerdictMapFigure:
        """Rerun the grid if a setting off the axes changed, then move the frame to the current values."""
        shared = {k: v for k, v in self.explorer.values().items() if k not in (self.x.name, self.y.name)}
        if shared != self._shared:
            self.grid = verdict_grid(self.explorer.scenario.name, self.handler, self.x, self.y,
                                     settings=self._cell(shared), seed=self.seed)
            self._shared = shared
        self.figure = draw_verdict_map(self.grid, mark=self.mark, title=self.title, equal_line=self.equal_line)
        self.image.value = self.figure._repr_png_()
        return self.figure

    def _repr_mimebundle_(self, **kw: Any):
        return self.widget._repr_mimebundle_(**kw)


def linked_verdict_map(explorer: Any, handler: Any, *, x: Sequence, y: Sequence, **kw: Any) -> LinkedVerdictMap:
    """A ``LinkedVerdictMap``: ``explorer`` and, under it, a verdict map whose frame follows its controls."""
    return LinkedVerdictMap(explorer, handler, x=x, y=y, **kw)
