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
shows it beside the controls (under them in a narrow window), the verdict and the timeline below:
the mark follows the explorer's two controls without redrawing the grid (``MapPicture``), and
moving any other control reruns the grid. A setting on a cell is framed; one between cells is a
ringed point, where it falls.
"""
from __future__ import annotations

import io
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from matplotlib.backends.backend_agg import FigureCanvasAgg

from ..errors import BadInput
from ..vocab import Status
from .timeline import audit

if TYPE_CHECKING:
    from matplotlib.artist import Artist

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
    from ..scenarios import run_scenario

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


class VerdictMapFigure(audit.Audited):
    """A Figure that shows itself as PNG in Jupyter without pyplot; ``grid`` holds the verdicts drawn."""

    grid: VerdictGrid
    canvas: FigureCanvasAgg  # _map_figure gives it one
    now_mark: NowMark  # the mark of the current setting, when one is drawn

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
        # On a box of the cell's own colour: the dashed "equal" line passes behind the words, not through them.
        ax.text(i, j, CELL_TEXT[status], ha="center", va="center", fontsize=CELL_PT, color=TEXT_COLOURS[status],
                fontweight="bold", zorder=4,
                bbox={"boxstyle": "round,pad=0.15", "facecolor": COLOURS[status], "edgecolor": "none"})
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


class NowMark:
    """The current setting on the map: a frame on its cell, or a ringed point where it falls between cells.

    Its artists are made once and moved by ``place``, so a linked map moves them without
    redrawing the grid.
    """

    def __init__(self, ax):
        from matplotlib.patches import Rectangle

        self.frames = [ax.add_patch(Rectangle((0, 0), 0.94, 0.9, facecolor="none", edgecolor=colour, lw=lw,
                                              zorder=5)) for colour, lw in (("black", 5.0), ("white", 1.5))]
        self.point = [ax.plot([], [], ls="none", marker="o", ms=size, mfc=face, mec=edge, mew=mew, zorder=6,
                              clip_on=False)[0]
                      for size, face, edge, mew in ((26, "none", "black", 5.0), (26, "none", "white", 1.5),
                                                    (7, "black", "white", 1.5))]
        self.tab = ax.text(0, 0, " now ", ha="left", va="center", fontsize=CELL_PT - 1, fontweight="bold", zorder=7,
                           bbox={"boxstyle": "square,pad=0.15", "fc": "black", "ec": "black"}, color="white")

    @property
    def artists(self) -> list:
        return [*self.frames, *self.point, self.tab]

    def place(self, grid: VerdictGrid, mark: Mapping[str, Any]) -> str:
        """Put the mark on ``mark``'s setting; returns the legend's words for it."""
        xv, yv = mark[grid.x.name], mark[grid.y.name]
        px, py = grid.x.position(xv), grid.y.position(yv)
        on_cell = xv in grid.x.values and yv in grid.y.values
        self.tab.set_visible(True)
        for frame in self.frames:
            frame.set_xy((px - 0.47, py - 0.45))
            frame.set_visible(on_cell)
        for ring in self.point:
            ring.set_data([px], [py])
            ring.set_visible(not on_cell)
        if on_cell:
            self.tab.set_position((px - 0.47, py + 0.45))
            self.tab.set(ha="left", va="center")
        else:  # just above the point, in the upper part of its row: clear of every cell's word
            self.tab.set_position((px, py + 0.2))
            self.tab.set(ha="center", va="bottom")
        return now_words(grid, xv, yv)


def now_words(grid: VerdictGrid, xv: Any, yv: Any) -> str:
    return f"now: {grid.x.name} {grid.x.tick(xv)}, {grid.y.name} {grid.y.tick(yv)}".replace("\n", " ")


def _draw_mark(fig: VerdictMapFigure, ax, grid: VerdictGrid, mark: Mapping[str, Any]) -> str:
    """Mark the current setting (see ``NowMark``); returns the legend's words for it."""
    fig.now_mark = NowMark(ax)
    return fig.now_mark.place(grid, mark)


def _legend(fig, grid: VerdictGrid, now: str | None, equal_line: str | None) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    shown = [s for s in (Status.VALID, Status.INVALID, Status.UNKNOWN, REFUSED) if s in grid.cells.values()]
    handles: list[Artist] = [Patch(facecolor=COLOURS[s], edgecolor="none", label=CELL_TEXT[s]) for s in shown]
    if now:
        handles.append(Patch(facecolor="white", edgecolor="black", lw=3, label=now))
    if equal_line:
        handles.append(Line2D([], [], ls="--", lw=2.2, color="#1F1F1F", label=equal_line))
    wide = sum(len(str(h.get_label())) for h in handles) > LEGEND_ROW_CHARS
    fig.legend(handles=handles, loc="outside lower center", ncols=min(2 if wide else 3, len(handles)),
               fontsize=LABEL_PT - 1, frameon=False)


