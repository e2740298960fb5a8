"""Notes about the idempotency table and duplicate effects, placed once markers and arrows are in.

"o-1 kept 24 h →" for records that outlive the history, "2nd email o-1" for a
duplicate effect (both required: they are the point of the lesson), and "o-1
expired, still in the table" inside an expired band where it has room (optional).
"""
from __future__ import annotations

from typing import Any

from matplotlib import patches as mpatches
from matplotlib import transforms as mtransforms

from .canvas import Canvas
from .lanes import WindowBox
from .markers import MarkerPlacement
from .model import WindowKind
from .style import (
    DUPLICATE_COLOR,
    EXPIRED_COLOR,
    EXPIRED_TEXT,
    KEPT_COLOR,
    LABEL_PT,
    LOCK_COLOR,
    NOTE_TEXT,
    SMALL_PT,
    Z_DUPLICATE,
    Z_NOTE,
)
from .text import dup_text, note_text, note_what, short_key

NOTE_X = 0.995  # axes fraction: notes end at the right edge of the room after the history
NOTES_SPREAD = 0.62  # data units: several notes on one lane share this much height
NOTE_NUDGE = 0.3  # data units: a note that does not fit tries this far up or down
NOTE_PT, CROWDED_NOTE_PT, NUDGED_NOTE_PT = 10, 8, 9  # pt: a lane with CROWDED_NOTES or more uses smaller ones
CROWDED_NOTES = 3
CLUSTER_PT = 70  # pt: duplicates closer than this on one lane share a note
DUP_OFFSET_PT = 15  # pt at full scale: how far a duplicate note sits from its markers
DUP_LIFT_PT = 4  # pt: extra room straight above or below
# farther candidates, in multiples of the offset: beside, diagonally far out, straight above or below
DUP_BESIDE, DUP_FAR, DUP_HIGH = 1.6, 2, 2.4
DUP_SHRINK_PT = 9  # pt at full scale: the leader line stops this short of the marker
EXPIRED_GAP_PT = 6  # pt: between the bar (or the band's start) and the expired label
EXPIRED_NUDGE = 0.26  # data units: the expired label tries this far up or down
BAND_END_SLACK_PX = 2  # px: an expired label may reach this far past its band


def label_window_notes(c: Canvas) -> None:
    """"o-1 kept 24 h →" for windows that outlive the history, in the room after its end."""
    ax = c.ax
    blend = mtransforms.blended_transform_factory(ax.transAxes, ax.transData)
    for inv, notes in _outliving(c).items():
        y = c.rows.lane_y[inv]
        n = len(notes)
        step = NOTES_SPREAD / n if n > 1 else 0.0
        for i, ((kind, what), keys) in enumerate(notes.items()):
            dy = (i - (n - 1) / 2) * step
            text = note_text(keys, what)
            cands = [(dy, NOTE_PT if n < CROWDED_NOTES else CROWDED_NOTE_PT), (dy - NOTE_NUDGE, NUDGED_NOTE_PT),
                     (dy + NOTE_NUDGE, NUDGED_NOTE_PT), (dy, CROWDED_NOTE_PT)]

            def make(cand, y=y, text=text, kind=kind):
                yy, size = cand
                return ax.text(NOTE_X, y + yy, text, transform=blend, ha="right", va="center",
                               fontsize=c.fs(size), color=NOTE_TEXT, zorder=Z_NOTE, parse_math=False,
                               gid=f"clip-note:{kind}",
                               bbox={"boxstyle": "round,pad=0.15", "ec": "none",
                                     "fc": KEPT_COLOR if kind == WindowKind.KEPT else LOCK_COLOR})

            c.place(make, cands, required=True)


def _outliving(c: Canvas) -> dict[str, dict[tuple[str, str], list[str]]]:
    """Per lane, per (kind, "kept 24 h"): the keys whose windows outlive the history."""
    per_lane: dict[str, dict[tuple[str, str], list[str]]] = {}
    for w in c.model.windows:
        if w.kind == WindowKind.EXPIRED or (w.end is not None and w.end <= c.taxis.t_hi):
            continue
        keys = per_lane.setdefault(w.inv, {}).setdefault((w.kind, note_what(w)), [])
        if w.key not in keys:
            keys.append(w.key)
    return per_lane


