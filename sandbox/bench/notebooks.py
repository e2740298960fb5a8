"""How long each lesson takes to run: ``make bench``'s notebook section (``python -m sandbox.bench.notebooks``).

Each notebook runs as a learner's "Restart Kernel and Run All Cells" runs it: a fresh ``python3``
kernel, working directory ``notebooks/``, every cell top to bottom (nbclient, as the notebook tests
run them). Its time runs from asking for a kernel to the end of the last cell: it counts the kernel's
start, because a learner waits for that too (also reported on its own, with the slowest cell), and
not its shutdown. The course time is the sum: the lessons one after another, each on its own kernel.
Targets (issue 11): each notebook under 15 s, the course under 2 min.

Wall times depend on the machine and on what else runs on it; read them next to the load average,
and next to the kernel's CPU seconds, which other work barely changes.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .. import paths
from ..errors import BadInput

#: Kernels a benchmark starts keep their own log to errors: a local kernel on 127.0.0.1 warns at every
#: start that TCP is unencrypted, which buried the figures under warnings.
QUIET_KERNEL = ["--IPKernelApp.log_level=ERROR"]

ROOT = paths.ROOT
NOTEBOOKS = ROOT / "notebooks"
TARGETS = {"notebook_s": 15.0, "course_s": 120.0}
#: What ``--quick`` (``make bench`` smoke runs, the bench test) times: the first lesson only.
QUICK = ("00",)


def course(folder: Path = NOTEBOOKS, only: Iterable[str] | None = None) -> list[Path]:
    """The lessons in course order (``NN_slug.ipynb``), or those whose number or stem is in ``only``."""
    paths = sorted(p for p in folder.glob("[0-9][0-9]_*.ipynb"))
    if only is None:
        return paths
    wanted = set(only)
    return [p for p in paths if p.name[:2] in wanted or p.stem in wanted]


def time_notebook(path: Path, timeout: float = 600) -> dict[str, Any]:
    """Run one notebook on a fresh kernel: wall seconds in all, kernel start, slowest cell, and the first error."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.read(path, as_version=4)
    cell_started: dict[int, float] = {}
    cell_s: dict[int, float] = {}
    cpu = {"s": None}
    done = {"at": None}

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
    # Until the last cell finished: the kernel's shutdown afterwards is nobody's wait.
    wall = (done["at"] or time.perf_counter()) - began
    first = min(cell_started.values(), default=began + wall)
    slowest = max(cell_s, key=cell_s.get, default=None)
    return {"wall_s": round(wall, 2), "kernel_start_s": round(first - began, 2),
            "kernel_cpu_s": None if cpu["s"] is None else round(cpu["s"], 2),
            "code_cells": sum(c.cell_type == "code" for c in nb.cells),
            "slowest_cell": None if slowest is None else {"index": slowest, "wall_s": round(cell_s[slowest], 2)},
            "error": error}


def kernel_cpu_s(client) -> float | None:
    """CPU seconds the kernel process and the programs it ran have used (None where it cannot be read).

    The sandbox runs every container in the kernel's own process, so this is the lesson's whole
    computing cost, whatever else the machine runs: a floor under its wall time on any core as fast.
    """
    import psutil

    try:
        times = psutil.Process(client.km.provisioner.pid).cpu_times()
    except (AttributeError, psutil.Error):
        return None
    return times.user + times.system + times.children_user + times.children_system  # the CLI a lesson runs, too


def notebook_times(quick: bool = False, folder: Path = NOTEBOOKS,
                   only: Iterable[str] | None = None) -> dict[str, Any]:
    """Every lesson timed (the first only when ``quick``), and the course: their sum."""
    paths = course(folder, QUICK if quick and only is None else only)
    if not paths:
        raise BadInput(f"no lesson in {folder} matches {', '.join(only or QUICK)}")
    load_before = round(os.getloadavg()[0], 1)
    rows = {p.name: time_notebook(p) for p in paths}
    cpu = [r["kernel_cpu_s"] for r in rows.values()]
    return {"notebooks": rows, "course_s": round(sum(r["wall_s"] for r in rows.values()), 1),
            "course_kernel_cpu_s": None if None in cpu else round(sum(cpu), 1),
            "complete": not quick and only is None, "targets": TARGETS, "cores": os.cpu_count(),
            "load_before": load_before, "load_after": round(os.getloadavg()[0], 1)}


def notebook_misses(r: dict[str, Any]) -> list[str]:
    out = [f"notebook: {name} failed: {row['error']}" for name, row in r["notebooks"].items() if row["error"]]
    out += [f"notebook: {name} took {row['wall_s']} s (target < {TARGETS['notebook_s']:g} s)"
            for name, row in r["notebooks"].items() if row["wall_s"] >= TARGETS["notebook_s"]]
    if r["complete"] and r["course_s"] >= TARGETS["course_s"]:
        out.append(f"course: {r['course_s']} s (target < {TARGETS['course_s']:g} s)")
    return out


def notebook_table(r: dict[str, Any]) -> list[str]:
    lines = ["Notebooks (fresh kernel, top to bottom; wall s includes the kernel's start)",
             f"  {'notebook':<36}{'wall s':>8}{'kernel s':>10}{'CPU s':>7}{'cells':>7}  slowest cell"]
    for name, row in r["notebooks"].items():
        slow = row["slowest_cell"]
        note = f"#{slow['index']} {slow['wall_s']:.1f} s" if slow else "-"
        if row["error"]:
            note += f"  FAILED: {row['error']}"
        lines.append(f"  {name:<36}{row['wall_s']:>8.1f}{row['kernel_start_s']:>10.1f}{_s(row['kernel_cpu_s']):>7}"
                     f"{row['code_cells']:>7}  {note}")
    scope = "the whole course" if r["complete"] else f"{len(r['notebooks'])} of the lessons"
    lines.append(f"  {'total':<36}{r['course_s']:>8.1f}{'':>10}{_s(r['course_kernel_cpu_s']):>7}  {scope} "
                 f"(targets: each < {TARGETS['notebook_s']:g} s, course < {TARGETS['course_s']:g} s)")
    lines.append(f"  load average before and after: {r['load_before']} -> {r['load_after']} on {r['cores']} cores "
                 "(other work slows the wall times; CPU s, the kernel's own CPU time, "
                 "hardly changes with it)")
    return lines


def _s(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.1f}"


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
