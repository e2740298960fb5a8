"""``make bench``'s plot section: drawing a timeline, ``run.plot()`` and its PNG (what Jupyter shows), per figure.

A lesson draws up to 16 timelines in a cell, so a figure's cost decides whether the lesson keeps under its 15 s.
Each figure is a scenario's seed-0 run with the naive and the idempotent handler (run once, outside the timing),
drawn ``repeat`` times after one warm-up draw; its figure is the median, in CPU seconds (this process only, so
another job on the machine does not count) and wall seconds. No target: the figure is compared between runs.
"""
from __future__ import annotations

import statistics
import textwrap
import time

from tabulate import tabulate

from ..scenarios import run_scenario
from .shapes import PlotTime

#: one of each kind of picture: a sync call, SQS batches, a stream, async retries, throttling, late retries, a race,
#: and a producer's resend
PLOT_SCENARIOS = ("no-fault", "sqs-batch-failure", "stream-batch-retry", "async-retry", "sqs-throttled-batch",
                  "async-late-retry", "concurrent-claims", "kafka-producer-resend")
QUICK_PLOT_SCENARIOS = ("no-fault", "sqs-batch-failure")


def _draw_once(run) -> tuple[float, float, float]:
    """(plot CPU s, PNG CPU s, wall s) of one drawing of ``run``'s timeline."""
    wall, cpu = time.perf_counter(), time.process_time()
    fig = run.plot()
    drawn = time.process_time()
    fig._repr_png_()
    return drawn - cpu, time.process_time() - drawn, time.perf_counter() - wall


def plot_times(handlers: dict[str, str], repeat: int, quick: bool = False) -> dict[str, PlotTime]:
    """Median plot and PNG time (ms) of each scenario's timeline, by "scenario/handler"."""
    out: dict[str, PlotTime] = {}
    for name in QUICK_PLOT_SCENARIOS if quick else PLOT_SCENARIOS:
        for short, handler in handlers.items():
            run = run_scenario(name, handler, seed=0)
            _draw_once(run)  # the first drawing of a process also imports and fills matplotlib's caches
            times = [_draw_once(run) for _ in range(repeat)]
            plot, png, wall = (statistics.median(t[i] for t in times) for i in range(3))
            out[f"{name}/{short}"] = {"plot_ms": round(1000 * plot, 1), "png_ms": round(1000 * png, 1),
                                      "cpu_ms": round(1000 * (plot + png), 1), "wall_ms": round(1000 * wall, 1)}
    return out


def plot_table(rows: dict[str, PlotTime]) -> list[str]:
    body = [[name, f"{v['plot_ms']:.0f}", f"{v['png_ms']:.0f}", f"{v['cpu_ms']:.0f}", f"{v['wall_ms']:.0f}"]
            for name, v in rows.items()]
    cpu = statistics.median(v["cpu_ms"] for v in rows.values())
    wall = statistics.median(v["wall_ms"] for v in rows.values())
    return ["Timeline drawing: run.plot() and its PNG per figure (medians, ms; CPU of this process, and wall)",
            *textwrap.indent(tabulate(body, ["scenario/handler", "plot cpu", "png cpu", "cpu", "wall"],
                                      colalign=("left", "right", "right", "right", "right"), disable_numparse=True),
                             "  ").splitlines(),
            f"  median over the figures: {cpu:.0f} ms CPU, {wall:.0f} ms wall"]
