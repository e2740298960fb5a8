"""Lesson 10's controls, driven from Python as a learner's drag would drive them, and its verdict map.

Each control is set through ``.value``, which fires the same callback a slider does; the
verdict must flip where the lesson says it does, and back. The verdict map
(``sandbox/present/verdict_map.py``) must colour each cell with the verdict ``run_scenario`` gives for
that cell's settings, and frame the current setting.
"""
from __future__ import annotations

import base64
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from matplotlib.patches import Rectangle

from sandbox import explore_settings, run_scenario
from sandbox.present.verdict_map import (
    FRAME_H,
    FRAME_W,
    Axis,
    LinkedVerdictMap,
    VerdictGrid,
    draw_verdict_map,
    linked_verdict_map,
    verdict_grid,
    verdict_map,
)

from conftest import example

ARTICLE = example("article.py")
TTL_ONLY = example("run_once_ttl_only.py")
NAIVE = example("naive_email.py")
LOCK = "lock-shorter-than-work"


def duplicate_after_lock(values):
    """As in the lesson: the duplicate arrives 2 s after the lock runs out."""
    return {**values, "duplicate_delay": (values["lock_seconds"] or values["function_timeout"]) + 2}


def lock_explorer(**kw):
    return explore_settings(LOCK, ARTICLE, only=["lock_seconds", "slow_email_seconds", "function_timeout"],
                            run=lambda values: run_scenario(LOCK, ARTICLE, settings=duplicate_after_lock(values)),
                            **kw)


def notes(result):
    return [str(n.kind) for n in result.verdict.notes]


@given(st.integers(1, 23), st.sampled_from([-1e-12, -3e-15, 0.0, 4e-15, 1e-12]))
@settings(max_examples=8, deadline=None)
def test_a_float_slider_off_its_grid_by_a_rounding_runs_on_the_grid(k, off):
    """The browser's slider may send 59.99999999999999 for 60 (a function timeout from 5 to 120 in half-seconds):
    the run and what the explorer reports hold 60.0."""
    lock = _LOCK_EXPLORER.setdefault("x", lock_explorer(spans={"function_timeout": (5, 120, 2.5)}))
    control = lock.controls["function_timeout"]
    control.value = 5 + 2.5 * k + off
    assert lock.values()["function_timeout"] == 5.0 + 2.5 * k
    assert lock.result.settings["function_timeout"] == 5.0 + 2.5 * k


def test_a_float_setting_in_whole_steps_gets_a_whole_number_slider():
    """Lesson 10's function timeout (5 to 120 s in 5s): the browser's float slider sent 59.99999999999999 and its
    aria-valuetext read so to a learner's screen reader; a slider in whole numbers counts exactly, and the run
    still gets the setting as its own type."""
    lock = lock_explorer(spans={"function_timeout": (5, 120, 5), "slow_email_seconds": (1, 60, 1)})
    for name in ("function_timeout", "slow_email_seconds"):
        assert type(lock.controls[name]).__name__ == "IntSlider", name
    lock.controls["function_timeout"].value = 45
    assert lock.result.settings["function_timeout"] == 45.0 and isinstance(lock.result.settings["function_timeout"],
                                                                          float)


def test_a_float_value_between_a_sliders_steps_is_kept():
    """A default off the step's grid (60 s on a slider from 1 in steps of 5) is the learner's value, not noise."""
    lock = lock_explorer()
    control = lock.controls["function_timeout"]
    assert (control.min, control.step, control.value) == (1.0, 5.0, 60.0)
    control.value = 58.5
    assert lock.values()["function_timeout"] == 58.5 == lock.result.settings["function_timeout"]


_LOCK_EXPLORER: dict = {}


# -- the flips ---------------------------------------------------------------------------------------
def test_moving_the_lock_below_the_work_flips_the_verdict_to_invalid_and_back():
    explorer = lock_explorer(fixed={"lock_seconds": 45})
    assert explorer.result.status == "valid" and notes(explorer.result) == []
    first_image = explorer.image.value
    explorer.controls["lock_seconds"].value = 10  # the work (30 s) now outlasts the lock
    assert explorer.runs == 2 and explorer.result.status == "invalid"
    assert notes(explorer.result) == ["lock overlap", "stale write"]
    assert explorer.result.verdict.effects_per_key == {"o-1": {"charge": 1, "email": 2}}
    assert "invalid" in explorer.verdict.value and explorer.image.value != first_image
    explorer.controls["lock_seconds"].value = 45
    assert explorer.result.status == "valid" and explorer.image.value == first_image


def test_shortening_the_work_below_the_lock_or_the_timeout_restores_the_guarantee():
    explorer = lock_explorer(plot=False)
    assert explorer.result.status == "invalid"
    explorer.controls["slow_email_seconds"].value = 8  # done before the lock runs out
    assert explorer.result.status == "valid" and notes(explorer.result) == []
    explorer.controls["slow_email_seconds"].value = 30
    assert explorer.result.status == "invalid"
    explorer.controls["function_timeout"].value = 20  # the runtime stops the first attempt before its stale delete
    assert explorer.result.status == "valid" and notes(explorer.result) == ["lock overlap"]
    explorer.controls["function_timeout"].value = 40
    assert explorer.result.status == "invalid"
    explorer.controls["lock_seconds"].value = 0  # the lock lasts as long as the invocation can run
    assert explorer.result.status == "valid" and notes(explorer.result) == []


def test_retention_below_the_late_retry_flips_the_verdict_and_back():
    explorer = explore_settings("async-late-retry", ARTICLE, only=["keep_for"], plot=False)
    assert explorer.result.status == "valid"  # a day: longer than the two hours the retry waits
    explorer.controls["keep_for"].value = 3600
    assert explorer.result.status == "invalid"
    [duplicate] = explorer.result.verdict.duplicates
    assert duplicate.retention_too_short and explorer.result.verdict.effects_per_key == {"o-1": {"email": 2}}
    explorer.controls["keep_for"].value = 14400
    assert explorer.result.status == "valid"


