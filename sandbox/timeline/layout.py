"""Collision-free placement in display space: the obstacle map and the candidate search.

Once the figure's layout is frozen, everything drawn afterwards (markers, arrows,
labels) registers its display-space box in an :class:`Obstacles` map, and each label
tries a list of candidate positions, keeping the first that covers nothing already
drawn. :func:`spread` places the markers of one row as close as possible to their
true times without overlapping. :class:`Canvas` is the state and the display-space
helpers every drawing stage shares (see ``drawing.py`` for the order they run in).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
from matplotlib import text as mtext
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.transforms import Bbox

from .axis import TimeAxis
from .model import Attempt, Event, Model, Window


class Obstacles:
    """Display-space boxes that labels must not cover, each tagged with an owner."""

    def __init__(self) -> None:
        self.boxes: list[Bbox] = []
        self.owners: list[str] = []
        self._cache: tuple[np.ndarray, np.ndarray] | None = None

    def add(self, box: Bbox, owner: str) -> None:
        self.boxes.append(box)
        self.owners.append(owner)
        self._cache = None

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if self._cache is None:
            ext = np.array([b.extents for b in self.boxes]) if self.boxes else np.zeros((0, 4))
            self._cache = (ext, np.array(self.owners, dtype=object))
        return self._cache

    def hits(self, box: Bbox, exclude: tuple[str, ...] = ()) -> int:
        arr, owners = self.arrays()
        if not len(arr):
            return 0
        x0, y0, x1, y1 = box.extents
        mask = (arr[:, 0] < x1) & (arr[:, 2] > x0) & (arr[:, 1] < y1) & (arr[:, 3] > y0)
        if exclude and mask.any():
            mask &= ~np.isin(owners, list(exclude))
        return int(np.count_nonzero(mask))

    def points_hit(self, pts: np.ndarray, exclude: tuple[str, ...]) -> int:
        """How many distinct obstacles (not owned by ``exclude``) any of the points fall in."""
        arr, owners = self.arrays()
        if not len(arr) or not len(pts):
            return 0
        keep = ~np.isin(owners, list(exclude)) if exclude else np.ones(len(arr), bool)
        a = arr[keep]
        if not len(a):
            return 0
        px, py = pts[:, 0][:, None], pts[:, 1][:, None]
        inside = (px > a[None, :, 0]) & (px < a[None, :, 2]) & (py > a[None, :, 1]) & (py < a[None, :, 3])
        return int(np.count_nonzero(inside.any(axis=0)))


def spread(want: list[float], gaps: list[float], lower: float | None,
            upper: float | None = None) -> list[float]:
    """Positions as close as possible (least squares) to ``want``, in the same order,
    with at least ``gaps[i]`` between item i-1 and i, the first not before ``lower``
    and the last not after ``upper`` (when the gaps fit between them).

    Pool-adjacent-violators on the positions minus their cumulative minimum gaps.
    """
    offsets: list[float] = []
    acc = 0.0
    for g in gaps:
        acc += g
        offsets.append(acc)
    blocks: list[list[float]] = []  # [sum, count]
    for w, off in zip(want, offsets):
        blocks.append([w - off, 1.0])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            total, count = blocks.pop()
            blocks[-1][0] += total
            blocks[-1][1] += count
    q: list[float] = []
    for total, count in blocks:
        q += [total / count] * int(count)
    out = [qi + off for qi, off in zip(q, offsets)]
    if not out:
        return out
    if lower is not None and out[0] < lower:
        out[0] = lower
        for i in range(1, len(out)):
            out[i] = max(out[i], out[i - 1] + gaps[i])
    if upper is not None and out[-1] > upper:
        out[-1] = upper
        for i in range(len(out) - 2, -1, -1):
            out[i] = min(out[i], out[i + 1] - gaps[i + 1])
        if lower is not None and out[0] < lower:  # does not fit: centre the block
            shift = (lower - out[0] + upper - out[-1]) / 2
            out = [v + shift for v in out]
    return out


class Canvas:
    """What the drawing stages share: the figure, its scale and the obstacle map.

    ``Drawing`` (drawing.py) combines the stages (lanes, markers, arrows, labels) and
    runs them in order; the attributes below are filled by the stage named beside them.
    """

    # set up by Drawing.__init__
    model: Model
    taxis: TimeAxis
    fig: Figure
    ax: Axes
    scale: float  # 1.0, or less when there are very many lanes
    compact: bool  # so many lanes that sub-labels and optional labels are left out
    fs: Callable[[float], float]  # font size for a base size, scaled
    busy: set[str]  # sources whose header rows show delivery events
    lane_y: dict[str, float]
    head_y: dict[str, float]
    sweeper_y: float | None
    renderer: Any  # after the layout is frozen
    pt: float  # display pixels per point
    obs: Obstacles
    # lanes.py
    separators: list[float]
    gap_labels: list[mtext.Text]
    end_label: mtext.Text | None
    window_boxes: list[tuple[Window, float, float, float, float]]
    bars: dict[str, Any]
    pending_bands: list[tuple[Event, Any]]
    # markers.py
    attempt_rows: dict[str, float]
    dup_points: list[tuple[str, float, float, str]]
    sweep_points: list[tuple[float, float, str]]
    event_points: list[tuple[Event, float, float, float]]
    attempt_px: dict[tuple[int, str], tuple[float, float]]
    lane_left: dict[str, float]
    caller_points: list[tuple[Attempt, float, float]]
    # arrows.py
    arrows: list[tuple[Any, str, list[tuple[float, float]], str, bool]]

    def _px(self, x: float, y: float) -> tuple[float, float]:
        px, py = self.ax.transData.transform((x, y))
        return float(px), float(py)

    def _data(self, px: float, py: float) -> tuple[float, float]:
        x, y = self.ax.transData.inverted().transform((px, py))
        return float(x), float(y)

    def _text_box(self, artist: mtext.Text) -> Bbox:
        """Display box of a text (without an annotation's arrow), padded for its bbox patch."""
        if isinstance(artist, mtext.Annotation):
            artist.update_positions(self.renderer)
        box = mtext.Text.get_window_extent(artist, self.renderer)
        return box.padded(0.35 * artist.get_fontsize() * self.fig.dpi / 72)

    def _place(self, make: Callable[[Any], Any], candidates: list[Any], *, required: bool,
               exclude: tuple[str, ...] = (), owner: str = "label") -> Any:
        """Try candidate placements; keep the first that overlaps nothing already drawn."""
        axbox = self.ax.get_window_extent(self.renderer)
        best = None
        for i, cand in enumerate(candidates):
            artist = make(cand)
            box = self._text_box(artist)
            tol = 0.35 * artist.get_fontsize() * self.pt + 1
            inside = (box.x0 >= axbox.x0 - tol and box.x1 <= axbox.x1 + tol and
                      box.y0 >= axbox.y0 - tol and box.y1 <= axbox.y1 + tol)
            hits = self.obs.hits(box, exclude)
            score = hits + (0 if inside else 100)
            if score == 0:
                self.obs.add(box, owner)
                return artist
            if best is None or score < best[0]:
                best = (score, i, box)
            artist.remove()
        if required and best is not None:
            artist = make(candidates[best[1]])
            self.obs.add(best[2], owner)
            return artist
        return None

    def _row_positions(self, want: list[float], halves: list[float], lo: float,
                       hi: float) -> tuple[list[float], list[int]]:
        """Marker centres inside [lo, hi] (display px), in time order, not overlapping if they
        fit; if not, they overlap a little, then alternate up and down (the returned signs)."""
        n = len(want)
        pad = 2 * self.pt
        gaps = [0.0] + [halves[i - 1] + halves[i] + pad for i in range(1, n)]
        signs = [0] * n
        left, right = lo + halves[0], hi - halves[-1]
        room = max(right - left, 0.0)
        need = sum(gaps)
        if need > room + 1e-9:
            f = room / need
            if f >= 0.6:
                gaps = [g * f for g in gaps]
            else:
                signs = [-1 if i % 2 == 0 else 1 for i in range(n)]
                gaps = [g * 0.45 for g in gaps]
                need = sum(gaps)
                if need > room and need > 0:
                    gaps = [g * room / need for g in gaps]
        if right < left:
            left = right = (lo + hi) / 2
        return spread(want, gaps, left, right), signs
