"""A verdict map: one scenario run over a grid of two settings, each cell coloured by its verdict.

    fig = verdict_map("lock-shorter-than-work", "examples/article.py:handler",
                      x=("lock_seconds", [5, 10, 20, 30, 40]),
                      y=("slow_email_seconds", [10, 20, 30, 45]),
                      mark={"lock_seconds": 10, "slow_email_seconds": 30})
    fig                     # in Jupyter: the map, with the current setting framed

``settings`` is what every cell shares: a dict, or a function from a cell's values to the
settings it runs with (to move a third setting with the two on the axes, say). A cell whose
combination the scenario refuses shows "refused"; a valid cell whose verdict has notes (a lock
overlap) shows "✓ valid*" on a paler green, and the legend names the notes. Results are
remembered per scenario, handler file, seed and settings, so redrawing a map, or moving its
marker, runs nothing again.

``linked_verdict_map(explorer, handler, x=..., y=...)`` ties a map to a ``SettingsExplorer`` and
shows it under the controls and the verdict beside them, the timeline below the map:
the mark follows the explorer's two controls without redrawing the grid (``MapPicture``), and
moving any other control reruns the grid. A setting on a cell is framed; one between cells is a
ringed point, where it falls when that cell's verdict is the one shown for it, else on the line
between the cells it lies between, so that the ring never claims a neighbour's verdict; the words of
the cells around it step aside (``NowMark``). A value named in words ({0: "rest of the run"}) is a
category, not a number: it has a column of its own, apart from the numeric ones (``Axis``).
"""
from __future__ import annotations

import io
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.legend_handler import HandlerPatch
from matplotlib.transforms import Bbox

from ..errors import BadInput
from ..settings import SettingValue
from ..vocab import Status
from .stage import notice
from .timeline import audit
from .timeline.figure import freeze_layout
from .timeline.style import VERDICT_COLOURS

if TYPE_CHECKING:
    from matplotlib.artist import Artist

#: What a cell shows when the scenario refuses its combination of settings.
REFUSED = "refused"
#: What a cell shows when its verdict is valid with notes (a lock overlap): no harm this time, yet not the clean valid
#: a learner should take home (lesson 10 at function timeout 20 read "✓ valid" everywhere, short locks and all). Its
#: words are as narrow as "✗ invalid", to fit where those do (in a framed cell, beside a ring); the legend says more.
NOTED = "valid with notes"
#: Cell colours (the verdicts' own, as the run's badge shows them; a noted valid paler, dark words on it) and the
#: words in each cell.
COLOURS: dict[str, str] = {**VERDICT_COLOURS, NOTED: "#8FD3BF", REFUSED: "#E4E4E4"}
CELL_TEXT = {Status.VALID: "✓ valid", NOTED: "✓ valid*", Status.INVALID: "✗ invalid", Status.UNKNOWN: "? unknown",
             REFUSED: "refused"}
TEXT_COLOURS = {Status.VALID: "white", NOTED: "#1F1F1F", Status.INVALID: "white", Status.UNKNOWN: "white",
                REFUSED: "#505050"}
#: Each verdict's sign, which a ring's tab says where its words leave no room (``_tab_texts``).
CELL_SIGN = {Status.VALID: "✓", NOTED: "✓*", Status.INVALID: "✗", Status.UNKNOWN: "?"}
WIDTH_IN, ROW_IN, HEAD_IN = 8.0, 0.56, 1.6 # figure width; height per grid row and for title, axes and legend
DPI = 100
TITLE_PT, LABEL_PT, CELL_PT = 13.5, 12, 11.5
CELL_SMALL_PT = 10  # a cell's words moved aside for the ring may shrink to this to fit
LEGEND_ROW_CHARS = 60  # legend labels longer than this in all go two to a row
CELL_EDGE_PT = 2.5  # the white line between cells
POINT_PT, POINT_EDGE_PT = 22, 5.0  # the ring around a setting between cells: its size and its black edge
WORDS_INSET_PT = 3  # a cell's words moved aside for the ring keep this far inside the cell's white edge
WORDS_CLEAR_PT = 2  # ... and this far from the ring and its "now" tab
FRAME_W, FRAME_H, FRAME_PT = 0.94, 0.9, 5.0  # the frame on the current setting's cell (cells) and its black edge
POINTER_PT = FRAME_PT + 3  # the notches in a framed cell's edges, at a setting between the grid's values
TAB_TEXT, TAB_PT = " now ", CELL_PT - 1  # the tab beside a ring ...
TAB_ASTRAY = 1 / 3  # a tab may stand this share of itself on a cell the ring is not on (over the line between rows)
FRAMED_TAB_TEXT, FRAMED_TAB_PT = "now", CELL_SMALL_PT  # ... and the one hung inside a frame, from its corner (not
#   bold: narrower, so the framed cell's words still fit beside it)
FRAMED_INSET_PT = 1.8  # a framed cell's words stand this far inside the frame's black edge (their box is 1.7 pt
#   round them)
TAB_PAD = 0.15  # the tab's box around its words, in font sizes
GAP = 0.45  # cells between an axis' categories and its numbers
MARGIN = (0.2, 0.45)  # room around the grid (x, y, in cells) for a ring on its edge; made exact once laid out

_remembered: dict[tuple, tuple[str, tuple[str, ...]]] = {}