def test_a_ttl_lag_past_the_retries_flips_a_run_once_that_trusts_ttl():
    explorer = explore_settings("ttl-lag", TTL_ONLY, only=["ttl_lag"], fixed={"ttl_lag": 30}, plot=False)
    assert explorer.result.status == "valid"  # TTL deleted the stale claim before the first retry
    explorer.controls["ttl_lag"].value = 600
    assert explorer.result.status == "invalid" and [f.key for f in explorer.result.verdict.lost] == ["o-1"]
    explorer.controls["ttl_lag"].value = 0
    assert explorer.result.status == "valid"


def test_the_article_checks_expiry_itself_whatever_the_ttl_lag():
    explorer = explore_settings("ttl-lag", ARTICLE, only=["ttl_lag"], plot=False)
    for lag in (0, 30, 600, 86400):
        explorer.controls["ttl_lag"].value = lag
        assert explorer.result.status == "valid", lag


def test_the_visibility_timeout_flips_the_naive_handler_and_run_once_holds():
    naive = explore_settings("sqs-visibility-timeout", NAIVE, only=["visibility_timeout"], plot=False)
    article = explore_settings("sqs-visibility-timeout", ARTICLE, only=["visibility_timeout"], plot=False)
    assert naive.result.status == "invalid" and article.result.status == "valid"
    assert len(article.result.history.invocations()) == 2  # the early redelivery replays the stored results
    for explorer in (naive, article):
        explorer.controls["visibility_timeout"].value = 30
        assert explorer.result.status == "valid" and len(explorer.result.history.invocations()) == 1
    naive.controls["visibility_timeout"].value = 5
    assert naive.result.status == "invalid"
    article.controls["visibility_timeout"].value = 1  # shorter than the function's timeout: AWS refuses it
    assert article.result is None and "less than Function timeout" in article.verdict.value


# -- the verdict map ---------------------------------------------------------------------------------
def test_each_cell_of_the_map_is_the_verdict_run_scenario_gives():
    x, y = ("lock_seconds", [0, 10, 30]), ("slow_email_seconds", [10, 45])
    shared = {"function_timeout": 60}
    grid = verdict_grid(LOCK, ARTICLE, x, y, settings=lambda cell: duplicate_after_lock({**shared, **cell}))
    assert set(grid.cells) == {(lx, w) for lx in x[1] for w in y[1]}
    for (lock_s, work_s), status in grid.cells.items():
        cfg = duplicate_after_lock({**shared, "lock_seconds": lock_s, "slow_email_seconds": work_s})
        assert status == run_scenario(LOCK, ARTICLE, settings=cfg).status, (lock_s, work_s)
    assert grid.where("invalid") == [(10, 45), (30, 45)]
    assert grid.notes[(10, 45)] == ("lock overlap", "stale write") and grid.notes[(0, 45)] == ()
    assert [r["verdict"] for r in grid.rows()] == ["valid", "valid", "valid", "valid", "invalid", "invalid"]


def test_a_dict_of_settings_is_shared_by_every_cell_and_a_refused_cell_says_so():
    grid = verdict_grid("sqs-visibility-timeout", NAIVE, ("visibility_timeout", [1, 5, 30]),
                        ("email_seconds", [0.6]), settings={"batching_window": 4})
    assert grid.cells == {(1, 0.6): "refused", (5, 0.6): "invalid", (30, 0.6): "valid"}


def _frames(fig):
    return [p for p in fig.axes[0].patches if isinstance(p, Rectangle) and p.get_facecolor()[3] == 0
            and p.get_linewidth() >= 4 and p.get_visible()]


def _points(fig):
    return [line for line in fig.axes[0].lines if line.get_marker() == "o" and line.get_visible()]


def test_the_current_setting_is_framed_on_its_cell_or_between_cells():
    fig = verdict_map("async-late-retry", ARTICLE, x=("keep_for", [3600, 14400]), y=("throttled_for", [0, 7200]),
                      mark={"keep_for": 3600, "throttled_for": 7200})
    assert fig.grid.cells == {(3600, 0): "valid", (14400, 0): "valid", (3600, 7200): "invalid",
                              (14400, 7200): "valid"}
    [frame] = _frames(fig)
    assert frame.get_xy() == pytest.approx((0 - 0.47, 1 - 0.45))  # the cell (3600, 7200): column 0, row 1
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == ["✓ valid", "✗ invalid", "now: keep_for 1 h, throttled_for 2 h"]
    # Between cells: a ringed point where the setting falls, no frame straddling four half cells.
    between = draw_verdict_map(fig.grid, mark={"keep_for": 9000, "throttled_for": 7200})
    assert _frames(between) == [] and _points(between)
    for point in _points(between):
        assert tuple(point.get_xydata()[0]) == pytest.approx(((9000 - 3600) / (14400 - 3600), 1))
    assert between._repr_png_()[:4] == b"\x89PNG"


def _lesson_grid():
    """Lesson 10's lock map, its verdicts filled in by hand (valid where the lock outlasts the work): nothing runs."""
    xs, ys = (0, 10, 20, 30, 45), (10, 20, 30, 45)
    grid = VerdictGrid(LOCK, Axis.of(("lock_seconds", xs, "lock (s)", {0: "0: rest\nof the run"})),
                       Axis.of(("slow_email_seconds", ys, "work (s)")))
    for x in xs:
        for y in ys:
            grid.cells[(x, y)], grid.notes[(x, y)] = ("valid" if x == 0 or x >= y else "invalid"), ()
    return grid


def _lesson_verdict(lock_s, work_s):
    """The verdict ``_lesson_grid``'s rule gives any setting: valid where the lock outlasts the work."""
    return "valid" if lock_s == 0 or lock_s >= work_s else "invalid"


