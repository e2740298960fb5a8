"""``python -m sandbox``: list scenarios, run one against a handler file.

Exit codes: 0 valid, 1 invalid, 2 unknown or bad input.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from .errors import BadInput

EXIT = {"valid": 0, "invalid": 1, "unknown": 2}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2, like every other bad input
        raise BadInput(message)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m sandbox", description="Run duplicate-delivery scenarios against a Lambda handler.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    sub.add_parser("scenarios", help="list the scenarios and their settings")
    run = sub.add_parser("run", help="run one scenario against a handler")
    run.add_argument("scenario")
    run.add_argument("--handler", required=True, help="path/to/file.py:function")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                     help="change a scenario setting (repeatable)")
    run.add_argument("--json", action="store_true", help="print the full JSON report")
    run.add_argument("--plot", metavar="OUT.png", help="save the timeline plot")
    run.add_argument("--policy", choices=("random", "round-robin", "exhaustive"), default="random",
                     help="how concurrent invocations interleave: seeded random (default), round-robin, or "
                          "exhaustive (every interleaving; small cases only)")
    run.add_argument("--script", metavar="STEPS",
                     help="a scripted interleaving, e.g. inv-1:GetItem,inv-2:GetItem,inv-1:PutItem,inv-2:PutItem")
    return p


def _settings(pairs: Sequence[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise BadInput(f"--set takes KEY=VALUE, got {pair!r}")
        out[key.strip()] = value.strip()
    return out


def _exhaustive(args, scenario, settings) -> int:
    from .explore import explore_scenario

    found = explore_scenario(scenario.name, args.handler, settings=settings, seed=args.seed)
    report = {"scenario": scenario.name, "seed": args.seed, "policy": "exhaustive", "schedules": found.schedules,
              "broken": found.broken, "verdicts": found.verdicts, "truncated": found.truncated,
              "first_broken_schedule": found.first_broken}
    print(json.dumps(report, indent=2, sort_keys=True) if args.json else found.summary())
    return 0 if found.all_valid else 1


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
        if args.command == "scenarios":
            from .scenarios import SCENARIOS

            print("\n\n".join(sc.describe() for sc in SCENARIOS.values()))
            return 0
        from .scenarios import get_scenario, run_scenario

        scenario = get_scenario(args.scenario)
        settings = scenario.resolve(_settings(args.settings))
        if args.script and args.policy != "random":
            raise BadInput("--script and --policy are alternatives: give one of them")
        if args.policy == "exhaustive":
            return _exhaustive(args, scenario, settings)
        policy = [step.strip() for step in args.script.split(",") if step.strip()] if args.script else args.policy
        result = run_scenario(scenario, args.handler, seed=args.seed, settings=settings, policy=policy)
    except BadInput as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    report = result.report()
    if args.json:
        print(json.dumps(report, indent=2, sort_keys=True))
    else:
        print(f"{report['scenario']} (seed {report['seed']}): {result.verdict.explain()}")
        print(f"{len(report['invocations'])} invocations; DynamoDB calls: "
              + (", ".join(f"{k} {v}" for k, v in report["dynamodb_calls"].items()) or "none"))
    if args.plot:
        result.save_plot(args.plot)
        print(f"timeline saved to {args.plot}", file=sys.stderr)
    return EXIT[report["verdict"]]