@dataclass(frozen=True)
class Axis:
    """One setting along one side of the map: its name, the values tried, and how to label it.

    A value whose tick is given in words ({0: "rest of the run"}) means something other than its number: it
    is a category, drawn in a column (or row) of its own before the numeric ones, apart from them by a gap
    (``GAP``), and nothing is placed between it and a number. The numeric values are in ascending order.
    """

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

    @property
    def word(self) -> str:
        """The axis' name in the words its label starts with ("lock" for "lock: RUN_ONCE_LOCK_SECONDS (s)"), so
        the legend speaks as the axis and the slider do; the setting's own name where the label has no such word."""
        head, colon, _ = self.label.partition(":")
        return head.strip() if colon and head.strip() else self.name

    @property
    def categories(self) -> tuple:
        """The values named in words rather than as their number: each has a place of its own."""
        named = dict(self.ticks)
        return tuple(v for v in self.values if v in named and named[v].replace("\n", " ") != _label(v))

    @property
    def numbers(self) -> tuple:
        """The values on the numeric scale, in the order given."""
        return tuple(v for v in self.values if v not in self.categories)

    def centre(self, value: Any) -> float:
        """The middle of ``value``'s cell, in cell units: categories first, then a gap, then the numbers."""
        if value in self.categories:
            return float(self.categories.index(value))
        k = len(self.categories)
        return self.numbers.index(value) + (k + GAP if k else 0.0)

    def edges(self) -> tuple[float, float]:
        """The grid's first and last cell edge along this axis."""
        lo = self.centre(self.categories[0] if self.categories else self.numbers[0]) - 0.5
        hi = self.centre(self.numbers[-1] if self.numbers else self.categories[-1]) + 0.5
        return lo, hi

    def position(self, value: Any) -> float:
        """Where ``value`` falls along the axis, in cell units: a value of the grid at its cell's middle, a number
        between two at its proportion of the way between their middles, one beyond the numbers at the edge of
        the numbers' cells (before the first: in the gap after the categories)."""
        if value in self.values:
            return self.centre(value)
        numbers = self.numbers
        if not numbers or not all(isinstance(v, (int, float)) for v in numbers) or not isinstance(value, (int, float)):
            raise BadInput(f"{value!r} is not one of the values of {self.name}: {list(self.values)}")
        first, last = self.centre(numbers[0]), self.centre(numbers[-1])
        if value < numbers[0]:
            return first - 0.5 - (GAP / 2 if self.categories else 0.0)
        if value > numbers[-1]:
            return last + 0.5
        i = next(k for k in range(1, len(numbers)) if numbers[k] >= value)
        return first + i - 1 + (value - numbers[i - 1]) / (numbers[i] - numbers[i - 1])

    def between(self, value: Any) -> float:
        """Where ``value`` goes when it must not sit inside a cell: on the line between the two cells it lies
        between (or at the numbers' edge, past the first or last)."""
        p = self.position(value)
        if value in self.values:
            return p
        first = self.centre(self.numbers[0])
        return p if p < first or p > self.centre(self.numbers[-1]) else first + int(p - first) + 0.5

    def holder(self, value: Any) -> Any:
        """The value whose cell ``value`` falls in (past the numbers: the first or last number's; None on the
        line between two cells)."""
        if value in self.values:
            return value
        p = self.position(value)
        if p < self.centre(self.numbers[0]):
            return self.numbers[0]
        if p > self.centre(self.numbers[-1]):
            return self.numbers[-1]
        return next((v for v in self.numbers if abs(p - self.centre(v)) < 0.5), None)


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

    def shown(self, x: Any, y: Any) -> str:
        """What the cell shows: its verdict, or ``NOTED`` for a valid one with notes."""
        return shown_verdict(self.cells[(x, y)], self.notes.get((x, y), ()))

    def rows(self) -> list[dict[str, SettingValue | list[str]]]:
        """One row per cell: both settings (by their names), the verdict and the notes."""
        return [{self.x.name: xv, self.y.name: yv, "verdict": self.cells[(xv, yv)],
                 "notes": list(self.notes[(xv, yv)])} for yv in self.y.values for xv in self.x.values]

    def where(self, status: str) -> list[tuple]:
        """The cells (x, y) with this verdict."""
        return [cell for cell, s in self.cells.items() if s == status]


def shown_verdict(status: str, notes: Sequence[Any]) -> str:
    """What a map shows for a verdict: its status, or ``NOTED`` when it is valid and has notes (a ``Verdict``'s
    ``notes``, or their kinds as ``_judge`` keeps them)."""
    return NOTED if status == Status.VALID and notes else status


def _shown_run(result: Any) -> str | None:
    """What the map shows for an explorer's run (None: refused, nothing to show)."""
    return shown_verdict(str(result.status), result.verdict.notes) if result is not None else None


def _cell_settings(settings: Any, values: dict[str, SettingValue]) -> dict[str, SettingValue]:
    if callable(settings):
        return dict(settings(dict(values)))
    return {**(settings or {}), **values}


def _judge(scenario: str, handler: Any, seed: int, cfg: dict[str, SettingValue]) -> tuple[str, tuple[str, ...]]:
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
    cell_words: dict[tuple, Any]  # each cell's words, by its (x, y) values
    now_shapes: NowShapes | None = None  # the legend's symbol for the mark: a frame or a ring, as the map shows it

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


def _draw_cells(ax, grid: VerdictGrid) -> dict[tuple, Any]:
    """The cells, their words and the axes; returns each cell's words by its (x, y) values."""
    from matplotlib.patches import Rectangle

    words = {}
    for xv, yv in grid.cells:
        status = grid.shown(xv, yv)
        i, j = grid.x.centre(xv), grid.y.centre(yv)
        ax.add_patch(Rectangle((i - 0.5, j - 0.5), 1, 1, facecolor=COLOURS[status], edgecolor="white",
                               lw=CELL_EDGE_PT))
        # On a box of the cell's own colour: the dashed "equal" line passes behind the words, not through them.
        words[(xv, yv)] = ax.text(i, j, CELL_TEXT[status], ha="center", va="center", fontsize=CELL_PT,
                                  color=TEXT_COLOURS[status], fontweight="bold", zorder=4, multialignment="center",
                                  gid=f"{audit.CELL_WORDS}:{xv},{yv}",
                                  bbox={"boxstyle": "round,pad=0.15", "facecolor": COLOURS[status],
                                        "edgecolor": "none"})
    for axis, set_lim, margin in ((grid.x, ax.set_xlim, MARGIN[0]), (grid.y, ax.set_ylim, MARGIN[1])):
        lo, hi = axis.edges()
        set_lim(lo - margin, hi + margin)
    ax.set_xticks([grid.x.centre(v) for v in grid.x.values], [grid.x.tick(v) for v in grid.x.values],
                  fontsize=LABEL_PT)
    ax.set_yticks([grid.y.centre(v) for v in grid.y.values], [grid.y.tick(v) for v in grid.y.values],
                  fontsize=LABEL_PT)
    for axis, labels in ((grid.x, ax.get_xticklabels()), (grid.y, ax.get_yticklabels())):
        for value, label in zip(axis.values, labels):
            if value in axis.categories:  # a category, not a number: set apart in italics too
                label.set_fontstyle("italic")
    ax.set_xlabel(grid.x.label, fontsize=LABEL_PT)
    # The y label runs along the grid's height: wrapped to it, not past the figure's top and bottom.
    along = max(3, len(grid.y.values)) * ROW_IN * 72 / (LABEL_PT * 0.6)
    ax.set_ylabel(textwrap.fill(grid.y.label, max(12, int(along))), fontsize=LABEL_PT)
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    return words


def _draw_equal_line(ax, grid: VerdictGrid) -> Any:
    """A dashed line where the two settings are equal (both axes numeric, in the same unit; categories aside), from
    edge to edge of the numbers' cells: one that stopped at the middle of the first and last cells read as
    saying nothing of the cells' outer halves."""
    if len(grid.x.numbers) < 2 or len(grid.y.numbers) < 2:
        return None
    x_lo, x_hi = _edge_values(grid.x)
    y_lo, y_hi = _edge_values(grid.y)
    lo, hi = max(x_lo, y_lo), min(x_hi, y_hi)
    if lo >= hi:
        return None
    points = sorted({lo + (hi - lo) * k / 100 for k in range(101)} |
                    {v for v in (*grid.x.numbers, *grid.y.numbers) if lo < v < hi})
    (line,) = ax.plot([_reach(grid.x, v) for v in points], [_reach(grid.y, v) for v in points], ls="--", lw=2.2,
                      color="#1F1F1F", zorder=2, gid=f"{audit.UNDER_WORDS}:equal")
    return line


