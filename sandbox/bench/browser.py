"""``make bench``'s browser section: a slider move as a person sees it, against a bare run of the same settings.

Lesson 10's dashboard in real JupyterLab and Debian's chromium, driven as the browser test drives it
(``tests/test_lab_ui.py``, which this runs with ``RWH_BROWSER_TIMING`` set): each single key press on the lock
slider is timed in the page, from the press until the timeline and the verdict map both show new pictures.
Beside those moves, this process runs the same settings bare (``run_scenario``, as the lesson's explorer calls
it), and the figure is the ratio of the medians (target <= 5x, issue 20). It needs the repository's tests and
chromium; without them the section says why it did not run.

    python -m sandbox.bench.browser [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from tabulate import tabulate

from .. import paths
from .shapes import BrowserTimes
from .widgets import ARTICLE, LOCK, duplicate_after_lock

CHROMIUM = Path("/usr/bin/chromium")
UI_TEST = paths.ROOT / "tests" / "test_lab_ui.py"
TIMING_ENV = "RWH_BROWSER_TIMING"  # tests/ui_support.py's BROWSER_TIMING_ENV
BROWSER_TARGETS = {"move_x": 5.0}
#: The dashboard's other settings, as the lesson first draws them.
LESSON_SETTINGS = {"slow_email_seconds": 30, "function_timeout": 60}
BARE_REPEATS = 3  # bare runs per move's settings


def _moves_in_browser() -> BrowserTimes:
    """The browser test's timed moves, or why there are none."""
    if not UI_TEST.exists():
        return {"not_run": f"{UI_TEST.relative_to(paths.ROOT)} is not here (a checkout of the repository has it)"}
    if not (CHROMIUM.exists() and os.access(CHROMIUM, os.X_OK)):
        return {"not_run": f"{CHROMIUM} is missing (make chromium installs it)"}
    with tempfile.TemporaryDirectory(prefix="rwh-browser-") as tmp:
        out = Path(tmp) / "moves.json"
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                               f"{UI_TEST}::test_lesson_10_lock_slider_shows_verdict_timeline_and_map_of_one_setting_at_every_moment"],
                              cwd=paths.ROOT, env={**os.environ, TIMING_ENV: str(out)}, capture_output=True, text=True,
                              timeout=900)
        if proc.returncode != 0 or not out.exists():
            said = (proc.stdout + proc.stderr).strip().splitlines()
            why = [line for line in said if line.startswith(("E ", "Failed:", "after "))] or said[-3:]
            return {"not_run": "the browser test failed: " + " | ".join(why[:4])}
        return json.loads(out.read_text())


def _bare_ms(lock_seconds: int) -> float:
    from ..scenarios import run_scenario

    settings = duplicate_after_lock({**LESSON_SETTINGS, "lock_seconds": lock_seconds})
    started = time.perf_counter()
    run_scenario(LOCK, ARTICLE, settings=settings)
    return (time.perf_counter() - started) * 1000


def browser_times() -> BrowserTimes:
    seen = _moves_in_browser()
    if "moves" not in seen:
        return seen
    moves = seen["moves"]
    _bare_ms(moves[0]["lock_seconds"])  # this process's first run starts its environments' template
    bare = [_bare_ms(m["lock_seconds"]) for m in moves for _ in range(BARE_REPEATS)]
    move_ms, bare_ms = statistics.median(m["ms"] for m in moves), statistics.median(bare)
    return {"moves": moves, "move_ms": round(move_ms), "bare_ms": round(bare_ms, 1),
            "ratio_x": round(move_ms / bare_ms, 2)}


def browser_misses(r: BrowserTimes) -> list[str]:
    if "ratio_x" not in r or r["ratio_x"] <= BROWSER_TARGETS["move_x"]:
        return []
    return [f"browser: a lock slider move showed both pictures {r['ratio_x']}x a bare run after the key press "
            f"(target <= {BROWSER_TARGETS['move_x']:g}x)"]


def browser_table(r: BrowserTimes) -> list[str]:
    head = "Browser: lesson 10's lock slider in JupyterLab + chromium, key press to both pictures new (ms)"
    if "ratio_x" not in r:
        return [head, f"  not run: {r['not_run']}"]
    table = tabulate([[m["key"], m["lock_seconds"], m["timeline_ms"], m["map_ms"]] for m in r["moves"]],
                     ["key", "lock s", "timeline", "map"], tablefmt="simple")
    return [head, *textwrap.indent(table, "  ").splitlines(),
            f"  median {r['move_ms']} ms against a bare run of {r['bare_ms']} ms: {r['ratio_x']:.2f}x"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sandbox.bench.browser", description=__doc__.split("\n")[0])
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    r = browser_times()
    print(json.dumps(r, indent=2) if args.json else "\n".join(browser_table(r) + browser_misses(r)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
