"""Finding a class's submissions in a folder: who handed in which exercise, and what every other file is.

A submissions folder holds, for each student, either

- a folder named after the student, with one file per exercise (``02_claim_the_key.py`` or the
  notebook ``02_claim_the_key.ipynb``; a notebook's metadata also names its exercise), or
- one file named after the student: ``alice_02_claim_the_key.py``, ``alice.ipynb`` (the notebook
  names its exercise), or ``alice.py`` with ``--exercise 02``, or
- nbgrader's layout, as ``nbgrader collect`` leaves it: ``submitted/<student>/<assignment>/<files>``
  with nbgrader's ``timestamp.txt`` (the submission time) in each assignment folder
  (https://nbgrader.readthedocs.io/en/stable/user_guide/philosophy.html, "How to structure course
  files"; the exchange: https://nbgrader.readthedocs.io/en/stable/exchange/exchange_api.html).

Nothing is skipped silently: every file in a student's folder is either graded or listed in
``Submission.ignored`` with the reason. A file whose name does not say its exercise is graded when
its code does (the stub's header, the exercise's words in its name, or the exercise's functions),
and ``Submission.notes`` says how it was recognised.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from ..errors import BadInput
from . import notebooks as nb
from .catalog import EXERCISES_DIR, KIT, Exercise

SUFFIXES = (".py", ".ipynb")
#: Folders tools leave beside the work, and why none of their files is graded.
NOISE_DIRS = {".ipynb_checkpoints": "Jupyter's autosave copies", "__pycache__": "Python's bytecode cache",
              "__MACOSX": "macOS's archive metadata", ".git": "a git repository's internals"}
_SKIPPED_PARTS = tuple(NOISE_DIRS)
NBGRADER_TIMESTAMP = "timestamp.txt"
_READ_LIMIT = 200_000  # characters of a file read to recognise it: an answer is far shorter
_SLUG_FILLER = {"the", "and", "a", "to", "of"}


@dataclass
class Submission:
    student: str
    files: dict[str, Path] = field(default_factory=dict)  # exercise id -> file
    ignored: list[str] = field(default_factory=list)  # "file: why it was not graded"
    notes: dict[str, str] = field(default_factory=dict)  # exercise id -> how its file was recognised
    submitted_at: datetime | None = None
    time_source: str | None = None  # where submitted_at comes from


@dataclass
class ClassFolder:
    submissions: list[Submission]
    strays: list[str] = field(default_factory=list)  # entries of the folder that are no student's, and why
    layout: str = "folders"
    assignment: str | None = None  # nbgrader's assignment id, in its layout


@dataclass
class _Candidate:
    path: Path
    shown: str
    ex_id: str
    how: str | None  # None: its name (or notebook metadata) says the exercise


# -- which exercise a file answers ------------------------------------------------------------------
def exercise_of(path: Path, catalogue: dict[str, Exercise], only: list[str]) -> str | None:
    """Which exercise a file answers, or None."""
    return identify(path, catalogue, only)[0]


def identify(path: Path, catalogue: dict[str, Exercise], only: list[str]) -> tuple[str | None, str | None]:
    """(exercise id, how it was recognised when not by the file's name or metadata) or (None, None)."""
    named = _named(path, catalogue)
    if named:
        return named, None
    code = _code(path)
    if code is not None:
        for recognise in (_by_header, _by_words, _by_functions):
            found = recognise(path, code, catalogue)
            if found:
                return found
    if len(only) == 1:
        return only[0], f"the one exercise graded (--exercise {only[0]})"
    return None, None


def _named(path: Path, catalogue: dict[str, Exercise]) -> str | None:
    if path.suffix == ".ipynb":
        meta = nb.exercise_meta(_notebook(path) or {})
        if meta and str(meta.get("id")) in catalogue:
            return str(meta["id"])
    stem = path.stem.lower()
    for ex in catalogue.values():
        if ex.name in stem:
            return ex.id
    match = re.match(r"^(?:ex(?:ercise)?[_-]?)?(\d{2})(?:[_.-]|$)", stem)
    return match.group(1) if match and match.group(1) in catalogue else None


def _notebook(path: Path) -> dict | None:
    try:
        data = nb.read(path)
    except (ValueError, OSError):
        return None
    return data if isinstance(data, dict) else None


def _code(path: Path) -> str | None:
    """The code a file holds: a .py file's text, or a notebook's one answer cell."""
    if path.suffix == ".py":
        try:
            with path.open(errors="replace") as f:
                return f.read(_READ_LIMIT)
        except OSError:
            return None
    cells = nb.tagged(_notebook(path) or {}, nb.ANSWER_TAG)
    return nb.source(cells[0])[:_READ_LIMIT] if len(cells) == 1 else None


def _by_header(path: Path, code: str, catalogue: dict[str, Exercise]) -> tuple[str, str] | None:
    """The stub's own first line (``# Exercise 02 · Claim the key``), kept by students who copy it."""
    pairs = re.findall(r"exercises/(\d{2})_\w+\.(?:py|ipynb)|^# Exercise (\d{2}) ", code, re.M)
    found = {a or b for a, b in pairs}
    found &= set(catalogue)
    if len(found) == 1:
        ex_id = found.pop()
        return ex_id, f"its code carries exercise {ex_id}'s header"
    return None


def _by_words(path: Path, code: str, catalogue: dict[str, Exercise]) -> tuple[str, str] | None:
    """Every word of the exercise's name in the file's name (``claim key FINAL v2.py``)."""
    words = set(re.split(r"[^a-z0-9]+", path.stem.lower()))
    hits = [ex for ex in catalogue.values()
            if (slug := set(ex.slug.split("_")) - _SLUG_FILLER) and slug <= words]
    if len(hits) == 1:
        named = " ".join(w for w in hits[0].slug.split("_") if w not in _SLUG_FILLER)
        return hits[0].id, f"its name has exercise {hits[0].id}'s words ({named})"
    return None


def _by_functions(path: Path, code: str, catalogue: dict[str, Exercise]) -> tuple[str, str] | None:
    """It defines every function the exercise's stub defines (two at least: ``handler`` alone says nothing)."""
    defined = set(re.findall(r"^def (\w+)\s*\(", code, re.M))
    fits = []
    for ex in catalogue.values():
        stub = _stub_functions(ex)
        if len(stub) >= 2 and stub <= defined:
            fits.append((len(stub), ex))
    best = max((n for n, _ in fits), default=0)
    top = [ex for n, ex in fits if n == best]
    if len(top) == 1:
        names = ", ".join(sorted(_stub_functions(top[0])))
        return top[0].id, f"it defines exercise {top[0].id}'s functions ({names})"
    return None


def _stub_functions(ex: Exercise) -> set[str]:
    stub = EXERCISES_DIR / f"{ex.name}.py"
    try:
        return set(re.findall(r"^def (\w+)\s*\(", stub.read_text(), re.M))
    except OSError:  # a Gradescope bundle ships no stubs
        return set()


# -- a student's folder -----------------------------------------------------------------------------
def _answer_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in SUFFIXES and p.name != KIT
                  and not any(part in _SKIPPED_PARTS for part in p.parts))


