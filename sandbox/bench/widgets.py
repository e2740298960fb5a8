"""``make bench``'s widget section: what a slider move costs against a bare run of the same scenario.

Every widget in the course (lesson 10's, built as the lesson builds them) is moved to fifteen values it
has not shown yet, from Python, which reruns and redraws before the assignment returns: the
rerun, the timeline and, for the dashboard, the verdict map's mark. Each move is timed beside a
bare ``run_scenario`` of the same settings, alternating which goes first, in this one process;
the figure is the ratio of the medians (target <= 2.5x, issue 31: issue 20's 3x, with a margin). A
move of the dashboard's function timeout reruns the map's 20 cells; in the browser those run one at
a time between messages, off the move's path, and their time is reported beside the rest.

    python -m sandbox.bench.widgets [--quick] [--json]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import textwrap
import time
from collections.abc import Callable
from typing import Any

from tabulate import tabulate

from .. import paths
from ..settings import SettingValue
from .shapes import WidgetMove, WidgetTimes

ROOT = paths.ROOT
ARTICLE = str(ROOT / "examples" / "article.py") + ":handler"
TTL_ONLY = str(ROOT / "examples" / "run_once_ttl_only.py") + ":handler"
LOCK = "lock-shorter-than-work"
WIDGET_TARGETS = {"move_x": 2.5}


def duplicate_after_lock(values: dict[str, SettingValue]) -> dict[str, SettingValue]:
    """As lesson 10 runs it: the duplicate arrives 2 s after the lock runs out."""
    lock = values["lock_seconds"] or values["function_timeout"]
    if isinstance(lock, str):  # both count seconds; a str is as wrong here as it was in the sum it goes into
        raise TypeError(f"lock_seconds and function_timeout are numbers of seconds, got {lock!r}")
    return {**values, "duplicate_delay": lock + 2}


def _lock_dashboard():
    from ..present.verdict_map import linked_verdict_map
    from ..present.widgets import explore_settings
    from ..scenarios import run_scenario

    lock = explore_settings(LOCK, ARTICLE, only=["lock_seconds", "slow_email_seconds", "function_timeout"],
                            spans={"lock_seconds": (0, 60, 1), "slow_email_seconds": (1, 60, 1),
                                   "function_timeout": (5, 120, 5)},
                            labels={"slow_email_seconds": "work seconds"},
                            run=lambda values: run_scenario(LOCK, ARTICLE, settings=duplicate_after_lock(values)))
    linked_verdict_map(lock, ARTICLE, settings=duplicate_after_lock, equal_line="lock = work",
                       x=("lock_seconds", [0, 10, 20, 30, 45], "lock (s)", {0: "0: rest\nof the run"}),
                       y=("slow_email_seconds", [10, 20, 30, 45], "work (s)"))
    return lock


def _explorer(scenario: str, handler: str, name: str, **kw: Any) -> Callable[[], Any]:
    def build():
        from ..present.widgets import explore_settings

        return explore_settings(scenario, handler, only=[name], **kw)
    return build


#: Lesson 10's widgets, as its cells build them: (the control moved, the values it is moved to).
WIDGETS: dict[str, tuple[Callable[[], Any], str, list]] = {
    "ttl-lag (ttl_lag)": (_explorer("ttl-lag", TTL_ONLY, "ttl_lag", fixed={"ttl_lag": 600},
                                    spans={"ttl_lag": (0, 1800, 10)}), "ttl_lag",
                          [30, 90, 610, 1200, 40, 70, 1790, 20, 300, 150, 900, 60, 1500, 10, 450]),
    "lock dashboard (lock_seconds)": (_lock_dashboard, "lock_seconds",
                                      [13, 0, 40, 11, 27, 45, 9, 33, 17, 21, 5, 38, 14, 30, 2]),
    "async-late-retry (keep_for)": (_explorer("async-late-retry", ARTICLE, "keep_for", fixed={"keep_for": 3600},
                                              spans={"keep_for": (600, 14400, 600)}), "keep_for",
                                    [7200, 1200, 14400, 10800, 600, 9000, 4200, 12000, 1800, 6000, 13200, 2400,
                                     8400, 3000, 10200]),
    "sqs-visibility-timeout (visibility_timeout)": (
        _explorer("sqs-visibility-timeout", ARTICLE, "visibility_timeout",
                  spans={"visibility_timeout": (3, 60, 1)}), "visibility_timeout",
        [30, 3, 60, 12, 45, 7, 21, 50, 9, 36, 4, 55, 16, 27, 40]),
}


def _timed(fn: Callable[[], Any]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def move_and_bare(build: Callable[[], Any], name: str, values: list) -> WidgetMove:
    """Median seconds of a move to each value and of a bare run of the same settings, and their ratio."""
    explorer = build()
    control = explorer.controls[name]
    moves, bares = [], []
    for k, value in enumerate(values):
        settings = {**explorer.values(), name: value}
        bare = lambda settings=settings: explorer._run(settings)  # noqa: E731  (the explorer's own run)
        move = lambda value=value: setattr(control, "value", value)  # noqa: E731
        if k % 2:
            bares.append(_timed(bare))
            moves.append(_timed(move))
        else:
            moves.append(_timed(move))
            bares.append(_timed(bare))
    move_s, bare_s = statistics.median(moves), statistics.median(bares)
    return {"control": name, "moves": len(moves), "move_ms": round(move_s * 1000, 1),
            "bare_ms": round(bare_s * 1000, 1), "ratio_x": round(move_s / bare_s, 2), "runs": explorer.runs}


def map_cells_s() -> float:
    """Seconds the dashboard's map takes to rerun its cells for a new function timeout (off the move's path)."""
    lock = _lock_dashboard()
    return round(_timed(lambda: setattr(lock.controls["function_timeout"], "value", 25)), 2)


def widget_times(quick: bool = False) -> WidgetTimes:
    rows = {label: move_and_bare(build, name, values[:3] if quick else values)
            for label, (build, name, values) in WIDGETS.items()}
    return {"widgets": rows, "map_cells_s": None if quick else map_cells_s()}


def widget_misses(r: WidgetTimes) -> list[str]:
    return [f"widgets: a move of {label} took {v['ratio_x']}x a bare run (target <= {WIDGET_TARGETS['move_x']:g}x)"
            for label, v in r["widgets"].items() if v["ratio_x"] > WIDGET_TARGETS["move_x"]]


def widget_table(r: WidgetTimes) -> list[str]:
    table = tabulate([[label, v["move_ms"], v["bare_ms"], f"{v['ratio_x']:.2f}x"] for label, v in r["widgets"].items()],
                     ["widget (control)", "move", "bare", "ratio"], tablefmt="simple", floatfmt=".1f",
                     colalign=("left", "right", "right", "right"))
    lines = ["Widgets: a slider move (rerun, timeline, map) against a bare run of the same settings (medians, ms)",
             *textwrap.indent(table, "  ").splitlines()]
    if r.get("map_cells_s") is not None:
        lines.append(f"  lock dashboard: a new function timeout reruns the map's 20 cells in {r['map_cells_s']} s "
                     f"(in the browser, one cell at a time after the move is shown)")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sandbox.bench.widgets", description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="three moves per widget")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    r = widget_times(args.quick)
    print(json.dumps(r, indent=2) if args.json else "\n".join(widget_table(r) + widget_misses(r)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
