"""Collision-free placement in display space: the obstacle map and spreading a row of markers.

Once the figure's layout is frozen, everything drawn afterwards (markers, arrows,
labels) registers its display-space box in an :class:`Obstacles` map, and each label
tries a list of candidate positions, keeping the first that covers nothing already
drawn (:meth:`~sandbox.present.timeline.canvas.Canvas.place`). :func:`row_positions` places
the markers of one row as close as possible to their true times without overlapping.
Pure geometry in display pixels: no figure here.
"""
from __future__ import annotations

import numpy as np
from matplotlib.transforms import Bbox

SQUEEZE_LIMIT = 0.9  # markers that need more room than a row has are squeezed to this fraction at most (touching) ...
STAGGER_GAP = 0.55  # ... beyond that they alternate up and down, this fraction of their width apart (so that
#   every other marker, on the same side, still clears its neighbour)


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

    def remove(self, owner: str) -> None:
        """Forget every box ``owner`` registered."""
        keep = [i for i, o in enumerate(self.owners) if o != owner]
        self.boxes = [self.boxes[i] for i in keep]
        self.owners = [self.owners[i] for i in keep]
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


def row_positions(want: list[float], halves: list[float], lo: float, hi: float,
                  pad: float) -> tuple[list[float], list[int]]:
    """Marker centres inside [lo, hi], in time order, ``pad`` apart if they fit; if not,
    they overlap a little, then alternate up and down (the returned signs)."""
    n = len(want)
    gaps = [0.0] + [halves[i - 1] + halves[i] + pad for i in range(1, n)]
    signs = [0] * n
    left, right = lo + halves[0], hi - halves[-1]
    room = max(right - left, 0.0)
    need = sum(gaps)
    if need > room + 1e-9:
        f = room / need
        if f >= SQUEEZE_LIMIT:
            gaps = [g * f for g in gaps]
        else:
            signs = [-1 if i % 2 == 0 else 1 for i in range(n)]
            gaps = [g * STAGGER_GAP for g in gaps]
            need = sum(gaps)
            if need > room and need > 0:
                gaps = [g * room / need for g in gaps]
    if right < left:
        left = right = (lo + hi) / 2
    return spread(want, gaps, left, right), signs
