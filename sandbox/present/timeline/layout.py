"""Collision-free placement in display space: the obstacle map and stacking a row of markers.

Once the figure's layout is frozen, everything drawn afterwards (markers, arrows,
labels) registers its display-space box in an :class:`Obstacles` map, and each label
tries a list of candidate positions, keeping the first that covers nothing already
drawn (:meth:`~sandbox.present.timeline.canvas.Canvas.place`). :func:`stack_levels` stacks
the markers of one row that would cover each other, at their true times, one above the other.
Pure geometry in display pixels: no figure here.
"""
from __future__ import annotations

import numpy as np
from matplotlib.transforms import Bbox


class Obstacles:
    """Display-space boxes that labels must not cover, each tagged with an owner."""

    def __init__(self) -> None:
        self.boxes: list[Bbox] = []
        self.owners: list[str] = []
        self._cache: tuple[np.ndarray, np.ndarray] | None = None
        #: which boxes count, for each ``exclude`` asked about since the boxes last changed: a label tries tens of
        #: spots with one ``exclude``, and matching owners each time cost more than the overlap test itself
        self._counted: dict[tuple[str, ...], np.ndarray] = {}

    def add(self, box: Bbox, owner: str) -> None:
        self.boxes.append(box)
        self.owners.append(owner)
        self._changed()

    def remove(self, owner: str) -> None:
        """Forget every box ``owner`` registered."""
        keep = [i for i, o in enumerate(self.owners) if o != owner]
        self.boxes = [self.boxes[i] for i in keep]
        self.owners = [self.owners[i] for i in keep]
        self._changed()

    def _changed(self) -> None:
        self._cache = None
        self._counted = {}

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if self._cache is None:
            ext = np.array([b.extents for b in self.boxes]) if self.boxes else np.zeros((0, 4))
            self._cache = (ext, np.array(self.owners, dtype=object))
        return self._cache

    def _boxes_counted(self, exclude: tuple[str, ...]) -> np.ndarray:
        """The boxes' extents, but those owned by ``exclude``."""
        counted = self._counted.get(exclude)
        if counted is None:
            arr, owners = self.arrays()
            counted = arr[~np.isin(owners, list(exclude))] if exclude and len(arr) else arr
            self._counted[exclude] = counted
        return counted

    def hits(self, box: Bbox, exclude: tuple[str, ...] = ()) -> int:
        arr = self._boxes_counted(exclude)
        if not len(arr):
            return 0
        x0, y0, x1, y1 = box.extents
        return int(np.count_nonzero((arr[:, 0] < x1) & (arr[:, 2] > x0) & (arr[:, 1] < y1) & (arr[:, 3] > y0)))

    def points_hit(self, pts: np.ndarray, exclude: tuple[str, ...]) -> int:
        """How many distinct obstacles (not owned by ``exclude``) any of the points fall in."""
        a = self._boxes_counted(exclude)
        if not len(a) or not len(pts):
            return 0
        px, py = pts[:, 0][:, None], pts[:, 1][:, None]
        inside = (px > a[None, :, 0]) & (px < a[None, :, 2]) & (py > a[None, :, 1]) & (py < a[None, :, 3])
        return int(np.count_nonzero(inside.any(axis=0)))


def stack_levels(xs: list[float], halves: list[float], talls: list[float], pad: float, vpad: float) -> list[float]:
    """How far (display px, up) to lift each of a row's marks, given in time order at their true centres ``xs``:
    each cluster of marks that crowd (:func:`levels`) is centred on the row, its first level on top, so that marks
    at one instant read top to bottom in the order they happened. Nothing moves along the row."""
    found = levels(xs, halves, pad)
    tallest: dict[int, float] = {}
    for (_, _, first), tall in zip(found, talls):
        tallest[first] = max(tallest.get(first, 0.0), tall)
    return [((n - 1) / 2 - level) * (tallest[first] + vpad) for level, n, first in found]


def mixed_stacks(found: list[tuple[int, int, int]], times: list[float]) -> int:
    """How many marks stand stacked (``found``: :func:`levels`) with a mark of another time: a stack of one instant
    reads in order, top to bottom; one of marks some ms apart does not say which came first."""
    stacks: dict[int, set[float]] = {}
    for (_, n, first), t in zip(found, times):
        if n > 1:
            stacks.setdefault(first, set()).add(t)
    return sum(1 for (_, n, first) in found if n > 1 and len(stacks[first]) > 1)


def levels(xs: list[float], halves: list[float], pad: float) -> list[tuple[int, int, int]]:
    """(level, levels in its cluster, the cluster's first mark) of each mark, given in time order at their centres.

    A mark takes the first level on which it keeps ``pad`` from the mark before it there, but never one above an
    earlier mark standing at its place (:func:`same_place`): of marks at one instant the earlier is always above.
    A mark clear of every mark before it starts a new cluster."""
    out: list[tuple[int, int, int]] = []
    ends: list[float] = []  # the right end of the last mark on each level of the current cluster
    first, reach = 0, -np.inf
    for i, (x, h) in enumerate(zip(xs, halves)):
        if x - h >= reach + pad:
            out[first:] = [(lv, len(ends), first) for lv, _, _ in out[first:]]
            first, ends = i, []
        below = [out[j][0] + 1 for j in range(first, i) if same_place(xs[j], halves[j], x, h)]
        lowest = max(below, default=0)
        level = next((k for k in range(lowest, len(ends)) if x - h >= ends[k] + pad), max(lowest, len(ends)))
        ends += [-np.inf] * (level + 1 - len(ends))
        ends[level] = x + h
        reach = max(reach, x + h)
        out.append((level, 0, first))
    out[first:] = [(lv, len(ends), first) for lv, _, _ in out[first:]]
    return out


def same_place(x1: float, half1: float, x2: float, half2: float) -> bool:
    """Two marks stand at one place when their centres are closer than half the narrower one: read along the row,
    which came first is then lost, unless the earlier is above."""
    return abs(x1 - x2) < min(half1, half2)
