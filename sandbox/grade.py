"""``python -m sandbox.grade SUBMISSIONS_DIR --out results/``: grade a folder of submissions.

Each submission (a .py file or a notebook) runs in its own process, with a time and memory limit,
against the public and the hidden tests with a fresh seed range; it never sees the solutions or
the hidden tests' source. Writes ``results/grades.csv`` (student, score, max_score, one column per
exercise, notes) and, per student, ``report.json`` (the feedback), ``results.json`` (Gradescope's
format) and ``feedback.txt``.

    python -m sandbox.grade submissions/ --out results/
    python -m sandbox.grade submissions/ --out results/ --exercise 02 --jobs 2 --seed 12345

Exit codes: 0 graded (whatever the scores), 2 bad input.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from .errors import BadInput


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
    p = argparse.ArgumentParser(prog="python -m sandbox.grade", description=__doc__.split("\n\n")[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("submissions", type=Path, help="the folder of submissions (a folder or a file per student)")
    p.add_argument("--out", type=Path, required=True, help="where grades.csv and the reports go (created)")
    p.add_argument("--exercise", action="append", default=[], metavar="NN",
                   help="grade this exercise (repeat for more; default: every exercise a file names)")
    p.add_argument("--jobs", type=_positive(int, "--jobs"), help="submissions graded at once (default: every core)")
    p.add_argument("--seed", type=int, help="the first seed of the grading range (default: a fresh one)")
    p.add_argument("--timeout", type=_positive(float, "--timeout"), default=60.0,
                   help="real seconds a test may go without progress before it is stopped as a hang (default 60)")
    p.add_argument("--watchdog", type=_positive(float, "--watchdog"), default=2.0,
                   help="real seconds an invocation may run without reaching the sandbox (default 2)")
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
    from .grading import batch
    from .grading.catalog import grading_catalogue
    from .grading.grader import Limits, fresh_seed

    if args.out.exists() and not args.out.is_dir():
        raise BadInput(f"--out {args.out} is a file; give a folder")
    if args.tests is not None and not args.tests.is_file():
        raise BadInput(f"--tests {args.tests}: no such file")
    if args.kit is not None and not args.kit.is_file():
        raise BadInput(f"--kit {args.kit}: no such file")
    if args.unsafe_no_sandbox:
        print("warning: --unsafe-no-sandbox: submissions run as you, can read the solutions and your files, and "
              "reach the network; grade only code you trust this way", file=sys.stderr)
    else:
        from .environment.containment import ContainmentUnavailable, check_available

        try:
            check_available()
        except ContainmentUnavailable as exc:
            raise BadInput(f"{exc}. The grader runs every submission contained by the operating system; to grade "
                           "trusted code without containment, pass --unsafe-no-sandbox") from None
    catalogue = grading_catalogue(args.tests)
    only = []
    for ref in args.exercise:
        key = str(ref).split("_")[0].zfill(2)
        if key not in catalogue:
            raise BadInput(f"--exercise {ref}: no such exercise; exercises: "
                           + ", ".join(e.name for e in catalogue.values()))
        only.append(key)
    subs = batch.discover(args.submissions, catalogue, only)
    exercises = batch.graded_exercises(subs, catalogue, only)
    seed = args.seed if args.seed is not None else fresh_seed()
    limits = Limits(test_seconds=args.timeout, submission_seconds=args.submission_timeout, memory_mb=args.memory,
                    watchdog=args.watchdog, isolation="process" if args.unsafe_no_sandbox else "contained")
    jobs = args.jobs or batch.default_jobs()
    started = time.perf_counter()
    students = batch.grade_all(subs, exercises, jobs=jobs, seed=seed, limits=limits, kit=args.kit,
                               progress=not args.no_progress)
    batch.write_results(args.out, students, exercises, seed)
    took = time.perf_counter() - started
    graded = len(subs) * len(exercises)
    print(f"graded {len(subs)} student(s) x {len(exercises)} exercise(s) in {took:.1f} s "
          f"({graded / took * 60:.1f} submissions/min, {jobs} at once, seeds from {seed}): {args.out / 'grades.csv'}")
    for s in students:
        flags = [f"{g.exercise.id} TAMPERING" for g in s.grades if g.tampering]
        print(f"  {s.student:<24} {s.score:>4}/{s.max_score:<4} {' '.join(flags)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
