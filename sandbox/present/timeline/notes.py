"""Notes about the idempotency table and duplicate effects, placed once markers and arrows are in.

"o-1 kept 24 h →" for records that outlive the history, "2nd email o-1" for a
duplicate effect (both required: they are the point of the lesson), and "o-1
expired, still in the table" inside an expired band where it has room (optional).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib import patches as mpatches
from matplotlib import transforms as mtransforms
from matplotlib.transforms import Bbox

from .canvas import Canvas
from .lanes import WindowBox
from .markers import MarkerPlacement
from .model import WindowKind
from .sizing import STRIP_KEY_GAP_PT
from .style import (
    DUPLICATE_COLOR,
    EXPIRED_COLOR,
    EXPIRED_TEXT,
    KEPT_COLOR,
    LABEL_PT,
    LOCK_COLOR,
    MESSAGE_PT,
    NOTE_TEXT,
    OI_BLUE,
    SMALL_PT,
    Z_DUPLICATE,
    Z_NOTE,
)
from .text import dup_text, halves, note_text, note_what, short_key, strip_needs_key

NOTE_X = 0.995  # axes fraction: notes end at the right edge of the room after the history ...
NOTE_INSET_PT = 2  # ... or this far inside the end of a window that ends in that room
NOTES_SPREAD = 0.62  # data units: several notes on one lane share this much height
NOTE_NUDGE = 0.3  # data units: a note that does not fit tries this far up or down
NOTE_PT = CROWDED_NOTE_PT = NUDGED_NOTE_PT = 10  # pt: never smaller, however many notes a lane has (a projector)
STRIP_NOTE_PT = 10  # pt: the note of one key's strip
STRIP_BANDS = ("lock", "kept", "expired", "bar", "batching")  # what a strip's key keeps off (patches' gid prefixes)
BANDS_OWNER = "strip-bands"  # their obstacle owner, while the keys are placed
CROWDED_NOTES = 3
REFUSED_COLOR = OI_BLUE  # a refused write is the fencing working: the claim's colour, not the duplicate's
CLUSTER_PT = 70  # pt: duplicates closer than this on one lane share a note
DUP_OFFSET_PT = 15  # pt at full scale: how far a duplicate note sits from its markers
DUP_LIFT_PT = 4  # pt: extra room straight above or below
# farther candidates, in multiples of the offset: beside, diagonally far out, straight above or below
DUP_BESIDE, DUP_FAR, DUP_HIGH = 1.6, 2, 2.4
DUP_FARTHER = (4, 6)  # ... and, where none of those is free, this many offsets to either side
DUP_SHRINK_PT = 9  # pt at full scale: the leader line stops this short of the marker (an envelope's half) ...
WRITE_SHRINK_PT = 5  # ... or of a table write's narrower glyph, so it does not seem to point at its neighbour
EXPIRED_GAP_PT = 6  # pt: between the bar (or the band's start) and the expired label
EXPIRED_NUDGE = 0.26  # data units: the expired label tries this far up or down ...
EXPIRED_ALONG = (0.0, 0.12, 0.25)  # ... and this far along its band (fractions of it)
BAND_END_SLACK_PX = 2  # px: an expired label may reach this far past its band
LEADER_SAMPLES = 40  # points a leader line is tested at, for markers it would cross ...
SIDES = ("above", "below")  # where a figure's duplicate notes stand, all of them, from their marks (tried in order)
SIDE_HITS = 20  # a note on the other side from the figure's others counts as this many overlaps
BREAK_HITS = 50  # a leader line across an axis break, as this many: it joins a note to a mark over left-out time
TRIAL_OWNER = "note-trial"  # the obstacle owner of notes placed to see whether they fit, then taken away
CROSSING_HITS = 5  # ... each counting as this many overlaps: a line through a marker reads as pointing at it, while
COVER_HITS = 25  # a note covering a mark counts as this many overlaps (more than standing nearer another lane)
#   most overlaps are with bands and bars a note may sit on
LANE_HITS = 20  # a note nearer another lane than its mark's, as this many: it reads as that lane's


def label_window_notes(c: Canvas) -> None:
    """"o-1 kept 24 h →" for windows that outlive the history, in the room after its end: one per key strip on a
    lane with strips, else the lane's notes spread over its height."""
    for inv, notes in _outliving(c).items():
        y = c.rows.lane_y[inv]
        n = len(notes)
        step = NOTES_SPREAD / n if n > 1 else 0.0
        for i, (kind, what, keys, end) in enumerate(notes):
            strip = c.rows.strip(inv, keys[0])
            if strip is not None:
                cands = [(strip[0] + strip[1] / 2, STRIP_NOTE_PT)]
            else:
                yy = y + (i - (n - 1) / 2) * step
                cands = [(yy, NOTE_PT if n < CROWDED_NOTES else CROWDED_NOTE_PT), (yy - NOTE_NUDGE, NUDGED_NOTE_PT),
                         (yy + NOTE_NUDGE, NUDGED_NOTE_PT), (yy, CROWDED_NOTE_PT)]
            c.place(_note_maker(c, note_text(keys, what, runs_on=end is None), kind, end), cands, required=True)


