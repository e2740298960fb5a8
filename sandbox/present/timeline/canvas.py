"""The state every drawing stage shares: the figure, its axes, rows, scale and obstacle map.

A :class:`Canvas` is opened once (``frame.py``) and handed to each stage in turn
(``drawing.py``). It holds only what is fixed before the first stage runs, plus the
obstacle map the display-space stages fill; whatever a stage draws for later stages
is its return value, not an attribute here.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from matplotlib import text as mtext
from matplotlib.axes import Axes
from matplotlib.backend_bases import RendererBase
from matplotlib.path import Path
from matplotlib.transforms import Bbox

from .axis import TimeAxis
from .figure import TimelineFigure, freeze_layout
from .layout import Obstacles
from .model import Model
from .rows import Rows
from .sizing import Scale

TEXT_PAD_EM = 0.35  # a label's box is padded by this fraction of its font size (its rounded bbox patch)
OUTSIDE_PENALTY = 100  # a candidate reaching out of the axes counts as this many overlaps
OFF_PAGE_PENALTY = 10_000  # one cut off by the edge of the figure, as this many
GAP_HITS = 8  # one on an axis break, as this many: it reads as standing at a time the axis left out
AXIS_CLEAR_PX = 2  # px at 100 dpi: a label keeps this far above the time axis' line
TICK_CLEAR_PX = 7  # px at 100 dpi: a tick label keeps this far from an axis break (the audit asks 6)
GAP_OWNER = "gap"  # the obstacle owner of an axis break (``lanes.register_static_obstacles``)


@dataclass
class Canvas:
    """The figure being drawn and what every stage may read; only ``obs`` grows as stages run
    (and ``renderer`` is set once, when the layout is frozen)."""

    model: Model
    taxis: TimeAxis
    rows: Rows
    scale: Scale
    fig: TimelineFigure
    ax: Axes
    obs: Obstacles = field(default_factory=Obstacles)  # filled once the layout is frozen
    renderer: RendererBase | None = None  # set by freeze()
    zooms: tuple[float, ...] = ()  # the detail row's (``detail.py``): how magnified each of its stretches is
    arrow_lines: list[tuple[str, Path]] = field(default_factory=list)  # repeat arrows drawn (gid, display path)
    placed_cost: int = 0  # what the label ``place`` last kept covers, as overlaps (0: it stands free)
    #: Label boxes measured once, for every ``place`` that makes its labels one way (``place``'s ``measured``).
    measured: dict[str, dict[Any, tuple[float, float, Bbox, float]]] = field(default_factory=dict)
    #: What the frozen layout fixes, worked out once (``_fixed``).
    fixed: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def detail(self) -> bool:
        """This canvas draws the detail row under the timeline, not the timeline."""
        return bool(self.zooms)

    @property
    def pt(self) -> float:
        """Display pixels per point."""
        return self.fig.dpi / 72.0

    @property
    def compact(self) -> bool:
        return self.scale.compact

    def fs(self, base: float) -> float:
        """The font size for ``base`` points at full scale."""
        return self.scale.fs(base)

    def freeze(self) -> None:
        """Fix the layout: from now on display coordinates do not change."""
        freeze_layout(self.fig)
        self.renderer = self.fig.canvas.get_renderer()

    def px(self, x: float, y: float) -> tuple[float, float]:
        """Data to display coordinates."""
        px, py = self.ax.transData.transform((x, y))
        return float(px), float(py)

    def data(self, px: float, py: float) -> tuple[float, float]:
        """Display to data coordinates."""
        x, y = self.ax.transData.inverted().transform((px, py))
        return float(x), float(y)

    def axes_box(self) -> Bbox:
        return self._fixed("axes_box", lambda: self.ax.get_window_extent(self.renderer))

    def breaks_px(self) -> list[tuple[float, float]]:
        """Display x from and to of each axis break."""
        return self._fixed("breaks_px", lambda: [(self.px(xa, 0)[0], self.px(xb, 0)[0])
                                                 for _, _, xa, xb in self.taxis.gaps])

    def _fixed(self, name: str, work: Callable[[], Any]) -> Any:
        """``work()``, worked out once the layout is frozen (display coordinates no longer change then; a label tries
        tens of spots, each asking), and every time before."""
        if self.renderer is None:
            return work()
        if name not in self.fixed:
            self.fixed[name] = work()
        return self.fixed[name]

    def ticks_off_breaks(self, least: int = 1) -> None:
        """A tick label that would stand at the edge of an axis break: centred, "61" reached into "58 s skipped", and
        "3" and "61" either side of it read as one run of numbers. Where its stretch of the axis keeps ``least``
        labels without it, that end tick is left out (the steps between the others stay even); else its label is
        aligned away from the break, starting (ending) at its tick, which stays at its time, and a neighbour it would
        then crowd likewise. Aligned away, a label beside its tick reads as a time some seconds off (a learner read
        lesson 02's 0:01:00 as ten seconds early), so leaving one out comes first. A detail row's stretch keeps
        two labels, to show its scale."""
        breaks = self.breaks_px()
        while True:
            ticks, ways, crowded = self._tick_ways()
            stretch = [sum(1 for _, b in breaks if b <= x) for x, _, _ in ticks]
            ends = [i for i, way in enumerate(ways) if way != "center" and stretch.count(stretch[i]) > least
                    and (i == 0 or stretch[i - 1] != stretch[i] or i == len(ticks) - 1 or stretch[i + 1] != stretch[i])]
            if not ends:
                break
            kept = [i for i in range(len(ticks)) if i != ends[0]]
            times = {float(self.px(t, 0)[0]): t for t in self.ax.get_xticks()}
            self.ax.set_xticks([times[ticks[i][0]] for i in kept], labels=[ticks[i][1].get_text() for i in kept])
        for i in range(len(ticks) - 1):  # a label moved right, onto the next: the next moves right too
            if i + 1 in crowded and ways[i] == "left":
                ways[i + 1] = "left"
        for i in range(len(ticks) - 1, 0, -1):  # ... and one moved left, onto the one before it
            if i - 1 in crowded and ways[i] == "right":
                ways[i - 1] = "right"
        for (_, lb, _), way in zip(ticks, ways):
            lb.set_horizontalalignment(way)

    def _tick_ways(self) -> tuple[list[tuple[float, Any, Bbox]], list[Literal["left", "center", "right"]], set[int]]:
        """Each labelled tick (display x, label, box), its alignment away from a break beside it, and the ticks a
        label so aligned would crowd."""
        clear = TICK_CLEAR_PX * self.fig.dpi / 100
        breaks = self.breaks_px()
        for lb in self.ax.get_xticklabels():
            lb.set_horizontalalignment("center")
        ticks = sorted(((float(self.px(x, 0)[0]), lb, lb.get_window_extent(self.renderer))
                        for x, lb in zip(self.ax.get_xticks(), self.ax.get_xticklabels()) if lb.get_text()),
                       key=lambda tick: tick[0])
        ways: list[Literal["left", "center", "right"]] = []
        for _, _, box in ticks:
            before = any(box.x0 < a and box.x1 > a - clear for a, _ in breaks)  # a break begins at its right end
            after = any(box.x1 > b and box.x0 < b + clear for _, b in breaks)  # ... or ends at its left end
            ways.append("center" if before == after else "right" if before else "left")
        crowded: set[int] = set()
        for i in range(len(ticks) - 1):  # a label moved right, onto the next
            (x, _, box), (_, _, nxt) = ticks[i], ticks[i + 1]
            if ways[i] == "left" and ways[i + 1] == "center" and x + box.width > nxt.x0 - clear:
                crowded.add(i + 1)
        for i in range(len(ticks) - 1, 0, -1):  # ... and one moved left, onto the one before it
            (x, _, box), (_, _, prv) = ticks[i], ticks[i - 1]
            if ways[i] == "right" and ways[i - 1] == "center" and x - box.width < prv.x1 + clear:
                crowded.add(i - 1)
        return ticks, ways, crowded

    def across_break(self, x: float, box: Bbox) -> bool:
        """A break stands between display x ``x`` and ``box``: a label there names a time across the left-out
        stretch from what it stands for."""
        if box.x0 <= x <= box.x1:
            return False
        near = box.x1 if box.x1 < x else box.x0
        return any(min(near, x) <= a and b <= max(near, x) for a, b in self.breaks_px())

    def text_box(self, artist: mtext.Text) -> Bbox:
        """Display box of a text (without an annotation's arrow), padded for its bbox patch."""
        if isinstance(artist, mtext.Annotation):
            assert self.renderer is not None  # labels are placed once the layout is frozen
            artist.update_positions(self.renderer)
        box = mtext.Text.get_window_extent(artist, self.renderer)
        # get_fontsize() gives points (a float); matplotlib's stubs also allow a str
        return box.padded(TEXT_PAD_EM * float(artist.get_fontsize()) * self.fig.dpi / 72)

    def place(self, make: Callable[[Any], Any], candidates: list[Any], *, required: bool,
              exclude: tuple[str, ...] = (), owner: str = "label",
              crossings: Callable[[Bbox], int] | None = None,
              anchor: Callable[[Any], tuple[float, float, Any]] | None = None,
              adjust: Callable[[Any, Bbox], tuple[Any, Bbox]] | None = None, room: Bbox | None = None,
              measured: str | None = None) -> Any:
        """Try candidate placements; keep the first that overlaps nothing already drawn.

        A ``required`` label that finds no free spot goes where it overlaps least (``placed_cost`` says how much);
        an optional one is left out (None). ``crossings(box)`` counts what else a candidate covers (a
        note's leader line crossing markers), as overlaps.

        ``anchor(cand)`` -> (px, py, variant): the display point the candidate's box moves with, and what else
        shapes it (its alignment, its text). With it, one artist is made per variant to measure it, and every
        other candidate's box is that box moved to its anchor: a label tried in fifteen spots costs two or
        three texts, not fifteen. ``adjust(cand, box)`` -> (cand, box) may move a candidate once its box is known
        (slid back inside the plot, say). Every label keeps off the axis' breaks (their obstacles, ``GAP_OWNER``):
        one there reads as standing at a time the axis left out. ``room``: where the label may stand, when not only
        in the plot (a caller's result, beside the plot on its own row). ``measured`` names the way ``make`` makes its
        labels where other calls make theirs the same way (one look for a figure's arrow labels, say): their
        variants are measured once for all of them.
        """
        # variant -> its anchor, box and font size
        sizes = self.measured.setdefault(measured, {}) if measured is not None else {}
        best = None
        for i, cand in enumerate(candidates):
            artist, box, size = self._tried(make, cand, anchor, sizes)
            if adjust is not None:
                moved, box = adjust(cand, box)
                if moved != cand and artist is not None:
                    artist.remove()
                    artist = None
                cand = moved
            score = self._score(box, size, exclude, room)
            if crossings is not None and (score == 0 or required):  # an optional label needs a free spot only
                score += crossings(box)
            if score == 0 or i == len(candidates) - 1 and required and (best is None or score < best[0]):
                self.placed_cost = score
                return self._keep(artist if artist is not None else make(cand), owner)
            if best is None or score < best[0]:
                best = (score, cand)
            if artist is not None:
                artist.remove()
        if required and best is not None:
            self.placed_cost = best[0]
            return self._keep(make(best[1]), owner)
        return None

    def _tried(self, make: Callable[[Any], Any], cand: Any, anchor: Callable[[Any], tuple[float, float, Any]] | None,
               measured: dict[Any, tuple[float, float, Bbox, float]]) -> tuple[Any, Bbox, float]:
        """(the artist made for ``cand``, or None where its box was worked out without one; its box; font size)."""
        if anchor is None:
            artist = make(cand)
            return artist, self.text_box(artist), float(artist.get_fontsize())
        px, py, variant = anchor(cand)
        if variant not in measured:
            artist = make(cand)
            measured[variant] = (px, py, self.text_box(artist), float(artist.get_fontsize()))
            artist.remove()
        mx, my, box, size = measured[variant]
        return None, box.translated(px - mx, py - my), size

    def _score(self, box: Bbox, size: float, exclude: tuple[str, ...], room: Bbox | None = None) -> int:
        """Overlaps of a candidate box: neighbours it covers, and far more for leaving the plot (or ``room``) or the
        page."""
        ax0, ay0, ax1, ay1 = (room or self.axes_box()).extents
        px0, py0, px1, py1 = self.fig.bbox.extents
        x0, y0, x1, y1 = box.extents
        tol = TEXT_PAD_EM * size * self.pt + 1
        # the bottom is the time axis' line: a label on it reads as a tick, so it keeps clear of it
        inside = (x0 >= ax0 - tol and x1 <= ax1 + tol and y0 >= ay0 + AXIS_CLEAR_PX * self.fig.dpi / 100
                  and y1 <= ay1 + tol)
        on_page = x0 >= px0 and x1 <= px1 and y0 >= py0 and y1 <= py1
        # overlapping a neighbour is bad; covering an axis break, worse (cfn-custom-resource-retry's "3rd email o-1"
        #   over "58.7 min skipped"); running off the page (cut in half), worse still
        breaks = 0 if GAP_OWNER in exclude else sum(x0 < b and a < x1 for a, b in self.breaks_px())
        return (self.obs.hits(box, exclude) + (GAP_HITS - 1) * breaks + (0 if inside else OUTSIDE_PENALTY)
                + (0 if on_page else OFF_PAGE_PENALTY))

    def _keep(self, artist: Any, owner: str) -> Any:
        """The label chosen: its box joins the obstacles."""
        self.obs.add(self.text_box(artist), owner)
        return artist
