"""The labels of the repeat arrows: "retry 1 at 61.0 s", every one of a figure standing the same way.

Each arrow's label tries places along its arrow (on it, then beside it); the figure's labels all stand one way
(``audit.arrow_relation``: on their arrows, or beside them on one side), the way that labels the most. An arrow
whose label cannot stand that way is labelled at its head instead, beside the lane of the repeat; and where an
arrow of some kind still has no label, none of its kind has one: arrows of one kind, some labelled and some not,
read as different. No label stands on the row of a lane its arrow only passes.
"""
from __future__ import annotations

from matplotlib.patches import Patch
from matplotlib.path import Path
from matplotlib.transforms import Bbox

from .arrows import Arrow, along, path_length
from .audit import CLEAR_PX, NEARER_PX, RELATION_SLACK_PX, arrow_relation, nearer_arrow
from .canvas import Canvas
from .sizing import REFERENCE_DPI
from .style import ARROW_COLOR, LABEL_EDGE, SMALL_PT, Z_ARROW_LABEL

MIN_ARROW_PX = 30  # px at REFERENCE_DPI: shorter arrows get no label
ARROW_LABEL_GAP_PT = 6  # pt beside the arrow
ALONG_ONE_LINE = (0.5, 0.4, 0.6, 0.3, 0.7)  # fractions along the arrow a label tries, middle first
ALONG_TWO_LINES = (0.5, 0.35, 0.65)  # ... and when it is broken in two lines ...
ALONG_BESIDE = (0.5, 0.35, 0.65, 0.2, 0.8)  # ... and beside it (nearer its ends: an arrow across a break)
#: Last, on it in two lines nearer its ends: an arrow that runs along a row into an axis break has room only
#: before the break (cfn-custom-resource-retry's rollback delete, whose arrow comes in from above since its
#: head stands on the repeat's marks).
ALONG_NEAR_ENDS = (0.3, 0.7, 0.25, 0.75, 0.2, 0.8)
ARROW_LINESPACING = 1.05
BAND_KINDS = ("lock", "kept", "expired")  # the windows an arrow's label keeps off (their patches' gid prefixes)
BANDS = "bands"  # their obstacle owner, while arrow labels are placed
ARROW_WAYS = ("on", "left", "right")  # how a figure's arrow labels all stand, facing along them (tried in order)
ELSEWISE_HITS = 1000  # an arrow label standing another way counts as this many overlaps: it is not placed
OTHER_LANE_HITS = 1000  # a label on the row of a lane its arrow only passes, as this many: it reads as that lane's
#: Font sizes between an arrow's label and another arrow or its label, at least: nearer, the two read as a pair (lesson
#: 10 at lock 10: "retry 1 at 90.5 s" by its arrow's tail stood a line under the copy arrow's "duplicate at 12.0 s",
#: and at lock 17 beside the copy arrow itself, and read as its label).
APART_EM = 2.0
LABEL_OWNERS = "label:arrow:"  # how the obstacle owners of arrow labels begin (``_owner``: "label:" + "arrow:...")
HEAD_GID = "arrow-head-label"  # a label at its arrow's head, beside the repeat's lane (the way failed it)
HEAD_GAP_PT = 6  # pt between a head label and the head, or the end of the lane's drawing
HEAD_STEPS = (1, 2)  # gaps left of the head a head label tries, nearest first
HEAD_LIFT_PT = 9  # pt: a head label's middle this far (or twice as far) above or below the lane's centre
#: Font sizes a label on its arrow may stand off the line, up (+) or down: within a quarter of its box's height
#: (one line's box is about 1.7 of them high, two lines' 2.8), so the line still runs through its middle half.
NUDGE_EM = (-0.4, 0.4, -0.7, 0.7)


