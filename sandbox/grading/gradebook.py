"""What a class's grades need to reach a gradebook: the assignment, the roster, submission times, and
the import files Canvas and Moodle accept.

- An assignment file names the exercises graded (and, optionally, its name and deadline): TOML
  (``exercises = ["02", "03"]``, ``name = "Week 3"``, ``deadline = 2025-03-07T23:59:00+01:00``),
  the same keys as JSON, or plain text with one exercise a line (``#`` starts a comment).
- A roster (CSV: ``student, id, email``, and optionally ``name, section, canvas_id, login``) joins the
  ids a gradebook matches students by to the submissions' folder names.
- A ``submitted_at`` manifest (CSV: ``student, submitted_at``, ISO 8601) gives each submission's time
  when the files' own times are not it (a download from an LMS stamps every file with the download's).

Canvas: "How do I import grades in the Gradebook?"
(https://community.canvaslms.com/t5/Instructor-Guide/How-do-I-import-grades-in-the-Gradebook/ta-p/807):
the CSV's header is ``Student, ID, SIS User ID, SIS Login ID, Section`` and then one column per
assignment; a student is matched by ID, SIS User ID or SIS Login ID; a column whose name is not an
existing assignment creates one; the second row, ``Points Possible``, is the one Canvas's own export
writes. Ohio State's guide to the same import lists the same required columns
(https://teaching.resources.osu.edu/toolsets/carmencanvas/guides/calculating-final-grades/import-csv-file-carmen-grades).

Moodle: "Grade import" (https://docs.moodle.org/en/Grade_import, "CSV import"): any header; at
import you map the column that identifies the user ("Identify user by": ``ID number`` to
``useridnumber`` or ``Email address`` to ``useremail``) and each grade column to a grade item, or to
a new one.

No grade: an exercise a student handed in nothing for is left empty in both files, not 0. Moodle's CSV
import reads an empty cell (or ``-``) as "no grade" (moodle/moodle, grade/import/csv/classes/load_data.php,
``map_user_data_with_value``: ``if ($value === '' or $value == '-') { $value = null; // No grade. }``).
Canvas's own gradebook export, the file its import reads back, leaves an ungraded assignment's cell
empty and keeps "unsubmitted" apart from zero (its export notes: "Current score reflects the total while
ignoring unsubmitted assignments, and the final score counts unsubmitted assignments as zero"; copied in
https://ts.vcu.edu/askit/teaching-and-learning/canvas/faculty/grading-faculty/gradebook-action-menu-faculty/),
so an empty cell is Canvas's own form of "no grade". A student with nothing handed in still gets their
row (with empty grades), so the gradebook shows who is missing.

Students not on the roster are never written to these files (no id to match them by in a gradebook):
``not_on_roster.csv`` lists them instead, for the instructor to add to the roster or to rename.

Formula injection: a spreadsheet runs a cell that starts with ``=``, ``+``, ``-`` or ``@`` (and, in
OWASP's current list, tab, carriage return and line feed) as a formula, and file and folder names are
the students'. Every cell written here and in ``grades.csv`` that starts so gets a leading ``'``
(OWASP, "CSV Injection", https://owasp.org/www-community/attacks/CSV_Injection), which spreadsheets show
as text; numbers are left as they are (a score is never negative).

Late work: the grader reports each submission's time and how late it is against the deadline; the
penalty is the instructor's policy (Canvas and Moodle both apply late policies of their own).
"""
from __future__ import annotations

import csv
import json
import tomllib
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ..errors import BadInput

#: A roster's columns (the first three required), and what each holds.
ROSTER_COLUMNS = {"student": "the submission's folder or file name", "id": "the institution's student id",
                  "email": "the student's address", "name": "the name the gradebook shows",
                  "section": "Canvas's section", "canvas_id": "Canvas's own user id",
                  "login": "Canvas's SIS Login ID, when it is not the address"}
ROSTER_REQUIRED = tuple(ROSTER_COLUMNS)[:3]
#: The roster's columns grades.csv repeats.
ROSTER_IN_GRADES = ROSTER_REQUIRED[1:]
CANVAS_IDENTITY = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE_IDENTITY = ["Student", "ID number", "Email address"]


