"""The lessons' figures read at 900 px: each run behind a lesson's plot, drawn 9 in wide, measured.

Every title and label must lie inside the figure, no two labels may overlap, markers may not pile
up on each other, tick labels keep apart, an arrow's label stays off the bands and every arrow is
drawn inside the plot. The runs are rebuilt from the lessons' own calls (scenario, handler, seed,
settings), not by executing the notebooks, so the module stays fast.
"""
from __future__ import annotations

import functools
from pathlib import Path

import pytest
from matplotlib.markers import MarkerStyle
from matplotlib.text import Annotation, Text
from matplotlib.transforms import Bbox

from sandbox import open_scenario, run_scenario, stage
from sandbox.present.timeline import plot_timeline

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
NAIVE = f"{EXAMPLES / 'naive_email.py'}:handler"
IMPROVED = f"{EXAMPLES / 'idempotent.py'}:handler"
CLAIM_ONLY = f"{EXAMPLES / 'claim_only.py'}:handler"
READ_THEN_WRITE = f"{EXAMPLES / 'read_then_write.py'}:handler"
UNCONDITIONAL_PUT = f"{ROOT / 'tests' / 'mutants' / '02_read_then_write.py'}:handler"  # exercise 02's wrong answer
WIDTH_IN = 9.0
TOUCH_PX = 1.0  # boxes may share this much: anti-aliased edges
MARK_OVERLAP = 0.25  # two markers may share at most this fraction of the smaller one's box
TICK_GAP_PX = 6.0  # px between neighbouring tick labels, at least


def _race():
    """Lesson 07 cell 8: the learner lets inv-1 read, then inv-2, then lets the rest run."""
    run = open_scenario("concurrent-claims", READ_THEN_WRITE, policy="interactive")
    run.until_choice()
    run.step("inv-1")
    run.step("inv-2")
    return run.finish()


# lesson cell -> (the run, the title the cell passes)
CELLS = {
    "01-4": (lambda: run_scenario("sync-sdk-retry", NAIVE, seed=0),
             "naive handler · boto3 Invoke, standard retry mode: 3 attempts, 3 emails"),
    "01-12": (lambda: run_scenario("sync-sdk-retry", IMPROVED, seed=0),
              "improved handler · boto3 Invoke: the 2nd attempt loses the claim and answers 409"),
    "01-15": (lambda: run_scenario("apigw-client-retry", NAIVE, seed=0),
              "naive handler · API Gateway answers 504 at 29 s, the client retries twice: 3 emails"),
    "02-8": (lambda: run_scenario("async-duplicate", NAIVE, seed=0),
             "naive handler · async-duplicate: no error anywhere, every order emailed twice"),
    "02-14": (lambda: run_scenario("async-late-retry", IMPROVED, seed=0, settings={"keep_for": 3600}),
              "improved handler, results kept 1 h · the retry at 2 h finds nothing and emails again"),
    "02-16": (lambda: run_scenario("eventbridge-target-retry", NAIVE, seed=0),
              "naive handler · EventBridge's retries run nothing; Lambda's retry repeats o-1"),
    "02-18": (lambda: run_scenario("async-duplicate", IMPROVED, seed=0),
              "improved handler · async-duplicate: each duplicate loses its claim and sends nothing"),
    "05-12": (lambda: run_scenario("eventbridge-producer-resend", NAIVE, seed=0),
              "naive handler · EventBridge: a re-sent PutEvents is a new event with a new id"),
    "07-8": (_race, None),
    "08-5": (lambda: run_scenario("concurrent-claims", CLAIM_ONLY, seed=0, settings={"copies": 5}), None),
    "08-10": (lambda: run_scenario("sqs-batch-failure", CLAIM_ONLY), None),
    "12-4": (lambda: run_scenario("crash-mid-work", stage("improved").handler, settings={"crash_after": "email"}),
             None),
    "exercise-02": (lambda: run_scenario("concurrent-claims", UNCONDITIONAL_PUT, seed=0), None),
}


@functools.cache
def _figure(cell: str):
    make, title = CELLS[cell]
    fig = plot_timeline(make().history, title=title, width=WIDTH_IN)
    fig.draw_without_rendering()  # titles and ticks take their final places at draw time
    return fig


# -- what is drawn, in display px
def _text_box(t: Text, renderer) -> Bbox:
    """A label's box as seen: its rounded frame when it has one, else its text."""
    if isinstance(t, Annotation):
        t.update_positions(renderer)
    patch = t.get_bbox_patch()
    return patch.get_window_extent(renderer) if patch is not None else Text.get_window_extent(t, renderer)


def _labels(fig) -> list[tuple[str, Bbox]]:
    """Every visible, non-empty text in the plot (not the legend): title, notes, lane names, ticks."""
    ax, r = fig.axes[0], fig.canvas.get_renderer()
    texts = [ax.title, ax.xaxis.label, *ax.texts, *ax.get_xticklabels(), *ax.get_yticklabels()]
    return [(t.get_text(), _text_box(t, r)) for t in texts if t.get_visible() and t.get_text().strip()]


