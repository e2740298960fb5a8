"""Grading a folder of submissions: find them (``sandbox.grading.discovery``), grade each in its own
process, in parallel, and write ``grades.csv``, one JSON report per student and Gradescope's
``results.json``.

Every student gets a row for every exercise graded (an exercise they did not hand in is marked
"not submitted", not 0: it earned nothing, but it is no zero a test gave), and every file in their folder
is either graded or named, with the reason, in the row's ``ignored_files``. Every cell of ``grades.csv``
is neutralised against formula injection (``sandbox.grading.gradebook.cell``). One fresh seed range
serves the whole batch, so every student meets
the same hidden runs, and none of them are the public tests' seeds.
"""
from __future__ import annotations

import csv
import json
import os
import re
import shutil
import stat
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ..errors import BadInput
from .catalog import EXERCISES_DIR, KIT, Exercise
from .discovery import SUFFIXES, Submission, discover, exercise_of, read_student  # noqa: F401 (the API)
from .gradebook import ROSTER_IN_GRADES, Person, cells, late_text
from .grader import ExerciseGrade, Limits, answer_source, fresh_seed, grade, not_graded
from .shapes import GradescopeResults, GradescopeTest, StudentGradeJson

#: The mark for an exercise a student handed in nothing for: its own mark, not 0, in grades.csv (the LMS
#: files leave the cell empty, which Canvas and Moodle read as no grade: see sandbox.grading.gradebook).
NOT_SUBMITTED = "not submitted"


@dataclass
class StudentGrade:
    student: str
    grades: list[ExerciseGrade]
    ignored: list[str] = field(default_factory=list)  # "file: why it was not graded"
    notes: dict[str, str] = field(default_factory=dict)  # exercise id -> how a misnamed file was recognised
    submitted_at: datetime | None = None
    time_source: str | None = None
    late_seconds: float | None = None  # past the deadline; None without one
    person: Person | None = None  # the roster's line
    remarks: list[str] = field(default_factory=list)  # about the submission as a whole (its time unreadable)

    @property
    def score(self) -> float:  # an int unless an item gave partial credit
        return sum(g.score for g in self.grades)

    @property
    def submitted(self) -> bool:
        """Handed in a file for at least one exercise graded."""
        return any(g.source is not None for g in self.grades)

    @property
    def max_score(self) -> int:
        return sum(g.max_score for g in self.grades)

    @property
    def seconds(self) -> float:
        return sum(g.seconds for g in self.grades)

    def feedback(self, hidden: bool = False) -> str:
        """What the student reads (hidden tests only counted), or with ``hidden``, the instructor's full text."""
        lines = [f"{self.student}: {self.score}/{self.max_score}" if self.submitted
                 else f"{self.student}: {NOT_SUBMITTED} (0/{self.max_score})"]
        lines += [f"Exercise {ex_id}: {note}" for ex_id, note in sorted(self.notes.items())]
        lines += self.remarks
        if self.late_seconds:
            lines.append(f"Submitted {late_text(self.late_seconds)} after the deadline.")
        if self.ignored:
            lines.append("Not graded:")
            lines += [f"  - {entry}" for entry in self.ignored]
        for g in self.grades:
            lines += ["", g.feedback(hidden=hidden)]
        return "\n".join(lines)

    def to_dict(self) -> StudentGradeJson:
        return {"student": self.student, "score": self.score, "max_score": self.max_score, "ignored": self.ignored,
                "notes": self.notes, "remarks": self.remarks,
                "submitted_at": self.submitted_at.isoformat() if self.submitted_at else None,
                "time_source": self.time_source, "late_seconds": self.late_seconds,
                "exercises": [g.to_dict() for g in self.grades]}


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
        if path is None and ex.id in sub.refused:  # a link or the like, named after the exercise: 0, and why
            shown, why = sub.refused[ex.id]
            return (sub.student, ex.id), not_graded(ex, f"could not read the submission: {shown}: {why}", shown)
        if path is None:
            return (sub.student, ex.id), not_graded(ex, NOT_SUBMITTED)
        try:
            return (sub.student, ex.id), grade(ex, path, seed=base, limits=limits, kit=kit, data=sub.sources.get(ex.id))
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
    return [StudentGrade(s.student, [grades[(s.student, ex.id)] for ex in exercises], s.ignored,
                         {i: n for i, n in s.notes.items() if i in {ex.id for ex in exercises}},
                         s.submitted_at, s.time_source, remarks=list(s.remarks)) for s in subs]


def graded_count(students: list[StudentGrade]) -> int:
    """Submissions the grader ran: (student, exercise) pairs with a file, not the "not submitted" ones."""
    return sum(1 for s in students for g in s.grades if g.source is not None)


# -- writing -----------------------------------------------------------------------------------------
def safe_name(student: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.@-]+", "_", student).strip(".") or "student"