@dataclass
class Assignment:
    exercises: list[str]
    name: str | None = None
    deadline: datetime | None = None


@dataclass
class Person:
    student: str
    id: str = ""
    email: str = ""
    name: str = ""
    section: str = ""
    canvas_id: str = ""
    login: str = ""
    extra: dict[str, str] = field(default_factory=dict)


# -- reading -----------------------------------------------------------------------------------------
def parse_time(text: str, what: str) -> datetime:
    """An ISO 8601 time; one without a UTC offset is this machine's local time."""
    try:
        when = datetime.fromisoformat(str(text).strip().replace("Z", "+00:00"))
    except ValueError:
        raise BadInput(f"{what}: {text!r} is not an ISO 8601 time (such as 2025-03-07T23:59:00+01:00)") from None
    return when if when.tzinfo else when.astimezone()


def read_assignment(path: Path) -> Assignment:
    if not path.is_file():
        raise BadInput(f"--assignment {path}: no such file")
    text = path.read_text(errors="replace")
    try:
        if path.suffix == ".toml":
            data: Any = tomllib.loads(text)
        elif path.suffix == ".json":
            data = json.loads(text)
        else:
            data = {"exercises": [w for line in text.splitlines() for w in line.split("#")[0].split()]}
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise BadInput(f"--assignment {path}: {exc}") from None
    exercises = data.get("exercises") if isinstance(data, dict) else None
    if not isinstance(exercises, list) or not exercises:
        raise BadInput(f"--assignment {path}: it names no exercises (exercises = [\"02\", \"03\"])")
    deadline = data.get("deadline")
    if deadline is not None and not isinstance(deadline, datetime):
        deadline = parse_time(deadline, f"--assignment {path}: deadline")
    elif isinstance(deadline, datetime) and deadline.tzinfo is None:
        deadline = deadline.astimezone()
    name = data.get("name")
    return Assignment([str(e) for e in exercises], str(name) if name else None, deadline)


def _csv_rows(path: Path, option: str, required: tuple[str, ...]) -> list[dict[str, str]]:
    if not path.is_file():
        raise BadInput(f"{option} {path}: no such file")
    try:
        with path.open(newline="", encoding="utf-8-sig") as f:
            reader = csv.DictReader(f)
            header = [(h or "").strip().lower() for h in reader.fieldnames or []]
            missing = [c for c in required if c not in header]
            if missing:
                raise BadInput(f"{option} {path}: no {', '.join(missing)} column (its header: {', '.join(header)})")
            # a row longer than the header keeps its extra cells under the key None (as a list): dropped
            return [{k.strip().lower(): (v or "").strip() for k, v in row.items() if isinstance(k, str)
                     and not isinstance(v, list)} for row in reader]
    except UnicodeDecodeError as exc:
        raise BadInput(f"{option} {path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except csv.Error as exc:
        raise BadInput(f"{option} {path}: not a CSV file this grader reads ({exc})") from None


def read_roster(path: Path) -> dict[str, Person]:
    people: dict[str, Person] = {}
    known = tuple(ROSTER_COLUMNS)
    for number, row in enumerate(_csv_rows(path, "--roster", ROSTER_REQUIRED), start=2):
        if not row.get("student"):
            continue
        if row["student"] in people:
            raise BadInput(f"--roster {path}: line {number}: {row['student']!r} is on the roster twice")
        people[row["student"]] = Person(**{k: row.get(k, "") for k in known},
                                         extra={k: v for k, v in row.items() if k not in known})
    return people


def read_manifest(path: Path) -> dict[str, datetime]:
    times = {}
    for number, row in enumerate(_csv_rows(path, "--submitted-at", ("student", "submitted_at")), start=2):
        if row.get("student") and row.get("submitted_at"):
            times[row["student"]] = parse_time(row["submitted_at"], f"--submitted-at {path}: line {number}")
    return times


# -- late work ---------------------------------------------------------------------------------------
def late_seconds(submitted_at: datetime | None, deadline: datetime | None) -> float | None:
    """Seconds past the deadline (0 when on time); None when either is unknown."""
    if submitted_at is None or deadline is None:
        return None
    return max(0.0, (submitted_at - deadline).total_seconds())


def late_text(seconds: float | None) -> str:
    """``1d 02:03:04``; empty when on time or when there is no deadline."""
    if not seconds:
        return ""
    total = int(round(seconds))
    days, rest = divmod(total, 86400)
    clock = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}d {clock}" if days else clock