def _add(sub: Submission, path: Path, ex_id: str | None, base: Path) -> None:
    """The first file for an exercise is its answer; the Gradescope bundle's one-student run."""
    shown = str(path.relative_to(base)) if path.is_relative_to(base) else path.name
    if ex_id is None:
        sub.ignored.append(f"{shown}: names no exercise")
    elif ex_id in sub.files:
        sub.ignored.append(f"{shown}: a second file for exercise {ex_id} ({sub.files[ex_id].name} was graded)")
    else:
        sub.files[ex_id] = path


def read_student(sub: Submission, folder: Path, catalogue: dict[str, Exercise], only: list[str],
                 skip: tuple[str, ...] = ()) -> None:
    """Every file under ``folder``: graded (``sub.files``) or named with the reason (``sub.ignored``)."""
    candidates: list[_Candidate] = []
    noise: dict[str, int] = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder)
        shown = str(rel)
        if rel.parts[0] in skip:
            continue
        dirs = [part for part in rel.parts[:-1] if part in NOISE_DIRS]
        if dirs:
            key = str(Path(*rel.parts[:rel.parts.index(dirs[0]) + 1]))
            noise[key] = noise.get(key, 0) + 1
            continue
        why = _not_an_answer(path)
        if why:
            sub.ignored.append(f"{shown}: {why}")
            continue
        ex_id, how = identify(path, catalogue, only)
        if ex_id is None:
            sub.ignored.append(f"{shown}: names no exercise (not its name, its notebook metadata or its code)")
        elif only and ex_id not in only:
            sub.ignored.append(f"{shown}: exercise {ex_id} is not assigned")
        else:
            candidates.append(_Candidate(path, shown, ex_id, how))
    for key, count in sorted(noise.items()):
        what = NOISE_DIRS[Path(key).name]
        sub.ignored.append(f"{key}/ ({count} file{'s' if count > 1 else ''}): {what}")
    _choose(sub, candidates)