def label_duplicates(c: Canvas, placed: MarkerPlacement) -> None:
    """"2nd email o-1" next to duplicate effects, one note per cluster, with a leader line."""
    for cl in _clusters(placed.dup_points, CLUSTER_PT * c.pt):
        text = dup_text([p[3] for p in cl])
        xy = c.data((cl[0][1] + cl[-1][1]) / 2, cl[0][2])

        def make(cand, xy=xy, text=text):
            (dx, dy), ha, va = cand
            return c.ax.annotate(text, xy=xy, xytext=(dx, dy), textcoords="offset points",
                                 ha=ha, va=va, fontsize=c.fs(LABEL_PT), fontweight="bold",
                                 color=DUPLICATE_COLOR, zorder=Z_DUPLICATE, annotation_clip=False,
                                 parse_math=False, gid="duplicate-note",
                                 bbox={"boxstyle": "round,pad=0.25", "fc": "white", "ec": DUPLICATE_COLOR, "lw": 1.2},
                                 arrowprops={"arrowstyle": "-", "color": DUPLICATE_COLOR, "lw": 1.4,
                                             "shrinkA": 0, "shrinkB": DUP_SHRINK_PT * c.scale.factor})

        c.place(make, _duplicate_candidates(DUP_OFFSET_PT * c.scale.factor), required=True)


def _clusters(points: list[tuple[str, float, float, str]], within: float) -> list[list[tuple[str, float, float, str]]]:
    """Duplicates that sit close together on one lane (in display px), grouped."""
    clusters: list[list[tuple[str, float, float, str]]] = []
    for p in points:
        if clusters and clusters[-1][-1][0] == p[0] and p[1] - clusters[-1][-1][1] < within:
            clusters[-1].append(p)
        else:
            clusters.append([p])
    return clusters


def _duplicate_candidates(off: float) -> list[Any]:
    """Offsets (pt) and alignments around the markers: above, below, diagonal, beside, then farther out."""
    return [((0, off + DUP_LIFT_PT), "center", "bottom"), ((0, -off - DUP_LIFT_PT), "center", "top"),
            ((off, off), "left", "bottom"), ((off, -off), "left", "top"),
            ((-off, off), "right", "bottom"), ((-off, -off), "right", "top"),
            ((off * DUP_BESIDE, 0), "left", "center"), ((-off * DUP_BESIDE, 0), "right", "center"),
            ((DUP_FAR * off, DUP_BESIDE * off), "left", "bottom"), ((DUP_FAR * off, -DUP_BESIDE * off), "left", "top"),
            ((-DUP_FAR * off, DUP_BESIDE * off), "right", "bottom"),
            ((-DUP_FAR * off, -DUP_BESIDE * off), "right", "top"),
            ((0, DUP_HIGH * off), "center", "bottom"), ((0, -DUP_HIGH * off), "center", "top")]


def label_expired(c: Canvas, window_boxes: list[WindowBox], bars: dict[str, mpatches.Rectangle]) -> None:
    """Name the expired-but-not-yet-deleted record where its band has room."""
    if c.compact:
        return
    done: set[tuple[str, str]] = set()
    for w, x0, x1, y0, h in window_boxes:
        if w.kind != WindowKind.EXPIRED or (w.inv, w.key) in done:
            continue
        done.add((w.inv, w.key))
        p0 = c.px(x0, y0 + h / 2)
        p1 = c.px(x1, y0 + h / 2)
        y = c.rows.lane_y[w.inv]
        text = f"{short_key(w.key)} expired, still in the table (TTL lag) →"
        bar = bars[w.inv]
        bar_end = c.px(bar.get_x() + bar.get_width(), y)[0]
        start = max(p0[0], bar_end) + EXPIRED_GAP_PT * c.pt
        cands = [(start, y), (start, y - EXPIRED_NUDGE), (start, y + EXPIRED_NUDGE)]

        def make(cand, text=text):
            x, yy = cand
            return c.ax.text(c.data(x, 0)[0], yy, text, ha="left", va="center", fontsize=c.fs(SMALL_PT),
                             color=EXPIRED_TEXT, zorder=Z_NOTE, parse_math=False, gid="expired-label",
                             bbox={"boxstyle": "round,pad=0.15", "fc": EXPIRED_COLOR, "ec": "none"})

        artist = c.place(make, cands, required=False)
        if artist is not None and c.text_box(artist).x1 > p1[0] + BAND_END_SLACK_PX:
            artist.remove()  # the band is too short for its label
