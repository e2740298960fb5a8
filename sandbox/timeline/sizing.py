"""How big the figure is: inches per lane, the font scale, the room for notes and the legend.

A lane is half an inch tall until the plot would pass :data:`LANES_FIT_IN`; then the
lanes shrink (and fonts and markers with them, never below :data:`MIN_SCALE`), and
with very many lanes the figure grows again rather than make lanes unreadably thin.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .model import Model
from .rows import Rows
from .style import SMALL_PT
from .text import note_text, note_what

LANE_IN = 0.5  # in: one lane (one data unit) at full scale
LANES_FIT_IN = 22  # in: lanes shrink to keep the plot this tall ...
MIN_LANE_IN = 0.16  # in: ... down to this per lane ...
LANES_MAX_IN = 44  # in: ... unless even that would pass this height
MIN_SCALE = 0.55  # fonts and markers shrink with the lanes, but not below this fraction
COMPACT_BELOW_IN = 0.36  # in per lane: below this, subtitles and optional labels are left out
MIN_FONT_PT = 6.0  # pt: no text smaller than this
REFERENCE_DPI = 100  # sizes given in px are px at this resolution, scaled with the figure's dpi

GAP_LABEL_ROOM = 0.8  # data units below the last lane for "30 s skipped" labels
ROOM_BELOW = 0.6  # data units between the last lane's centre and the x axis
ROOM_ABOVE = 0.5  # data units above the first row's centre ...
ROOM_ABOVE_BUSY = 0.8  # ... or a busy header row's (its labels sit above its markers)

TITLE_IN = 0.85  # in: the title and the space around it
X_AXIS_IN = 0.75  # in: tick labels and the axis label
LEGEND_ROW_IN = 0.3  # in: one row of legend entries
MARGIN_IN = 0.3  # in: below the legend
MIN_HEIGHT_IN, MAX_HEIGHT_IN = 3.2, 50.0  # in: the figure's height stays within these
WIDE_LEGEND_IN = 11  # in: a figure at least this wide gets 3 legend columns, else 2

PLOT_SHARE = 0.6  # about this fraction of the figure's width is the plot (the rest: lane names, outcomes)
TICKS_SHARE = 0.62  # the fraction of the width ticks are spread over
CHAR_EM = 0.6  # ems: the average width of a character in a note
NOTE_PAD_IN = 0.3  # in: room beside the note
MAX_NOTE_ROOM = 0.4  # the room after the history's end is at most this fraction of the axis


@dataclass(frozen=True)
class Scale:
    """How much to shrink text and markers, from the inches one lane gets."""

    lane_in: float  # inches per data unit
    factor: float  # 1.0, or less when there are very many lanes
    compact: bool  # so many lanes that subtitles and optional labels are left out

    @classmethod
    def for_rows(cls, rows: Rows) -> Scale:
        per = LANE_IN
        n_units = rows.height
        if n_units * per > LANES_FIT_IN:
            per = max(LANES_FIT_IN / n_units, min(MIN_LANE_IN, LANES_MAX_IN / n_units))
        return cls(per, max(MIN_SCALE, min(1.0, per / LANE_IN)), per < COMPACT_BELOW_IN)

    def fs(self, base: float) -> float:
        """The font size for ``base`` points at full scale."""
        return max(MIN_FONT_PT, round(base * self.factor, 1))


def note_room(model: Model, width: float, scale: Scale) -> float:
    """The fraction of the axis to add after the end of the history for notes like "o-1 kept 24 h →".

    Windows that outlive the history get such a note in extra room at the right, after
    an "end of history" line, so the note never covers a lane. 0.0: no such window.
    """
    long_windows = [w for w in model.windows if w.end is None or w.end > model.t_end]
    if not long_windows:
        return 0.0
    longest = max(len(note_text([w.key], note_what(w))) for w in long_windows)
    note_in = longest * CHAR_EM * scale.fs(SMALL_PT) / 72 + NOTE_PAD_IN
    return min(MAX_NOTE_ROOM, note_in / (width * PLOT_SHARE))


def legend_columns(width: float) -> int:
    return 3 if width >= WIDE_LEGEND_IN else 2


def gap_label_room(squeezed: bool) -> float:
    """Data units below the last lane for gap labels (none on a linear axis)."""
    return GAP_LABEL_ROOM if squeezed else 0.0


def y_limits(rows: Rows, squeezed: bool) -> tuple[float, float]:
    """(bottom, top) of the y axis in data units; y grows downwards."""
    top = -ROOM_ABOVE_BUSY if rows.busy_top else -ROOM_ABOVE
    return rows.all[-1].y + ROOM_BELOW + gap_label_room(squeezed), top


def figure_height(rows: Rows, scale: Scale, squeezed: bool, n_legend: int, width: float) -> float:
    """Inches: title, lanes, x axis, legend (``n_legend`` entries) and margin, within the limits."""
    legend_rows = math.ceil(n_legend / legend_columns(width))
    height = (TITLE_IN + (rows.height + ROOM_BELOW + gap_label_room(squeezed)) * scale.lane_in + X_AXIS_IN
              + legend_rows * LEGEND_ROW_IN + MARGIN_IN)
    return min(max(height, MIN_HEIGHT_IN), MAX_HEIGHT_IN)