def _arrow_candidates(arrow: Arrow, side: float, em: float) -> list[tuple[float, float, float, str, str]]:
    """(fraction along, dx, dy, ha, text) on the arrow (one line, then two), then beside it; last, on it a little
    above or below its line (``NUDGE_EM``, ``em`` px a font size)."""
    text, vertical = arrow.text, arrow.vertical
    two_lines = text.replace(" at ", "\nat ", 1)
    cands: list[tuple[float, float, float, str, str]] = []
    if not vertical:
        cands += [(f, 0, 0, "center", text) for f in ALONG_ONE_LINE]
        cands += [(f, 0, 0, "center", two_lines) for f in ALONG_TWO_LINES]
    cands += [(f, dx, 0, ha, label) for f in ALONG_BESIDE for label in (text, two_lines)
              for dx, ha in ((side, "left"), (-side, "right"))]
    # Beside its head, on the row of the lane it points at, where a band between the two rows is not.
    cands += [(f, dx, 0, ha, text) for f in (0.9, 1.0) for dx, ha in ((-side, "right"), (side, "left"))]
    if vertical:  # a short vertical arrow: as a last resort, across its middle
        cands += [(0.5, 0, 0, "center", two_lines)]
    else:
        cands += [(f, 0, 0, "center", two_lines) for f in ALONG_NEAR_ENDS]
        # a stepped route's level run squeezed between two lanes' marks (cfn-custom-resource-retry's rollback delete,
        #   under inv-2's email and over inv-3's): the label a little off centre, its line still through its middle.
        #   Only where the line runs level: across a slanting one, such a label slid down onto its head
        level = [f for f in ALONG_ONE_LINE if _level_at(arrow.path, f)]
        cands += [(f, 0, k * em, "center", label) for label, nudges in ((text, NUDGE_EM[:2]), (two_lines, NUDGE_EM))
                  for k in nudges for f in level]
    return cands


def _level_at(points: list, f: float, reach: float = 0.02) -> bool:
    """Whether a polyline runs level (within half a px) ``reach`` of its length either side of fraction ``f``."""
    return abs(along(points, f - reach)[1] - along(points, f + reach)[1]) < 0.5


def label_arrows(c: Canvas, arrows: list[Arrow]) -> None:
    """A pipeline stage: "redelivery at 30.0 s" for each repeat arrow (repeats of one run for one cause at one time
    say it once): on or beside its arrow, all the same way, the way that labels the most; at its head where the
    way cannot hold it (or the arrow is too short to carry it); and none of a kind where one of it has none."""
    if c.compact:
        return
    # A label on a lock or kept band would hide what the band says; other labels may sit there.
    for p in c.ax.patches:
        if (p.get_gid() or "").split(":")[0] in BAND_KINDS:
            c.obs.add(p.get_window_extent(c.renderer), BANDS)
    said: set[tuple[str, str]] = set()
    wanted = []
    for arrow in arrows:
        prev = arrow.owner.split("->")[0]
        if (prev, arrow.text) not in said:
            said.add((prev, arrow.text))
            wanted.append(arrow)
    long = [a for a in wanted if path_length(a.path) >= MIN_ARROW_PX * c.fig.dpi / REFERENCE_DPI]
    c.arrow_lines = [(p.get_gid() or "", _display_line(c, p)) for p in c.ax.patches
                     if (p.get_gid() or "").startswith("arrow:")]
    way, labels = _best_way(c, long)
    # Left to right, each arrow its label: the way's, else at its head, before the next arrow's (which keeps apart
    #   from it, ``APART_EM``): an arrow whose label only its head holds keeps it there
    for arrow in sorted(wanted, key=lambda a: (min(a.path[0][0], a.path[-1][0]), a.path[-1][0])):
        if labels.get(arrow.owner) is None:
            text = _label_arrow(c, arrow, way, _owner(arrow)) if way is not None and arrow in long else None
            labels[arrow.owner] = text if text is not None else _label_at_head(c, arrow)
    _all_or_none(c, wanted, labels)
    c.obs.remove(BANDS)