def test_a_point_between_cells_and_the_cells_words_keep_clear_of_each_other():
    from matplotlib.transforms import Bbox

    from sandbox.present.verdict_map import CELL_SIGN, CELL_TEXT, MapPicture, drawn_box

    grid = _lesson_grid()
    picture = MapPicture(grid, {"lock_seconds": 13, "slow_email_seconds": 30}, equal_line="lock = work")
    ax, renderer = picture.figure.axes[0], picture.figure.canvas.get_renderer()
    now, pt = picture.mark, picture.figure.dpi / 72
    moved, left_out, signs = set(), set(), set()
    # Between columns (near a cell's middle, too), between rows, both, beyond the last value of each axis, and
    # between the category "0" and the first number; each for its own verdict, and for none.
    marks = [(13, 30), (11, 30), (9, 30), (27, 44), (13, 25), (20, 15), (10, 19), (60, 30), (45, 1), (3, 30), (3, 5)]
    for (lock_s, work_s), verdict in [(m, v) for m in marks for v in (_lesson_verdict(*m), None)]:
        picture.png({"lock_seconds": lock_s, "slow_email_seconds": work_s}, verdict)
        if not now.point[0].get_visible():  # framed: the cell it falls in shares its verdict, and keeps its words
            assert verdict is not None and now.frames[0].get_visible(), (lock_s, work_s)
            assert [w.get_text() for w in now.words.values()] == [CELL_TEXT[grid.status(*c)] for c in now.words]
            moved |= {(lock_s, work_s, t.get_text()) for t in now.moved if t.get_visible()}
            continue
        ring = now.point[0].get_window_extent(renderer).padded(now.point[0].get_markeredgewidth() / 2 * pt)
        tab = drawn_box(now.tab, renderer)
        grid_box = ax.get_window_extent(renderer)
        assert grid_box.x0 - 1 <= ring.x0 and ring.x1 <= grid_box.x1 + 1, (lock_s, work_s)  # not over the labels
        assert grid_box.y0 - 1 <= ring.y0 and ring.y1 <= grid_box.y1 + 1, (lock_s, work_s)
        for (x, y), word in now.words.items():
            if not word.get_visible():
                left_out.add((lock_s, work_s, x, y))
                continue
            i, j = grid.x.centre(x), grid.y.centre(y)
            cell = Bbox(ax.transData.transform([(i - 0.5, j - 0.5), (i + 0.5, j + 0.5)]))
            box = drawn_box(word, renderer)
            assert not box.overlaps(ring) and not box.overlaps(tab), (lock_s, work_s, x, y)
            assert cell.x0 <= box.x0 and box.x1 <= cell.x1 and cell.y0 <= box.y0 and box.y1 <= cell.y1, (x, y)
            said = word.get_text().replace("\n", " ")
            assert said in (CELL_TEXT[grid.status(x, y)], CELL_SIGN[grid.status(x, y)]), (lock_s, work_s, x, y)
            assert word.get_fontsize() >= 10
            if said == CELL_SIGN[grid.status(x, y)]:
                signs.add((lock_s, work_s, x, y))
        moved |= {(lock_s, work_s, t.get_text()) for t in now.moved if t.get_visible()}
    assert {(13, 30, "✗ invalid"), (3, 30, "✗ invalid"), (45, 1, "✓ valid"), (60, 30, "✓ valid")} <= moved, moved
    # No cell's verdict is hidden under the ring (a learner read lock 11's ring as covering "✗ invalid"): where the
    # point covers most of a cell (near a column's middle: lock 10 and 11; a row's: work 1), or sits on the line
    # between two rows of a column (work 15 and 19), the cell keeps its sign.
    assert left_out == set(), left_out
    assert signs, signs


def _ring_at(picture):
    """Where the ring is drawn, in the map's cell units (None: the setting is framed on its cell)."""
    ring = picture.mark.point[0]
    return tuple(ring.get_xydata()[0]) if ring.get_visible() else None


@settings(max_examples=60, deadline=None)
@given(lock_s=st.integers(0, 60), work_s=st.integers(1, 60), known=st.booleans())
def test_the_ring_sits_only_in_a_cell_whose_verdict_is_the_one_shown(lesson_picture, lock_s, work_s, known):
    from sandbox.present.timeline import audit

    grid, picture = lesson_picture
    verdict = _lesson_verdict(lock_s, work_s)
    picture.png({"lock_seconds": lock_s, "slow_email_seconds": work_s}, verdict if known else None)
    assert audit.faults(picture.figure) == [], (lock_s, work_s, known)  # what the dashboard shows reads whole
    at = _ring_at(picture)
    if at is None:  # framed: the cell the setting falls in, whose verdict is the one shown, notched where it stands
        cell = (grid.x.holder(lock_s), grid.y.holder(work_s))
        assert known or cell == (lock_s, work_s), (lock_s, work_s)
        assert grid.status(*cell) == verdict, (lock_s, work_s, cell)
        x, y = picture.mark.frames[0].get_xy()
        assert (x + FRAME_W / 2, y + FRAME_H / 2) == pytest.approx((grid.x.centre(cell[0]), grid.y.centre(cell[1])))
        up, right = picture.mark.pointers
        assert up.get_visible() == (lock_s != cell[0]) and right.get_visible() == (work_s != cell[1])
        if up.get_visible():  # at the setting's place along x, on the frame's bottom edge (kept on the frame)
            place = min(max(grid.x.position(lock_s), x), x + FRAME_W)
            assert tuple(up.get_xydata()[0]) == pytest.approx((place, y)), (lock_s, work_s)
        if right.get_visible():
            place = min(max(grid.y.position(work_s), y), y + FRAME_H)
            assert tuple(right.get_xydata()[0]) == pytest.approx((x, place)), (lock_s, work_s)
        return
    inside = [(x, y) for x in grid.x.values for y in grid.y.values
              if abs(at[0] - grid.x.centre(x)) < 0.5 and abs(at[1] - grid.y.centre(y)) < 0.5]
    assert all(grid.status(*cell) == verdict for cell in inside), (lock_s, work_s, at, inside)
    if not known:  # a verdict not known: the ring claims no cell at all
        assert inside == [], (lock_s, work_s, at)
    elif not inside:  # on the line between cells, claiming neither: its tab says the verdict (its sign, at least)
        from sandbox.present.verdict_map import CELL_SIGN, CELL_TEXT
        said = picture.mark.tab.get_text()
        assert said in (f" now: {CELL_TEXT[verdict]} ", f" now: {CELL_SIGN[verdict]} "), (lock_s, work_s, said)


@pytest.fixture(scope="module")
def lesson_picture():
    from sandbox.present.verdict_map import MapPicture

    grid = _lesson_grid()
    return grid, MapPicture(grid, {"lock_seconds": 10, "slow_email_seconds": 30}, equal_line="lock = work")


