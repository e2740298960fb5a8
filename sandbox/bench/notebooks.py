"""How long each lesson takes to run: ``make bench``'s notebook section (``python -m sandbox.bench.notebooks``).

Each notebook runs as a learner's "Restart Kernel and Run All Cells" runs it: a fresh ``python3``
kernel, working directory ``notebooks/``, every cell top to bottom (nbclient, as the notebook tests
run them). Its time runs from asking for a kernel until that kernel has shut down: it counts the
kernel's start and its shutdown, because a learner waits for both (every "Restart Kernel" shuts one
down first); each is also reported on its own, with the slowest cell. The course time is the sum: the
lessons one after another, each on its own kernel. Targets (issue 31): each notebook under 15 s, the
course under 2 min, a kernel's shutdown at most 0.5 s.

Wall times depend on the machine and on what else runs on it; read them next to the load average,
and next to the CPU seconds of the kernel and its execution environments, which other work changes
far less.
"""
from __future__ import annotations

import argparse
import os
import sys
import textwrap
import time
from collections.abc import Iterable
from pathlib import Path

from .. import paths
from ..errors import BadInput
from .shapes import NotebookTime, NotebookTimes

#: Kernels a benchmark starts keep their own log to errors: a local kernel on 127.0.0.1 warns at every
#: start that TCP is unencrypted, which buried the figures under warnings.
QUIET_KERNEL = ["--IPKernelApp.log_level=ERROR"]

ROOT = paths.ROOT
NOTEBOOKS = ROOT / "notebooks"
TARGETS = {"notebook_s": 15.0, "course_s": 120.0, "shutdown_s": 0.5}
#: What ``--quick`` (``make bench`` smoke runs, the bench test) times: the first lesson only.
QUICK = ("00",)


def course(folder: Path = NOTEBOOKS, only: Iterable[str] | None = None) -> list[Path]:
    """The lessons in course order (``NN_slug.ipynb``), or those whose number or stem is in ``only``."""
    paths = sorted(p for p in folder.glob("[0-9][0-9]_*.ipynb"))
    if only is None:
        return paths
    wanted = set(only)
    return [p for p in paths if p.name[:2] in wanted or p.stem in wanted]


