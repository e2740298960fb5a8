"""``python -m sandbox grade SUBMISSIONS_DIR --out results/``: grade a folder of submissions.

Each submission (a .py file or a notebook) runs in its own process, with a time and memory limit,
against the public and the hidden tests with a fresh seed range; it never sees the solutions or
the hidden tests' source. Writes ``results/grades.csv`` (student, score, max_score, one column per
exercise, submitted_at, late_by, notes, ignored_files) and, per student, ``report.json`` (the
feedback), ``results.json`` (Gradescope's format) and ``feedback.txt``; with ``--lms``, the import
file Canvas or Moodle accepts; with ``--roster``, ``not_on_roster.csv`` (submissions no gradebook can match).

    python -m sandbox grade submissions/ --out results/
    python -m sandbox grade submissions/ --out results/ --exercise 02 --exercise 03 --jobs 2 --seed 12345
    python -m sandbox grade course/submitted/ --out results/ --assignment week3.toml --roster roster.csv \\
        --lms canvas --lms moodle --deadline 2025-03-07T23:59:00+01:00

Exit codes: 0 graded (whatever the scores), 2 bad input.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from ..errors import BadInput
from .gradebook import Assignment, late_text, parse_time, read_assignment
from .runner import WATCHDOG

#: The file naming the submissions of students the roster does not list (never in an LMS file).
NOT_ON_ROSTER = "not_on_roster.csv"


def _positive(kind: type, what: str):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be a number, got {text!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{what} must be more than 0, got {text}")
        return value
    return parse


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m sandbox grade", description=__doc__.split("\n\n")[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("submissions", type=Path, help="the folder of submissions (a folder or a file per student)")
    p.add_argument("--out", type=Path, required=True, help="where grades.csv and the reports go (created)")
    p.add_argument("--exercise", action="append", default=[], metavar="NN",
                   help="grade this exercise (repeat for more; default: every exercise a file names)")
    p.add_argument("--assignment", type=Path, metavar="FILE",
                   help="the assignment: a TOML, JSON or text file naming its exercises (and its name and deadline)")
    p.add_argument("--deadline", metavar="ISO8601", help="when the work was due (late work is reported, not "
                   "penalised); a time without a UTC offset is this machine's local time")
    p.add_argument("--submitted-at", type=Path, metavar="CSV",
                   help="each submission's time (CSV: student, submitted_at) instead of its files' times")
    p.add_argument("--roster", type=Path, metavar="CSV", help="the class (CSV: student, id, email; optionally "
                   "name, section, canvas_id, login): joins ids into grades.csv and the --lms files")
    p.add_argument("--lms", action="append", default=[], choices=("canvas", "moodle"),
                   help="also write the gradebook import file for this LMS (repeat for both; needs --roster)")
    p.add_argument("--nbgrader-assignment", metavar="NAME",
                   help="in nbgrader's layout (submitted/<student>/<assignment>/), the assignment to grade")
    p.add_argument("--jobs", type=_positive(int, "--jobs"), help="submissions graded at once (default: every core)")
    p.add_argument("--seed", type=int, help="the first seed of the grading range (default: a fresh one)")
    p.add_argument("--timeout", type=_positive(float, "--timeout"), default=60.0,
                   help="real seconds a test may go without progress before it is stopped as a hang (default 60)")
    p.add_argument("--watchdog", type=_positive(float, "--watchdog"), default=WATCHDOG,
                   help=f"real seconds an invocation may run without reaching the sandbox before it is stopped as "
                        f"blocked (default {WATCHDOG:g}, as in check())")
    p.add_argument("--submission-timeout", type=_positive(float, "--submission-timeout"), default=600.0,
                   help="real seconds for all of one submission's tests (default 600)")
    p.add_argument("--memory", type=_positive(int, "--memory"), default=2048, help="MB per submission (default 2048)")
    p.add_argument("--tests", type=Path, help="the tests as data (a bundle's tests.json) instead of solutions/")
    p.add_argument("--kit", type=Path, help="run_once_kit.py to grade with (default: exercises/run_once_kit.py)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--unsafe-no-sandbox", action="store_true",
                   help="grade without bubblewrap: each submission still runs in processes of its own, but as "
                        "you, with your files, the solutions and the network in its reach (trusted code only)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return run(args)
    except BadInput as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def run(args: argparse.Namespace) -> int:
    from . import batch, gradebook
    from .catalog import grading_catalogue
    from .discovery import discover_class
    from .grader import Limits, fresh_seed

    _check_paths(args)
    catalogue = grading_catalogue(args.tests)
    assignment = _assignment(args, catalogue)
    people = gradebook.read_roster(args.roster) if args.roster else {}
    times = gradebook.read_manifest(args.submitted_at) if args.submitted_at else {}
    found = discover_class(args.submissions, catalogue, assignment.exercises, args.nbgrader_assignment)
    name = assignment.name or found.assignment
    subs = _join(found.submissions, people, times)
    exercises = batch.graded_exercises(subs, catalogue, assignment.exercises)
    seed = args.seed if args.seed is not None else fresh_seed()
    limits = Limits(test_seconds=args.timeout, submission_seconds=args.submission_timeout, memory_mb=args.memory,
                    watchdog=args.watchdog, isolation="process" if args.unsafe_no_sandbox else "contained")
    jobs = args.jobs or batch.default_jobs()
    if not args.unsafe_no_sandbox:
        from ..runtime.environment.containment import containment_summary

        print(containment_summary())
    started = time.perf_counter()
    students = batch.grade_all(subs, exercises, jobs=jobs, seed=seed, limits=limits, kit=args.kit,
                               progress=not args.no_progress)
    for s in students:
        s.person = people.get(s.student)
        s.late_seconds = gradebook.late_seconds(s.submitted_at, assignment.deadline)
    batch.write_results(args.out, students, exercises, seed, roster=bool(people))
    exports = gradebook.write_lms(args.out, args.lms, students, exercises, people, name)
    unknown = gradebook.write_not_on_roster(args.out / NOT_ON_ROSTER, students, people) if people else []
    took = time.perf_counter() - started
    _summary(args, students, exercises, found, unknown, exports, took, jobs, seed)
    return 0


def _check_paths(args: argparse.Namespace) -> None:
    if args.out.exists() and not args.out.is_dir():
        raise BadInput(f"--out {args.out} is a file; give a folder")
    for option in ("tests", "kit", "roster", "submitted_at", "assignment"):
        path = getattr(args, option)
        if path is not None and not path.is_file():
            raise BadInput(f"--{option.replace('_', '-')} {path}: no such file")
    if args.lms and args.roster is None:
        raise BadInput(f"--lms {args.lms[0]} needs --roster: the gradebook matches students by the roster's ids")
    if args.assignment is not None and args.exercise:
        raise BadInput("give --exercise or --assignment, not both: the assignment file names its exercises")
    if args.unsafe_no_sandbox:
        print("warning: --unsafe-no-sandbox: submissions run as you, can read the solutions and your files, and "
              "reach the network; grade only code you trust this way", file=sys.stderr)
        return
    from ..runtime.environment.containment import ContainmentUnavailable, check_available

    try:
        check_available()
    except ContainmentUnavailable as exc:
        raise BadInput(f"{exc}. The grader runs every submission contained by the operating system; to grade "
                       "trusted code without containment, pass --unsafe-no-sandbox") from None


def _assignment(args: argparse.Namespace, catalogue: dict) -> Assignment:
    """What is graded: the assignment file's exercises, or --exercise's (none: every exercise a file names)."""
    assignment = read_assignment(args.assignment) if args.assignment else Assignment(list(args.exercise))
    option = f"--assignment {args.assignment}: exercise" if args.assignment else "--exercise"
    keys = []
    for ref in assignment.exercises:
        key = str(ref).split("_")[0].zfill(2)
        if key not in catalogue:
            raise BadInput(f"{option} {ref}: no such exercise; exercises: "
                           + ", ".join(e.name for e in catalogue.values()))
        keys.append(key)
    assignment.exercises = list(dict.fromkeys(keys))
    if args.deadline:
        assignment.deadline = parse_time(args.deadline, "--deadline")
    return assignment


def _join(subs: list, people: dict, times: dict) -> list:
    """Roster students with no submission get a row (every exercise "not submitted"); the manifest's times win."""
    from .discovery import Submission

    have = {s.student for s in subs}
    subs = subs + [Submission(student, ignored=[]) for student in people if student not in have]
    for s in subs:
        if s.student in times:
            s.submitted_at, s.time_source = times[s.student], "--submitted-at"
    return subs


