"""What a scenario is, and how one run of it is carried out and reported.

A scenario is a workload (which orders arrive, through which delivery source) plus
faults plus AWS settings. Each setting has a default, a sentence of help and, where it
comes from AWS, the documentation page behind the default. Scenarios only *drive* the
world; the checker judges the history afterwards (Maelstrom keeps the two apart).
"""
from __future__ import annotations

import time as _time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

from ..checker import Verdict, check
from ..errors import BadInput
from ..history import History
from ..world import Sandbox


@dataclass(frozen=True)
class Setting:
    name: str
    default: Any
    help: str
    doc: str | None = None  # the AWS documentation page the default comes from
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple | None = None

    def parse(self, text: Any) -> Any:
        """Turn a ``--set`` value (or a Python value) into this setting's type, checking its range."""
        kind = type(self.default)
        try:
            if kind is bool:
                if isinstance(text, bool):
                    value = text
                elif str(text).lower() in ("1", "true", "yes", "on"):
                    value = True
                elif str(text).lower() in ("0", "false", "no", "off"):
                    value = False
                else:
                    raise ValueError
            elif kind is int:
                value = int(text) if not isinstance(text, float) or text.is_integer() else None
                if value is None:
                    raise ValueError
            elif kind is float:
                value = float(text)
            else:
                value = str(text)
        except (TypeError, ValueError):
            raise BadInput(f"setting {self.name} takes a {kind.__name__}, got {text!r}") from None
        if self.choices is not None and value not in self.choices:
            raise BadInput(f"setting {self.name} must be one of {', '.join(map(str, self.choices))}, got {value!r}")
        if self.minimum is not None and value < self.minimum:
            raise BadInput(f"setting {self.name} must be at least {self.minimum:g}, got {value!r}")
        if self.maximum is not None and value > self.maximum:
            raise BadInput(f"setting {self.name} must be at most {self.maximum:g}, got {value!r}")
        return value


class Scenario:
    """Subclasses set the class attributes and implement ``drive``."""

    name: str = ""
    kind: str = "control"  # "control", "duplicate source" or "run_once"
    summary: str = ""
    settings: tuple[Setting, ...] = ()
    #: Settings of the world itself that every scenario accepts.
    common: tuple[Setting, ...] = (
        Setting("function_timeout", 3.0, "the function's timeout in seconds (Lambda's default is 3 s)",
                "https://docs.aws.amazon.com/lambda/latest/dg/configuration-timeout.html", 1, 900),
        Setting("ttl_lag", 0.0, "seconds between an item's expiresAt and its deletion (DynamoDB deletes lazily, "
                "typically within 48 h)", "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/howitworks-ttl.html",
                0, 48 * 3600),
        Setting("email_seconds", 0.2, "how long the email provider takes per call (virtual seconds)", None, 0, 600),
        Setting("charge_seconds", 0.3, "how long the payment API takes per call (virtual seconds)", None, 0, 600),
    )

    def all_settings(self) -> dict[str, Setting]:
        return {s.name: s for s in (*self.settings, *self.common)}

    def resolve(self, overrides: dict[str, Any] | None) -> dict[str, Any]:
        known = self.all_settings()
        values = {name: s.default for name, s in known.items()}
        for name, raw in (overrides or {}).items():
            if name not in known:
                raise BadInput(f"scenario {self.name} has no setting {name!r}; its settings are: {', '.join(sorted(known))}")
            values[name] = known[name].parse(raw)
        return values

    def drive(self, sb: Sandbox, fn, cfg: dict[str, Any]) -> None:
        raise NotImplementedError

    def describe(self) -> str:
        lines = [f"{self.name}  [{self.kind}]", f"  {self.summary}"]
        for s in self.settings + self.common:
            doc = f"  ({s.doc})" if s.doc else ""
            lines.append(f"    --set {s.name}={s.default}  {s.help}{doc}")
        return "\n".join(lines)


@dataclass
class RunResult:
    """One run: the history, the checker's verdict, and the report the CLI prints."""

    scenario: str
    seed: int
    settings: dict[str, Any]
    history: History
    verdict: Verdict
    wall_seconds: float = field(default=0.0, compare=False)

    def report(self) -> dict[str, Any]:
        invs = self.history.invocations()
        calls = Counter(e["op"] for e in self.history.of_type("aws") if e["service"] == "dynamodb" and e.get("inv"))
        return {
            "scenario": self.scenario,
            "seed": self.seed,
            "settings": self.settings,
            "verdict": self.verdict.verdict,
            "explanation": self.verdict.explain(),
            "effects_per_key": self.verdict.effects_per_key,
            "duplicates": [f.to_dict() for f in self.verdict.duplicates],
            "lost": [f.to_dict() for f in self.verdict.lost],
            "findings": [f.to_dict() for f in self.verdict.findings],
            "invocations": [
                {"id": i, "source": v["source"], "cause": v["cause"], "prev": v.get("prev"), "keys": v.get("keys"),
                 "container": v.get("container"), "start": v["t"], "end": v["end"], "outcome": v["outcome"],
                 "error": v["error"]}
                for i, v in invs.items()
            ],
            "dynamodb_calls": dict(sorted(calls.items())),
            "virtual_seconds": self.history.end_time(),
        }

    def plot(self, **kw: Any):
        from ..timeline import plot_timeline

        return plot_timeline(self.history, **kw)

    def save_plot(self, path, **kw: Any):
        from ..timeline import save_timeline

        return save_timeline(self.history, path, **kw)

    def _repr_markdown_(self) -> str:
        return f"**{self.scenario}** (seed {self.seed}): " + self.verdict._repr_markdown_()


def run_scenario(scenario: "str | Scenario", handler: Any = None, *, seed: int = 0,
                 settings: dict[str, Any] | None = None, policy: Any = None,
                 factory: Callable[[], Callable] | None = None, watchdog: float = 10.0) -> RunResult:
    """Run one scenario against a handler in a fresh world and judge it."""
    from . import get_scenario

    sc = get_scenario(scenario) if isinstance(scenario, str) else scenario
    cfg = sc.resolve(settings)
    started = _time.perf_counter()
    with Sandbox(seed=seed, policy=policy, ttl_lag=cfg["ttl_lag"], watchdog=watchdog,
                 meta={"scenario": sc.name, "settings": cfg}) as sb:
        sb.services.timings.email = cfg["email_seconds"]
        sb.services.timings.charge = cfg["charge_seconds"]
        fn = sb.function(handler, factory=factory, timeout=cfg["function_timeout"])
        sc.drive(sb, fn, cfg)
        history = sb.history
    return RunResult(sc.name, seed, cfg, history, check(history), _time.perf_counter() - started)