LINE_CLEAR_PX = 5  # px at 100 dpi: the dashed "equal" line stops this far from a cell's words, at least


def words_off_line(ax, line, words: Mapping[tuple, Any]) -> LineGaps:
    """The dashed "equal" line stops short of the words of the cells it crosses (``LineGaps``)."""
    return LineGaps(ax, line, words)


class LineGaps:
    """Where the dashed "equal" line stops short of the cells' words: a patch of the cell's colour, a little larger
    than the words, lies over the line and under them (lesson 10: on a box as tight as its letters, the "lock = work"
    line ran through the "✓ valid" of every cell on the diagonal). No room to move the words off the line: a cell is
    two lines tall. The patches follow the words: ``fit`` again the words the ring's mark moved (lesson 10 at lock
    25, the (45, 45) cell's words stepped aside onto the line, and their patch stayed behind). The figure's layout
    must be fixed."""

    def __init__(self, ax, line, words: Mapping[tuple, Any]):
        from matplotlib.patches import Rectangle

        self.ax = ax
        self.path = line.get_transform().transform_path(line.get_path())
        edge = CELL_EDGE_PT / 2 * ax.get_figure(root=True).dpi / 72
        self.cells: dict[Any, Bbox] = {}  # each word's cell inside its white edge, px: a patch stays within it
        self.patches: dict[Any, Any] = {}
        for word in words.values():
            i, j = word.get_position()  # at home: the cell's middle
            self.cells[word] = Bbox(ax.transData.transform([(i - 0.5, j - 0.5), (i + 0.5, j + 0.5)])).padded(-edge)
            # over the line (zorder 2), under the words (4)
            self.patches[word] = ax.add_patch(Rectangle((i, j), 0, 0, facecolor=word.get_bbox_patch().get_facecolor(),
                                                        edgecolor="none", zorder=3, visible=False))
        self.fit(words.values())

    def fit(self, words: Iterable) -> None:
        """A patch under each of ``words`` where it stands now, if the line comes near it (none under words left
        out: a gap in the line there would mark a place where nothing is)."""
        renderer = self.ax.get_figure(root=True).canvas.get_renderer()
        clear = LINE_CLEAR_PX * self.ax.get_figure(root=True).dpi / 100
        to_data = self.ax.transData.inverted()
        for word in words:
            patch = self.patches[word]
            box = word.get_window_extent(renderer).padded(clear) if word.get_visible() else None
            if box is None or not self.path.intersects_bbox(box, filled=False):
                patch.set_visible(False)
                continue
            box = Bbox.intersection(box, self.cells[word]) or box
            (x0, y0), (x1, y1) = to_data.transform(box.get_points())
            patch.set(xy=(x0, y0), width=x1 - x0, height=y1 - y0, visible=True)


def _edge_values(axis: Axis) -> tuple[float, float]:
    """The values at the outer edges of an axis' first and last numeric cells: half a step beyond each."""
    n = axis.numbers
    return n[0] - (n[1] - n[0]) / 2, n[-1] + (n[-1] - n[-2]) / 2


def _reach(axis: Axis, value: float) -> float:
    """Where ``value`` falls on an axis of two or more numbers, its first and last steps carried on past them (to
    the edges of their cells), where ``Axis.position`` stops at the edge."""
    n = axis.numbers
    if value < n[0]:
        return axis.centre(n[0]) - (n[0] - value) / (n[1] - n[0])
    if value > n[-1]:
        return axis.centre(n[-1]) + (value - n[-1]) / (n[-1] - n[-2])
    return axis.position(value)