@pytest.mark.parametrize("mark", [(10, 30), (45, 45), (0, 10), (20, 10)])
def test_a_framed_settings_now_tab_stays_on_its_cell_clear_of_the_words(mark):
    """Lesson 10's map: the "now" tab of a framed cell stood on the frame's corner, over the cell above and the
    framed cell's own "✗ invalid". It sits inside the framed cell, whose words step aside for it."""
    from matplotlib.transforms import Bbox

    from sandbox.present.verdict_map import CELL_TEXT, MapPicture, drawn_box

    grid = _lesson_grid()
    lock_s, work_s = mark
    for picture in (MapPicture(grid, {"lock_seconds": lock_s, "slow_email_seconds": work_s},
                               equal_line="lock = work"),
                    draw_verdict_map(grid, mark={"lock_seconds": lock_s, "slow_email_seconds": work_s})):
        fig = picture.figure if isinstance(picture, MapPicture) else picture
        if isinstance(picture, MapPicture):
            picture.png({"lock_seconds": lock_s, "slow_email_seconds": work_s}, _lesson_verdict(lock_s, work_s))
        ax, renderer = fig.axes[0], fig.canvas.get_renderer()
        tab = drawn_box(fig.now_mark.tab, renderer)
        i, j = grid.x.centre(lock_s), grid.y.centre(work_s)
        cell = Bbox(ax.transData.transform([(i - 0.5, j - 0.5), (i + 0.5, j + 0.5)]))
        assert cell.x0 <= tab.x0 and tab.x1 <= cell.x1 and cell.y0 <= tab.y0 and tab.y1 <= cell.y1, (mark, tab, cell)
        for (x, y), word in fig.now_mark.words.items():
            assert word.get_visible(), (mark, x, y)
            assert word.get_text().replace("\n", " ") == CELL_TEXT[grid.status(x, y)] and word.get_fontsize() >= 10
            assert not drawn_box(word, renderer).overlaps(tab), (mark, x, y)


def test_the_equal_line_runs_across_the_whole_grid():
    """Lesson 10's "lock = work" line ran from the middle of the (10, 10) cell to the middle of (45, 45): short
    of the map's numbers at both ends. It runs from edge to edge of the numbers' cells."""
    grid = _lesson_grid()
    fig = draw_verdict_map(grid, equal_line="lock = work")
    (line,) = [ln for ln in fig.axes[0].lines if ln.get_linestyle() == "--"]
    xs, ys = line.get_xdata(), line.get_ydata()
    x_edges = (grid.x.centre(grid.x.numbers[0]) - 0.5, grid.x.centre(grid.x.numbers[-1]) + 0.5)
    y_edges = (grid.y.centre(grid.y.numbers[0]) - 0.5, grid.y.centre(grid.y.numbers[-1]) + 0.5)
    assert (min(xs), max(xs)) == pytest.approx(x_edges) and (min(ys), max(ys)) == pytest.approx(y_edges)
    for v in (10, 20, 30, 45):  # and it still passes where the two settings are equal
        assert any(abs(x - grid.x.centre(v)) < 0.02 and abs(y - grid.y.centre(v)) < 0.02 for x, y in zip(xs, ys))


def test_a_category_has_its_own_column_apart_from_the_numbers():
    grid = _lesson_grid()
    fig = draw_verdict_map(grid, mark={"lock_seconds": 10, "slow_email_seconds": 30})
    ax = fig.axes[0]
    to_px = ax.transData.transform
    rest, ten = grid.x.centre(0), grid.x.centre(10)
    cell_px = to_px((1, 0))[0] - to_px((0, 0))[0]
    gap_px = to_px((ten - 0.5, 0))[0] - to_px((rest + 0.5, 0))[0]
    assert gap_px >= 0.3 * cell_px, gap_px  # a gap, not a neighbour
    labels = {t.get_text(): t for t in ax.get_xticklabels()}
    assert labels["0: rest\nof the run"].get_fontstyle() == "italic" and labels["10"].get_fontstyle() == "normal"
    for lock_s in range(1, 10):  # a number below the first number: never in the category's cell
        assert abs(grid.x.position(lock_s) - rest) > 0.5, lock_s


def test_a_short_lock_in_the_lesson_dashboard_is_ringed_where_the_verdict_is_invalid():
    """Issue 31: lock 3 s (work 30 s) is invalid, and its ring sat in the green cell of the "0: rest of the run"
    column, as though 3 lay between 0 and 10. The mark (now a frame on the invalid 10 s cell, notched at its left
    end) stands on no valid cell."""
    explorer = lock_explorer(plot=False)
    lock_axis = ("lock_seconds", [0, 10, 45], "lock (s)", {0: "0: rest\nof the run"})
    view = linked_verdict_map(explorer, ARTICLE, x=lock_axis, y=("slow_email_seconds", [30]),
                              settings=duplicate_after_lock)
    explorer.controls["lock_seconds"].value = 3
    assert explorer.result.status == "invalid"
    now = view.figure.now_mark
    assert now.frames[0].get_visible() and now.pointers[0].get_visible() and not now.point[0].get_visible()
    x = now.frames[0].get_x() + FRAME_W / 2
    statuses = {view.grid.status(v, 30) for v in view.grid.x.values if abs(x - view.grid.x.position(v)) < 0.5}
    assert statuses <= {"invalid"}, (x, statuses)


def test_the_map_reads_on_a_laptop_and_a_projector():
    fig = verdict_map(LOCK, ARTICLE, x=("lock_seconds", [10, 45]), y=("slow_email_seconds", [30]),
                      settings=lambda cell: duplicate_after_lock({"function_timeout": 60, **cell}),
                      mark={"lock_seconds": 10, "slow_email_seconds": 30}, equal_line="lock = work",
                      title="a title long enough that it has to wrap onto a second line to stay on the page at all")
    width_px = fig.get_size_inches()[0] * fig.dpi
    assert width_px <= 900
    texts = [t for t in fig.axes[0].texts]
    assert min(t.get_fontsize() for t in texts) >= 10
    assert "\n" in fig.axes[0].get_title()  # wrapped, not cut off
    fig.canvas.draw()
    page = fig.bbox
    for t in [fig.axes[0].title, *fig.legends[0].get_texts(), fig.axes[0].xaxis.label, fig.axes[0].yaxis.label]:
        box = t.get_window_extent()
        assert box.x0 >= page.x0 - 1 and box.x1 <= page.x1 + 1 and box.y0 >= page.y0 - 1, t.get_text()


