"""``python -m sandbox``: list scenarios, run one against a handler file.

Exit codes: 0 valid, 1 invalid, 2 unknown or bad input. With ``--policy exhaustive``: 0 every
schedule was valid, 1 some schedule was invalid, 2 none was invalid but some was unknown, or the
search stopped at ``--max-schedules`` before trying them all. 141 when whoever read our output
stopped reading (``| head``), as for any program a closed pipe stops.
"""
from __future__ import annotations

import argparse
import atexit
import contextlib
import importlib
import json
import os
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypedDict

from .errors import BadInput, TemplateFailed
from .present.run_text import PROGRAM, replay_command, text_timeline
from .settings import SettingValue

if TYPE_CHECKING:  # the search is imported when it runs: a plain run never loads it
    from .modes.explore import Exploration

EXIT = {"valid": 0, "invalid": 1, "unknown": 2}
BAD_INPUT = 2
#: 128 + SIGPIPE, what a shell reports for a program stopped by a closed pipe.
BROKEN_PIPE = 141
PLOT_FORMATS = ("png", "svg", "pdf")
DEFAULT_MAX_SCHEDULES = 5000


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2, like every other bad input
        raise BadInput(message)


#: The package's other command lines, reached from the one console script too: ``rwh NAME ARGS`` runs that module's
#: ``main`` with ``PREFIX + ARGS`` in this process (``rwh check 02`` is ``python -m sandbox.grading check 02``).
ELSEWHERE: dict[str, tuple[str, tuple[str, ...], str]] = {
    "check": ("sandbox.grading.__main__", ("check",), "check an exercise: its public tests and a seeded campaign"),
    "drill": ("sandbox.grading.__main__", ("drill",), "replay an exercise's drill against your answer"),
    "exercises": ("sandbox.grading.__main__", ("exercises",), "list the exercises and their drills"),
    "grade": ("sandbox.grading.classroom", (), "grade a folder of submissions into grades.csv and feedback"),
    "autograder": ("sandbox.grading.autograder", (), "build or run the Gradescope autograder bundle"),
    "campaign": ("sandbox.analysis.campaign", (), "every strategy against every scenario, many seeds"),
    "bench": ("sandbox.bench.suite", (), "speed and memory figures (make bench)"),
    "strip-outputs": ("sandbox.tools.strip_outputs", (), "strip outputs from notebooks, keeping code edits"),
}


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROGRAM, description="Run duplicate-delivery scenarios against a Lambda handler.",
                epilog="Also installed as the console script rwh (rwh run no-fault --handler ...). "
                       "Each command's --help says more.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    listing = sub.add_parser("scenarios", help="list the scenarios and their settings")
    listing.add_argument("--brief", action="store_true", help="one line per scenario: name, kind, what it shows")
    run = sub.add_parser("run", help="run one scenario against a handler")
    run.add_argument("scenario")
    run.add_argument("--handler", required=True, help="path/to/file.py:function")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                     help="change a scenario setting (repeatable)")
    run.add_argument("--json", action="store_true", help="print the full JSON report")
    run.add_argument("--logs", action="store_true",
                     help="show every line the handler printed or logged (the text report shows the first few; "
                          "with --json, add them to the report)")
    run.add_argument("--plot", metavar="OUT.png", help="save the timeline plot (png, svg or pdf, by extension)")
    run.add_argument("--policy", choices=("random", "round-robin", "exhaustive"), default="random",
                     help="how concurrent invocations interleave: seeded random (default), round-robin, or "
                          "exhaustive (every interleaving; small cases only)")
    run.add_argument("--script", metavar="STEPS",
                     help="a scripted interleaving, e.g. inv-1:GetItem,inv-2:GetItem,inv-1:PutItem,inv-2:PutItem")
    run.add_argument("--max-schedules", type=int, metavar="N",
                     help=f"with --policy exhaustive: stop after N schedules (default {DEFAULT_MAX_SCHEDULES})")
    run.add_argument("--no-reduction", action="store_true",
                     help="with --policy exhaustive: run every interleaving, not one per class of interleavings "
                          "that differ only in the order of independent steps (same verdict, far slower)")
    run.add_argument("--isolation", choices=("thread", "process", "contained"),
                     help="where the handler runs: 'process' gives each Lambda execution environment an OS "
                          "process of its own, with AWS's runtime client; 'contained' adds bubblewrap "
                          "(default: process, or RWH_ISOLATION)")
    run.add_argument("--real-threads", action="store_true",
                     help="run on free OS threads and the wall clock against moto's HTTP server (short settings; "
                          "some scenarios only)")
    run.add_argument("--endpoint", metavar="URL",
                     help="run against a DynamoDB and SQS endpoint, e.g. LocalStack's http://localhost:4566, with "
                          "namespaced resources deleted at the end (real AWS only with the next flag)")
    run.add_argument("--i-understand-this-uses-real-aws", dest="real_aws", action="store_true",
                     help="allow --endpoint to be real AWS (--endpoint aws): it creates and deletes resources there")
    matrix = sub.add_parser("matrix", help="run a handler against every scenario: one row each")
    matrix.add_argument("--handler", required=True, help="path/to/file.py:function")
    matrix.add_argument("--seed", type=int, default=0)
    matrix.add_argument("--scenario", dest="scenarios", action="append", metavar="NAME",
                        help="only this scenario (repeatable; default: all of them)")
    matrix.add_argument("--json", action="store_true", help="print the matrix as JSON")
    matrix.add_argument("--plot", metavar="PAGE.png",
                        help="save one small timeline per source on one page (png, svg or pdf)")
    _elsewhere(sub)
    return p


