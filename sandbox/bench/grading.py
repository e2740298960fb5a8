"""``make bench``'s grading section: submissions graded per minute, and how long ``check()`` takes.

The folder graded is a mix of every exercise's solution and generated stub, and wrong answers from
the mutation catalogue (tests/mutants/), each in its own child process, on every core, as
``python -m sandbox grade`` runs them. Targets: at least 20 submissions a minute on 2 cores, at least 15
when the class also hands in three endless loops (each costs one watchdog per graded item, the first
item a whole one and the later ones ``runner.AFTER_BLOCK``), and a notebook ``check()`` under 10 s for
every exercise.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import textwrap
import time
from pathlib import Path

from tabulate import tabulate

from .. import paths
from .shapes import GradingBench, Throughput

GRADING_TARGETS = {"submissions_per_min": 20.0, "with_loops_per_min": 15.0, "check_s": 10.0}
ROOT = paths.ROOT
MUTANTS = ROOT / "tests" / "mutants"
LOOP = MUTANTS / "cheats" / "busy_loop.py"
#: The exercises the three endless loops are handed in for (a quick run grades 02 only: all three there).
LOOP_EXERCISES = ("02", "03", "07")
QUICK_EXERCISES = ("02",)  # a smoke run: one exercise's solution, stub and mutant


def _folder(into: Path, exercise_ids: list[str], catalogue: dict) -> int:
    """A submissions folder: per exercise a solution and a stub, and the catalogue's mutants; returns its size."""
    count = 0
    for ex_id in exercise_ids:
        ex = catalogue[ex_id]
        shutil.copyfile(ROOT / "solutions" / f"{ex.name}.py", into / f"good_{ex.name}.py")
        shutil.copyfile(ROOT / "exercises" / f"{ex.name}.py", into / f"stub_{ex.name}.py")
        count += 2
        for mutant in sorted(MUTANTS.glob(f"{ex_id}_*.py"))[:1] if MUTANTS.is_dir() else []:
            shutil.copyfile(mutant, into / f"wrong-{mutant.stem[3:].replace('_', '-')}_{ex.name}.py")
            count += 1
    return count


def _loops(into: Path, exercise_ids: list[str], catalogue: dict) -> int:
    """Three students' endless loops (``while True``, never reaching the sandbox); returns how many."""
    chosen = [e for e in LOOP_EXERCISES if e in exercise_ids] or exercise_ids[:1]
    for n in range(3):
        ex = catalogue[chosen[n % len(chosen)]]
        shutil.copyfile(LOOP, into / f"loop{n + 1}_{ex.name}.py")
    return 3


def grading_throughput(quick: bool, endless_loops: bool = False) -> Throughput:
    from ..grading import batch
    from ..grading.catalog import grading_catalogue

    catalogue = grading_catalogue()
    ids = list(QUICK_EXERCISES) if quick else list(catalogue)
    with tempfile.TemporaryDirectory(prefix="bench-grading-") as tmp:
        folder = Path(tmp)
        size = _folder(folder, ids, catalogue) + (_loops(folder, ids, catalogue) if endless_loops else 0)
        subs = batch.discover(folder, catalogue, [])
        jobs = batch.default_jobs()
        started = time.perf_counter()
        graded = batch.grade_all(subs, [catalogue[i] for i in ids], jobs=jobs, seed=123_456_789, progress=False)
        wall = time.perf_counter() - started
    # every student row has one submitted exercise; the others are "not submitted" and cost nothing
    submitted = sum(1 for s in graded for g in s.grades if g.reason != "not submitted")
    return {"submissions": submitted, "files": size, "jobs": jobs, "wall_s": round(wall, 1),
            "submissions_per_min": round(submitted / wall * 60, 1),
            "solutions_full_marks": all(g.score == g.max_score for s in graded if s.student == "good"
                                        for g in s.grades)}


def check_times(quick: bool) -> dict[str, dict[str, float]]:
    """Seconds ``check()`` takes on each exercise's solution (it passes) and its stub (it fails)."""
    from ..grading.catalog import grading_catalogue
    from ..grading.exercise_check import check

    out: dict[str, dict[str, float]] = {}
    for ex in grading_catalogue().values():
        if quick and ex.id not in QUICK_EXERCISES:
            continue
        out[ex.name] = {}
        for folder in ("solutions", "exercises"):
            started = time.perf_counter()
            check(ex.id, str(ROOT / folder / f"{ex.name}.py"), campaign_seed=4242)
            out[ex.name][folder] = round(time.perf_counter() - started, 2)
    return out


def grading_bench(quick: bool) -> GradingBench:
    return {"throughput": grading_throughput(quick), "with_loops": grading_throughput(quick, endless_loops=True),
            "check_s": check_times(quick), "cores": os.cpu_count()}


def grading_misses(r: GradingBench) -> list[str]:
    out = []
    t = r["throughput"]
    if t["submissions_per_min"] < GRADING_TARGETS["submissions_per_min"]:
        out.append(f"grading: {t['submissions_per_min']} submissions/min "
                   f"(target >= {GRADING_TARGETS['submissions_per_min']:g})")
    loops = r.get("with_loops")
    if loops and loops["submissions_per_min"] < GRADING_TARGETS["with_loops_per_min"]:
        out.append(f"grading with three endless loops: {loops['submissions_per_min']} submissions/min "
                   f"(target >= {GRADING_TARGETS['with_loops_per_min']:g})")
    out += [f"check(): {name} took {s} s on its {folder} (target < 10 s)" for name, v in r["check_s"].items()
            for folder, s in v.items() if s >= GRADING_TARGETS["check_s"]]
    return out


def grading_table(r: GradingBench) -> list[str]:
    t = r["throughput"]
    lines = [f"Grading (python -m sandbox grade): {t['submissions']} submissions "
             "(solutions, stubs, mutants) in "
             f"{t['wall_s']} s with {t['jobs']} at once: {t['submissions_per_min']} submissions/min"]
    loops = r.get("with_loops")
    if loops:
        lines.append(f"  with three endless loops handed in too: {loops['submissions']} submissions in "
                     f"{loops['wall_s']} s: {loops['submissions_per_min']} submissions/min")
    lines += ["check() (public tests and a campaign), seconds:"]
    table = tabulate([[name, v["solutions"], v["exercises"]] for name, v in r["check_s"].items()],
                     ["exercise", "solution", "stub"], tablefmt="simple", floatfmt=".2f")
    return lines + textwrap.indent(table, "  ").splitlines()
