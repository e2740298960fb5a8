"""Draw a :class:`~sandbox.core.history.History` as a swim-lane timeline.

One horizontal lane per Lambda invocation, grouped by the delivery source that
invoked it, so a learner can *see* a message being delivered twice, the second
email going out, and the idempotency lock that would have stopped it::

    from sandbox.present.timeline import plot_timeline, save_timeline
    plot_timeline(history)                    # in Jupyter: displays inline
    save_timeline(history, "run.png")         # byte-identical for the same history

What is drawn

* lanes: ``invoke_start`` ... ``invoke_end``, coloured by outcome (ok, error,
  timed out, crashed; hatched = still running when the history ends; green with
  orange hatching = ok, but the function reported failed batch items), labelled
  ``inv-3 · redelivery`` with the container and the orders the event carried
  underneath (``container c1 · o-1, o-2, o-3``), and the outcome in words at the
  right (``✓ ok · 409 after 0 s`` when a synchronous caller got an HTTP status);
* markers at their true times on their invocation's bar (marks that would cover
  each other are stacked up and down, the earliest on top; no mark moves along the
  axis and no bar is widened to hold them): idempotency-table claims won/lost, reads, emails and charges (a *duplicate*
  effect - the 2nd or later ``done`` for the same kind and key - is red and
  annotated "2nd email o-1");
* on each source's header row, what the delivery source did besides invoking
  (``delivery`` records): messages received, received again, deleted, a batch
  failing (wholly or partly), a retry scheduled, a caller's
  re-sent async Invoke queued again, a spontaneous duplicate, and where a lost
  order went (dead-lettered / discarded / its Step Functions execution failed,
  with a label) or that it was still pending when the run stopped (hatched band);
* for a synchronous caller, each SDK attempt on its header row: sent, waiting,
  read timed out or answered, and what the caller finally saw; for a caller's Event
  invokes the same on the async queue's header row ("got 202"); for an HTTP client
  behind API Gateway the same, with a "504" where API Gateway stopped waiting; for
  a Step Functions Task, each attempt, with a red ✕ where it ran past its
  TimeoutSeconds (States.Timeout), and what its last attempt got;
* a stretch during which Lambda throttled an event (429) as a band on its source's
  header row, and hand-offs that failed (EventBridge's retries) as "500" markers;
* a producer's re-send of an order on a row of the producer's own ("Producer → SQS queue"), above the row of
  the source it sends to;
* arrows from an invocation to the one that repeats it (``prev``), labelled with
  the cause and when the repeat started ("redelivery at 30.0 s", under a second in ms: "duplicate at 25 ms"): solid
  for a retry, dotted and blue for a copy of the event that no failure caused (a duplicate, a re-send), routed around
  other lanes' content: the labels all one way from their arrows, else at an arrow's head, never on a lane
  the arrow only passes, and arrows of one kind all labelled or none;
* shaded windows: the IN_PROGRESS lock each winning claim holds until it expires
  or is replaced, the COMPLETED record kept until its TTL (``expiresAt``,
  converted with ``meta["epoch"]``), and an expired record still sitting in the
  table until the TTL sweeper deletes it or a new claim replaces it (TTL lag);
  several keys on one lane get stacked sub-bands;
* a "TTL sweeper" lane when ``sweep`` records exist;
* a detail row under the plot where a run is too short for its marks at the figure's scale (a 0.2 s run under its
  envelope, a 3 s timeout in a 2 h run): each such stretch of time drawn again at a scale of its own, written over
  it ("inv-1 ×20"), its bars and marks at their true times, with true-time ticks (``detail.py``).

Lambda invocations last milliseconds while retries come seconds or minutes
later, so by default (``gaps="auto"``) a long stretch in which nothing is drawn
becomes an axis break: a narrow grey band labelled, upright, "29.8 s skipped". Only a gap of
at least 10 s that is a fifth of the run or more is cut out (a few seconds in a run
of a few seconds stay on the axis). Between the breaks the axis is linear, at one
scale, ticked at one round step; a break never hides a mark or a band's start or
end, and the tick labels show true virtual time. A run too short to see is drawn at
its true length with a cap in its colour centred on it. Pass ``gaps=False`` for
a strictly linear axis. Times read as seconds, ``min:s`` (over 3 minutes) or ``h:mm:ss``
(over an hour).

The package uses :class:`matplotlib.figure.Figure` directly (no pyplot state).
The returned figure has ``_repr_png_`` so it displays when it is the value of a
Jupyter cell, whether or not pyplot/``%matplotlib inline`` was ever used.

How the package is split (this module holds only the public API):

* reading the history (no matplotlib): ``model.py`` the plain data the plot shows;
  ``reading.py`` one pass over the records, with ``windows.py`` (idempotency-table
  windows), ``deliveries.py`` (what sources did besides invoking) and ``fields.py``
  (reading untrusted detail values);
* the words: ``text.py`` (keys, outcomes, notes) and ``timefmt.py`` (every time format);
* the frame: ``axis.py`` (time axis, its breaks, ticks), ``rows.py`` (which rows,
  where), ``sizing.py`` (inches, font scale), ``style.py`` (colours, glyphs, layering,
  font sizes), ``figure.py`` (the Figure class), ``frame.py`` (opens the canvas);
* drawing: ``canvas.py`` (the state every stage shares), ``drawing.py`` (the pipeline:
  every stage, in order, with what it reads and adds), ``lanes.py`` (data-coordinate
  stages), ``detail.py`` (the detail row), ``layout.py`` (obstacle map, spreading markers), ``markers.py``,
  ``guides.py``, ``arrows.py``, ``arrow_labels.py``, ``notes.py`` and ``labels.py`` (display-space stages),
  ``legend.py``;
* checking: ``audit.py`` measures a finished figure (words out of it or on each other
  or on markers, marks stacked out of order; true time: every mark, band end and tick
  within a pixel of its record's time, none inside a break); ``RWH_FIGURE_AUDIT=<dir>``
  records every figure as it is drawn, which the notebook tests use.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

from ...core.views import register_figure
from . import audit
from .axis import UNITS
from .drawing import draw
from .figure import TimelineFigure, empty_figure, legend_figure
from .reading import HistoryLike, read_history
from .rows import SOURCE_LABELS
from .style import DUPLICATE_COLOR, MARKERS, OUTCOME_COLORS, matplotlib_style

__all__ = ["DUPLICATE_COLOR", "MARKERS", "OUTCOME_COLORS", "SOURCE_LABELS", "TimelineFigure", "legend_figure",
           "plot_timeline", "save_timeline"]

SCREEN_DPI = 100  # dpi of the returned figure (notebook display)
SAVE_DPI = 150  # dpi of save_timeline's PNG (projector-friendly)
DEFAULT_WIDTH = 9.0  # inches: about 900 px in a notebook (dpi 100), so nothing is scaled down


def plot_timeline(history: HistoryLike, *, unit: str = "auto", title: str | None = None,
                  width: float | None = None, gaps: Any = "auto", dpi: float = SCREEN_DPI,
                  legend: bool = True) -> TimelineFigure:
    """Draw ``history`` as a swim-lane timeline and return the Figure.

    ``unit``: "auto" (min:s when the history spans more than 3 minutes, h:mm:ss over
    an hour), "s", "min" or "h".
    ``title``: defaults to "<scenario> · seed <seed>" from ``history.meta``.
    ``width``: figure width in inches (default 9, a notebook's width); the height follows the lane count.
    ``gaps``: "auto" cuts long idle stretches out as labelled axis breaks (one linear
    scale between them); False keeps the time axis strictly linear.
    ``dpi``: resolution the layout is computed for (and the notebook shows).
    ``legend``: False leaves the legend out, and the figure's height with it; ``fig.legend_plan`` says what it
    would show, and :func:`legend_figure` draws it as a picture of its own (a widget draws it once, not at every move).
    """
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {UNITS}, not {unit!r}")
    if gaps not in ("auto", True, False, None):
        raise ValueError(f"gaps must be 'auto', True or False, not {gaps!r}")
    with matplotlib_style():
        model = read_history(history)
        if title is None:
            title = default_title(model.meta)
        width = float(width) if width else DEFAULT_WIDTH
        if not model.invs:
            fig = empty_figure(title, width, dpi)
        else:
            fig = draw(model, unit, title, width, bool(gaps), dpi, legend)
        audit.finish(fig, "timeline")
    return fig


def default_title(meta: dict[str, Any]) -> str:
    """"<scenario> · seed <seed>", or "timeline" for a history without a scenario."""
    scenario = meta.get("scenario")
    seed = meta.get("seed")
    parts = [str(scenario) if scenario not in (None, "") else "timeline"]
    if seed is not None:
        parts.append(f"seed {seed}")
    return " · ".join(parts)


def save_timeline(history: HistoryLike, path: str | Path, *, dpi: int = SAVE_DPI, **kw: Any) -> Path:
    """Write the timeline to ``path``: SVG or PDF when its name ends in .svg or .pdf, else PNG.

    The same history always gives the same bytes.
    """
    path = Path(path)
    fmt = {".svg": "svg", ".pdf": "pdf"}.get(path.suffix.lower(), "png")
    # Leave out what would stamp the matplotlib version or today's date into the file, and salt
    # the SVG element ids (random otherwise), so the bytes repeat.
    no_stamps = {"png": {"Software": None}, "svg": {"Creator": None, "Date": None},
                 "pdf": {"Creator": None, "Producer": None, "CreationDate": None}}[fmt]
    with matplotlib_style(), matplotlib.rc_context({"svg.hashsalt": "retries-will-happen"} if fmt == "svg" else {}):
        fig = plot_timeline(history, dpi=dpi, **kw)  # lay out at the output resolution
        fig.savefig(path, format=fmt, dpi=dpi, metadata=no_stamps)
    return path


# A world's timeline() and a run's plot() and save_plot() draw through the registry: nothing below imports this.
register_figure("timeline", plot_timeline)
register_figure("timeline-file", save_timeline)