def test_the_linked_map_follows_its_explorer():
    explorer = lock_explorer(plot=False)
    view = linked_verdict_map(explorer, ARTICLE, x=("lock_seconds", [0, 10, 45]), y=("slow_email_seconds", [30]),
                              settings=duplicate_after_lock)
    assert isinstance(view, LinkedVerdictMap)
    [top, side, *below] = view.widget.children
    # the verdict beside the controls (a learner pressing keys sees both), the map under them, then the timeline
    assert top is explorer.top and top.children == (explorer.controls_box, explorer.stage.slots["verdict"])
    assert explorer.stage.slots["map"] in side.children
    assert below[:3] == explorer.shows() == [explorer.stage.slots[n] for n in ("timeline", "legend", "findings")]
    assert below[-1] is explorer.stage.feed and "sandbox-dashboard" in view.widget._dom_classes
    assert view.mark == {"lock_seconds": 10, "slow_email_seconds": 30}
    assert view.grid.cells == {(0, 30): "valid", (10, 30): "invalid", (45, 30): "valid"}
    grid, image = view.grid, view.image.value
    explorer.controls["lock_seconds"].value = 45  # an axis moved: the frame moves, the grid stays
    assert view.mark["lock_seconds"] == 45 and view.grid is grid and view.image.value != image
    assert view.figure.axes[0].get_title().endswith("(function timeout 60 s)")
    explorer.controls["function_timeout"].value = 20  # a setting off the axes: the grid reruns, and its title says so
    assert view.grid is not grid and view.grid.cells[(10, 30)] == "valid"
    assert view.figure.axes[0].get_title().endswith("(function timeout 20 s)")
    explorer.controls["lock_seconds"].value = 10
    assert explorer.result.status == view.grid.status(10, 30) == "valid"  # the map and the explorer agree


# -- answering at once -------------------------------------------------------------------------------
def test_controls_are_labelled_in_words_with_the_settings_name_in_the_tooltip():
    explorer = explore_settings(LOCK, ARTICLE, only=["lock_seconds", "slow_email_seconds"], plot=False,
                                labels={"slow_email_seconds": "work seconds"})
    lock_s, work_s = explorer.controls["lock_seconds"], explorer.controls["slow_email_seconds"]
    assert (lock_s.description, work_s.description) == ("lock seconds", "work seconds")
    assert lock_s.tooltip.startswith("lock_seconds: RUN_ONCE_LOCK_SECONDS")
    assert work_s.tooltip.startswith("slow_email_seconds: ")
    assert explore_settings("ttl-lag", ARTICLE, only=["ttl_lag"], plot=False).controls["ttl_lag"].description \
        == "TTL lag"


def _message(explorer):
    """The last message the explorer's page was sent: its values, the notices it answers, its parts."""
    import html as html_lib
    import json
    import re

    feed = explorer.stage.feed.value
    values = json.loads(html_lib.unescape(re.search(r'data-values="([^"]*)"', feed).group(1)))
    clears = re.search(r'data-clears="([^"]*)"', feed).group(1).split()
    parts = re.findall(r'<div data-part="(\w+)">', feed)
    return values, clears, parts, feed


def test_a_burst_of_browser_moves_runs_only_the_latest_value_and_marks_the_pictures_stale_at_once():
    import asyncio

    from sandbox.present.stage import STALE, live_value

    explorer = lock_explorer()
    view = linked_verdict_map(explorer, ARTICLE, x=("lock_seconds", [0, 10, 45]), y=("slow_email_seconds", [30]),
                              settings=duplicate_after_lock)
    control, runs, image, map_image = explorer.controls["lock_seconds"], explorer.runs, explorer.image.value, \
        view.image.value
    shown, sent = explorer.shown, explorer.stage.sent

    async def burst():
        for value in (11, 12, 13):  # as the browser sends them: comm messages, one after the other
            control.set_state({"value": value})
        stale = (explorer.status.value, explorer.stage.sent, explorer.image.value == image, explorer.runs)
        for _ in range(200):
            await asyncio.sleep(0.02)
            if explorer.shown > shown:
                break
        return stale

    status, sent_then, old_picture, runs_then = asyncio.run(burst())
    # the value as the kernel heard of it last, until the page shows the slider's own (``stage.live_value``)
    assert f"redrawing for lock seconds {live_value('lock_seconds', '13')}…" in status, status
    assert STALE in status and 'data-dims="all"' in status
    assert sent_then == sent and old_picture and runs_then == runs  # nothing ran or was sent while the moves came in
    assert explorer.runs == runs + 1 and explorer.result.settings["lock_seconds"] == 13  # only the latest
    assert explorer.stage.sent == sent + 1  # the verdict, the timeline and the map sent in one message
    values, clears, parts, feed = _message(explorer)
    assert values == {"lock_seconds": 13, "slow_email_seconds": 30, "function_timeout": 60}
    assert set(clears) == {"all", "map"} and parts == ["verdict", "findings", "timeline", "legend", "map"]
    assert explorer.image.value != image and view.image.value != map_image and explorer.shown == shown + 1
    for png in (explorer.image.value, view.image.value, explorer.legend.value):  # each picture in it, once
        assert feed.count(base64.b64encode(png).decode()) == 1


def test_a_message_waits_for_its_pictures_and_for_the_controls_to_show_its_values():
    """The page's part of the swap, read from what is sent: the pictures decode before anything moves, and a
    message for values the controls no longer show is not shown."""
    from sandbox.present.stage import SWAP_JS

    explorer = lock_explorer()
    _, _, _, feed = _message(explorer)
    assert 'class="sandbox-boot"' in feed and "onload=" in feed
    for name, control in explorer.controls.items():  # the page finds each control, to read what it shows
        assert f"sandbox-setting-{name}" in control._dom_classes
    swap = SWAP_JS.split("Promise.all")[1]
    assert swap.index(".decode()") < swap.index("current()") < swap.index("replaceChildren") < swap.index(".remove()")
    assert "!message.isConnected" in swap  # a later message replaced it: it is never shown