def _best_way(c: Canvas, arrows: list[Arrow]) -> tuple[str | None, dict]:
    """The way (``ARROW_WAYS``) that labels the most of ``arrows``, each label placed to see. A way that labels
    them all keeps its labels (returned by arrow owner: placed again, they would stand where they stand); any
    other way's are taken away again, and the best of those is returned without labels, to be placed."""
    best: tuple[int, str] | None = None
    for way in ARROW_WAYS:
        placed = {arrow.owner: _label_arrow(c, arrow, way, _owner(arrow)) for arrow in arrows}
        got = sum(text is not None for text in placed.values())
        if got == len(arrows):
            return (way, placed) if arrows else (None, {})
        for arrow in arrows:
            _take_away(c, arrow, placed[arrow.owner])
        if best is None or got > best[0]:
            best = (got, way)
    return (best[1] if best is not None and best[0] else None), {}


def _take_away(c: Canvas, arrow: Arrow, text) -> None:
    """An arrow's label off the figure again, with its obstacle and the audit's note of which arrow it names."""
    if text is not None:
        text.remove()
        c.obs.remove(_owner(arrow))
        c.fig.arrow_labels = {k: v for k, v in c.fig.arrow_labels.items() if k != id(text)}


def _owner(arrow: Arrow) -> str:
    """The obstacle owner of an arrow's label: its own, so that it can be taken away again."""
    return f"label:{arrow.owner}"


def _all_or_none(c: Canvas, arrows: list[Arrow], labels: dict) -> None:
    """Where an arrow of some kind (``fig.arrow_kinds``) has no label, its kind's labels are taken away."""
    kinds = c.fig.arrow_kinds
    bare = {kinds.get(a.owner) for a in arrows if labels.get(a.owner) is None}
    for arrow in arrows:
        if kinds.get(arrow.owner) in bare:
            _take_away(c, arrow, labels.get(arrow.owner))


def _off_lanes(c: Canvas, arrow: Arrow):
    """Counts a label box whose middle stands on the row of a lane ``arrow`` does not join, nearer another arrow
    than its own (``audit.nearer_arrow``), or within ``APART_EM`` of another arrow or its label, as many overlaps: it
    would read as that lane's, that arrow's, or one of a pair with the other label."""
    joins = set(arrow.owner[len("arrow:"):].split("->"))
    rows = [sorted((c.px(0, top)[1], c.px(0, bottom)[1])) for inv, (top, bottom) in c.rows.lane_spans().items()
            if inv not in joins]
    slack, clear = (px * c.fig.dpi / REFERENCE_DPI for px in (NEARER_PX, CLEAR_PX))
    apart = APART_EM * c.fs(SMALL_PT) * c.pt
    clear = max(clear, apart)  # placed, a label keeps farther from another arrow than the audit asks
    others = [box.padded(apart) for box, owner in zip(c.obs.boxes, c.obs.owners)
              if owner.startswith(LABEL_OWNERS) and owner != _owner(arrow)]

    def hits(box: Bbox) -> int:
        cy = (box.y0 + box.y1) / 2
        astray = nearer_arrow(box, arrow.owner, c.arrow_lines, c.fig.arrow_kinds, slack, clear) is not None
        paired = any(box.overlaps(other) for other in others)
        return OTHER_LANE_HITS if astray or paired or any(y0 < cy < y1 for y0, y1 in rows) else 0
    return hits