def draw_verdict_map(grid: VerdictGrid, *, mark: Mapping[str, Any] | None = None, title: str | None = None,
                     equal_line: str | None = None, width: float = WIDTH_IN) -> VerdictMapFigure:
    """The map of ``grid``: a cell per combination, ``mark`` marked, ``equal_line`` naming the dashed x = y line."""
    fig = _map_figure(grid, mark, title, equal_line, width, None)
    audit.finish(fig, "verdict map")
    return fig


def _map_figure(grid: VerdictGrid, mark: Mapping[str, Any] | None, title: str | None, equal_line: str | None,
                width: float, room: str | None) -> VerdictMapFigure:
    """``draw_verdict_map``; ``room`` is the widest legend words the mark will have (a linked map's mark moves)."""
    height = HEAD_IN + ROW_IN * max(3, len(grid.y.values))
    fig = VerdictMapFigure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    fig.grid = grid
    ax = fig.add_subplot()
    _draw_cells(ax, grid)
    if equal_line and not _draw_equal_line(ax, grid):
        equal_line = None
    now = _draw_mark(fig, ax, grid, mark) if mark else None
    title = title or f"{grid.scenario}: the verdict for each {grid.x.name} and {grid.y.name}"
    ax.set_title(textwrap.fill(title, int(width * 72 / (TITLE_PT * 0.6))), fontsize=TITLE_PT, fontweight="bold",
                 pad=14, parse_math=False)
    _legend(fig, grid, room or now, equal_line)
    return fig


def verdict_map(scenario: str, handler: Any, x: Any, y: Any, *, mark: Mapping[str, Any] | None = None,
                settings: Any = None, seed: int = 0, title: str | None = None,
                equal_line: str | None = None) -> VerdictMapFigure:
    """Run the grid (``verdict_grid``) and draw it (``draw_verdict_map``); ``fig.grid`` holds the verdicts."""
    grid = verdict_grid(scenario, handler, x, y, settings=settings, seed=seed)
    return draw_verdict_map(grid, mark=mark, title=title, equal_line=equal_line)


class MapPicture:
    """A map drawn once, whose mark moves: ``png(mark)`` redraws only the mark over the grid's pixels.

    The grid, its words, the dashed line and the legend are drawn once into a background; a
    move pastes that back and draws the mark and its legend words on it: the same pixels as a
    picture drawn afresh with the mark there (the legend keeps room for the widest words the
    mark can have, so it does not shift as they change).
    """

    def __init__(self, grid: VerdictGrid, mark: Mapping[str, Any], *, title: str | None = None,
                 equal_line: str | None = None, width: float = WIDTH_IN):
        from .quicktext import quick_text

        self.grid = grid
        self.figure = _map_figure(grid, mark, title, equal_line, width, _widest_words(grid))
        self.mark: NowMark = self.figure.now_mark
        self.words = self.figure.legends[0].get_texts()[-2 if self.figure.legends[0].get_lines() else -1]
        moving = [*self.mark.artists, self.words]
        for artist in moving:
            artist.set_visible(False)
        with quick_text():
            self.figure.canvas.draw()
        self.figure.set_layout_engine("none")  # keep the places the background was drawn with
        self._background = self.figure.canvas.copy_from_bbox(self.figure.bbox)
        self.words.set_visible(True)

    def png(self, mark: Mapping[str, Any]) -> bytes:
        import numpy as np

        from .quicktext import png_of_pixels, quick_text

        canvas = self.figure.canvas
        canvas.restore_region(self._background)
        self.words.set_text(self.mark.place(self.grid, mark))
        with quick_text():
            for artist in [*self.mark.artists, self.words]:
                if artist.get_visible():
                    self.figure.draw_artist(artist)
        audit.record(self.figure, "verdict map")  # drawn in parts: the grid once, the mark on it
        return png_of_pixels(np.asarray(canvas.buffer_rgba()))


def _widest_words(grid: VerdictGrid) -> str:
    """The legend words of the mark with the longest tick of each axis, and room for a value between ticks."""
    xt = max((grid.x.tick(v).replace("\n", " ") for v in grid.x.values), key=len)
    yt = max((grid.y.tick(v).replace("\n", " ") for v in grid.y.values), key=len)
    return f"now: {grid.x.name} {xt}.0, {grid.y.name} {yt}.0"