def _not_an_answer(path: Path) -> str | None:
    if path.name == KIT:
        return "the course's run_once_kit.py (the grader uses its own copy)"
    if path.name.startswith("."):
        return "a hidden file"
    if path.suffix not in SUFFIXES:
        return "not a .py file or a notebook"
    return None


def _choose(sub: Submission, candidates: list[_Candidate]) -> None:
    """One file per exercise: named before recognised, a notebook before its .py copy, shallower first."""
    by_ex: dict[str, list[_Candidate]] = {}
    for c in candidates:
        by_ex.setdefault(c.ex_id, []).append(c)
    for ex_id, group in by_ex.items():
        group.sort(key=lambda c: (c.how is not None, c.path.suffix != ".ipynb", len(Path(c.shown).parts), c.shown))
        winner = group[0]
        sub.files[ex_id] = winner.path
        if winner.how:
            sub.notes[ex_id] = f"graded {winner.shown}: {winner.how}"
        for loser in group[1:]:
            sub.ignored.append(f"{loser.shown}: not graded; {winner.shown} was, for exercise {ex_id} "
                               f"({_why_winner(winner, loser)})")


def _why_winner(winner: _Candidate, loser: _Candidate) -> str:
    if winner.how is None and loser.how is not None:
        return "its name says the exercise"
    if winner.path.suffix == ".ipynb" and loser.path.suffix == ".py":
        same = _same_code(winner.path, loser.path)
        return ("the notebook's answer cell is the answer, the .py its copy; "
                + ("the two hold the same code" if same else "the two differ: check which the student meant"))
    return "a second file for the same exercise; the first by depth and name is graded"


def _same_code(a: Path, b: Path) -> bool:
    """The same code, comments and blank lines aside (check() writes the cell with a header of comments)."""
    def bare(code: str | None) -> list[str] | None:
        return None if code is None else [ln.rstrip() for ln in code.splitlines()
                                          if ln.strip() and not ln.strip().startswith("#")]
    return bare(_code(a)) is not None and bare(_code(a)) == bare(_code(b))


# -- the class ---------------------------------------------------------------------------------------
def discover(folder: Path, catalogue: dict[str, Exercise], only: list[str]) -> list[Submission]:
    return discover_class(folder, catalogue, only).submissions


def discover_class(folder: Path, catalogue: dict[str, Exercise], only: list[str],
                   nbgrader_assignment: str | None = None) -> ClassFolder:
    if not folder.exists():
        raise BadInput(f"no submissions folder {folder}")
    if not folder.is_dir():
        raise BadInput(f"{folder} is a file; give the folder that holds the submissions")
    nbgrader_root = nbgrader_submitted(folder)
    if nbgrader_root is not None:
        found = _nbgrader_class(nbgrader_root, catalogue, only, nbgrader_assignment)
    else:
        found = _plain_class(folder, catalogue, only)
    if not found.submissions:
        raise BadInput(f"{folder} holds no submissions (a folder per student, or .py / .ipynb files)")
    for sub in found.submissions:
        if sub.submitted_at is None and sub.files:
            newest = max(p.stat().st_mtime for p in sub.files.values())
            sub.submitted_at = datetime.fromtimestamp(newest, UTC)
            sub.time_source = "file time"
    return found


