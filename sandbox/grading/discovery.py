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

Everything here is written by students, so it is read as hostile input (``sandbox.grading.untrusted``):
no link, symbolic or hard, is followed or read (each is named in ``Submission.ignored``, with why), each
file is read once and those bytes (``Submission.sources``) are what is graded, and a file that cannot be
parsed (a notebook nested 200,000 deep, a timestamp in a zone nobody can place) costs its student, never
the class.
"""
from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

from ..errors import BadInput
from . import notebooks as nb
from . import untrusted
from .catalog import EXERCISES_DIR, KIT, Exercise
from .untrusted import Refused, shown

SUFFIXES = (".py", ".ipynb")
#: Folders tools leave beside the work, and why none of their files is graded.
NOISE_DIRS = {".ipynb_checkpoints": "Jupyter's autosave copies", "__pycache__": "Python's bytecode cache",
              "__MACOSX": "macOS's archive metadata", ".git": "a git repository's internals"}
NBGRADER_TIMESTAMP = "timestamp.txt"
_READ_LIMIT = 200_000  # characters of a file read to recognise it: an answer is far shorter
_SLUG_FILLER = {"the", "and", "a", "to", "of"}
#: What browsers and file managers make of a second download or a copy: "name (1).py", "name(2).ipynb",
#: "Copy of name.py", "name - Copy.py", "name copy 2.py". The exact name wins over these.
_BROWSER_COPY = re.compile(r"(?:\s*\(\d+\)|\s+-\s+copy(?:\s*\(\d+\))?|\s+copy(?:\s+\d+)?)$|^copy of\s+", re.I)


@dataclass
class Submission:
    student: str
    files: dict[str, Path] = field(default_factory=dict)  # exercise id -> file
    ignored: list[str] = field(default_factory=list)  # "file: why it was not graded"
    notes: dict[str, str] = field(default_factory=dict)  # exercise id -> how its file was recognised
    submitted_at: datetime | None = None
    time_source: str | None = None  # where submitted_at comes from
    #: exercise id -> the bytes read of its file, once, without following a link: what is graded
    sources: dict[str, bytes] = field(default_factory=dict)
    file_times: dict[str, float] = field(default_factory=dict)  # exercise id -> its file's modification time
    remarks: list[str] = field(default_factory=list)  # about the submission as a whole (its time unreadable)
    #: exercise id -> (file, why it was refused) for a file named after the exercise the grader would not read
    #: (a link, a hard link, a FIFO): with no other file for it, the exercise scores 0 with that reason
    refused: dict[str, tuple[str, str]] = field(default_factory=dict)


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
    data: bytes = b""
    mtime: float | None = None

    @property
    def copy(self) -> bool:
        """A browser's or file manager's copy ("name (1).py"), by its name."""
        return bool(_BROWSER_COPY.search(self.path.stem))


# -- which exercise a file answers ------------------------------------------------------------------
def exercise_of(path: Path, catalogue: dict[str, Exercise], only: list[str]) -> str | None:
    """Which exercise a file answers, or None."""
    return identify(path, catalogue, only)[0]


def identify(path: Path, catalogue: dict[str, Exercise], only: list[str],
             data: bytes | None = None) -> tuple[str | None, str | None]:
    """(exercise id, how it was recognised when not by the file's name or metadata) or (None, None).

    ``data``: the file's bytes, already read; without it the file is read here, never through a link."""
    if data is None:
        try:
            data = untrusted.read_file(path)
        except Refused:
            data = b""
    named = _named(path, catalogue, data)
    if named:
        return named, None
    code = _code(path, data)
    if code is not None:
        for recognise in (_by_header, _by_words, _by_functions):
            found = recognise(path, code, catalogue)
            if found:
                return found
    if len(only) == 1:
        return only[0], f"the one exercise graded (--exercise {only[0]})"
    return None, None


def _named(path: Path, catalogue: dict[str, Exercise], data: bytes = b"") -> str | None:
    if path.suffix == ".ipynb":
        meta = nb.exercise_meta(_notebook(data) or {})
        ex_id = meta.get("id") if meta else None
        if isinstance(ex_id, str | int) and str(ex_id) in catalogue:  # any JSON may stand there
            return str(ex_id)
    return _named_by_name(path.name, catalogue)


def _named_by_name(name: str, catalogue: dict[str, Exercise]) -> str | None:
    stem = Path(name).stem.lower()
    for ex in catalogue.values():
        if ex.name in stem:
            return ex.id
    match = re.match(r"^(?:ex(?:ercise)?[_-]?)?(\d{2})(?:[_.-]|$)", stem)
    return match.group(1) if match and match.group(1) in catalogue else None


def _notebook(data: bytes) -> dict | None:
    try:
        notebook = nb.loads(data)
    except ValueError:
        return None
    return notebook if nb.problem(notebook) is None else None


def _code(path: Path, data: bytes) -> str | None:
    """The code a file holds: a .py file's text, or a notebook's one answer cell."""
    if path.suffix == ".py":
        return untrusted.decode(data[:_READ_LIMIT * 4])[:_READ_LIMIT]
    cells = nb.tagged(_notebook(data) or {}, nb.ANSWER_TAG)
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
    if len(top) > 1:  # two stubs with the same functions (07's and 09's: fulfil, handler): the one whose names it
        used = _names(code)  # uses most (run_once and partial for 07; idempotent_function, IdempotencyConfig for 09)
        shared = {ex.id: len(_names(_stub_text(ex)) & used) for ex in top}
        top = [ex for ex in top if shared[ex.id] == max(shared.values())]
    if len(top) == 1:
        names = ", ".join(sorted(_stub_functions(top[0])))
        return top[0].id, f"it defines exercise {top[0].id}'s functions ({names})"
    return None


def _stub_text(ex: Exercise) -> str:
    try:
        return (EXERCISES_DIR / f"{ex.name}.py").read_text()
    except OSError:  # a Gradescope bundle ships no stubs
        return ""


def _stub_functions(ex: Exercise) -> set[str]:
    return set(re.findall(r"^def (\w+)\s*\(", _stub_text(ex), re.M))


def _names(code: str) -> set[str]:
    """The identifiers a file's code uses, its comments left out."""
    return set(re.findall(r"[A-Za-z_]\w+", re.sub(r"#.*", "", code)))


# -- a student's folder -----------------------------------------------------------------------------
def read_student(sub: Submission, folder: Path, catalogue: dict[str, Exercise], only: list[str],
                 skip: tuple[str, ...] = (), root: Path | None = None) -> None:
    """Every file under ``folder``: graded (``sub.files``) or named with the reason (``sub.ignored``).

    ``root``: the submissions folder ``folder`` is in (default: ``folder`` itself); no folder between the two,
    and nothing below, is entered or read through a link (``sandbox.grading.untrusted``)."""
    root = folder if root is None else root
    candidates: list[_Candidate] = []
    noise: dict[str, int] = {}
    try:
        entries = list(untrusted.walk(root, folder.relative_to(root).parts))
    except Refused as exc:
        sub.ignored.append(f"{shown(folder.name)}/: {exc}")
        return
    except OSError as exc:
        sub.ignored.append(f"{shown(folder.name)}/: could not be read ({os.strerror(exc.errno or 0)})")
        return
    for entry in entries:
        parts = entry.parts
        if (parts and parts[0] in skip) or entry.kind == "dir":
            continue
        dirs = [part for part in parts[:-1] if part in NOISE_DIRS]
        if dirs:
            key = shown("/".join(parts[:parts.index(dirs[0]) + 1]))
            noise[key] = noise.get(key, 0) + 1
            continue
        why = entry.why if entry.kind == "refused" else _not_an_answer(Path(parts[-1]))
        if why:
            sub.ignored.append(f"{entry.rel}: {why}")
            if entry.kind == "refused" and parts:
                _refused(sub, parts[-1], entry.rel, why, catalogue, only)
            continue
        found = _candidate(sub, folder.joinpath(*parts), entry, root, catalogue, only)
        if found is not None:
            candidates.append(found)
    for key, count in sorted(noise.items()):
        what = NOISE_DIRS[key.rsplit("/", 1)[-1]]
        sub.ignored.append(f"{key}/ ({count} file{'s' if count != 1 else ''}): {what}")
    _choose(sub, candidates, catalogue)


def _candidate(sub: Submission, path: Path, entry: untrusted.Entry, root: Path, catalogue: dict[str, Exercise],
               only: list[str]) -> _Candidate | None:
    """A file that may answer an exercise, read once (through no link); or None, with why in ``sub.ignored``."""
    try:
        data = untrusted.read_file(path, root)
    except Refused as exc:
        sub.ignored.append(f"{entry.rel}: {exc}")
        _refused(sub, path.name, entry.rel, str(exc), catalogue, only)
        return None
    ex_id, how = identify(path, catalogue, only, data)
    if ex_id is None:
        sub.ignored.append(f"{entry.rel}: names no exercise (not its name, its notebook metadata or its code)")
    elif only and ex_id not in only:
        sub.ignored.append(f"{entry.rel}: exercise {ex_id} is not assigned")
    else:
        return _Candidate(path, entry.rel, ex_id, how, data, entry.mtime)
    return None


def _refused(sub: Submission, name: str, shown_as: str, why: str, catalogue: dict[str, Exercise],
             only: list[str]) -> None:
    """Remember a refused file whose name says its exercise: handing in a link is not handing in nothing."""
    ex_id = _named_by_name(name, catalogue) if Path(name).suffix in SUFFIXES else None
    if ex_id is not None and (not only or ex_id in only):
        sub.refused.setdefault(ex_id, (shown_as, why))


def _not_an_answer(path: Path) -> str | None:
    if path.name == KIT:
        return "the course's run_once_kit.py (the grader uses its own copy)"
    if path.name.startswith("."):
        return "a hidden file"
    if path.suffix not in SUFFIXES:
        return "not a .py file or a notebook"
    return None


def _choose(sub: Submission, candidates: list[_Candidate], catalogue: dict[str, Exercise]) -> None:
    """One file per exercise: named before recognised, the exact name before a browser's copy of it
    ("name (1).py"), a notebook before its .py copy, shallower first."""
    by_ex: dict[str, list[_Candidate]] = {}
    for c in candidates:
        by_ex.setdefault(c.ex_id, []).append(c)
    for ex_id, group in by_ex.items():
        group.sort(key=lambda c: (c.how is not None, c.copy, c.path.suffix != ".ipynb", len(Path(c.shown).parts),
                                  c.shown))
        winner = group[0]
        sub.files[ex_id] = winner.path
        sub.sources[ex_id] = winner.data
        if winner.mtime is not None:
            sub.file_times[ex_id] = winner.mtime
        notes = [f"graded {winner.shown}: {winner.how}"] if winner.how else []
        copies = [c for c in group[1:] if c.copy and not winner.copy]
        if copies:
            same = all(_same_code(winner, c) for c in copies)
            notes.append(f"graded {winner.shown}, not the copies {', '.join(c.shown for c in copies)}: the exact "
                         f"name wins over a browser's copy ("
                         + ("they hold the same code)" if same else "they differ: check which the student meant)"))
        if winner.path.suffix == ".ipynb" and ex_id in catalogue:
            untagged = _untagged_answer(winner.data, catalogue[ex_id])
            if untagged:
                notes.append(untagged)
        if notes:
            sub.notes[ex_id] = "; ".join(notes)
        for loser in group[1:]:
            sub.ignored.append(f"{loser.shown}: not graded; {winner.shown} was, for exercise {ex_id} "
                               f"({_why_winner(winner, loser)})")


def _why_winner(winner: _Candidate, loser: _Candidate) -> str:
    if winner.how is None and loser.how is not None:
        return "its name says the exercise"
    if loser.copy and not winner.copy:
        return "the exact name wins over a browser's copy"
    if winner.path.suffix == ".ipynb" and loser.path.suffix == ".py":
        same = _same_code(winner, loser)
        return ("the notebook's answer cell is the answer, the .py its copy; "
                + ("the two hold the same code" if same else "the two differ: check which the student meant"))
    return "a second file for the same exercise; the first by depth and name is graded"


def _same_code(a: _Candidate, b: _Candidate) -> bool:
    """The same code, comments and blank lines aside (check() writes the cell with a header of comments)."""
    def bare(code: str | None) -> list[str] | None:
        return None if code is None else [ln.rstrip() for ln in code.splitlines()
                                          if ln.strip() and not ln.strip().startswith("#")]
    first = bare(_code(a.path, a.data))
    return first is not None and first == bare(_code(b.path, b.data))


def _untagged_answer(data: bytes, ex: Exercise) -> str | None:
    """Where an answer typed in the wrong cell is: an untagged code cell that defines the exercise's function,
    when the cell tagged ``answer`` (the one graded) does not define it or still holds the stub."""
    notebook = _notebook(data)
    if notebook is None:
        return None
    wanted = {ex.function} | _stub_functions(ex)
    def defines(code: str) -> set[str]:
        return {name for name in re.findall(r"^def (\w+)\s*\(", code, re.M) if name in wanted}
    answers = nb.tagged(notebook, nb.ANSWER_TAG)
    answer = nb.source(answers[0]) if len(answers) == 1 else ""
    if len(answers) == 1 and ex.function in defines(answer) and "NotImplementedError" not in answer:
        return None
    found = [(n, names) for n, cell in enumerate(nb.cells(notebook), start=1)
             if cell.get("cell_type") == "code" and nb.ANSWER_TAG not in nb.tags(cell)
             and (names := defines(nb.source(cell)))]
    if not found:
        return None
    n, names = found[0]
    return (f"cell {n} of the notebook (counting from the top, text cells included) defines "
            f"{', '.join(sorted(names))}, "
            f"but it is not the answer cell: only the cell tagged '{nb.ANSWER_TAG}' is graded"
            + (" (it still holds the stub)" if len(answers) == 1 and "NotImplementedError" in answer else
               "" if len(answers) == 1 else f" (this notebook has {len(answers)} cells tagged so)")
            + "; move the code into the answer cell and run check() again")


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
        if sub.submitted_at is None and sub.time_source is None and sub.file_times:
            sub.submitted_at = datetime.fromtimestamp(max(sub.file_times.values()), UTC)
            sub.time_source = "file time"
    return found


def _top(folder: Path) -> list[tuple[str, os.stat_result | None]]:
    """The entries of the submissions folder, each with its own lstat (None if it vanished)."""
    out: list[tuple[str, os.stat_result | None]] = []
    for name in sorted(os.listdir(folder)):
        try:
            out.append((name, os.lstat(folder / name)))
        except OSError:
            out.append((name, None))
    return out


def _plain_class(folder: Path, catalogue: dict[str, Exercise], only: list[str]) -> ClassFolder:
    by_student: dict[str, Submission] = {}
    loose: dict[str, list[_Candidate]] = {}  # a file per student: chosen among once all are seen
    strays = []
    for name, st in _top(folder):
        entry, label = folder / name, shown(name)
        if name in NOISE_DIRS or name.startswith("."):
            strays.append(f"{label}: {NOISE_DIRS.get(name, 'a hidden file')}, no student's")
        elif st is None:
            strays.append(f"{label}: could not be read")
        elif stat.S_ISDIR(st.st_mode):
            read_student(by_student.setdefault(label, Submission(label)), entry, catalogue, only, root=folder)
        elif entry.suffix in SUFFIXES or stat.S_ISLNK(st.st_mode):
            # a file per student; a link is named after whoever it seems to be, and never read
            try:
                data = untrusted.read_file(entry, folder)
                refused = None
            except Refused as exc:
                data, refused = b"", str(exc)
            ex_id, how = identify(entry, catalogue, only, data) if refused is None else (
                _named_by_name(name, catalogue), None)
            student = shown(_student_from_file(entry, catalogue.get(ex_id) if ex_id else None))
            sub = by_student.setdefault(student, Submission(student))
            if refused is not None:
                sub.ignored.append(f"{label}: {refused}")
                _refused(sub, name, label, refused, catalogue, only)
            elif ex_id is None:
                sub.ignored.append(f"{label}: names no exercise (not its name, its notebook metadata or its code)")
            elif only and ex_id not in only:
                sub.ignored.append(f"{label}: exercise {ex_id} is not assigned")
            else:
                loose.setdefault(student, []).append(_Candidate(entry, label, ex_id, how, data, st.st_mtime))
        else:
            strays.append(f"{label}: not a student's folder, a .py file or a notebook")
    for student, candidates in loose.items():
        _choose(by_student[student], candidates, catalogue)
    return ClassFolder(list(by_student.values()), strays)


def _student_from_file(path: Path, ex: Exercise | None) -> str:
    stem = path.stem
    if ex is not None and ex.name in stem.lower():
        start = stem.lower().index(ex.name)
        stem = (stem[:start] + stem[start + len(ex.name):]).strip("_-. ") or stem
    return stem


# -- nbgrader's layout -------------------------------------------------------------------------------
def _real_dirs(folder: Path) -> list[str]:
    """The folders in ``folder`` that are folders, not links to one."""
    try:
        return [name for name, st in _top(folder) if st is not None and stat.S_ISDIR(st.st_mode)]
    except OSError:
        return []


def _has_stamps(folder: Path) -> bool:
    """nbgrader's ``<student>/<assignment>/timestamp.txt`` somewhere in ``folder``, found through no link."""
    for student in _real_dirs(folder):
        for assignment in _real_dirs(folder / student):
            try:
                os.lstat(folder / student / assignment / NBGRADER_TIMESTAMP)
                return True
            except OSError:
                continue
    return False


def nbgrader_submitted(folder: Path) -> Path | None:
    """nbgrader's ``submitted/`` folder, when ``folder`` is a course directory or that folder itself."""
    # the course directory and its submitted/ are the instructor's (a link there is theirs to make); the
    # students' folders below are not, and _has_stamps follows no link
    if (folder / "submitted").is_dir() and _has_stamps(folder / "submitted"):
        return folder / "submitted"
    return folder if _has_stamps(folder) else None


def _nbgrader_class(root: Path, catalogue: dict[str, Exercise], only: list[str], assignment: str | None) -> ClassFolder:
    top = _top(root)
    students = [name for name, st in top if st is not None and stat.S_ISDIR(st.st_mode) and not name.startswith(".")]
    names = sorted({a for s in students for a in _real_dirs(root / s)})
    if assignment is None:
        if len(names) != 1:
            raise BadInput(f"{root} holds nbgrader assignments {', '.join(map(shown, names)) or '(none)'}: name "
                           "the one to grade with --nbgrader-assignment")
        assignment = names[0]
    elif assignment not in names:
        raise BadInput(f"no nbgrader assignment {assignment!r} in {root}; it holds: {', '.join(map(shown, names))}")
    subs, strays = [], []
    for name, st in top:
        if name in students:
            continue
        if st is not None and stat.S_ISLNK(st.st_mode) and not name.startswith("."):
            # a student's folder that is a link: that student gets a row, and the reason
            sub = Submission(shown(name))
            sub.ignored.append(f"{shown(name)}/: a symbolic link (to {_readlink(root / name)}): "
                               "the grader follows no link out of a submission")
            subs.append(sub)
        else:
            strays.append(f"{shown(name)}: not a student's folder")
    for student in students:
        sub = Submission(shown(student))
        subs.append(sub)
        folder = root / student / assignment
        for other, st in _top(root / student):
            is_dir = st is not None and stat.S_ISDIR(st.st_mode)
            if other == assignment and is_dir:
                continue
            if st is not None and stat.S_ISLNK(st.st_mode):
                sub.ignored.append(f"{shown(other)}: a symbolic link (to {_readlink(root / student / other)}):"
                                   " the grader follows no link out of a submission")
            else:
                sub.ignored.append(f"{shown(other)}{'/' if is_dir else ''}: not assignment {shown(assignment)}")
        if assignment not in _real_dirs(root / student):
            continue
        read_student(sub, folder, catalogue, only, skip=(NBGRADER_TIMESTAMP,), root=root)
        _read_stamp(sub, root, folder)
    subs.sort(key=lambda s: s.student)
    return ClassFolder(subs, strays, "nbgrader", assignment)


def _readlink(path: Path) -> str:
    try:
        return shown(os.readlink(path))
    except OSError:
        return "?"


def _read_stamp(sub: Submission, root: Path, folder: Path) -> None:
    """nbgrader's timestamp.txt: the submission's time. One that cannot be read costs that student's time
    (unknown, so lateness is not judged; --submitted-at gives it), never the batch."""
    stamp = folder / NBGRADER_TIMESTAMP
    try:
        os.lstat(stamp)
    except OSError:
        return
    try:
        text = untrusted.decode(untrusted.read_file(stamp, root, limit=4096))
        sub.submitted_at = parse_nbgrader_time(text.strip(), NBGRADER_TIMESTAMP)
        sub.time_source = "nbgrader timestamp.txt"
    except (Refused, BadInput) as exc:
        reason = str(exc) if isinstance(exc, BadInput) else f"{NBGRADER_TIMESTAMP}: {exc}"
        sub.remarks.append(f"{reason}; the submission time is unknown (give it with --submitted-at)")
        sub.time_source = "unknown"


#: UTC offsets of the zone abbreviations tzdata prints (``%Z``) that mean one offset. nbgrader writes its
#: timestamp with ``%Z`` in the course's timezone setting, so a course in Berlin gets ``CET`` or ``CEST``.
#: IST (India, Ireland, Israel), CST and CDT (the US, China, Cuba) mean several, and are refused as ambiguous.
ZONE_ABBREVIATIONS = {
    "UTC": 0, "UT": 0, "GMT": 0, "Z": 0, "WET": 0, "WEST": 60, "BST": 60, "CET": 60, "CEST": 120, "MET": 60,
    "MEST": 120, "EET": 120, "EEST": 180, "MSK": 180, "SAST": 120, "WAT": 60, "CAT": 120, "EAT": 180,
    "AST": -240, "ADT": -180, "EST": -300, "EDT": -240, "MST": -420, "MDT": -360, "PST": -480, "PDT": -420,
    "AKST": -540, "AKDT": -480, "HST": -600, "NST": -210, "NDT": -150, "PKT": 300, "WIB": 420, "HKT": 480,
    "AWST": 480, "JST": 540, "KST": 540, "ACST": 570, "ACDT": 630, "AEST": 600, "AEDT": 660, "NZST": 720,
    "NZDT": 780, "CHST": 600, "SST": -660}
AMBIGUOUS_ZONES = {"IST": "India, Ireland or Israel", "CST": "US Central, China or Cuba",
                   "CDT": "US Central or Cuba"}


def parse_nbgrader_time(text: str, where: Path | str) -> datetime:
    """nbgrader writes ``2024-03-01 12:00:00.123456 UTC`` (its Exchange.timestamp_format,
    ``%Y-%m-%d %H:%M:%S.%f %Z``, in its timezone setting, UTC by default): the zone is a tzdata abbreviation
    (``CET``), a numeric offset (``+01:00``, ``+0100``, tzdata's name for zones with no abbreviation) or,
    from other tools, an IANA name (``Europe/Berlin``). BadInput names what cannot be read."""
    text = text.strip()[:200]
    try:  # an ISO 8601 time, with or without its offset
        when = datetime.fromisoformat(text)
        return when if when.tzinfo else when.replace(tzinfo=UTC)
    except ValueError:
        pass
    clock, _, zone = text.rpartition(" ")
    try:
        when = datetime.fromisoformat(clock.strip())
    except ValueError:
        raise BadInput(f"{where}: not a time nbgrader writes ({text[:60]!r})") from None
    if when.tzinfo is not None:
        raise BadInput(f"{where}: two time zones in {text[:60]!r}")
    return when.replace(tzinfo=_zone(zone, where, text))


def _zone(zone: str, where: Path | str, text: str) -> timezone | ZoneInfo:
    offset = re.fullmatch(r"([+-])(\d{2}):?(\d{2})?", zone)
    if offset:
        sign = -1 if offset.group(1) == "-" else 1
        hours, minutes = int(offset.group(2)), int(offset.group(3) or 0)
        if hours > 23 or minutes > 59:
            raise BadInput(f"{where}: {zone!r} is no UTC offset ({text[:60]!r})")
        return timezone(sign * timedelta(hours=hours, minutes=minutes))
    upper = zone.upper()
    if upper in ZONE_ABBREVIATIONS:
        return timezone(timedelta(minutes=ZONE_ABBREVIATIONS[upper]))
    if upper in AMBIGUOUS_ZONES:
        raise BadInput(f"{where}: the time zone {zone!r} is ambiguous ({AMBIGUOUS_ZONES[upper]}) in {text[:60]!r}")
    if "/" in zone:
        try:
            return ZoneInfo(zone)
        except (ValueError, OSError, LookupError):  # ZoneInfoNotFoundError is a KeyError
            pass
    raise BadInput(f"{where}: unknown time zone {zone!r} in {text[:60]!r} (nbgrader's timezone setting: "
                   "give the times with --submitted-at)")