class NowMark:
    """The current setting on the map: a frame on the cell whose verdict it shares, or a ringed point on the line
    between two cells whose verdicts differ.

    A setting between the grid's values that falls in a cell of its own verdict frames that cell, as a value of
    the grid does, and a pointer on the frame's edge (``POINTER_PT``) stands at its exact place along each axis it
    is not a value of: a ring there stood on the cell's words, which kept only their sign beside it (three learners
    in turn read it as covering "✗ invalid"). Its artists are made once and moved by ``place``, so a linked map
    moves them without redrawing the grid. A ring on the line between cells would sit on the words of the cells
    around it: those words move aside within their cells, clear of the ring and its "now" tab (``moved``), and go
    back when the mark moves on; where a cell has no room beside the ring, they keep their sign (or are left out:
    its colour still says the verdict). The ring's tab goes above it, or else below it or beside it, on the page,
    wherever fewest words are left out, and says the verdict, in words where they leave every cell its words,
    else by its sign. The dashed line's gaps (``LineGaps``) follow the words moved. ``place`` measures, so the
    figure's layout must be fixed.
    """

    def __init__(self, ax, words: Mapping[tuple, Any] | None = None, gaps: LineGaps | None = None,
                 shapes: NowShapes | None = None):
        from matplotlib.patches import Rectangle

        self.ax, self.gaps = ax, gaps  # the dashed line's gaps follow the words the mark moves
        self.shapes = shapes  # the legend's symbol for it, which shows the shape the map shows
        self.frames = [ax.add_patch(Rectangle((0, 0), FRAME_W, FRAME_H, facecolor="none", edgecolor=colour, lw=lw,
                                              zorder=5)) for colour, lw in (("black", FRAME_PT), ("white", 1.5))]
        self.point = [ax.plot([], [], ls="none", marker="o", ms=size, mfc=face, mec=edge, mew=mew, zorder=6,
                              clip_on=False)[0]
                      for size, face, edge, mew in ((POINT_PT, "none", "black", POINT_EDGE_PT),
                                                    (POINT_PT, "none", "white", 1.5), (7, "black", "white", 1.5))]
        self.point[0].set_gid(audit.NOW_RING)  # the outer ring: what the audit lets stand on a cell's words
        # on a framed cell, where the setting stands along x (a notch in the frame's bottom edge, pointing in) and
        # along y (one in its left edge): white in the frame's black edge, so neither the framed cell's words nor
        # its neighbours' (a cell is a line of words tall) lose a pixel to it
        self.pointers = [ax.plot([], [], ls="none", marker=marker, ms=POINTER_PT, mfc="white", mec="none", zorder=8,
                                 clip_on=False)[0] for marker in ("^", ">")]
        self.tab_text = TAB_TEXT
        self.tab = ax.text(0, 0, TAB_TEXT, ha="left", va="center", fontsize=TAB_PT, fontweight="bold", zorder=7,
                           bbox={"boxstyle": f"square,pad={TAB_PAD}", "fc": "black", "ec": "black"}, color="white")
        self.words = dict(words or {})
        self._home = {word: (word.get_position(), word.get_text()) for word in self.words.values()}
        self._extents: dict[tuple, tuple] = {}
        self.moved: list = []  # the cells' words the last ``place`` moved aside

    @property
    def artists(self) -> list:
        return [*self.frames, *self.point, *self.pointers, self.tab]

    def place(self, grid: VerdictGrid, mark: Mapping[str, Any], verdict: str | None = None) -> str:
        """Put the mark on ``mark``'s setting; returns the legend's words for it.

        A setting between the grid's values frames the cell it falls in only when that cell shows ``verdict`` (the
        setting's run as the map shows it, ``shown_verdict``: a clean valid run claims no noted cell), pointers on
        the frame's edges saying where it stands; otherwise, or when the verdict is not known, a ring stands on the
        line between the cells it lies between, claiming neither (past an axis' numbers: on the grid's edge, or in
        the gap after its categories).
        """
        xv, yv = mark[grid.x.name], mark[grid.y.name]
        cell = (xv, yv) if xv in grid.x.values and yv in grid.y.values else (grid.x.holder(xv), grid.y.holder(yv))
        framed = cell == (xv, yv) or (verdict is not None and cell in grid.cells and grid.shown(*cell) == verdict)
        px, py = (grid.x.centre(cell[0]), grid.y.centre(cell[1])) if framed else (grid.x.between(xv),
                                                                                  grid.y.between(yv))
        self.tab.set_visible(True)
        for frame in self.frames:
            frame.set_xy((px - FRAME_W / 2, py - FRAME_H / 2))
            frame.set_visible(framed)
        for ring in self.point:
            ring.set_data([px], [py])
            ring.set_visible(not framed)
        self._point_along(grid, (xv, yv), cell if framed else None, (px, py))
        if self.shapes is not None:
            self.shapes.show(ring=not framed)
        self.words_home()
        if framed:
            self._tab_in_frame(cell, px, py)
        else:
            # On the line between two cells the ring claims neither, so the tab says the verdict itself (a learner
            # could not read lock 25's invalid from a ring between an invalid cell and a valid one).
            self.tab.set(fontsize=TAB_PT, fontweight="bold")
            self._clear_of_words(px, py, _tab_texts(verdict))
        if self.gaps is not None:
            self.gaps.fit(self.moved)
        return now_words(grid, xv, yv)

    def _point_along(self, grid: VerdictGrid, setting: tuple, cell: tuple | None, centre: tuple) -> None:
        """On the framed ``cell`` (None: no frame) around ``centre``, a pointer on its bottom edge at the setting's
        place along x, and one on its left edge at its place along y, for each axis it is not a value of; kept on
        the frame."""
        up, right = self.pointers
        up.set_visible(cell is not None and setting[0] != cell[0])
        right.set_visible(cell is not None and setting[1] != cell[1])
        (cx, cy), (w, h) = centre, (FRAME_W / 2, FRAME_H / 2)
        if up.get_visible():
            up.set_data([min(max(grid.x.position(setting[0]), cx - w), cx + w)], [cy - h])
        if right.get_visible():
            right.set_data([cx - w], [min(max(grid.y.position(setting[1]), cy - h), cy + h)])

    def _tab_in_frame(self, cell: tuple, px: float, py: float) -> None:
        """The tab hangs inside the frame from its top left corner, its black one with the frame's edge: on the
        frame's corner it stood over the cell above and the framed cell's own words. Those step aside for it,
        within the frame."""
        to_px, from_px = self.ax.transData.transform, self.ax.transData.inverted().transform
        pt = self.ax.get_figure(root=True).dpi / 72
        pad = TAB_PAD * FRAMED_TAB_PT * pt
        (x0, y0), (x1, y1) = to_px((px - FRAME_W / 2, py - FRAME_H / 2)), to_px((px + FRAME_W / 2, py + FRAME_H / 2))
        self.tab.set(text=FRAMED_TAB_TEXT, fontsize=FRAMED_TAB_PT, position=from_px((x0 + pad, y1 - pad)),
                     ha="left", va="top", fontweight="normal")
        extent = self._extent(self.tab, FRAMED_TAB_TEXT, "left", "top", FRAMED_TAB_PT)
        tab = _box(x0 + pad, y1 - pad, extent)
        word = self.words.get(cell)
        if word is None:
            return
        edge = FRAME_PT / 2 * pt  # the frame's black edge, half of it inside its outline
        inner = (x0 + edge, y0 + edge, x1 - edge, y1 - edge)
        spot = self._aside(word, [_box(x0 + pad, y1 - pad, extent, WORDS_CLEAR_PT * pt)],
                           (tab[0] + tab[2]) / 2, (tab[1] + tab[3]) / 2, pt, within=inner)
        self._move(word, spot)

    def words_home(self) -> None:
        """Every cell's words back in the middle of its cell."""
        for word in self.moved:
            position, text = self._home[word]
            word.set(position=position, text=text, ha="center", va="center", fontsize=CELL_PT, visible=True)
        if self.gaps is not None:
            self.gaps.fit(self.moved)
        self.moved = []

    def _clear_of_words(self, px: float, py: float, texts: Sequence[str]) -> None:
        """Place the tab and move the words the point or the tab would cover, so that nothing overlaps.

        The tab shows the first of ``texts`` (longest first) that leaves every cell's words room, in the first
        place that does: a tab that left a cell's words out stood where they were, and read as covering them
        (lesson 10 at lock 25: " now: ✗ invalid " over the (30, 45) cell, whose words were left out).
        """
        to_px, from_px = self.ax.transData.transform, self.ax.transData.inverted().transform
        pt = self.ax.get_figure(root=True).dpi / 72
        cx, cy = to_px((px, py))
        reach = (POINT_PT + POINT_EDGE_PT) / 2 * pt  # the ring's outer edge
        ring = _box(cx, cy, (-reach, -reach, reach, reach), WORDS_CLEAR_PT * pt)
        tabs = [((px, py + 0.2), "center", "bottom"), ((px, py - 0.2), "center", "top"),  # above, sitting on the ring
                (from_px((cx + reach, cy)), "left", "center"), (from_px((cx - reach, cy)), "right", "center")]
        page = self.ax.get_figure(root=True).bbox
        cells = [(*to_px((i - 0.5, j - 0.5)), *to_px((i + 0.5, j + 0.5))) for (i, j), _ in self._home.values()]
        mine = [cell for cell in cells if _overlap(ring, [cell]) > 0]
        best = None
        for k, (text, (at, ha, va)) in enumerate((text, spot) for text in texts for spot in tabs):
            tx, ty = to_px(at)
            extent = self._extent(self.tab, text, ha, va, TAB_PT)
            tab = _box(tx, ty, extent)
            off_page = not (page.x0 <= tab[0] and tab[2] <= page.x1 and page.y0 <= tab[1] and tab[3] <= page.y1)
            blocked = [ring, _box(tx, ty, extent, WORDS_CLEAR_PT * pt)]
            # every cell's words, not only the nearest: a long tab beside the ring reaches past the next cell
            places = {w: self._aside(w, blocked, cx, cy, pt) for w in self.words.values()}
            # a tab standing on a cell the ring is not on reads as covering that cell's words (lock 12, work 30: the
            #   tab beside the ring in the 10 s column stood on the 20 s column's cell)
            area = (tab[2] - tab[0]) * (tab[3] - tab[1])
            astray = sum(_overlap(tab, [cell]) > TAB_ASTRAY * area for cell in cells if cell not in mine)
            signs = sum(spot not in (None, _LEFT_OUT) and spot[4] in CELL_SIGN.values() for spot in places.values())
            score = (off_page, sum(spot is _LEFT_OUT for spot in places.values()), astray, signs, k)
            if best is None or score < best[0]:
                best = (score, (text, at, ha, va), places)
            if score[:4] == (False, 0, 0, 0):
                break
        assert best is not None  # the loop tries at least one place
        _, (self.tab_text, at, ha, va), places = best
        self.tab.set(text=self.tab_text, position=at, ha=ha, va=va)
        for word, spot in places.items():
            self._move(word, spot)

    def _move(self, word, spot: tuple | None) -> None:
        """Put a cell's words where ``_aside`` found room for them (or leave them out)."""
        if spot is _LEFT_OUT:
            word.set_visible(False)
        elif spot is not None:
            x, y, ha, va, text, size = spot
            word.set(position=self.ax.transData.inverted().transform((x, y)), text=text, ha=ha, va=va, fontsize=size)
        if spot is not None:
            self.moved.append(word)

    def _aside(self, word, blocked: list, cx: float, cy: float, pt: float, within: tuple | None = None
               ) -> tuple | None:
        """Where ``word`` goes, inside its cell (or ``within``, px: a frame's inside) and clear of ``blocked``:
        (x, y, ha, va, text, size), None where it is already clear, ``_LEFT_OUT`` where there is no room.

        Away from the point along the way it is off the cell's middle (across, then up or down), on one
        line, then on two; last, into a corner; at the cell's size, then a little smaller.
        """
        (i, j), text = self._home[word]
        to_px = self.ax.transData.transform
        (x0, y0), (x1, y1) = to_px((i - 0.5, j - 0.5)), to_px((i + 0.5, j + 0.5))
        edge, inset = CELL_EDGE_PT / 2 * pt, (CELL_EDGE_PT / 2 + WORDS_INSET_PT) * pt
        cell = (x0 + edge, y0 + edge, x1 - edge, y1 - edge)
        if within is not None:  # inside a frame: its edge is the cell's, with as much room inside it
            cell, inset = within, FRAMED_INSET_PT * pt
            x0, y0, x1, y1 = within
        hx, hy = to_px((i, j))
        home = _box(hx, hy, self._extent(word, text, "center", "center", CELL_PT))
        if not _overlap(home, blocked):
            return None
        mx, my = (x0 + x1) / 2, (y0 + y1) / 2
        across = [(x0 + inset, "left"), (x1 - inset, "right")][:: 1 if cx >= mx else -1]
        updown = [(y0 + inset, "bottom"), (y1 - inset, "top")][:: 1 if cy >= my else -1]
        texts = list(dict.fromkeys([text, text.replace(" ", "\n", 1)]))
        sideways = [(x, my, ha, "center", t) for t in texts for x, ha in across]
        vertical = [(mx, y, "center", va, t) for t in texts for y, va in updown]
        corners = [(x, y, ha, va, t) for t in texts for x, ha in across for y, va in updown]
        first, then = (sideways, vertical) if abs(cx - mx) / (x1 - x0) >= abs(cy - my) / (y1 - y0) else \
            (vertical, sideways)
        spots = [(*spot, size) for size in (CELL_PT, CELL_SMALL_PT) for spot in first + then + corners]
        # last, its sign alone ("✗"), where the ring covers most of the cell: words left out read as hidden under it
        sign = next((CELL_SIGN[s] for s, said in CELL_TEXT.items() if said == text and s in CELL_SIGN), None)
        if sign is not None:
            spots += [(x, y, ha, va, sign, CELL_PT) for x, y, ha, va, _ in [*first, *then, *corners][:len(first)]]
            spots += [(x, y, ha, va, sign, CELL_PT) for x, y, ha, va, _ in corners]
        for spot in spots:
            x, y, ha, va, t, size = spot
            box = _box(x, y, self._extent(word, t, ha, va, size))
            if cell[0] <= box[0] and box[2] <= cell[2] and cell[1] <= box[1] and box[3] <= cell[3] \
                    and not _overlap(box, blocked):
                return spot
        return _LEFT_OUT

    def _extent(self, text, words: str, ha: str, va: str, size: float) -> tuple:
        """Where ``text`` showing ``words`` with this alignment and size covers, background box included, in
        pixels from its anchor; measured once (all cells' words share their font and box, the tab has its own)."""
        key = (text is self.tab, words, ha, va, size)
        found = self._extents.get(key)
        if found is None:
            renderer = self.ax.get_figure(root=True).canvas.get_renderer()
            saved = text.get_text(), text.get_horizontalalignment(), text.get_verticalalignment(), text.get_fontsize()
            text.set(text=words, ha=ha, va=va, fontsize=size)
            ax_, ay_ = text.get_transform().transform(text.get_position())
            box = drawn_box(text, renderer)
            text.set(text=saved[0], ha=saved[1], va=saved[2], fontsize=saved[3])
            found = self._extents[key] = (box.x0 - ax_, box.y0 - ay_, box.x1 - ax_, box.y1 - ay_)
        return found