class LinkedVerdictMap:
    """A ``SettingsExplorer`` with a verdict map beside its controls that follows them: see the module docstring.

    The cells run with the explorer's current values (``settings``, a dict or a function of a
    cell's values, shapes them further, as the explorer's own ``run`` does). A move along the
    map's axes only moves the mark; a move of another setting reruns the cells, at once when
    set from Python, and one cell at a time between the browser's messages (``status`` counts
    them) when moved in the browser.
    """

    def __init__(self, explorer: Any, handler: Any, *, x: Any, y: Any, settings: Any = None, seed: int = 0,
                 title: str | None = None, equal_line: str | None = None):
        import ipywidgets as widgets

        self.explorer, self.handler, self.seed = explorer, handler, seed
        self.x, self.y = Axis.of(x), Axis.of(y)
        self.settings, self.title, self.equal_line = settings, title, equal_line
        self.image = widgets.Image(format="png", layout={"max_width": "100%"})
        self.image.add_class("sandbox-map")
        self.status = widgets.HTML(layout={"min_height": "1.7em"})  # cells still to come
        self.grid: VerdictGrid | None = None
        self.picture: MapPicture | None = None
        self._shared: dict[str, Any] | None = None
        self._filling: dict[str, Any] | None = None  # the off-axis settings whose cells are being run
        side = widgets.VBox([self.image, self.status], layout={"max_width": "100%"})
        top = widgets.HBox([explorer.controls_box, side], layout={"flex_flow": "row wrap", "align_items": "flex-start"})
        self.widget = widgets.VBox([top, explorer.verdict, explorer.image, explorer.output])
        explorer.followers.append(self)
        self.redraw()

    @property
    def figure(self) -> VerdictMapFigure | None:
        return self.picture.figure if self.picture else None

    @property
    def _drawn(self) -> MapPicture:
        assert self.picture is not None  # the first redraw, in __init__, made it
        return self.picture

    @property
    def mark(self) -> dict[str, Any]:
        values = self.explorer.values()
        return {self.x.name: values[self.x.name], self.y.name: values[self.y.name]}

    def _shared_of(self, values: Mapping[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in values.items() if k not in (self.x.name, self.y.name)}

    def _cell(self, shared: dict[str, Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
        return lambda values: _cell_settings(self.settings, {**shared, **values})

    def _regrid(self, grid: VerdictGrid, shared: dict[str, Any]) -> None:
        self.grid, self._shared, self._filling = grid, shared, None
        self.picture = MapPicture(grid, self.mark, title=self.title, equal_line=self.equal_line)

    def redraw(self) -> VerdictMapFigure:
        """Rerun the grid if a setting off the axes changed, then move the mark to the current values."""
        shared = self._shared_of(self.explorer.values())
        if shared != self._shared:
            self._regrid(verdict_grid(self.explorer.scenario.name, self.handler, self.x, self.y,
                                      settings=self._cell(shared), seed=self.seed), shared)
        self.image.value = self._drawn.png(self.mark)
        self.status.value = ""
        self.image.remove_class("sandbox-stale")
        return self._drawn.figure

    def stale(self) -> None:
        self.image.add_class("sandbox-stale")

    def follow(self, values: Mapping[str, Any], result: Any, loop: Any) -> Callable[[], None]:
        """What the map shows with the explorer's new run: the mark moved, or its cells still to come."""
        shared = self._shared_of(values)
        if shared == self._shared:
            self._filling = None
            png = self._drawn.png(self.mark)
            return lambda: self._show(png)
        if loop is None:  # set from Python: run the cells now, show them with the rest
            grid = verdict_grid(self.explorer.scenario.name, self.handler, self.x, self.y,
                                settings=self._cell(shared), seed=self.seed)
            self._regrid(grid, shared)
            png = self._drawn.png(self.mark)
            return lambda: self._show(png)
        if shared != self._filling:
            self._filling = shared
            grid = VerdictGrid(self.explorer.scenario.name, self.x, self.y)
            loop.call_soon(self._fill, grid, shared, loop)
        return lambda: None  # the map stays marked stale; _fill shows it when its cells are all run

    def _show(self, png: bytes) -> None:
        self.image.value = png
        self.status.value = ""
        self.image.remove_class("sandbox-stale")

    def _fill(self, grid: VerdictGrid, shared: dict[str, Any], loop: Any) -> None:
        """Run one cell, then give the browser's messages their turn before the next; show the map when done."""
        if shared != self._filling:
            return  # a later setting's cells are being run instead
        todo = [(xv, yv) for yv in self.y.values for xv in self.x.values if (xv, yv) not in grid.cells]
        if todo:
            xv, yv = todo[0]
            cfg = self._cell(shared)({self.x.name: xv, self.y.name: yv})
            grid.cells[(xv, yv)], grid.notes[(xv, yv)] = _judge(grid.scenario, self.handler, self.seed, cfg)
            total = len(self.x.values) * len(self.y.values)
            self.status.value = (f'<span class="sandbox-redrawing">verdict map: {len(grid.cells)} of {total} '
                                 f"cells run for the new settings…</span>")
            loop.call_soon(self._fill, grid, shared, loop)
            return
        self._regrid(grid, shared)
        self._show(self._drawn.png(self.mark))

    def _repr_mimebundle_(self, **kw: Any):
        return self.widget._repr_mimebundle_(**kw)


def linked_verdict_map(explorer: Any, handler: Any, *, x: Sequence, y: Sequence, **kw: Any) -> LinkedVerdictMap:
    """A ``LinkedVerdictMap``: ``explorer`` and, beside its controls, a verdict map whose mark follows them."""
    return LinkedVerdictMap(explorer, handler, x=x, y=y, **kw)
