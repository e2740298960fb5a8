"""``python -m sandbox.grading``: check an exercise from the shell, or replay a drill.

    python -m sandbox.grading check 02                      # exercises/02_claim_the_key.py
    python -m sandbox.grading check 02 --handler my_try.py  # another file
    python -m sandbox.grading drill replay --handler exercises/03_store_and_replay.py:handler --seed 1
    python -m sandbox.grading exercises                     # each exercise, and the drills its tests run

Exit codes: 0 every test passed (or the drill held), 1 something failed, 2 bad input, and 141 when whoever
reads the output stops early (`| head`): the command ends quietly, as ``python -m sandbox`` does.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence

from ..errors import BadInput

#: The exit status of a program stopped by a closed pipe (128 + SIGPIPE), as ``sandbox.cli`` ends.
BROKEN_PIPE = 141
#: How the help names these commands: ``python -m sandbox check`` reaches them (so does ``rwh check``, and
#: ``python -m sandbox.grading check``).
PROGRAM = "python -m sandbox"


def _parser(drills: str = "") -> argparse.ArgumentParser:
    """``drills``: the drills' names and promises, for ``drill --help`` (read only when it is asked for: the
    drills import the sandbox, which a ``check`` needs anyway and ``exercises`` does not)."""
    p = argparse.ArgumentParser(prog=PROGRAM, description="Check an exercise, or replay a drill.")
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("check", help="run an exercise's public tests and a seeded campaign against your answer")
    c.add_argument("exercise", help="its number (02) or name (02_claim_the_key)")
    c.add_argument("--handler", help="the answer file (default: exercises/NN_slug.py)")
    c.add_argument("--campaign-seed", type=int, help="the campaign's first seed (default: a fresh one)")
    c.add_argument("--watchdog", type=float, metavar="SECONDS",
                   help="real seconds an invocation may run without reaching the sandbox (default: the grader's)")
    d = sub.add_parser("drill", help="run one drill against a handler and show what happened",
                       epilog=drills or None, formatter_class=argparse.RawDescriptionHelpFormatter)
    d.add_argument("name", help=f"the drill ({PROGRAM} exercises lists each exercise's)")
    d.add_argument("--handler", required=True, help="path/to/file.py:function")
    d.add_argument("--seed", type=int, default=0)
    sub.add_parser("exercises", aliases=["list"], help="list the exercises and the drills their tests run")
    return p


def _drills_said() -> str:
    from .drills import DRILLS

    width = max(map(len, DRILLS))
    return "drills:\n" + "\n".join(f"  {name:<{width}}  {d.what}" for name, d in DRILLS.items())


def _check(args: argparse.Namespace) -> int:
    from .catalog import EXERCISES_DIR, exercise
    from .exercise_check import check

    if args.watchdog is not None and args.watchdog <= 0:
        raise BadInput(f"--watchdog must be more than 0, got {args.watchdog:g}")
    ex = exercise(args.exercise)
    handler = args.handler or str(EXERCISES_DIR / f"{ex.name}.py")
    result = check(ex.id, handler, campaign_seed=args.campaign_seed, watchdog=args.watchdog)
    print(result)
    return 0 if result.passed else 1


def _drill(args: argparse.Namespace) -> int:
    from ..verdict.checker import check
    from .drills import DRILLS, drill_result, judge, run_drill
    from .feedback import text_timeline

    if args.name not in DRILLS:
        raise BadInput(f"no drill {args.name!r}; drills: {', '.join(DRILLS)}")
    history = run_drill(args.name, args.handler, args.seed)
    verdict = check(history)
    wrong = judge(args.name, history)
    held = verdict.valid and wrong is None
    # The outcome first, so that `| head` shows it; the checker's verdict covers effects only, and a drill
    # can fail with every effect once (a stale write, a wrong answer).
    print(f"drill {args.name} (seed {args.seed}): {'held' if held else 'FAILED'}. {DRILLS[args.name].what}")
    if wrong is not None:
        print(f"what went wrong: {wrong}")
    print(f"effects: {verdict.explain()}")
    for answer in (drill_result(history) or {}).get("answers", []):
        print(f"  {answer['inv']}: {answer['outcome']}, answered {answer['response']!r}"
              + (f" ({answer['error']})" if answer.get("error") else ""))
    print(text_timeline(history))
    return 0 if held else 1


def _list() -> int:
    from tabulate import tabulate

    from .catalog import exercises

    rows = []
    for ex in exercises().values():
        drills = list(dict.fromkeys(t.drill for t in ex.tests if t.drill))
        rows.append((ex.name, f"{ex.title} ({ex.max_score} points in public tests)", ", ".join(drills) or "-"))
    print(tabulate(rows, ["exercise", "title", "drills"], tablefmt="simple", disable_numparse=True))
    print(f"\nReplay a drill against your answer: {PROGRAM} drill NAME --handler exercises/NN_name.py:handler")
    return 0


def _run(args: argparse.Namespace) -> int:
    if args.command == "check":
        return _check(args)
    if args.command == "drill":
        return _drill(args)
    return _list()


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    asks_drill_help = words[:1] == ["drill"] and bool({"-h", "--help"} & set(words))
    args = _parser(_drills_said() if asks_drill_help else "").parse_args(words)
    try:
        code = _run(args)
        sys.stdout.flush()  # a closed pipe shows here, inside the try, rather than at exit
        return code
    except BadInput as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        _stop_writing_to_stdout()
        return BROKEN_PIPE


def _stop_writing_to_stdout() -> None:
    """The reader (`| head`) closed the pipe: point stdout at /dev/null, so the flush at exit cannot fail again
    (Python's SIGPIPE advice)."""
    with contextlib.suppress(OSError, ValueError):  # in-process callers may have no real stdout
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