def test_the_map_mark_moves_without_running_or_redrawing_the_cells(monkeypatch):
    import io

    import numpy as np
    from PIL import Image

    from sandbox.present import verdict_map as vm

    explorer = lock_explorer(plot=False)
    view = linked_verdict_map(explorer, ARTICLE, x=("lock_seconds", [0, 10, 45]), y=("slow_email_seconds", [30]),
                              settings=duplicate_after_lock, equal_line="lock = work")
    picture, grid = view.picture, view.grid
    monkeypatch.setattr(vm, "_judge", lambda *a: pytest.fail("a cell ran again"))
    monkeypatch.setattr(vm, "_map_figure", lambda *a: pytest.fail("the grid was drawn again"))
    for lock_s in (13, 45, 0):
        explorer.controls["lock_seconds"].value = lock_s
        assert view.picture is picture and view.grid is grid and view.mark["lock_seconds"] == lock_s
    monkeypatch.undo()
    # A mark moved three times leaves no trace: the map is the one drawn afresh with the mark where it is now.
    fresh = vm.MapPicture(grid, view.mark, title=view._title(view._shared), equal_line="lock = work").png(view.mark)
    pixels = [np.asarray(Image.open(io.BytesIO(png)).convert("RGBA")) for png in (view.image.value, fresh)]
    assert pixels[0].shape == pixels[1].shape and (pixels[0] == pixels[1]).all()


def test_the_explorers_timeline_and_legend_are_the_plots_pixel_for_pixel():
    import io

    import numpy as np
    from PIL import Image

    from sandbox.present.timeline import legend_figure

    def pixels(png):
        return np.asarray(Image.open(io.BytesIO(png)).convert("RGBA"))

    explorer = lock_explorer()
    explorer.controls["lock_seconds"].value = 13
    plain = explorer.result.plot(width=9.0, legend=False)
    assert not plain.legends and plain.legend_plan is not None and not plain.legend_plan.shown
    fast, slow = pixels(explorer.image.value), pixels(plain._repr_png_())
    assert fast.shape == slow.shape and (fast == slow).all()
    # The legend is its own picture, with the entries the plot draws under the timeline.
    whole = explorer.result.plot(width=9.0)
    assert [t.get_text() for t in whole.legends[0].get_texts()] == list(plain.legend_plan.texts)
    alone = legend_figure(plain.legend_plan, 9.0, plain.dpi)
    fast, slow = pixels(explorer.legend.value), pixels(alone._repr_png_())
    assert fast.shape == slow.shape and (fast == slow).all()
    assert fast.shape[1] == pixels(explorer.image.value).shape[1]  # as wide as the timeline over it


def test_the_legend_is_drawn_again_only_when_its_entries_change(monkeypatch):
    from sandbox.present import widgets as pw

    explorer = lock_explorer()
    drawn = []
    monkeypatch.setattr(pw, "legend_png", lambda plan, width: drawn.append(plan.texts) or b"png")
    for lock_s in (13, 14, 15):
        explorer.controls["lock_seconds"].value = lock_s  # the same kinds of marks: the same legend
    assert drawn == []
    explorer.controls["lock_seconds"].value = 0  # no overlap, no stale write: fewer entries
    assert len(drawn) == 1 and explorer.legend.value == b"png"
    assert "STALE write (another invocation's record)" not in drawn[0]


def test_the_bench_moves_every_widget_in_the_course():
    import re

    import nbformat

    from sandbox.bench.widgets import WIDGETS

    from conftest import ROOT

    moved = {name for _, name, _ in WIDGETS.values()}
    first_controls = set()
    for notebook in [*(ROOT / "notebooks").glob("*.ipynb"), *(ROOT / "exercises").glob("*.ipynb")]:
        for cell in nbformat.read(notebook, as_version=4).cells:
            source = cell.source
            for call in re.finditer(r"explore_settings\((.*?)\)\n", source, re.S):
                first_controls.add((notebook.name, re.search(r'only=\["(\w+)"', call.group(1)).group(1)))
    assert first_controls and {name for _, name in first_controls} <= moved, first_controls


def test_a_slider_in_whole_seconds_reads_whole_seconds():
    """A learner reads "30" on a slider that moves a second at a time, not "30.00" (a new learner's note)."""
    for step, kind, readout in ((1, "IntSlider", "d"), (5, "IntSlider", "d"), (0.5, "FloatSlider", ".1f"),
                                (0.25, "FloatSlider", ".2f")):
        explorer = explore_settings(LOCK, ARTICLE, only=["slow_email_seconds"], plot=False,
                                    spans={"slow_email_seconds": (1, 60, step)}, fixed={"slow_email_seconds": 31})
        slider = explorer.controls["slow_email_seconds"]
        assert type(slider).__name__ == kind and slider.readout_format == readout, (step, slider)


def test_the_legend_names_the_setting_as_the_axis_does():
    """The map's legend says "lock" and "work", as its axes and the sliders do, not the settings' code names."""
    fig = verdict_map("async-late-retry", ARTICLE, x=("keep_for", [3600, 14400], "kept: keep_for (s)"),
                      y=("throttled_for", [0, 7200]), mark={"keep_for": 3600, "throttled_for": 7200})
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend[-1] == "now: kept 1 h, throttled_for 2 h"


@pytest.mark.parametrize("mark", [None, {"lock_seconds": 10, "slow_email_seconds": 30}])
def test_the_equal_line_stops_short_of_the_cells_words(mark):
    """Lesson 10 cell 12: the dashed "lock = work" line ran through the "✓ valid" of every cell on the diagonal (on a
    box as tight as its letters). Drawn, no dark pixel of it stands within 3 px of a cell's words."""
    import numpy as np

    grid = _lesson_grid()
    fig = draw_verdict_map(grid, mark=mark, equal_line="lock = work")
    fig.canvas.draw()
    pixels = np.asarray(fig.canvas.buffer_rgba())[::-1, :, :3].astype(int)  # row 0 at the bottom, as display y
    renderer = fig.canvas.get_renderer()
    dark = (pixels < 80).all(axis=2)
    crossed = 0
    for (x, y), word in fig.cell_words.items():
        if x != y:
            continue  # the line crosses the cells where the two settings are equal
        crossed += 1
        box = word.get_window_extent(renderer).padded(3 * fig.dpi / 100)
        near = dark[int(box.y0):int(box.y1) + 1, int(box.x0):int(box.x1) + 1]
        assert not near.any(), (x, y, int(near.sum()))
    assert crossed == 4