def _note_maker(c: Canvas, text: str, kind: str, end: float | None = None):
    """A window's note, ending at the right edge of the room after the history (``end`` None: its window runs on past
    it), or at ``end`` (plot x), where its window ends in that room, past the last tick."""
    where: mtransforms.Transform
    if end is None:
        x, where = NOTE_X, mtransforms.blended_transform_factory(c.ax.transAxes, c.ax.transData)
    else:
        x, where = end, mtransforms.offset_copy(c.ax.transData, fig=c.fig, x=-NOTE_INSET_PT, units="points")

    def make(cand):
        yy, size = cand
        return c.ax.text(x, yy, text, transform=where, ha="right", va="center",
                         fontsize=c.fs(size), color=NOTE_TEXT, zorder=Z_NOTE, parse_math=False,
                         gid=f"clip-note:{kind}",
                         bbox={"boxstyle": "round,pad=0.15", "ec": "none",
                               "fc": KEPT_COLOR if kind == WindowKind.KEPT else LOCK_COLOR})
    return make


def _outliving(c: Canvas) -> dict[str, list[tuple[str, str, list[str], float | None]]]:
    """Per lane, (kind, "kept 24 h", keys, end) for the windows that outlive the history: keys with the same note
    share it, except on a lane with strips, where each key's strip gets its own. ``end``: where the window ends
    (plot x), when in the room after the history, which has no ticks (lesson 02 cell 14: inv-2's 1 h band ended
    there, and read as running off the figure); None for one that runs past the figure."""
    per_lane: dict[str, dict[tuple[str, str, str, float | None], list[str]]] = {}
    for w in c.model.windows:
        if w.kind == WindowKind.EXPIRED or (w.end is not None and w.end <= c.model.t_end):
            continue
        end = c.taxis.x(w.end) if w.end is not None and w.end <= c.taxis.t_hi else None
        own = w.key if c.rows.strip(w.inv, w.key) is not None else ""
        keys = per_lane.setdefault(w.inv, {}).setdefault((w.kind, note_what(w), own, end), [])
        if w.key not in keys:
            keys.append(w.key)
    return {inv: [(kind, what, keys, end) for (kind, what, _, end), keys in notes.items()]
            for inv, notes in per_lane.items()}


def label_strips(c: Canvas) -> None:
    """The key each strip under a lane's bar stands for: in a column left of the lane's first strip (the axis has
    room there, ``sizing.strip_key_room``), else beside its own strip; never on a band of the lane, which a key
    drawn over it would hide."""
    spans: dict[tuple[str, str], tuple[float, float]] = {}
    for w in c.model.windows:
        if c.rows.strip(w.inv, w.key) is None:
            continue
        x0, x1 = c.taxis.x(w.start), c.taxis.x_hi if w.end is None else min(c.taxis.x(w.end), c.taxis.x_hi)
        a, b = spans.get((w.inv, w.key), (x0, x1))
        spans[(w.inv, w.key)] = (min(a, x0), max(b, x1))
    first = {inv: min(a for (i, _), (a, _) in spans.items() if i == inv) for inv, _ in spans}
    gap = STRIP_KEY_GAP_PT * c.pt
    bands = [p for p in c.ax.patches if (p.get_gid() or "").split(":")[0] in STRIP_BANDS]
    for p in bands:
        c.obs.add(p.get_window_extent(c.renderer), BANDS_OWNER)
    for (inv, key), (x0, x1) in spans.items():
        if not strip_needs_key(c.rows.strips[inv], c.model.invs[inv].keys):
            continue
        strip = c.rows.strip(inv, key)
        assert strip is not None  # spans has only keys with a strip
        top, h = strip
        (column, py), (px0, _), (px1, _) = c.px(first[inv], top + h / 2), c.px(x0, 0), c.px(x1, 0)
        cands = [(column - gap, "right"), (px0 - gap, "right"), (px1 + gap, "left")]
        # a strip that starts just after an axis break: its key left of the break, whose band no label stands on
        cands += [(c.px(xa, 0)[0] - gap, "right") for _, _, xa, xb in c.taxis.gaps if c.px(xb, 0)[0] <= px0 + 1]

        def make(cand, py=py, key=key, yd=top + h / 2):
            x, ha = cand
            return c.ax.text(c.data(x, py)[0], yd, short_key(key), ha=ha, va="center",
                             fontsize=c.fs(MESSAGE_PT), color=NOTE_TEXT, zorder=Z_NOTE, parse_math=False,
                             gid="strip-label")

        # the keys of one lane stand in a column a strip apart: their padded boxes may touch, their words do not
        c.place(make, cands, required=True, exclude=("strip-label",), owner="strip-label")
    c.obs.remove(BANDS_OWNER)