def _elsewhere(sub: Any) -> None:
    """The other command lines, listed in ``--help`` (their own parsers read their arguments)."""
    for name, (_module, _prefix, about) in ELSEWHERE.items():
        sub.add_parser(name, help=about, add_help=False)


def program() -> NoReturn:
    """The command line as a program (``python -m sandbox``, ``rwh``): ``main``, then out at once.

    Once ``main`` returned and the exit handlers ran (the template ends, its environments with it), the
    interpreter would go on to free every object of botocore and moto one by one: 40-50 ms of each command
    line's 0.5-0.7 s, with nothing left to write or remove. With another thread still running (none should
    be), or an exception out of ``main``, it ends as Python ends.
    """
    code = main()
    if threading.active_count() == 1:
        atexit._run_exitfuncs()  # every handler, in the interpreter's order
        with contextlib.suppress(OSError, ValueError):  # a reader that went away: nothing more to say to it
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        code = _main(argv)
        sys.stdout.flush()  # a closed pipe shows here, inside the try, rather than at exit
        return code
    except BadInput as exc:
        print(f"error: {exc}", file=sys.stderr)
        return BAD_INPUT
    except TemplateFailed as exc:  # the sandbox could not run the handler: no verdict, exit 2 as for "unknown"
        print(f"error: the sandbox failed, so there is no verdict about the handler: {exc}", file=sys.stderr)
        return BAD_INPUT
    except BrokenPipeError:
        _stop_writing_to_stdout()
        return BROKEN_PIPE