def report_folders(students: list[StudentGrade]) -> list[str]:
    """Each student's results folder: ``safe_name``, made unique, so that no student whose name looks like a
    classmate's ("bob." and "bob", "a b" and "a_b") can write over the classmate's feedback."""
    taken: set[str] = set()
    names = []
    for s in students:
        base = safe_name(s.student)
        name, n = base, 1
        while name.lower() in taken:  # lower(): a file system that ignores case would merge them too
            n += 1
            name = f"{base}-{n}"
        taken.add(name.lower())
        names.append(name)
    return names


def gradescope_results(student: StudentGrade) -> GradescopeResults:
    """Gradescope's results.json: one test per graded item, hidden items shown once grades are published, and
    ``execution_time``, the seconds grading took (https://gradescope-autograders.readthedocs.io/en/latest/specs/,
    "Output format")."""
    tests: list[GradescopeTest] = []
    for g in student.grades:
        for item in g.items:
            output = "\n".join(_item_output(g, item))
            tests.append({"name": f"{g.exercise.name} · {item.item}", "score": item.score, "max_score": item.points,
                          "status": "passed" if item.passed else "failed", "output": output,
                          "visibility": "after_published" if item.hidden else "visible"})
    return {"score": student.score, "execution_time": round(student.seconds), "output": student.feedback(),
            "visibility": "visible", "stdout_visibility": "hidden", "tests": tests}


def _item_output(g: ExerciseGrade, item: Any) -> list[str]:
    from .render import failure_text

    lines = [item.said]
    if g.tampering:
        lines += ["TAMPERING: " + g.tampering[0]]
    return lines + failure_text(item)


def write_results(out: Path, students: list[StudentGrade], exercises: list[Exercise], seed: int | None,
                  roster: bool = False) -> None:
    """``grades.csv`` and each student's reports; with ``roster``, the roster's id and email columns too."""
    out.mkdir(parents=True, exist_ok=True)
    with (out / "grades.csv").open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        ids = list(ROSTER_IN_GRADES) if roster else []
        w.writerow(cells(["student", *ids, "score", "max_score", *[ex.name for ex in exercises], "submitted_at",
                          "late_by", "notes", "ignored_files"]))
        for s in students:
            person = [s.person.id, s.person.email] if s.person else ["", ""]
            w.writerow(cells([s.student, *person[:len(ids)], s.score if s.submitted else NOT_SUBMITTED, s.max_score,
                              *[g.score if g.source is not None else NOT_SUBMITTED for g in s.grades],
                              s.submitted_at.isoformat(timespec="seconds") if s.submitted_at else "",
                              late_text(s.late_seconds), "; ".join(_notes(s)), "; ".join(s.ignored)]))
    for s, name in zip(students, report_folders(students)):
        folder = out / name
        folder.mkdir(exist_ok=True)
        report = s.to_dict()
        for g, data in zip(s.grades, report["exercises"]):
            data["replays"] = g.replays(f"{_replay_file(folder, g)}:{g.exercise.function}") if g.submitted else []
        (folder / "report.json").write_text(json.dumps({**report, "seed": seed}, indent=1, default=str) + "\n",
                                            encoding="utf-8")
        (folder / "results.json").write_text(json.dumps(gradescope_results(s), indent=1, default=str) + "\n",
                                             encoding="utf-8")
        (folder / "feedback.txt").write_text(s.feedback() + "\n", encoding="utf-8")
        from .report_html import write_feedback_html
        write_feedback_html(folder, s)


def _notes(s: StudentGrade) -> list[str]:
    notes = [f"{ex_id}: {note}" for ex_id, note in sorted(s.notes.items())]
    notes += [f"{g.exercise.id}: {'TAMPERING' if g.tampering else g.reason}" for g in s.grades
              if g.tampering or (g.reason and g.reason != NOT_SUBMITTED)]
    notes += s.remarks
    if s.submitted_at and s.time_source and s.time_source != "file time":
        notes.append(f"submitted_at from {s.time_source}")
    return notes


def _replay_file(folder: Path, g: ExerciseGrade) -> str:
    """The file an instructor replays a failure against: the submitted .py itself, or, when it cannot run
    where it is (a notebook; no run_once_kit.py beside it), the code the grader ran, written to ``folder``."""
    path = g.submitted
    assert path is not None  # replays are written for submitted files only
    if path.suffix != ".py" or (g.exercise.kit and not _regular(path.parent / KIT)):
        if not g.replays("-"):
            return _shown(path)
        copy = folder / f"{g.exercise.name}.py"
        copy.write_text(g.code if g.code is not None else answer_source(path, g.exercise), encoding="utf-8")
        if g.exercise.kit:
            shutil.copyfile(EXERCISES_DIR / KIT, folder / KIT)
        path = copy
    return _shown(path)


def _regular(path: Path) -> bool:
    """A file of the student's own beside the answer (a link is not one)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _shown(path: Path) -> str:
    """A path as the instructor types it: relative to where the grader ran, when it is below it."""
    path = path.resolve()
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)


def default_jobs() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