def time_notebook(path: Path, timeout: float = 600) -> NotebookTime:
    """Run one notebook on a fresh kernel: wall seconds in all, kernel start and shutdown, slowest cell, first error."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.read(path, as_version=4)
    cell_started: dict[int, float] = {}
    cell_s: dict[int, float] = {}
    cpu: dict[str, float | None] = {"s": None}
    done: dict[str, float | None] = {"at": None}

    def started(cell, cell_index, **_):
        cell_started[cell_index] = time.perf_counter()

    def executed(cell, cell_index, **_):
        cell_s[cell_index] = time.perf_counter() - cell_started[cell_index]
        cpu["s"] = kernel_cpu_s(client)
        done["at"] = time.perf_counter()

    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", extra_arguments=QUIET_KERNEL,
                            resources={"metadata": {"path": str(path.parent)}},
                            on_cell_start=started, on_cell_executed=executed)
    error = None
    began = time.perf_counter()
    try:
        client.execute()
    except CellExecutionError as err:
        error = f"{err.ename}: {err.evalue}"  # the exception's name and message, without the coloured traceback
    # execute() returns once the kernel has shut down (nbclient asks it to, and waits), as a restart waits
    ended = time.perf_counter()
    wall = ended - began
    first = min(cell_started.values(), default=ended)
    slowest = max(cell_s, key=lambda index: cell_s[index], default=None)
    return {"wall_s": round(wall, 2), "kernel_start_s": round(first - began, 2),
            "kernel_shutdown_s": None if done["at"] is None else round(ended - done["at"], 2),
            "kernel_cpu_s": None if cpu["s"] is None else round(cpu["s"], 2),
            "code_cells": sum(c.cell_type == "code" for c in nb.cells),
            "slowest_cell": None if slowest is None else {"index": slowest, "wall_s": round(cell_s[slowest], 2)},
            "error": error}


def kernel_cpu_s(client) -> float | None:
    """CPU seconds the kernel process and every process under it have used (None where it cannot be read).

    Handlers run in execution environments, processes the warm template forks (the template is the
    kernel's child): their time counts too, whether they still run or have ended (their parent's
    ``children_*``). So this is the lesson's whole computing cost, whatever else the machine runs:
    a floor under its wall time on any core as fast.
    """
    import psutil

    try:
        kernel = psutil.Process(client.km.provisioner.pid)
        family = [kernel, *kernel.children(recursive=True)]
    except (AttributeError, psutil.Error):
        return None
    total = 0.0
    for process in family:
        try:
            times = process.cpu_times()
        except psutil.Error:  # it ended meanwhile: its parent counts it once it is reaped
            continue
        total += times.user + times.system + times.children_user + times.children_system
    return total


def notebook_times(quick: bool = False, folder: Path = NOTEBOOKS,
                   only: Iterable[str] | None = None) -> NotebookTimes:
    """Every lesson timed (the first only when ``quick``), and the course: their sum."""
    paths = course(folder, QUICK if quick and only is None else only)
    if not paths:
        raise BadInput(f"no lesson in {folder} matches {', '.join(only or QUICK)}")
    load_before = round(os.getloadavg()[0], 1)
    rows = {p.name: time_notebook(p) for p in paths}
    cpu = [r["kernel_cpu_s"] for r in rows.values()]
    known = [s for s in cpu if s is not None]  # the course's CPU time only when every lesson's could be read
    return {"notebooks": rows, "course_s": round(sum(r["wall_s"] for r in rows.values()), 1),
            "course_kernel_cpu_s": round(sum(known), 1) if len(known) == len(cpu) else None,
            "complete": not quick and only is None, "targets": TARGETS, "cores": os.cpu_count(),
            "load_before": load_before, "load_after": round(os.getloadavg()[0], 1)}


def notebook_misses(r: NotebookTimes) -> list[str]:
    out = [f"notebook: {name} failed: {row['error']}" for name, row in r["notebooks"].items() if row["error"]]
    out += [f"notebook: {name} took {row['wall_s']} s (target < {TARGETS['notebook_s']:g} s)"
            for name, row in r["notebooks"].items() if row["wall_s"] >= TARGETS["notebook_s"]]
    out += [f"notebook: {name}'s kernel took {row['kernel_shutdown_s']} s to shut down "
            f"(target <= {TARGETS['shutdown_s']:g} s)" for name, row in r["notebooks"].items()
            if (row["kernel_shutdown_s"] or 0) > TARGETS["shutdown_s"]]
    if r["complete"] and r["course_s"] >= TARGETS["course_s"]:
        out.append(f"course: {r['course_s']} s (target < {TARGETS['course_s']:g} s)")
    return out


def notebook_table(r: NotebookTimes) -> list[str]:
    from tabulate import tabulate  # not at the top: the grading child imports this module (through isolation)

    body = []
    for name, row in r["notebooks"].items():
        slow = row["slowest_cell"]
        note = f"#{slow['index']} {slow['wall_s']:.1f} s" if slow else "-"
        if row["error"]:
            note += f"  FAILED: {row['error']}"
        body.append([name, f"{row['wall_s']:.1f}", f"{row['kernel_start_s']:.1f}",
                     _s(row["kernel_shutdown_s"], 2), _s(row["kernel_cpu_s"]), row["code_cells"], note])
    scope = "the whole course" if r["complete"] else f"{len(r['notebooks'])} of the lessons"
    body.append(["total", f"{r['course_s']:.1f}", "", "", _s(r["course_kernel_cpu_s"]), "",
                 f"{scope} (targets: each < {TARGETS['notebook_s']:g} s, course < {TARGETS['course_s']:g} s)"])
    table = tabulate(body, ["notebook", "wall s", "start s", "shutdown s", "CPU s", "cells", "slowest cell"],
                     tablefmt="simple", colalign=("left", "right", "right", "right", "right", "right", "left"),
                     disable_numparse=True)
    lines = ["Notebooks (fresh kernel, top to bottom; wall s includes the kernel's start and shutdown)",
             *textwrap.indent(table, "  ").splitlines()]
    lines.append(f"  load average before and after: {r['load_before']} -> {r['load_after']} on {r['cores']} cores "
                 "(other work slows the wall times far more than CPU s, the CPU time of the kernel "
                 "and its execution environments)")
    return lines


def _s(seconds: float | None, digits: int = 1) -> str:
    return "-" if seconds is None else f"{seconds:.{digits}f}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sandbox.bench.notebooks", description=__doc__.split("\n")[0])
    p.add_argument("--only", action="append", metavar="NN", help="a lesson's number or stem; repeatable")
    args = p.parse_args(argv)
    try:
        r = notebook_times(only=args.only)
    except BadInput as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print("\n".join(notebook_table(r)))
    misses = notebook_misses(r)
    print("Targets missed: " + ("none" if not misses else ""))
    print("\n".join(f"  - {m}" for m in misses))
    return 1 if any(row["error"] for row in r["notebooks"].values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
