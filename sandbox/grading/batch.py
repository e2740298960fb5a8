"""Grading a folder of submissions: find them, grade each in its own process, in parallel, and write
``grades.csv``, one JSON report per student and Gradescope's ``results.json``.

A submissions folder holds, for each student, either

- a folder named after the student, with one file per exercise (``02_claim_the_key.py`` or the
  notebook ``02_claim_the_key.ipynb``; a notebook's metadata also names its exercise), or
- one file named after the student: ``alice_02_claim_the_key.py``, ``alice.ipynb`` (the notebook
  names its exercise), or ``alice.py`` with ``--exercise 02``.

Every student gets a row for every exercise graded (an exercise they did not hand in scores zero,
"not submitted"). One fresh seed range serves the whole batch, so every student meets the same
hidden runs, and none of them are the public tests' seeds.
"""
from __future__ import annotations

import csv
import json
import os
import re
import shutil
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import BadInput
from . import notebooks as nb
from .catalog import EXERCISES_DIR, KIT, Exercise
from .grader import ExerciseGrade, Limits, answer_source, fresh_seed, grade, not_graded

SUFFIXES = (".py", ".ipynb")
_SKIPPED_PARTS = (".ipynb_checkpoints", "__pycache__", "__MACOSX")


@dataclass
class Submission:
    student: str
    files: dict[str, Path] = field(default_factory=dict)  # exercise id -> file
    ignored: list[str] = field(default_factory=list)  # files that name no exercise, or a second one


@dataclass
class StudentGrade:
    student: str
    grades: list[ExerciseGrade]
    ignored: list[str] = field(default_factory=list)

    @property
    def score(self) -> int:
        return sum(g.score for g in self.grades)

    @property
    def max_score(self) -> int:
        return sum(g.max_score for g in self.grades)

    def feedback(self, hidden: bool = False) -> str:
        """What the student reads (hidden tests only counted), or with ``hidden``, the instructor's full text."""
        lines = [f"{self.student}: {self.score}/{self.max_score}"]
        if self.ignored:
            lines.append("Ignored (no exercise recognised, or a second file for one): " + ", ".join(self.ignored))
        for g in self.grades:
            lines += ["", g.feedback(hidden=hidden)]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"student": self.student, "score": self.score, "max_score": self.max_score, "ignored": self.ignored,
                "exercises": [g.to_dict() for g in self.grades]}


# -- finding submissions -----------------------------------------------------------------------------
def exercise_of(path: Path, catalogue: dict[str, Exercise], only: list[str]) -> str | None:
    """Which exercise a file answers: a notebook's metadata, an exercise name in the file name, or
    the one exercise being graded."""
    if path.suffix == ".ipynb":
        try:
            meta = nb.exercise_meta(json.loads(path.read_text(errors="replace")))
        except (ValueError, OSError):
            meta = None
        if meta and str(meta.get("id")) in catalogue:
            return str(meta["id"])
    stem = path.stem.lower()
    for ex in catalogue.values():
        if ex.name in stem:
            return ex.id
    match = re.match(r"^(?:ex(?:ercise)?[_-]?)?(\d{2})(?:[_.-]|$)", stem)
    if match and match.group(1) in catalogue:
        return match.group(1)
    return only[0] if len(only) == 1 else None


def _student_from_file(path: Path, ex: Exercise | None) -> str:
    stem = path.stem
    if ex is not None and ex.name in stem.lower():
        start = stem.lower().index(ex.name)
        stem = (stem[:start] + stem[start + len(ex.name):]).strip("_-. ") or stem
    return stem


def _answer_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in SUFFIXES and p.name != KIT
                  and not any(part in _SKIPPED_PARTS for part in p.parts))


def discover(folder: Path, catalogue: dict[str, Exercise], only: list[str]) -> list[Submission]:
    if not folder.exists():
        raise BadInput(f"no submissions folder {folder}")
    if not folder.is_dir():
        raise BadInput(f"{folder} is a file; give the folder that holds the submissions")
    by_student: dict[str, Submission] = {}
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith(".") or entry.name in _SKIPPED_PARTS:
            continue
        if entry.is_dir():
            sub = by_student.setdefault(entry.name, Submission(entry.name))
            for path in _answer_files(entry):
                _add(sub, path, exercise_of(path, catalogue, only), entry)
        elif entry.suffix in SUFFIXES:
            ex_id = exercise_of(entry, catalogue, only)
            student = _student_from_file(entry, catalogue.get(ex_id) if ex_id else None)
            _add(by_student.setdefault(student, Submission(student)), entry, ex_id, folder)
    subs = list(by_student.values())
    if not subs:
        raise BadInput(f"{folder} holds no submissions (a folder per student, or .py / .ipynb files)")
    return subs


def _add(sub: Submission, path: Path, ex_id: str | None, base: Path) -> None:
    shown = str(path.relative_to(base)) if path.is_relative_to(base) else path.name
    if ex_id is None or ex_id in sub.files:
        sub.ignored.append(shown)
    else:
        sub.files[ex_id] = path