_LEFT_OUT = ("left out",)  # a cell's words with no room beside the point


def _tab_texts(verdict: str | None) -> list[str]:
    """What a ring's tab may say of the verdict, longest first: its words, or its sign alone (" now: ✗ "), as the
    legend's entry for it begins; only " now " when the verdict is not known."""
    if verdict is None or verdict not in CELL_TEXT:
        return [TAB_TEXT]
    signs = [CELL_SIGN[verdict]] if verdict in CELL_SIGN else []
    return list(dict.fromkeys(f" now: {said} " for said in [CELL_TEXT[verdict], *signs]))


def _box(x: float, y: float, extent: tuple, pad: float = 0.0) -> tuple:
    """``extent`` (from an anchor) placed at (x, y), grown by ``pad``: (x0, y0, x1, y1)."""
    return x + extent[0] - pad, y + extent[1] - pad, x + extent[2] + pad, y + extent[3] + pad


def _overlap(box: tuple, others: list) -> float:
    """Square pixels ``box`` (x0, y0, x1, y1) shares with ``others``."""
    return sum(max(0.0, min(box[2], o[2]) - max(box[0], o[0])) * max(0.0, min(box[3], o[3]) - max(box[1], o[1]))
               for o in others)


def drawn_box(text, renderer):
    """The display box a text covers, its background box included."""
    box = text.get_window_extent(renderer)
    patch = text.get_bbox_patch()
    if patch is None:
        return box
    text.update_bbox_position_size(renderer)
    return Bbox.union([box, patch.get_window_extent(renderer)])