def _text_maker(c: Canvas, gid: str):
    """Makes an arrow's label at display (x, y), aligned ``ha`` and ``va``, saying ``label``."""
    def make(x: float, y: float, ha: str, label: str, va: str = "center"):
        xd, yd = c.data(x, y)
        return c.ax.text(xd, yd, label, ha=ha, va=va, linespacing=ARROW_LINESPACING,
                         fontsize=c.fs(SMALL_PT), color=ARROW_COLOR, zorder=Z_ARROW_LABEL, parse_math=False,
                         gid=gid, fontstyle="italic",
                         bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": LABEL_EDGE, "lw": 0.6})
    return make


def _display_line(c: Canvas, patch: Patch) -> Path:
    """An arrow's line as drawn, in display px, worked out once: a ``FancyArrowPatch`` works out its path again (its
    ends shrunk and clipped, in Bezier pieces) at every ask, and each way tried asks for each arrow."""
    return c._fixed(f"arrow-line:{id(patch)}", lambda: patch.get_transform().transform_path(patch.get_path()))


def _label_arrow(c: Canvas, arrow: Arrow, way: str, owner: str):
    """The label of one arrow, standing ``way`` from it (``audit.arrow_relation``), or None where it cannot."""
    line = _display_line(c, arrow.patch)
    slack = RELATION_SLACK_PX * c.fig.dpi / REFERENCE_DPI
    text_at, off_lanes = _text_maker(c, "arrow-label"), _off_lanes(c, arrow)

    def make(cand, pts=arrow.path):
        f, dx, dy, ha, label = cand
        px, py = along(pts, f)
        return text_at(px + dx, py + dy, ha, label)

    def anchor(cand, pts=arrow.path):
        f, dx, dy, ha, label = cand
        px, py = along(pts, f)
        return px + dx, py + dy, (ha, label)

    def elsewise(box: Bbox) -> int:  # a candidate standing another way from its arrow counts as covering much
        return (0 if arrow_relation(box, line, slack) == way else ELSEWISE_HITS) + off_lanes(box)

    text = c.place(make, _arrow_candidates(arrow, ARROW_LABEL_GAP_PT * c.pt, c.fs(SMALL_PT) * c.pt), required=False,
                   exclude=(arrow.owner,), anchor=anchor, crossings=elsewise, owner=owner,
                   measured="arrow-label")
    if text is not None:  # for the audit, which arrow it names (the nearest may be another, where arrows crowd)
        c.fig.arrow_labels = {**c.fig.arrow_labels, id(text): arrow.owner}
    return text


def _label_at_head(c: Canvas, arrow: Arrow):
    """The label of an arrow its figure's way cannot label (or too short to carry one): beside its head, on the
    repeat's lane, left of the head or right of all the lane shows, then above or below it; None where none fits."""
    hx, _ = arrow.path[-1]
    end, ly, low, high = arrow.head_lane
    gap, lift = HEAD_GAP_PT * c.pt, HEAD_LIFT_PT * c.pt
    two = arrow.text.replace(" at ", "\nat ", 1)
    # left of the head, then farther left, clear of a mark wider than the line that lands on it (lesson 10 at lock
    #   30 s: the diamond the copy lands on reached past the gap, and the label went under the lane, on inv-3's row)
    cands = [(hx - k * gap, ly, "right", label, "center") for k in HEAD_STEPS for label in (arrow.text, two)]
    cands += [(end + gap, ly, "left", label, "center") for label in (arrow.text, two)]
    # over or under all the lane shows, from the head on (a lane just after an axis break has no room left of it)
    rows = [(high + gap, "bottom"), (low - gap, "top")]
    rows += [(ly + k * dy, "center") for k in (1, 2) for dy in (lift, -lift)]
    cands += [(x, y, ha, label, va) for label in (arrow.text, two) for y, va in rows
              for x, ha in ((hx, "left"), (hx - gap, "right"), (end + gap, "left"))]
    make = _text_maker(c, HEAD_GID)
    text = c.place(lambda cand: make(*cand), cands, required=False, crossings=_off_lanes(c, arrow),
                   owner=_owner(arrow), anchor=lambda cand: (cand[0], cand[1], cand[2:]), measured=HEAD_GID)
    if text is not None:
        c.fig.arrow_labels = {**c.fig.arrow_labels, id(text): arrow.owner}
    return text