def label_duplicates(c: Canvas, placed: MarkerPlacement) -> None:
    """"2nd email o-1" next to duplicate effects, one note per cluster, with a leader line; then
    "stale write: deleted inv-2's o-1 record" next to each stale write, and "delete refused: inv-2 holds o-1"
    (in the claim's blue: the condition did its job) next to each refused write."""
    clusters = _clusters(placed.dup_points, CLUSTER_PT * c.pt)
    side = _common_side(c, placed, clusters)
    for cl in clusters:
        _duplicate_note(c, placed, cl, side)
    for inv, px, py, text in placed.warn_points:
        _note_with_leader(c, c.data(px, py), _two_lines(text), "warning-note", shrink_pt=WRITE_SHRINK_PT,
                          marks=_crossed(placed, [(px, py)]), lane=inv)
    for inv, px, py, text in placed.refused_points:
        _note_with_leader(c, c.data(px, py), _two_lines(text), "refused-note", REFUSED_COLOR, WRITE_SHRINK_PT,
                          marks=_crossed(placed, [(px, py)]), lane=inv)


def _duplicate_note(c: Canvas, placed: MarkerPlacement, cl: list, side: str | None, must: bool = True,
                    owner: str = "label") -> Any:
    """The note of one cluster of duplicates, on ``side`` of them ("above", "below") where it can be."""
    xy = c.data((cl[0][1] + cl[-1][1]) / 2, cl[0][2])
    marks = _crossed(placed, [(p[1], p[2]) for p in cl])
    return _note_with_leader(c, xy, dup_text([p[3] for p in cl]), "duplicate-note", marks=marks,
                             covered=placed.boxes, side=side, must=must, owner=owner, lane=cl[0][0])


def _common_side(c: Canvas, placed: MarkerPlacement, clusters: list) -> str | None:
    """The side of their marks every duplicate's note can stand on ("above", else "below"), or the one most can,
    and of those the one whose other notes cover least: notes one above and the next below their marks read as
    saying different things. Each side is tried by placing every note on it, then taking them away again."""
    if len(clusters) < 2:
        return None
    best: tuple[int, int, str] | None = None
    for side in SIDES:
        got = cost = 0
        for cl in clusters:
            note = _duplicate_note(c, placed, cl, side, owner=TRIAL_OWNER)
            got, cost = got + (c.placed_cost == 0), cost + c.placed_cost
            note.remove()
        c.obs.remove(TRIAL_OWNER)
        if got == len(clusters):
            return side
        # where neither side holds every note free, the costlier side's notes stand astray (cfn-custom-resource-
        #   retry: above, inv-3's "3rd email o-1" stood nearer inv-2's lane, and inv-2's beside its mark)
        if best is None or (-got, cost) < (-best[0], best[1]):
            best = (got, cost, side)
    return best[2] if best else None


def _crossed(placed: MarkerPlacement, targets: list[tuple[float, float]]) -> list[Bbox]:
    """The markers a note's leader line must not cross: all but those it points at."""
    return [b for b in placed.boxes if not any(b.contains(x, y) for x, y in targets)]


def _two_lines(text: str) -> str:
    """"stale write: deleted inv-2's o-1 record" on two lines, after its colon: a narrower note finds room."""
    return text.replace(": ", ":\n", 1)