def _summary(args, students, exercises, found, unknown, exports, took, jobs, seed) -> None:
    from . import batch

    graded = batch.graded_count(students)
    print(f"graded {graded} submission(s) of {len(students)} student(s) x {len(exercises)} exercise(s) "
          f"({', '.join(ex.id for ex in exercises)}) in {took:.1f} s ({graded / took * 60:.1f} graded "
          f"submissions/min, {jobs} at once, seeds from {seed}): {args.out / 'grades.csv'}")
    for path in exports:
        print(f"  gradebook import file: {path}")
    for stray in found.strays:
        print(f"  not graded, in the submissions folder itself: {stray}")
    if unknown:
        print(f"  not on the roster, so in no gradebook file ({args.out / NOT_ON_ROSTER} lists them): "
              f"{', '.join(unknown)}")
    for s in students:
        flags = [f"{g.exercise.id} TAMPERING" for g in s.grades if g.tampering]
        late = f" late {late_text(s.late_seconds)}" if s.late_seconds else ""
        score = f"{s.score:>4}/{s.max_score:<4}" if s.submitted else f"{batch.NOT_SUBMITTED} (of {s.max_score})"
        print(f"  {s.student:<24} {score}{late} {' '.join(flags)}".rstrip())
        for note in [f"exercise {i}: {n}" for i, n in sorted(s.notes.items())] + s.remarks + s.ignored:
            print(f"      {note}")


if __name__ == "__main__":
    sys.exit(main())