def _line_near(fig, words) -> dict[str, int]:
    """How many pixels of ``fig``'s dashed line stand within 3 px of each of ``words``' letters: the pixels that
    change when the line is left out (the frame, the ring and the tab are as black)."""
    import numpy as np

    (line,) = [ln for ln in fig.axes[0].lines if ln.get_linestyle() == "--"]
    drawn = []
    for visible in (True, False):
        line.set_visible(visible)
        fig.canvas.draw()
        drawn.append(np.asarray(fig.canvas.buffer_rgba())[::-1, :, :3].copy())  # row 0 at the bottom, as display y
    line.set_visible(True)
    on_line = (drawn[0] != drawn[1]).any(axis=2)
    renderer = fig.canvas.get_renderer()
    found = {}
    for word in words:
        box = word.get_window_extent(renderer).padded(3 * fig.dpi / 100)
        found[word.get_gid()] = int(on_line[int(box.y0):int(box.y1) + 1, int(box.x0):int(box.x1) + 1].sum())
    return found


@pytest.mark.parametrize("mark", [(30, 30), (10, 10), (25, 25), (3, 1), (13, 15)])
def test_the_equal_line_stops_short_of_words_the_mark_moved(mark):
    """Lesson 10's dashboard: with the mark on a cell of the diagonal (framed: lock = work) or by one, that cell's
    "✓ valid" stepped aside for the "now" tab or the ring, onto the dashed "lock = work" line, which ran through it:
    the line's gap stayed where the words had been. The gap follows the words; the audit, which finds a line through
    words, finds nothing on the dashboard's picture, and no dark pixel stands by the moved words."""
    from sandbox.present.timeline import audit
    from sandbox.present.verdict_map import MapPicture

    picture = MapPicture(_lesson_grid(), {"lock_seconds": 10, "slow_email_seconds": 30}, equal_line="lock = work")
    lock_s, work_s = mark
    picture.png({"lock_seconds": lock_s, "slow_email_seconds": work_s}, _lesson_verdict(lock_s, work_s))
    moved = [word for word in picture.mark.moved if word.get_visible()]
    assert moved, mark  # words stepped aside: what the line must now keep off
    assert audit.faults(picture.figure) == [], mark
    assert set(_line_near(picture.figure, moved).values()) == {0}, mark


@pytest.mark.parametrize("work_s", [45, 30, 10])
def test_a_rings_tab_between_cells_leaves_every_cell_its_words(work_s):
    """Lesson 10's dashboard at lock 25, on the line between the 20 s and 30 s columns: the black " now: ✗ invalid "
    tab stood where the (30, 45) cell's words had been (left out for it) and reached into the (45, 45) cell. Where its
    words would leave a cell's words out, the tab says the verdict by its sign (" now: ✗ "), and every cell keeps its
    words; the audit, which finds words left out where no ring stands, finds nothing."""
    from sandbox.present.timeline import audit
    from sandbox.present.verdict_map import CELL_SIGN, CELL_TEXT, MapPicture

    picture = MapPicture(_lesson_grid(), {"lock_seconds": 10, "slow_email_seconds": 30}, equal_line="lock = work")
    verdict = _lesson_verdict(25, work_s)
    picture.png({"lock_seconds": 25, "slow_email_seconds": work_s}, verdict)
    assert audit.faults(picture.figure) == [], work_s
    assert all(word.get_visible() for word in picture.mark.words.values()), work_s
    assert picture.mark.tab.get_text() in (f" now: {CELL_TEXT[verdict]} ", f" now: {CELL_SIGN[verdict]} "), work_s


def test_a_valid_cell_whose_verdict_has_notes_reads_apart_from_a_clean_one():
    """Lesson 10's dashboard at function timeout 20: every cell read "✓ valid", though at lock 10 each run's verdict
    carried a "lock overlap" note (the duplicate got in while the first attempt still worked; the runtime stopped that
    at 20 s, before its delete). The map read as "short locks are fine". A valid cell whose verdict has notes reads
    "✓ valid*" on a paler green, and the legend says what was noted; a valid cell without notes is as before."""
    from matplotlib.colors import same_color

    from sandbox.present.timeline import audit
    from sandbox.present.verdict_map import CELL_TEXT, COLOURS, NOTED
    from sandbox.vocab import Status

    fig = verdict_map(LOCK, ARTICLE, x=("lock_seconds", [10, 45], "lock (s)"),
                      y=("slow_email_seconds", [30], "work (s)"),
                      settings=lambda cell: duplicate_after_lock({"function_timeout": 20, **cell}),
                      mark={"lock_seconds": 10, "slow_email_seconds": 30}, equal_line="lock = work")
    grid = fig.grid
    assert grid.cells == {(10, 30): "valid", (45, 30): "valid"} and grid.notes[(10, 30)] == ("lock overlap",)
    assert grid.notes[(45, 30)] == ()
    noted, clean = fig.cell_words[(10, 30)], fig.cell_words[(45, 30)]
    assert noted.get_text() == CELL_TEXT[NOTED] == "✓ valid*" and clean.get_text() == "✓ valid"
    assert same_color(noted.get_bbox_patch().get_facecolor(), COLOURS[NOTED])
    assert same_color(clean.get_bbox_patch().get_facecolor(), COLOURS[Status.VALID])
    assert not same_color(COLOURS[NOTED], COLOURS[Status.VALID])
    cells = {p.get_xy(): p.get_facecolor() for p in fig.axes[0].patches if p.get_width() == 1}
    assert not same_color(cells[(grid.x.centre(10) - 0.5, -0.5)], cells[(grid.x.centre(45) - 0.5, -0.5)])
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "✓ valid* (noted: lock overlap)" in legend and "✓ valid" in legend, legend
    fig.canvas.draw()
    assert audit.faults(fig) == []
    # The dashboard's ring claims a cell only when the run there reads as that cell does: lock 17 lies in the clean
    # lock-20 cell, but its run has a note (the duplicate comes at 19 s, before the runtime stops the work at 20 s).
    explorer = lock_explorer(plot=False, fixed={"function_timeout": 20})
    view = linked_verdict_map(explorer, ARTICLE, x=("lock_seconds", [0, 10, 20, 30, 45], "lock (s)", {0: "0: rest"}),
                              y=("slow_email_seconds", [30]), settings=duplicate_after_lock)
    explorer.controls["lock_seconds"].value = 17
    assert explorer.result.status == "valid" and notes(explorer.result) == ["lock overlap"]
    assert view.grid.shown(20, 30) == "valid" and view.grid.shown(10, 30) == NOTED
    assert view.figure.now_mark.tab.get_text() in (" now: ✓ valid* ", " now: ✓* ")  # on the line, saying so
    assert audit.faults(view.figure) == []