# -- writing -----------------------------------------------------------------------------------------
#: What a spreadsheet reads as the start of a formula (OWASP's list, line feed included since 2025).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n")


def cell(value: Any) -> Any:
    """A CSV cell a spreadsheet shows as text: a string that starts like a formula gets a leading ``'``."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def cells(values: list[Any]) -> list[Any]:
    return [cell(v) for v in values]


#: An LMS's cell for an exercise with nothing handed in: empty, which Canvas and Moodle read as no grade.
NO_GRADE = ""


def grade_columns(students: list[Any], exercises: list[Any], assignment: str | None) -> list[tuple[str, list]]:
    """(column, [max, score per student]): one column for the assignment when it has a name (its total),
    else one per exercise; a gradebook column is one assignment. Nothing handed in is ``NO_GRADE``, not 0."""
    if assignment:
        return [(assignment, [sum(ex.max_score for ex in exercises),
                              *[s.score if _submitted(s) else NO_GRADE for s in students]])]
    return [(ex.name, [ex.max_score, *[s.grades[i].score if s.grades[i].source is not None else NO_GRADE
                                       for s in students]]) for i, ex in enumerate(exercises)]


def _submitted(student: Any) -> bool:
    return any(g.source is not None for g in student.grades)


def on_roster(students: list[Any], people: dict[str, Person]) -> list[Any]:
    """The students a gradebook can match: those on the roster."""
    return [s for s in students if s.student in people]


def write_not_on_roster(path: Path, students: list[Any], people: dict[str, Person]) -> list[str]:
    """``not_on_roster.csv``: the submissions of students the roster does not name (never in an LMS file)."""
    unknown = [s for s in students if s.student not in people]
    if not unknown:
        path.unlink(missing_ok=True)
        return []
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["student", "score", "max_score", "files", "why"])
        for s in unknown:
            files = "; ".join(g.source for g in s.grades if g.source)
            w.writerow(cells([s.student, s.score if _submitted(s) else "not submitted", s.max_score, files,
                              "not on the roster: not in the gradebook files; add them to the roster, or check "
                              "the folder's name"]))
    return [s.student for s in unknown]


def write_canvas(path: Path, students: list[Any], exercises: list[Any], people: dict[str, Person],
                 assignment: str | None = None) -> None:
    students = on_roster(students, people)
    columns = grade_columns(students, exercises, assignment)
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(cells(CANVAS_IDENTITY + [name for name, _ in columns]))
        w.writerow(cells(["Points Possible", "", "", "", ""] + [values[0] for _, values in columns]))
        for i, s in enumerate(students, start=1):
            p = people[s.student]
            w.writerow(cells([p.name or s.student, p.canvas_id, p.id, p.login or p.email, p.section]
                             + [values[i] for _, values in columns]))


def write_moodle(path: Path, students: list[Any], exercises: list[Any], people: dict[str, Person],
                 assignment: str | None = None) -> None:
    students = on_roster(students, people)
    columns = grade_columns(students, exercises, assignment)
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(cells(MOODLE_IDENTITY + [name for name, _ in columns]))
        for i, s in enumerate(students, start=1):
            p = people[s.student]
            w.writerow(cells([p.name or s.student, p.id, p.email] + [values[i] for _, values in columns]))


def write_lms(out: Path, lms: list[str], students: list[Any], exercises: list[Any], people: dict[str, Person],
              assignment: str | None = None) -> list[Path]:
    written = []
    for kind in dict.fromkeys(lms):
        path = out / f"{kind}.csv"
        (write_canvas if kind == "canvas" else write_moodle)(path, students, exercises, people, assignment)
        written.append(path)
    return written