def _note_with_leader(c: Canvas, xy: tuple[float, float], text: str, gid: str, color: str = DUPLICATE_COLOR,
                      shrink_pt: float = DUP_SHRINK_PT, marks: Sequence[Bbox] = (),
                      covered: Sequence[Bbox] = (), side: str | None = None, must: bool = True,
                      owner: str = "label", lane: str | None = None) -> Any:
    """A note (in the duplicate colour unless told), with a leader line to the marker at ``xy`` that crosses none
    of ``marks`` where it can (a line through a marker reads as pointing at it); where it cannot find a free
    spot, covering one of ``covered`` (the marks, stacked ones under the one it names too) is worse than covering
    a break or a band. ``side``: above or below the marker, where it can (as the figure's other notes stand);
    ``must``: placed even where it covers something (else None when nothing is free); ``lane``: the lane of the
    mark it names, whose line it stands nearest (``_astray``)."""
    end, astray = np.array(c.px(*xy)), _astray(c, lane)

    def crossings(box: Bbox) -> int:
        start = np.array([(box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2])
        length = float(np.hypot(*(end - start)))
        if length <= 0:
            return 0
        f = np.linspace(0.0, 1.0 - shrink_pt * c.scale.factor * c.pt / length, LEADER_SAMPLES)[:, None]
        pts = start + f * (end - start)
        pts = pts[~((pts[:, 0] > box.x0) & (pts[:, 0] < box.x1) & (pts[:, 1] > box.y0) & (pts[:, 1] < box.y1))]
        crossed = sum(bool(((pts[:, 0] > m.x0) & (pts[:, 0] < m.x1) & (pts[:, 1] > m.y0) & (pts[:, 1] < m.y1)).any())
                      for m in marks)
        away = side is not None and ("above" if start[1] > end[1] else "below") != side
        across = any(((pts[:, 0] > a) & (pts[:, 0] < b)).any() for a, b in c.breaks_px())
        return (crossed * CROSSING_HITS + COVER_HITS * sum(box.overlaps(m) for m in covered) + SIDE_HITS * away
                + BREAK_HITS * across + LANE_HITS * astray(box))

    def anchor(cand):
        (dx, dy), ha, va = cand
        return end[0] + dx * c.pt, end[1] + dy * c.pt, (ha, va)

    axbox = c.axes_box()

    def adjust(cand, box: Bbox):
        """Near a side of the plot, slid back inside it: the leader slants a little instead."""
        (dx, dy), ha, va = cand
        slide = max(0.0, axbox.x0 - box.x0) - max(0.0, box.x1 - axbox.x1)
        if slide and box.width < axbox.width:
            return ((dx + slide / c.pt, dy), ha, va), box.translated(slide, 0)
        return cand, box

    # on one line where it fits; else on two, a narrower note that finds room between breaks and lanes
    texts = [text] + ([halves(text)] if "\n" not in text else [])
    for i, words in enumerate(texts):
        note = c.place(_leader_note(c, xy, words, gid, color, shrink_pt), _duplicate_candidates(DUP_OFFSET_PT *
                       c.scale.factor), required=must and i == len(texts) - 1, crossings=crossings, anchor=anchor,
                       adjust=adjust, owner=owner)
        if note is not None:
            return note
    return None


def _astray(c: Canvas, lane: str | None):
    """Whether a note's box stands nearer another lane's line than ``lane``'s (s3-notification-duplicate: inv-2's
    "2nd email o-1" at the height of inv-1's "✓ ok", a leader down to inv-2, read as inv-1's)."""
    ys = {inv: c.px(0, y)[1] for inv, y in c.rows.lane_y.items() if inv is not None}
    if lane not in ys:
        return lambda box: False
    own = ys[lane]

    def astray(box: Bbox) -> bool:
        middle = (box.y0 + box.y1) / 2
        return any(abs(middle - y) < abs(middle - own) for inv, y in ys.items() if inv != lane)
    return astray


def _leader_note(c: Canvas, xy: tuple[float, float], text: str, gid: str, color: str, shrink_pt: float):
    """Makes a note at a candidate offset, with its leader line to ``xy``."""
    def make(cand):
        (dx, dy), ha, va = cand
        return c.ax.annotate(text, xy=xy, xytext=(dx, dy), textcoords="offset points",
                             ha=ha, va=va, fontsize=c.fs(LABEL_PT), fontweight="bold",
                             color=color, zorder=Z_DUPLICATE, annotation_clip=False,
                             parse_math=False, gid=gid,
                             bbox={"boxstyle": "round,pad=0.25", "fc": "white", "ec": color, "lw": 1.2},
                             arrowprops={"arrowstyle": "-", "color": color, "lw": 1.4,
                                         "shrinkA": 0, "shrinkB": shrink_pt * c.scale.factor})
    return make


def _clusters(points: list[tuple[str | None, float, float, str]],
              within: float) -> list[list[tuple[str | None, float, float, str]]]:
    """Duplicates that sit close together on one lane (in display px), grouped."""
    clusters: list[list[tuple[str | None, float, float, str]]] = []
    for p in points:
        if clusters and clusters[-1][-1][0] == p[0] and p[1] - clusters[-1][-1][1] < within:
            clusters[-1].append(p)
        else:
            clusters.append([p])
    return clusters


def _duplicate_candidates(off: float) -> list[Any]:
    """Offsets (pt) and alignments around the markers: above, below (centred, then ending or starting there, near a
    side of the plot), diagonal, beside, then farther out."""
    return [((0, off + DUP_LIFT_PT), "center", "bottom"), ((0, -off - DUP_LIFT_PT), "center", "top"),
            ((0, off + DUP_LIFT_PT), "right", "bottom"), ((0, off + DUP_LIFT_PT), "left", "bottom"),
            ((0, -off - DUP_LIFT_PT), "right", "top"), ((0, -off - DUP_LIFT_PT), "left", "top"),
            ((off, off), "left", "bottom"), ((off, -off), "left", "top"),
            ((-off, off), "right", "bottom"), ((-off, -off), "right", "top"),
            ((off * DUP_BESIDE, 0), "left", "center"), ((-off * DUP_BESIDE, 0), "right", "center"),
            ((DUP_FAR * off, DUP_BESIDE * off), "left", "bottom"), ((DUP_FAR * off, -DUP_BESIDE * off), "left", "top"),
            ((-DUP_FAR * off, DUP_BESIDE * off), "right", "bottom"),
            ((-DUP_FAR * off, -DUP_BESIDE * off), "right", "top"),
            ((0, DUP_HIGH * off), "center", "bottom"), ((0, -DUP_HIGH * off), "center", "top")] + [
        # farther still, to either side, its leader crossing what lies between (marks, not an axis break: see
        # BREAK_HITS), next to a mark at the end of a short stretch
        ((sign * k * off, dy * off), "left" if sign > 0 else "right", va)
        for k in DUP_FARTHER for sign in (-1, 1) for dy, va in ((DUP_BESIDE, "bottom"), (-DUP_BESIDE, "top"))]


def label_expired(c: Canvas, window_boxes: list[WindowBox], bars: dict[str, mpatches.Rectangle],
                  placed: MarkerPlacement) -> None:
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
        strip = c.rows.strip(w.inv, w.key)
        y = c.rows.lane_y[w.inv] if strip is None else strip[0] + strip[1] / 2  # in its strip, under the bar
        # "→" only where the band runs on past the history: a band that ends at the sweeper's ▼ ends there
        text = f"{short_key(w.key)} expired, still in the table (TTL lag)" + (" →" if w.end is None else "")
        bar = bars[w.inv]
        bar_end = c.px(placed.drawn_end(w.inv, bar), y)[0] if strip is None else p0[0]
        start = max(p0[0], bar_end) + EXPIRED_GAP_PT * c.pt
        steps = [start + f * max(0.0, p1[0] - start) for f in EXPIRED_ALONG]  # farther along when the start is busy
        nudges = (0.0, -EXPIRED_NUDGE, EXPIRED_NUDGE) if strip is None else (0.0,)
        # ... or ending where the band ends, when what stands over its start reaches farther
        cands = [(x, y + dy, "left") for x in steps for dy in nudges]
        cands.append((p1[0] - EXPIRED_GAP_PT * c.pt, y, "right"))

        def make(cand, text=text):
            x, yy, ha = cand
            return c.ax.text(c.data(x, 0)[0], yy, text, ha=ha, va="center", fontsize=c.fs(SMALL_PT),
                             color=EXPIRED_TEXT, zorder=Z_NOTE, parse_math=False, gid="expired-label",
                             bbox={"boxstyle": "round,pad=0.15", "fc": EXPIRED_COLOR, "ec": "none"})

        artist = c.place(make, cands, required=False)
        if artist is not None and c.text_box(artist).x1 > p1[0] + BAND_END_SLACK_PX:
            artist.remove()  # the band is too short for its label