def _marker_boxes(fig) -> list[tuple[str, Bbox]]:
    """(style, box) of each marker drawn, from its path, size and edge."""
    ax, px_per_pt = fig.axes[0], fig.dpi / 72
    out = []
    for ln in ax.lines:
        if not (ln.get_gid() or "").startswith("marker:"):
            continue
        m = MarkerStyle(ln.get_marker())
        ext = m.get_path().transformed(m.get_transform()).get_extents()
        w = (ext.width * ln.get_markersize() + ln.get_markeredgewidth()) * px_per_pt
        h = (ext.height * ln.get_markersize() + ln.get_markeredgewidth()) * px_per_pt
        for x, y in ax.transData.transform(ln.get_xydata()):
            out.append((ln.get_gid(), Bbox.from_bounds(x - w / 2, y - h / 2, w, h)))
    return out


def _shared(a: Bbox, b: Bbox) -> tuple[float, float]:
    """Width and height two boxes share (0 when apart)."""
    return (max(0.0, min(a.x1, b.x1) - max(a.x0, b.x0)), max(0.0, min(a.y1, b.y1) - max(a.y0, b.y0)))


def _overlap(a: Bbox, b: Bbox) -> bool:
    w, h = _shared(a, b)
    return w > TOUCH_PX and h > TOUCH_PX


# -- the checks: each returns what it found wrong
def _outside_figure(fig) -> list[str]:
    page = fig.bbox.padded(TOUCH_PX)
    r = fig.canvas.get_renderer()
    legend = [(t.get_text(), t.get_window_extent(r)) for t in fig.legends[0].get_texts()] if fig.legends else []
    return [f"{text!r} reaches out of the figure" for text, box in _labels(fig) + legend
            if not (page.x0 <= box.x0 and box.x1 <= page.x1 and page.y0 <= box.y0 and box.y1 <= page.y1)]


def _labels_overlapping(fig) -> list[str]:
    labels = _labels(fig)
    return [f"{t1!r} overlaps {t2!r}" for i, (t1, b1) in enumerate(labels) for t2, b2 in labels[i + 1:]
            if _overlap(b1, b2)]


def _markers_piled(fig) -> list[str]:
    boxes = _marker_boxes(fig)
    out = []
    for i, (g1, b1) in enumerate(boxes):
        for g2, b2 in boxes[i + 1:]:
            w, h = _shared(b1, b2)
            smaller = min(b1.width * b1.height, b2.width * b2.height)
            if w * h > MARK_OVERLAP * smaller:
                out.append(f"{g1} at {b1.x0:.0f},{b1.y0:.0f} and {g2} at {b2.x0:.0f},{b2.y0:.0f} pile up")
    return out


def _ticks_colliding(fig) -> list[str]:
    r = fig.canvas.get_renderer()
    ticks = sorted(((t.get_window_extent(r), t.get_text()) for t in fig.axes[0].get_xticklabels()
                    if t.get_visible() and t.get_text()), key=lambda bt: bt[0].x0)
    return [f"ticks {a!r} and {b!r} are {bb.x0 - ba.x1:.0f} px apart"
            for (ba, a), (bb, b) in zip(ticks, ticks[1:]) if bb.x0 - ba.x1 < TICK_GAP_PX]


def _arrow_labels_on_bands(fig) -> list[str]:
    ax, r = fig.axes[0], fig.canvas.get_renderer()
    bands = [(p.get_gid(), p.get_window_extent(r)) for p in ax.patches
             if (p.get_gid() or "").split(":")[0] in ("bar", "lock", "kept", "expired")]
    return [f"{t.get_text()!r} covers {gid}" for t in ax.texts if t.get_gid() == "arrow-label"
            for gid, band in bands if _overlap(_text_box(t, r), band)]


def _arrows_cut_off(fig) -> list[str]:
    """An arrow is drawn inside the plot: one that leaves it is clipped to a stray stub."""
    ax, r = fig.axes[0], fig.canvas.get_renderer()
    box = ax.get_window_extent(r).padded(TOUCH_PX)
    out = []
    for p in ax.patches:
        if (p.get_gid() or "").startswith("arrow:"):
            ext = p.get_window_extent(r)  # the arrow as drawn, before the plot clips it
            if ext.x0 < box.x0 or ext.x1 > box.x1 or ext.y0 < box.y0 or ext.y1 > box.y1:
                out.append(f"{p.get_gid()} leaves the plot")
    return out


CHECKS = [_outside_figure, _labels_overlapping, _markers_piled, _ticks_colliding, _arrow_labels_on_bands,
          _arrows_cut_off]


@pytest.mark.parametrize("cell", list(CELLS))
def test_lesson_figure_reads_at_nine_inches(cell):
    fig = _figure(cell)
    problems = [p for check in CHECKS for p in check(fig)]
    assert not problems, f"lesson {cell}:\n" + "\n".join(problems)


def test_an_unconditional_put_reads_as_a_write_not_a_claim():
    """Exercise 02's wrong answer puts the key without a condition: lesson 07's reading, not a won claim."""
    gids = {ln.get_gid() for ln in _figure("exercise-02").axes[0].lines}
    assert "marker:write" in gids
    assert "marker:claim_won" not in gids
    assert not [p for p in _figure("exercise-02").axes[0].patches if (p.get_gid() or "").startswith("lock:")]


def test_lesson_07_race_is_drawn_in_time():
    """Playing the scheduler, each AWS call takes one round trip: both reads come back before either write goes
    out, so the race (two invocations that each saw an empty table) is spread over time, not piled at 0 s."""
    lines = _figure("07-8").axes[0].lines
    reads, writes = ([x for ln in lines if ln.get_gid() == f"marker:{kind}" for x, _ in ln.get_xydata()]
                     for kind in ("read", "write"))
    assert len(reads) == len(writes) == 2
    assert 0 < max(reads) < min(writes)