class NowShapes:
    """The legend's symbol for the mark, in both its shapes: a framed box and a ring (with its dot), as drawn in the
    legend; ``show`` keeps the one the map shows (the legend showed a framed box while the map showed a ring)."""

    def __init__(self) -> None:
        self.frame: list = []
        self.ring: list = []

    @property
    def artists(self) -> list:
        return [*self.frame, *self.ring]

    def show(self, ring: bool) -> None:
        for artist in self.frame:
            artist.set_visible(not ring)
        for artist in self.ring:
            artist.set_visible(ring)


class _NowHandler(HandlerPatch):
    """Draws the mark's legend entry as a frame and a ring over each other (``NowShapes`` shows one); any other patch
    (a cell's colour) as usual."""

    def __init__(self, shapes: NowShapes | None) -> None:
        super().__init__()
        self.shapes = shapes

    def create_artists(self, legend, orig_handle, xdescent, ydescent, width, height, fontsize, trans):
        from matplotlib.colors import to_hex
        from matplotlib.lines import Line2D

        drawn = super().create_artists(legend, orig_handle, xdescent, ydescent, width, height, fontsize, trans)
        if self.shapes is None or to_hex(orig_handle.get_facecolor()) != "#ffffff":
            return drawn  # a cell's colour
        cx, cy = width / 2 - xdescent, height / 2 - ydescent
        ring = [Line2D([cx], [cy], ls="none", marker="o", ms=size, mfc=face, mec=edge, mew=mew)
                for size, face, edge, mew in ((fontsize * 1.3, "none", "black", 2.6), (fontsize * 1.3, "none",
                                                                                      "white", 0.8),
                                              (fontsize * 0.4, "black", "white", 0.6))]
        for artist in ring:
            artist.set_transform(trans)
        self.shapes.frame, self.shapes.ring = list(drawn), ring
        return [*drawn, *ring]


def now_words(grid: VerdictGrid, xv: Any, yv: Any) -> str:
    return f"now: {grid.x.word} {grid.x.tick(xv)}, {grid.y.word} {grid.y.tick(yv)}".replace("\n", " ")