def _stop_writing_to_stdout() -> None:
    """Point stdout at /dev/null, so the flush at exit cannot fail again (Python's SIGPIPE advice)."""
    with contextlib.suppress(OSError, ValueError):  # in-process callers may have no real stdout
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def _main(argv: Sequence[str] | None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    if words and words[0] in ELSEWHERE:
        module, prefix, _about = ELSEWHERE[words[0]]
        return int(importlib.import_module(module).main([*prefix, *words[1:]]) or 0)
    args = _parser().parse_args(words)
    if args.command == "scenarios":
        print(_scenario_list(args.brief))
        return 0
    if args.command == "matrix":
        return _matrix(args)
    return _run(args)


# -- scenarios ---------------------------------------------------------------------------------------
def _scenario_list(brief: bool) -> str:
    from tabulate import tabulate

    from .scenarios import SCENARIOS

    if not brief:
        return "\n\n".join(sc.describe() for sc in SCENARIOS.values())
    # the README's table marks code with backticks; a terminal shows the words alone
    return tabulate([(sc.name, sc.kind, sc.headline.replace("`", "")) for sc in SCENARIOS.values()],
                    tablefmt="plain", disable_numparse=True)


# -- run ---------------------------------------------------------------------------------------------
def _run(args: argparse.Namespace) -> int:
    # What needs no scenario is checked before the template starts and moto and the scenarios are imported: a
    # typo in a file name or an option is answered in a fraction of a second, not after the two seconds they take.
    overrides = _settings(args.settings)
    _check_options(args)
    _check_handler_file(args.handler)
    plot = _plot_path(args.plot) if args.plot else None
    _start_template(args)
    from .scenarios import get_scenario, run_scenario

    scenario = get_scenario(args.scenario)
    settings = scenario.resolve(overrides).values()
    if args.isolation:
        os.environ["RWH_ISOLATION"] = args.isolation  # every world this run opens
    if args.real_threads or args.endpoint:
        result = _run_outside(args, scenario, overrides)
    elif args.policy == "exhaustive":
        return _exhaustive(args, scenario.name, settings, overrides, plot)
    else:
        policy = _script_steps(args.script) if args.script else args.policy
        result = run_scenario(scenario, args.handler, seed=args.seed, settings=settings, policy=policy)
    report = result.report()
    if args.json:
        print(json.dumps({**report, "logs": result.logs()} if args.logs else report, indent=2, sort_keys=True))
    else:
        print(_text_report(result, report, all_logs=args.logs))
    if plot:
        _save_plot(result, plot)
    return EXIT[report["verdict"]]


def _start_template(args: argparse.Namespace) -> None:
    """Start the execution environments' template first thing: its imports (boto3, the runtime client) then
    overlap the world's (moto, the scenarios) on another core, where they would otherwise follow them."""
    isolation = args.isolation or os.environ.get("RWH_ISOLATION") or "process"
    if args.real_threads or args.endpoint or isolation not in ("process", "contained"):
        return  # a run in another process, or handlers in this one: no template here
    from .runtime.environment.template_process import Template

    Template.warm_up(contained=isolation == "contained")


#: How many failed invocations and log lines the text report shows before it says "N more".
SHOWN_ERRORS, SHOWN_LOGS = 5, 10


def _text_report(result: Any, report: dict, all_logs: bool) -> str:
    lines = [f"{report['scenario']} (seed {report['seed']}): {result.verdict.explain()}",
             f"{_count(len(report['invocations']), 'invocation')}; DynamoDB calls: "
             + (", ".join(f"{k} {v}" for k, v in report["dynamodb_calls"].items()) or "none")]
    errors = result.errors()
    if errors:
        lines.append("Invocations that failed:")
        lines += [f"  {e}" for e in errors[:SHOWN_ERRORS]]
        if len(errors) > SHOWN_ERRORS:
            lines.append(f"  ... and {len(errors) - SHOWN_ERRORS} more (--json lists them all)")
    logs = result.logs()
    if logs:
        shown = logs if all_logs else logs[:SHOWN_LOGS]
        lines.append("Logs (what the handler printed or logged):")
        lines += [f"  {line}" for line in shown]
        if len(shown) < len(logs):
            lines.append(f"  ... and {len(logs) - len(shown)} more lines (--logs shows them all)")
    return "\n".join(lines)


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _settings(pairs: Sequence[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise BadInput(f"--set takes KEY=VALUE, got {pair!r}")
        out[key.strip()] = value.strip()
    return out


def _script_steps(script: str) -> list[str]:
    return [step.strip() for step in script.split(",") if step.strip()]


def _run_outside(args: argparse.Namespace, scenario: Any, overrides: dict[str, str]) -> Any:
    """--real-threads or --endpoint: the scenario on free threads, against moto's server or the endpoint."""
    if args.script or args.policy != "random":
        raise BadInput("--policy and --script choose interleavings in the deterministic world; free threads "
                       "(--real-threads, --endpoint) interleave as the operating system schedules them")
    if args.endpoint:
        from .modes.endpoint import run_on_endpoint

        return run_on_endpoint(scenario, args.handler, endpoint=args.endpoint, allow_real_aws=args.real_aws,
                               seed=args.seed, settings=overrides)
    from .modes.realthreads import run_real_threads

    return run_real_threads(scenario, args.handler, seed=args.seed, settings=overrides)


def _check_options(args: argparse.Namespace) -> None:
    if args.real_aws and not args.endpoint:
        raise BadInput("--i-understand-this-uses-real-aws goes with --endpoint aws")
    if args.real_threads and args.endpoint:
        raise BadInput("--real-threads and --endpoint are alternatives: --endpoint runs on real threads too")
    if args.script and args.policy != "random":
        raise BadInput("--script and --policy are alternatives: give one of them")
    if args.max_schedules is not None and args.policy != "exhaustive":
        raise BadInput("--max-schedules goes with --policy exhaustive")
    if args.no_reduction and args.policy != "exhaustive":
        raise BadInput("--no-reduction goes with --policy exhaustive")
    if args.max_schedules is not None and args.max_schedules < 1:
        raise BadInput(f"--max-schedules must be at least 1, got {args.max_schedules}")


def _check_handler_file(spec: str) -> None:
    """Refuse, in one line, handler files Python cannot import (the environments' loader checks the rest)."""
    from .runtime.loader import HandlerSpec

    HandlerSpec.parse(spec).source()


def _plot_path(text: str) -> Path:
    """Where ``--plot`` will write, checked before the run so a typo costs no run."""
    path = Path(text)
    if path.is_dir():
        raise BadInput(f"--plot {text} is a folder; give a file name such as {path / 'timeline.png'}")
    if path.suffix.lower().lstrip(".") not in PLOT_FORMATS:
        raise BadInput(f"--plot writes png, svg or pdf (chosen by the file's extension), got {text!r}")
    if not path.parent.is_dir():
        raise BadInput(f"cannot save the plot to {text}: the folder {path.parent} does not exist")
    return path


def _save_plot(result: Any, path: Path, what: str = "timeline") -> None:
    try:
        result.save_plot(path)
    except OSError as exc:
        raise BadInput(f"cannot save the plot to {path}: {exc.strerror or exc}") from None
    print(f"{what} saved to {path}", file=sys.stderr)


# -- matrix ------------------------------------------------------------------------------------------
def _matrix(args: argparse.Namespace) -> int:
    _check_handler_file(args.handler)  # before the heavy imports, as a run checks it
    plot = _plot_path(args.plot) if args.plot else None
    from .analysis.matrix import duplicate_matrix
    from .runtime.loader import check_handler
    from .world import Sandbox

    with Sandbox():  # a handler that cannot load is one error, not one per scenario
        check_handler(args.handler)
    with _progress_bar(enabled=not args.json and sys.stderr.isatty(), desc="scenarios", unit=" runs",
                       total=len(args.scenarios or ()) or None) as on_row:
        found = duplicate_matrix(args.handler, seed=args.seed, scenarios=args.scenarios,
                                 on_row=(lambda row: on_row(row.verdict)) if on_row else None)
    print(json.dumps(found.to_dict(), indent=2, sort_keys=True) if args.json else found.table())
    if plot:
        _save_plot(found, plot, "page of timelines")
    return EXIT[found.status]


# -- exhaustive --------------------------------------------------------------------------------------
def _exhaustive(args: argparse.Namespace, scenario: str, settings: Mapping[str, SettingValue],
                overrides: dict[str, str], plot: Path | None) -> int:
    from .modes.explore import explore_scenario

    limit = args.max_schedules or DEFAULT_MAX_SCHEDULES
    if not args.json:  # the size of the tree is known only once it has been walked
        print(f"exploring every interleaving of {scenario}, up to {limit} schedule{'' if limit == 1 else 's'}",
              flush=True)
    with _progress_bar(enabled=not args.json and sys.stderr.isatty()) as on_schedule:
        found = explore_scenario(scenario, args.handler, settings=settings, max_schedules=limit, seed=args.seed,
                                 on_schedule=on_schedule, reduction=not args.no_reduction)
    script = ",".join(found.first_broken_script) if found.first_broken_script else None
    replay = replay_command(args.handler, scenario=scenario, settings=overrides, seed=args.seed,
                            script=found.first_broken_script) if script else None
    replayed = _replay_first_broken(args, scenario, settings, found) if plot or not args.json else None
    if args.json:
        print(json.dumps(_exhaustive_report(args, scenario, found, script, replay), indent=2, sort_keys=True))
    else:
        print(_exhaustive_text(found, script, replay))
        if replayed is not None:  # the counterexample, as check() in a notebook shows it
            print(f"what went wrong in it:\n{replayed.verdict.explain()}\n")
            print(f"its timeline:\n{text_timeline(replayed.history)}")
    if plot:
        if replayed is None:
            print("no broken schedule, so no timeline to save", file=sys.stderr)
        else:
            _save_plot(replayed, plot)
    return EXIT[found.status]


@contextlib.contextmanager
def _progress_bar(enabled: bool, desc: str = "exploring", unit: str = " schedules", total: int | None = None):
    """A tqdm bar on stderr for a person at a terminal; yields the per-run callback (or None)."""
    if not enabled:
        yield None
        return
    from tqdm import tqdm

    from .scenarios import SCENARIOS
    from .vocab import Status

    total = total if total is not None or desc == "exploring" else len(SCENARIOS)
    with tqdm(desc=desc, unit=unit, total=total, file=sys.stderr, leave=False) as bar:
        broken = 0

        def on_schedule(verdict: str) -> None:
            nonlocal broken
            broken += verdict != Status.VALID
            bar.set_postfix(broken=broken, refresh=False)
            bar.update(1)

        yield on_schedule


class ExhaustiveReport(TypedDict):
    """What ``run --policy exhaustive --json`` prints: the search, and its first broken schedule if any."""

    scenario: str
    seed: int
    policy: str
    verdict: str
    max_schedules: int | None
    schedules: int
    broken: int
    verdicts: dict[str, int]
    truncated: bool
    reduction: bool
    first_broken_schedule: list[int] | None
    first_broken_verdict: str | None
    first_broken_script: str | None
    replay_command: str | None


def _exhaustive_report(args: argparse.Namespace, scenario: str, found: Exploration, script: str | None,
                       replay: str | None) -> ExhaustiveReport:
    return {"scenario": scenario, "seed": args.seed, "policy": "exhaustive", "verdict": found.status,
            "max_schedules": found.max_schedules, "schedules": found.schedules, "broken": found.broken,
            "verdicts": found.verdicts, "truncated": found.truncated, "reduction": found.reduction,
            "first_broken_schedule": found.first_broken, "first_broken_verdict": found.first_broken_verdict,
            "first_broken_script": script, "replay_command": replay}


def _exhaustive_text(found: Any, script: str | None, replay: str | None) -> str:
    lines = [found.summary()]
    if found.reduction:
        lines.append(f"partial-order reduction: {_count(found.schedules, 'schedule')} run, one for each class of "
                     f"interleavings that differ only in the order of independent steps (they share a verdict); "
                     f"--no-reduction runs all interleavings")
    else:
        lines.append("every interleaving was run (no reduction)")
    if found.truncated:
        lines.append("more schedules were left to try, so the result is unknown: raise the limit with --max-schedules")
    if found.first_broken is None:
        return "\n".join(lines)
    if script:
        lines += [f"first broken schedule ({found.first_broken_verdict}), as a script:", f"  {script}",
                  "replay it with:", f"  {replay}"]
    else:
        lines.append(f"first broken schedule ({found.first_broken_verdict}): choices {found.first_broken} "
                     f"(it has no --script form)")
    return "\n".join(lines)


def _replay_first_broken(args: argparse.Namespace, scenario: str, settings: Mapping[str, SettingValue],
                         found: Any) -> Any:
    """The first broken schedule, run again on its own (None when nothing broke)."""
    if found.first_broken is None:
        return None
    from .core.policies import ReplayPolicy
    from .scenarios import run_scenario

    return run_scenario(scenario, args.handler, seed=args.seed, settings=settings,
                        policy=ReplayPolicy(found.first_broken))
