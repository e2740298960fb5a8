"""The browser tests cannot pass unseen: a missing chromium fails where it must, and every run names them.

These run without a browser (they stand a missing /usr/bin/chromium in with a path that does not exist).
"""
from __future__ import annotations

from types import SimpleNamespace

import pytest

import ui_support
from ui_support import report_ui_tests, require_chromium


@pytest.fixture
def no_chromium(monkeypatch, tmp_path):
    monkeypatch.setattr(ui_support, "CHROMIUM", tmp_path / "chromium")
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv(ui_support.REQUIRE_ENV, raising=False)


def test_missing_chromium_skips_with_the_install_command_on_a_laptop(no_chromium):
    with pytest.raises(pytest.skip.Exception) as skipped:
        require_chromium()
    assert "did NOT run" in str(skipped.value) and "apt-get install chromium" in str(skipped.value)


@pytest.mark.parametrize("variable", ["CI", "LAB_UI_REQUIRED"])
def test_missing_chromium_fails_under_ci_and_make_test_ui(no_chromium, monkeypatch, variable):
    monkeypatch.setenv(variable, "1")
    with pytest.raises(pytest.fail.Exception) as failed:
        require_chromium()
    assert "apt-get install chromium" in str(failed.value)


def test_present_chromium_is_returned(monkeypatch, tmp_path):
    fake = tmp_path / "chromium"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setattr(ui_support, "CHROMIUM", fake)
    assert require_chromium() == fake


class Reporter:
    """The part of pytest's terminal reporter that report_ui_tests uses."""

    def __init__(self, stats):
        self.stats, self.lines = stats, []

    def write_sep(self, sep, title):
        self.lines.append(f"== {title}")

    def write_line(self, line, **markup):
        self.lines.append(line)


def _report(nodeid, when, outcome, duration=1.0):
    return SimpleNamespace(nodeid=nodeid, when=when, outcome=outcome, duration=duration,
                           passed=outcome == "passed", failed=outcome == "failed", skipped=outcome == "skipped")


UI = "tests/test_lab_ui.py::test_a"
UI_B = "tests/test_lab_ui.py::test_b"


def test_the_summary_names_each_ui_test_and_shouts_when_one_was_skipped():
    stats = {  # filed as pytest files them: a passing setup or teardown under ""
        "": [_report(UI, "setup", "passed", 5), _report(UI, "teardown", "passed", 2),
             _report(UI_B, "teardown", "passed", 0)],
        "passed": [_report(UI, "call", "passed", 20), _report("tests/test_x.py::t", "call", "passed")],
        "skipped": [_report(UI_B, "setup", "skipped", 0)],
    }
    reporter = Reporter(stats)
    report_ui_tests(reporter)
    assert reporter.lines[0].startswith("== browser UI tests")
    assert f"UI PASSED  {UI} (27.0 s)" in reporter.lines
    assert f"UI SKIPPED {UI_B} (0.0 s)" in reporter.lines
    assert reporter.lines[-1].startswith("UI TESTS NOT RUN:") and "apt-get install chromium" in reporter.lines[-1]
    assert not any("test_x" in line for line in reporter.lines)


def test_the_summary_reports_failures_and_stays_silent_without_ui_tests():
    reporter = Reporter({"failed": [_report(UI, "call", "failed")], "": [_report(UI, "setup", "passed")]})
    report_ui_tests(reporter)
    assert f"UI FAILED  {UI} (2.0 s)" in reporter.lines and not reporter.lines[-1].startswith("UI TESTS NOT RUN")
    quiet = Reporter({"passed": [_report("tests/test_x.py::t", "call", "passed")]})
    report_ui_tests(quiet)
    assert quiet.lines == []


# -- the lesson 10 watch's judge: what a moment may show ------------------------------------------------
def _frame(t, lock, shown, dim=1.0, notice=False, decoded=True, named=None):
    verdict, timeline, map_ = shown
    return {"t": t, "lock": lock, "verdict": verdict, "timeline": timeline, "map": map_, "dim": dim,
            "notice": notice, "decoded": decoded, "named": named}


A, B, C = ("valid", "t0", "m0"), ("invalid", "t5", "m5"), ("invalid", "t10", "m10")


def _watched(*middle, end=B, lock=5):
    """A move from lock 0 (A) to 5, then Home back to 0: ``middle`` are the moments of the first move (the page
    dims the moment the slider reads 5)."""
    frames = [_frame(0, 0, A), _frame(10, 5, A, dim=0.35), *middle, _frame(500, lock, end), _frame(600, 0, A)]
    return {"frames": frames, "presses": [{"label": "PageUp", "t": 5, "at": 1},
                                          {"label": "Home", "t": 550, "at": len(frames) - 1}]}


MOVES = [("PageUp", 0, 5, 0), ("Home", 5, 0, 1)]


def test_the_judge_passes_a_move_that_swaps_everything_at_once_after_dimming():
    from ui_support import check_moments, move_times

    watched = _watched(_frame(30, 5, A, dim=0.35, notice=True), _frame(400, 5, B))
    settled = check_moments(watched, MOVES)
    assert settled == {5: B, 0: A}
    assert move_times(watched, MOVES, settled)[0] == {"key": "PageUp", "lock_seconds": 5, "timeline_ms": 395,
                                                      "map_ms": 395, "ms": 395}


@pytest.mark.parametrize("bad, says", [
    (_frame(30, 5, (B[0], A[1], A[2]), dim=0.35, notice=True), "mixing settings"),  # a new verdict, old pictures
    (_frame(30, 5, (B[0], B[1], A[2])), "mixing settings"),  # the map a moment late
    (_frame(30, 5, C), "mixing settings"),  # a value the move did not stop at
    (_frame(30, 5, B, decoded=False), "before it was decoded"),
    (_frame(30, 5, B, dim=0.35), "new settings dimmed"),
])
def test_the_judge_fails_any_moment_that_mixes_or_hides(bad, says):
    from ui_support import check_moments

    with pytest.raises(AssertionError, match=says):
        check_moments(_watched(bad), MOVES)


def test_the_judge_fails_a_notice_naming_a_value_the_slider_has_passed():
    """Two learners saw a burst's notice name its first value while the slider already read the last."""
    from ui_support import check_moments

    check_moments(_watched(_frame(30, 5, A, dim=0.35, notice=True, named="5"), _frame(400, 5, B)), MOVES)
    watched = _watched(_frame(30, 5, A, dim=0.35, notice=True, named="3"), _frame(400, 5, B))
    with pytest.raises(AssertionError, match="the notice names another value"):
        check_moments(watched, MOVES)


def test_the_judge_fails_the_settings_left_undimmed_after_the_notice():
    from ui_support import check_moments

    # the slider back at 0 for a moment, its pictures undimmed while the kernel's notice still says it is redrawing
    watched = _watched(_frame(30, 5, A, dim=0.35, notice=True), _frame(45, 0, A, notice=True))
    with pytest.raises(AssertionError, match="undimmed while redrawing"):
        check_moments(watched, MOVES)


def test_the_judge_fails_a_slider_that_reads_another_value_than_the_pictures_undimmed():
    """A new learner saw the readout move ~0.6 s before the dimming: the slider said 5, the pictures were lock 0's."""
    from ui_support import check_moments

    watched = _watched(_frame(30, 5, A), _frame(60, 5, A, dim=0.35, notice=True))
    with pytest.raises(AssertionError, match="the slider and the pictures disagree"):
        check_moments(watched, MOVES)