def _plain_class(folder: Path, catalogue: dict[str, Exercise], only: list[str]) -> ClassFolder:
    by_student: dict[str, Submission] = {}
    loose: dict[str, list[_Candidate]] = {}  # a file per student: chosen among once all are seen
    strays = []
    for entry in sorted(folder.iterdir()):
        if entry.name in NOISE_DIRS or entry.name.startswith("."):
            strays.append(f"{entry.name}: {NOISE_DIRS.get(entry.name, 'a hidden file')}, no student's")
        elif entry.is_dir():
            read_student(by_student.setdefault(entry.name, Submission(entry.name)), entry, catalogue, only)
        elif entry.suffix in SUFFIXES:
            ex_id, how = identify(entry, catalogue, only)
            student = _student_from_file(entry, catalogue.get(ex_id) if ex_id else None)
            sub = by_student.setdefault(student, Submission(student))
            if ex_id is None:
                sub.ignored.append(f"{entry.name}: names no exercise (not its name, its notebook metadata or its code)")
            elif only and ex_id not in only:
                sub.ignored.append(f"{entry.name}: exercise {ex_id} is not assigned")
            else:
                loose.setdefault(student, []).append(_Candidate(entry, entry.name, ex_id, how))
        else:
            strays.append(f"{entry.name}: not a student's folder, a .py file or a notebook")
    for student, candidates in loose.items():
        _choose(by_student[student], candidates)
    return ClassFolder(list(by_student.values()), strays)


def _student_from_file(path: Path, ex: Exercise | None) -> str:
    stem = path.stem
    if ex is not None and ex.name in stem.lower():
        start = stem.lower().index(ex.name)
        stem = (stem[:start] + stem[start + len(ex.name):]).strip("_-. ") or stem
    return stem


# -- nbgrader's layout -------------------------------------------------------------------------------
def nbgrader_submitted(folder: Path) -> Path | None:
    """nbgrader's ``submitted/`` folder, when ``folder`` is a course directory or that folder itself."""
    if (folder / "submitted").is_dir() and any((folder / "submitted").glob(f"*/*/{NBGRADER_TIMESTAMP}")):
        return folder / "submitted"
    return folder if any(folder.glob(f"*/*/{NBGRADER_TIMESTAMP}")) else None


def _nbgrader_class(root: Path, catalogue: dict[str, Exercise], only: list[str], assignment: str | None) -> ClassFolder:
    students = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    names = sorted({a.name for s in students for a in s.iterdir() if a.is_dir()})
    if assignment is None:
        if len(names) != 1:
            raise BadInput(f"{root} holds nbgrader assignments {', '.join(names) or '(none)'}: name the one to "
                           "grade with --nbgrader-assignment")
        assignment = names[0]
    elif assignment not in names:
        raise BadInput(f"no nbgrader assignment {assignment!r} in {root}; it holds: {', '.join(names)}")
    subs, strays = [], [f"{p.name}: not a student's folder" for p in sorted(root.iterdir()) if not p.is_dir()]
    for student in students:
        sub = Submission(student.name)
        subs.append(sub)
        folder = student / assignment
        for other in sorted(p for p in student.iterdir() if p.name != assignment):
            sub.ignored.append(f"{other.name}{'/' if other.is_dir() else ''}: not assignment {assignment}")
        if not folder.is_dir():
            continue
        read_student(sub, folder, catalogue, only, skip=(NBGRADER_TIMESTAMP,))
        stamp = folder / NBGRADER_TIMESTAMP
        if stamp.is_file():
            sub.submitted_at = parse_nbgrader_time(stamp.read_text().strip(), stamp)
            sub.time_source = "nbgrader timestamp.txt"
    return ClassFolder(subs, strays, "nbgrader", assignment)


def parse_nbgrader_time(text: str, where: Path | str) -> datetime:
    """nbgrader writes ``2024-03-01 12:00:00.123456 UTC`` (its Exchange.timestamp_format,
    ``%Y-%m-%d %H:%M:%S.%f %Z``, in its timezone setting, UTC by default)."""
    cleaned = re.sub(r"\s*(UTC|GMT|Z)$", "+00:00", text.strip())
    try:
        when = datetime.fromisoformat(cleaned)
    except ValueError:
        raise BadInput(f"{where}: not a time nbgrader writes ({text[:60]!r})") from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)