# -- grading -----------------------------------------------------------------------------------------
def graded_exercises(subs: list[Submission], catalogue: dict[str, Exercise], only: list[str]) -> list[Exercise]:
    ids = only or sorted({i for s in subs for i in s.files})
    if not ids:
        raise BadInput("no file names an exercise: name files after it (02_claim_the_key.py), or pass --exercise")
    return [catalogue[i] for i in ids]


def grade_all(subs: list[Submission], exercises: list[Exercise], *, jobs: int, seed: int | None = None,
              limits: Limits = Limits(), kit: Path | None = None, progress: bool = True,
              on_done: Callable[[str, ExerciseGrade], None] | None = None) -> list[StudentGrade]:
    """Grade every (student, exercise) in parallel; a submission that breaks never stops the others."""
    from tqdm import tqdm

    base = fresh_seed() if seed is None else seed
    tasks = [(s, ex) for s in subs for ex in exercises]
    grades: dict[tuple[str, str], ExerciseGrade] = {}

    def one(task: tuple[Submission, Exercise]) -> tuple[tuple[str, str], ExerciseGrade]:
        sub, ex = task
        path = sub.files.get(ex.id)
        if path is None:
            return (sub.student, ex.id), not_graded(ex, "not submitted")
        try:
            return (sub.student, ex.id), grade(ex, path, seed=base, limits=limits, kit=kit)
        except Exception as exc:  # the grader's own failure on one submission must not stop the batch
            return (sub.student, ex.id), not_graded(ex, f"the grader failed on this submission: {exc!r}",
                                                    path.name)

    with ThreadPoolExecutor(max_workers=jobs) as pool, \
            tqdm(total=len(tasks), unit="submission", desc="grading", file=sys.stderr, disable=not progress) as bar:
        for key, result in pool.map(one, tasks):
            grades[key] = result
            bar.update()
            if on_done is not None:
                on_done(key[0], result)
    return [StudentGrade(s.student, [grades[(s.student, ex.id)] for ex in exercises], s.ignored) for s in subs]


# -- writing -----------------------------------------------------------------------------------------
def safe_name(student: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.@-]+", "_", student).strip(".") or "student"


def gradescope_results(student: StudentGrade) -> dict[str, Any]:
    """Gradescope's results.json: one test per graded item, hidden items shown once grades are published
    (https://gradescope-autograders.readthedocs.io/en/latest/specs/)."""
    tests = []
    for g in student.grades:
        for item in g.items:
            output = "\n".join(_item_output(g, item))
            tests.append({"name": f"{g.exercise.name} · {item.item}", "score": item.score, "max_score": item.points,
                          "status": "passed" if item.passed else "failed", "output": output,
                          "visibility": "after_published" if item.hidden else "visible"})
    return {"score": student.score, "output": student.feedback(), "visibility": "visible",
            "stdout_visibility": "hidden", "tests": tests}


def _item_output(g: ExerciseGrade, item: Any) -> list[str]:
    from .render import failure_text

    lines = [item.what]
    if g.tampering:
        lines += ["TAMPERING: " + g.tampering[0]]
    return lines + failure_text(item)


def write_results(out: Path, students: list[StudentGrade], exercises: list[Exercise], seed: int | None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with (out / "grades.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["student", "score", "max_score", *[ex.name for ex in exercises], "notes"])
        for s in students:
            notes = "; ".join(f"{g.exercise.id}: {'TAMPERING' if g.tampering else g.reason}" for g in s.grades
                              if g.tampering or (g.reason and g.reason != "not submitted"))
            w.writerow([s.student, s.score, s.max_score, *[g.score for g in s.grades], notes])
    for s in students:
        folder = out / safe_name(s.student)
        folder.mkdir(exist_ok=True)
        report = s.to_dict()
        for g, data in zip(s.grades, report["exercises"]):
            data["replays"] = g.replays(f"{_replay_file(folder, g)}:{g.exercise.function}") if g.submitted else []
        (folder / "report.json").write_text(json.dumps({**report, "seed": seed}, indent=1, default=str) + "\n")
        (folder / "results.json").write_text(json.dumps(gradescope_results(s), indent=1, default=str) + "\n")
        (folder / "feedback.txt").write_text(s.feedback() + "\n")


def _replay_file(folder: Path, g: ExerciseGrade) -> str:
    """The file an instructor replays a failure against: the submitted .py itself, or, when it cannot run
    where it is (a notebook; no run_once_kit.py beside it), the code the grader ran, written to ``folder``."""
    path = g.submitted
    if path.suffix != ".py" or (g.exercise.kit and not (path.parent / KIT).is_file()):
        if not g.replays("-"):
            return _shown(path)
        copy = folder / f"{g.exercise.name}.py"
        copy.write_text(answer_source(path, g.exercise))
        if g.exercise.kit:
            shutil.copyfile(EXERCISES_DIR / KIT, folder / KIT)
        path = copy
    return _shown(path)


def _shown(path: Path) -> str:
    """A path as the instructor types it: relative to where the grader ran, when it is below it."""
    path = path.resolve()
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)


def default_jobs() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