def _legend(fig, grid: VerdictGrid, now: str | None, equal_line: str | None) -> float:
    """The figure's legend; returns the height (in) it takes past the two rows ``HEAD_IN`` keeps room for."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    kinds = {cell: grid.shown(*cell) for cell in grid.cells}
    shown = [s for s in (Status.VALID, NOTED, Status.INVALID, Status.UNKNOWN, REFUSED) if s in kinds.values()]
    # the noted cells' entry says what the checker noted, in its own words (the kinds of its notes)
    noted = ", ".join(dict.fromkeys(n for cell, s in kinds.items() if s == NOTED for n in grid.notes[cell]))
    handles: list[Artist] = [Patch(facecolor=COLOURS[s], edgecolor="none",
                                   label=f"{CELL_TEXT[s]} (noted: {noted})" if s == NOTED else CELL_TEXT[s])
                             for s in shown]
    if now:
        handles.append(Patch(facecolor="white", edgecolor="black", lw=3, label=now))
        fig.now_shapes = NowShapes()
    if equal_line:
        handles.append(Line2D([], [], ls="--", lw=2.2, color="#1F1F1F", label=equal_line))
    wide = sum(len(str(h.get_label())) for h in handles) > LEGEND_ROW_CHARS
    renderer = fig.canvas.get_renderer()
    # one column fewer while the legend is wider than the figure: its edges were cut off (a noted cell's entry beside
    # the mark's widest words)
    for ncols in range(min(2 if wide else 3, len(handles)), 0, -1):
        legend = fig.legend(handles=handles, loc="outside lower center", ncols=ncols, fontsize=LABEL_PT - 1,
                            frameon=False, handler_map={Patch: _NowHandler(fig.now_shapes)} if now else None)
        if ncols == 1 or legend.get_window_extent(renderer).width <= fig.bbox.width:
            break
        legend.remove()
    rows = -(-len(handles) // ncols)
    return max(0, rows - 2) * legend.get_window_extent(renderer).height / rows / fig.dpi


def draw_verdict_map(grid: VerdictGrid, *, mark: Mapping[str, Any] | None = None, title: str | None = None,
                     equal_line: str | None = None, width: float = WIDTH_IN, verdict: str | None = None
                     ) -> VerdictMapFigure:
    """The map of ``grid``: a cell per combination, ``mark`` marked (for a run whose verdict is ``verdict``, as the map
    shows it: ``shown_verdict``; see ``NowMark.place``), ``equal_line`` naming the dashed x = y line."""
    fig = _map_figure(grid, mark, title, equal_line, width, None, verdict)
    audit.finish(fig, "verdict map")
    return fig


def _map_figure(grid: VerdictGrid, mark: Mapping[str, Any] | None, title: str | None, equal_line: str | None,
                width: float, room: str | None, verdict: str | None = None) -> VerdictMapFigure:
    """``draw_verdict_map``; ``room`` is the widest legend words the mark will have (a linked map's mark moves)."""
    height = HEAD_IN + ROW_IN * max(3, len(grid.y.values))
    fig = VerdictMapFigure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    fig.grid = grid
    ax = fig.add_subplot()
    words = _draw_cells(ax, grid)
    line = _draw_equal_line(ax, grid) if equal_line else None
    if line is None:
        equal_line = None
    now = now_words(grid, mark[grid.x.name], mark[grid.y.name]) if mark else None
    title = title or f"{grid.scenario}: the verdict for each {grid.x.name} and {grid.y.name}"
    ax.set_title(textwrap.fill(title, int(width * 72 / (TITLE_PT * 0.65))), fontsize=TITLE_PT, fontweight="bold",
                 pad=14, parse_math=False)
    extra = _legend(fig, grid, room or now, equal_line)
    if extra:  # a legend of more rows: the grid's rows keep their height (squeezed, the ring covered their words)
        fig.set_figheight(height + extra)
    if mark or line is not None:
        # The mark and the line move the words they would cover, measured where they are drawn: lay out once and
        # keep it.
        freeze_layout(fig)
    if mark:
        _room_for_a_ring(ax, grid)
    gaps = words_off_line(ax, line, words) if line is not None else None
    fig.cell_words = words
    if mark:
        fig.now_mark = NowMark(ax, words, gaps, fig.now_shapes)
        fig.now_mark.place(grid, mark, verdict)
    return fig


def _room_for_a_ring(ax, grid: VerdictGrid) -> None:
    """Around the grid, just the room a ring on its edge needs, measured on the laid-out axes (``MARGIN`` before)."""
    box = ax.get_window_extent()
    reach = ((POINT_PT + POINT_EDGE_PT) / 2 + POINT_EDGE_PT / 2) * ax.get_figure(root=True).dpi / 72 + 1
    for axis, size, set_lim in ((grid.x, box.width, ax.set_xlim), (grid.y, box.height, ax.set_ylim)):
        lo, hi = axis.edges()
        margin = reach * (hi - lo) / max(size - 2 * reach, 1.0)
        set_lim(lo - margin, hi + margin)


def verdict_map(scenario: str, handler: Any, x: Any, y: Any, *, mark: Mapping[str, Any] | None = None,
                settings: Any = None, seed: int = 0, title: str | None = None,
                equal_line: str | None = None) -> VerdictMapFigure:
    """Run the grid (``verdict_grid``) and draw it (``draw_verdict_map``); ``fig.grid`` holds the verdicts."""
    grid = verdict_grid(scenario, handler, x, y, settings=settings, seed=seed)
    return draw_verdict_map(grid, mark=mark, title=title, equal_line=equal_line)


class MapPicture:
    """A map drawn once, whose mark moves: ``png(mark)`` redraws only the mark over the grid's pixels.

    The grid, its words, the dashed line and the legend are drawn once into a background, and the
    grid once more without the cells' words; a move pastes the background back, lifts the words
    the mark moves aside (``NowMark``) off their cells, draws them where they go, and draws the mark
    and its legend words: the same pixels as a picture drawn afresh with the mark there (the legend
    keeps room for the widest words the mark can have, so it does not shift as they change).
    """

    def __init__(self, grid: VerdictGrid, mark: Mapping[str, Any], *, title: str | None = None,
                 equal_line: str | None = None, width: float = WIDTH_IN):
        import numpy as np

        from .quicktext import quick_text

        self.grid = grid
        self.figure = _map_figure(grid, mark, title, equal_line, width, _widest_words(grid))
        self.mark: NowMark = self.figure.now_mark
        self.mark.words_home()
        self.words = self.figure.legends[0].get_texts()[-2 if self.figure.legends[0].get_lines() else -1]
        canvas, cell_words = self.figure.canvas, list(self.mark.words.values())
        self._gaps = self.mark.gaps.patches if self.mark.gaps is not None else {}  # each word's gap in the line
        on_words = [*(patch for patch in self._gaps.values() if patch.get_visible()), *cell_words]
        shapes = self.figure.now_shapes.artists if self.figure.now_shapes is not None else []
        for artist in [*self.mark.artists, self.words, *on_words, *shapes]:
            artist.set_visible(False)
        with quick_text():
            canvas.draw()
            self._bare = np.array(canvas.buffer_rgba())  # the cells without their words, the dashed line whole
            for artist in on_words:
                artist.set_visible(True)
                self.figure.draw_artist(artist)
        self._background = np.array(canvas.buffer_rgba())
        renderer, height = canvas.get_renderer(), self._bare.shape[0]
        self._lift = {}  # where each cell's words (and their gap in the line) are in the background: (rows, columns)
        for word in cell_words:
            box, gap = drawn_box(word, renderer), self._gaps.get(word)
            if gap is not None and gap.get_visible():
                box = Bbox.union([box, gap.get_window_extent(renderer)])
            self._lift[word] = (slice(max(0, int(height - box.y1) - 1), int(height - box.y0) + 2),
                                slice(max(0, int(box.x0) - 1), int(box.x1) + 2))
        self.words.set_visible(True)

    def png(self, mark: Mapping[str, Any], verdict: str | None = None) -> bytes:
        """The map with the mark on ``mark``, for a run whose verdict is ``verdict`` (see ``NowMark.place``)."""
        import numpy as np

        from .quicktext import png_of_pixels, quick_text

        pixels = np.asarray(self.figure.canvas.buffer_rgba())
        pixels[...] = self._background
        self.words.set_text(self.mark.place(self.grid, mark, verdict))
        for word in self.mark.moved:
            rows, columns = self._lift[word]
            pixels[rows, columns] = self._bare[rows, columns]
        gaps = [self._gaps[word] for word in self.mark.moved if word in self._gaps]
        shapes = self.figure.now_shapes.artists if self.figure.now_shapes is not None else []
        with quick_text():
            for artist in [*gaps, *self.mark.moved, *self.mark.artists, self.words, *shapes]:
                if artist.get_visible():
                    self.figure.draw_artist(artist)
        # audited as the dashboard shows it: a lesson's run of the map as first drawn (draw_verdict_map) never saw
        # where a moved mark put its tab and the cells' words
        audit.record(self.figure, "verdict map")
        return png_of_pixels(pixels)


def _widest_words(grid: VerdictGrid) -> str:
    """The legend words of the mark with the longest tick of each axis, and room for a value between ticks: as
    ``now_words`` says them (the axes' words; their settings' names kept more room than the words ever take, and
    pushed a legend with a fourth entry past the figure's left edge)."""
    xt = max((grid.x.tick(v).replace("\n", " ") for v in grid.x.values), key=len)
    yt = max((grid.y.tick(v).replace("\n", " ") for v in grid.y.values), key=len)
    return f"now: {grid.x.word} {xt}.0, {grid.y.word} {yt}.0"


class LinkedVerdictMap:
    """A ``SettingsExplorer`` with a verdict map under its controls that follows them: see the module docstring.

    The cells run with the explorer's current values (``settings``, a dict or a function of a
    cell's values, shapes them further, as the explorer's own ``run`` does). A move along the
    map's axes only moves the mark; a move of another setting reruns the cells, at once when
    set from Python, and one cell at a time between the browser's messages (``status`` counts
    them) when moved in the browser. ``image`` is the map last sent to the page (a ``Part``); the page shows
    it with the explorer's verdict and timeline, in one step (``sandbox.present.stage``).
    """

    def __init__(self, explorer: Any, handler: Any, *, x: Any, y: Any, settings: Any = None, seed: int = 0,
                 title: str | None = None, equal_line: str | None = None):
        import ipywidgets as widgets

        from .stage import MAP_NOTICE, MAP_SIDE, ROOT, Part

        self.explorer, self.handler, self.seed = explorer, handler, seed
        self.x, self.y = Axis.of(x), Axis.of(y)
        self.settings, self.title, self.equal_line = settings, title, equal_line
        self.image = Part("map")
        self.status = widgets.HTML()  # cells still to come: over the map's top left, dimmed with it (``MAP_NOTICE``)
        self.status.add_class(MAP_NOTICE)
        self.grid: VerdictGrid | None = None
        self.picture: MapPicture | None = None
        self._shared: dict[str, SettingValue] | None = None
        self._filling: dict[str, SettingValue] | None = None  # the off-axis settings whose cells are being run
        #: (mark, verdict, PNG) ahead() drew
        self._ready: tuple[dict[str, SettingValue], str | None, bytes] | None = None
        slot = explorer.stage.slot("map")
        side = widgets.VBox([slot, self.status], layout={"max_width": "100%"})
        side.add_class(MAP_SIDE)
        self.widget = widgets.VBox([explorer.top, side, *explorer.shows(), explorer.output, explorer.stage.feed])
        self.widget.add_class(ROOT)
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
    def mark(self) -> dict[str, SettingValue]:
        return self._mark_of(self.explorer.values())

    def _mark_of(self, values: Mapping[str, Any]) -> dict[str, SettingValue]:
        return {self.x.name: values[self.x.name], self.y.name: values[self.y.name]}

    def _shared_of(self, values: Mapping[str, Any]) -> dict[str, SettingValue]:
        return {k: v for k, v in values.items() if k not in (self.x.name, self.y.name)}

    def _cell(self, shared: dict[str, SettingValue]) -> Callable[[dict[str, SettingValue]], dict[str, SettingValue]]:
        return lambda values: _cell_settings(self.settings, {**shared, **values})

    def _regrid(self, grid: VerdictGrid, shared: dict[str, SettingValue]) -> None:
        self.grid, self._shared, self._filling = grid, shared, None
        self.picture = MapPicture(grid, self.mark, title=self._title(shared), equal_line=self.equal_line)

    def _title(self, shared: Mapping[str, Any]) -> str:
        """The map's title, with the settings of the explorer's controls that are off its axes: the cells ran
        with them, and a learner who moved one must see which map this is."""
        base = self.title or f"{self.explorer.scenario.name}: the verdict for each {self.x.name} and {self.y.name}"
        from .widgets import shown_value

        known = self.explorer.scenario.all_settings()
        said = []
        for name, value in shared.items():
            if name not in self.explorer.controls:
                continue
            shown = shown_value(value)
            # a setting counted in seconds (its help says so) says its unit
            unit = " s" if name in known and "second" in known[name].help and not isinstance(value, bool) else ""
            said.append(f"{self.explorer.label(name)} {shown}{unit}")
        return f"{base} ({', '.join(said)})" if said else base

    def _verdict(self) -> str | None:
        return _shown_run(self.explorer.result)

    def redraw(self) -> VerdictMapFigure:
        """Rerun the grid if a setting off the axes changed, move the mark to the current values, and show it."""
        shared = self._shared_of(self.explorer.values())
        if shared != self._shared:
            self._regrid(verdict_grid(self.explorer.scenario.name, self.handler, self.x, self.y,
                                      settings=self._cell(shared), seed=self.seed), shared)
        self.image.value = self._drawn.png(self.mark, self._verdict())
        self.status.value = ""
        self.explorer.publish("map")
        return self._drawn.figure

    def parts(self) -> dict[str, bytes]:
        """What the map shows with the explorer's verdict: its picture, unless its cells are still to come."""
        return {} if self._filling is not None else {"map": self.image.value}

    def stale(self) -> None:
        """Nothing of the map's own: the explorer's notice dims the map with the rest."""

    def ahead(self, values: Mapping[str, Any]) -> None:
        """While the explorer's run goes on: the mark moved, when the cells stay the same, drawn for the verdict
        of the cell it falls in (the run's verdict, most often; ``follow`` draws it again when it is not)."""
        self._ready = None
        if self._shared_of(values) == self._shared and self.grid is not None:
            mark = self._mark_of(values)
            cell = (self.x.holder(mark[self.x.name]), self.y.holder(mark[self.y.name]))
            guess = self.grid.shown(*cell) if cell in self.grid.cells else None
            self._ready = (mark, guess, self._drawn.png(mark, guess))

    def follow(self, values: Mapping[str, Any], result: Any, loop: Any) -> None:
        """Draw what the map shows with the explorer's new run: the mark moved, or its cells still to come."""
        shared = self._shared_of(values)
        verdict = _shown_run(result)
        if shared == self._shared:
            self._filling = None
            mark, ready = self._mark_of(values), self._ready
            on_cell = mark[self.x.name] in self.x.values and mark[self.y.name] in self.y.values
            if ready is not None and ready[0] == mark and (ready[1] == verdict or on_cell):
                self.image.value = ready[2]
            else:
                self.image.value = self._drawn.png(mark, verdict)
            return
        if loop is None:  # set from Python: run the cells now, show them with the rest
            grid = verdict_grid(self.explorer.scenario.name, self.handler, self.x, self.y,
                                settings=self._cell(shared), seed=self.seed)
            self._regrid(grid, shared)
            self.image.value = self._drawn.png(self._mark_of(values), verdict)
            return
        if shared != self._filling:
            self._filling = shared
            self.status.value = notice(self._progress(0), "map")
            loop.call_soon(self._fill, VerdictGrid(self.explorer.scenario.name, self.x, self.y), shared, loop)

    def _progress(self, done: int) -> str:
        return f"verdict map: {done} of {len(self.x.values) * len(self.y.values)} cells run for the new settings…"

    def _fill(self, grid: VerdictGrid, shared: dict[str, SettingValue], loop: Any) -> None:
        """Run one cell, then give the browser's messages their turn before the next; show the map when done."""
        if shared != self._filling:
            return  # a later setting's cells are being run instead
        todo = [(xv, yv) for yv in self.y.values for xv in self.x.values if (xv, yv) not in grid.cells]
        if todo:
            xv, yv = todo[0]
            cfg = self._cell(shared)({self.x.name: xv, self.y.name: yv})
            grid.cells[(xv, yv)], grid.notes[(xv, yv)] = _judge(grid.scenario, self.handler, self.seed, cfg)
            self.status.value = notice(self._progress(len(grid.cells)), "map")
            loop.call_soon(self._fill, grid, shared, loop)
            return
        self._regrid(grid, shared)
        self.image.value = self._drawn.png(self._mark_of(self.explorer._drawn_for), self._verdict())
        self.explorer.publish("map")

    def _repr_mimebundle_(self, **kw: Any):
        return self.explorer.static_bundle(self.widget, self.image, **kw)


def linked_verdict_map(explorer: Any, handler: Any, *, x: Sequence, y: Sequence, **kw: Any) -> LinkedVerdictMap:
    """A ``LinkedVerdictMap``: ``explorer`` and, under its controls, a verdict map whose mark follows them."""
    return LinkedVerdictMap(explorer, handler, x=x, y=y, **kw)