def test_a_legend_with_a_noted_entry_stays_in_the_figure_and_the_grid_keeps_its_rows():
    """A noted cell's legend entry beside the mark's widest words (a linked map keeps room for them, so the legend
    does not shift as the mark moves) made the legend wider than the figure: its first column's keys were cut off at
    the left edge. In fewer columns it takes more rows, which the figure gains: the grid's rows keep their height."""
    from sandbox.present.verdict_map import MapPicture

    mark = {"lock_seconds": 10, "slow_email_seconds": 30}
    grid = _lesson_grid()
    for work_s in grid.y.values:
        grid.cells[(10, work_s)], grid.notes[(10, work_s)] = "valid", ("lock overlap",)
    plain, noted = (MapPicture(g, mark, equal_line="lock = work").figure for g in (_lesson_grid(), grid))
    legend = noted.legends[0].get_window_extent(noted.canvas.get_renderer())
    assert noted.bbox.x0 <= legend.x0 and legend.x1 <= noted.bbox.x1, legend
    row_px = [abs(f.axes[0].transData.transform((0, 1))[1] - f.axes[0].transData.transform((0, 0))[1])
              for f in (plain, noted)]
    assert row_px[1] == pytest.approx(row_px[0], abs=1), row_px

def test_a_static_export_shows_what_was_run_and_its_pictures_not_a_widget_repr():
    """An nbconvert (HTML) export of lesson 10 showed "VBox(children=(HTML(value='<style>…" where the controls
    were: with no widget state the page shows the next kind of output there is. That is a line saying what was run
    and what came of it, and the verdict and the last pictures (the map's too)."""
    explorer = lock_explorer()
    view = linked_verdict_map(explorer, ARTICLE, x=("lock_seconds", [0, 10, 45]), y=("slow_email_seconds", [30]),
                              settings=duplicate_after_lock)
    explorer.controls["lock_seconds"].value = 45
    for shown in (explorer, view):
        data = shown._repr_mimebundle_()
        assert "application/vnd.jupyter.widget-view+json" in data  # a live notebook still shows the widgets
        line = data["text/plain"]
        assert "Box(" not in line and line.startswith(LOCK) and "lock seconds 45" in line, line
        assert f"verdict {explorer.result.status}" in line
        page = data["text/html"]
        pictures = [base64.b64decode(src) for src in re.findall(r'src="data:image/png;base64,([^"]+)"', page)]
        assert explorer.image.value in pictures and explorer.legend.value in pictures
        assert (view.image.value in pictures) == (shown is view)


@pytest.mark.parametrize(("lock_s", "work_s"), [(12, 30), (11, 30), (13, 30), (25, 30), (10, 30)])
def test_the_mark_hides_no_cells_verdict_and_the_legend_shows_its_shape(lock_s, work_s):
    """Lesson 10's dashboard at lock 12, work 30 (a new learner): the ring between the columns stood on its cell's
    "✗ invalid", the black "now" tab on the next cell's words, and the legend showed a framed box while the map
    showed a ring. Every cell keeps its verdict (its sign, at least), the tab stands on no cell the ring is not on
    (over the line between two rows, a third of it at most), and the legend's symbol is the map's: a ring, or a frame
    on a framed cell."""
    from matplotlib.transforms import Bbox

    from sandbox.present.timeline import audit
    from sandbox.present.verdict_map import MapPicture, drawn_box

    grid = _lesson_grid()
    picture = MapPicture(grid, {"lock_seconds": 10, "slow_email_seconds": 30}, equal_line="lock = work")
    picture.png({"lock_seconds": lock_s, "slow_email_seconds": work_s}, _lesson_verdict(lock_s, work_s))
    fig, now = picture.figure, picture.mark
    assert audit.faults(fig) == []
    assert all(word.get_visible() for word in now.words.values())
    renderer, ax = fig.canvas.get_renderer(), fig.axes[0]
    ringed = now.point[0].get_visible()
    shapes = fig.now_shapes
    assert shapes is not None and shapes.ring and shapes.frame
    assert all(a.get_visible() == ringed for a in shapes.ring) and all(a.get_visible() != ringed for a in shapes.frame)
    if not ringed:
        return
    ring, tab = now.point[0].get_window_extent(renderer), drawn_box(now.tab, renderer)
    for x, y in now.words:
        i, j = grid.x.centre(x), grid.y.centre(y)
        cell = Bbox(ax.transData.transform([(i - 0.5, j - 0.5), (i + 0.5, j + 0.5)]))
        if not cell.overlaps(ring):
            shared = Bbox.intersection(cell, tab)
            assert shared is None or shared.width * shared.height <= tab.width * tab.height / 3, (lock_s, work_s, x, y)


def test_a_legend_shown_before_comes_back_without_being_drawn_again(monkeypatch):
    """A slider moved back and forth brings back legends it has shown: each is drawn once, and the one brought back
    is the picture first drawn for those entries."""
    from sandbox.present import widgets as pw

    drawn = []
    real = pw.legend_png
    monkeypatch.setattr(pw, "legend_png", lambda plan, width: drawn.append(plan.texts) or real(plan, width))
    explorer = explore_settings("ttl-lag", TTL_ONLY, only=["ttl_lag"], fixed={"ttl_lag": 30})
    first = explorer.legend.value
    explorer.controls["ttl_lag"].value = 610  # a run with other entries in its legend
    other = explorer.legend.value
    assert other != first and len(drawn) == 2
    explorer.controls["ttl_lag"].value = 30
    assert explorer.legend.value == first and len(drawn) == 2
    explorer.controls["ttl_lag"].value = 610
    assert explorer.legend.value == other and len(drawn) == 2
    assert explorer.legend.value == real(explorer.result.plot(width=explorer.width, legend=False).legend_plan,
                                         explorer.width)
