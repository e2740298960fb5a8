"""What a scenario is, and how one run of it is carried out and reported.

A scenario is a workload (which orders arrive, through which delivery source) plus
faults plus AWS settings. Each setting has a default, a sentence of help and, where it
comes from AWS, the documentation page behind the default. Scenarios only *drive* the
world; the checker judges the history afterwards (Maelstrom keeps the two apart).
"""
from __future__ import annotations

import contextlib
import difflib
import time
from collections import Counter
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Generic, TypedDict, TypeVar, cast, get_args

from ..aws.replicas import DEFAULT_REPLICA_LAG, DOC_CONSISTENCY
from ..aws.ttl import DOC_TTL, DOC_TTL_API, TTL_WORDS, TYPICAL_TTL_LAG
from ..core.history import History
from ..core.records import AwsCall
from ..core.views import figure, html_of
from ..errors import BadInput
from ..runtime.functions import DOC_TIMEOUT, MAX_TIMEOUT, LambdaFunction
from ..settings import Config, Setting, SettingValue, group, param
from ..verdict.checker import Verdict, check
from ..verdict.findings import FindingJson
from ..vocab import Outcome, Status
from ..world import MAX_REPLICA_LAG, MAX_TTL_LAG, Sandbox


@dataclass(frozen=True)
class RunConfig(Config):
    """Settings of the world itself that every scenario accepts."""

    function_timeout: float = param(3.0, "the function's timeout in seconds (Lambda's default is 3 s)", DOC_TIMEOUT,
                                    1, MAX_TIMEOUT, aws="Timeout")
    ttl_lag: float = param(TYPICAL_TTL_LAG, "the most seconds between an item's expiresAt and its deletion by TTL: "
                           "each item's lag is drawn (seeded) between 0 and this. DynamoDB deletes expired items "
                           f"lazily, {TTL_WORDS} ({DOC_TTL_API}): two days is the default here; up to a week",
                           DOC_TTL, 0, MAX_TTL_LAG)
    ttl_exact: bool = param(False, "delete every expired item exactly ttl_lag seconds after its expiresAt, instead "
                            "of at a moment drawn up to ttl_lag (to show one lag)", DOC_TTL)
    email_seconds: float = param(0.2, "how long the email provider takes per call (virtual seconds)", None, 0, 600)
    charge_seconds: float = param(0.3, "how long the payment API takes per call (virtual seconds)", None, 0, 600)
    aws_latency: float = param(0.01, "virtual seconds an AWS request from the handler takes, varied from half to "
                               "one and a half times (seeded), so the steps of concurrent invocations spread "
                               "over the timeline; under a policy that picks the order itself, calls are "
                               "instant", None, 0, 5)
    replica_lag: float = param(DEFAULT_REPLICA_LAG, "how far behind an eventually consistent DynamoDB read may be, "
                               "in seconds (reads with ConsistentRead=True are always current)", DOC_CONSISTENCY,
                               0, MAX_REPLICA_LAG)


@dataclass(frozen=True)
class ScenarioSettings(Config):
    """A scenario's settings, each declared once: its own ``param`` fields, the configs of the sources it drives
    (``group`` fields, their settings offered by their own names) and the world's (``run``, every scenario's)."""

    run: RunConfig = group(RunConfig)

    def values(self) -> dict[str, SettingValue]:
        """Every value by name, the scenario's own settings first, then the world's (as ``describe`` lists them)."""
        common = self.run.values()
        return {**{k: v for k, v in super().values().items() if k not in common}, **common}


S = TypeVar("S", bound=ScenarioSettings)


def payment_choice() -> Any:
    """The ``payment`` setting, a field of the settings of every scenario whose orders may pay by card."""
    return param("none", "how orders pay: 'card' adds a charge before each email", None, choices=("none", "card"))


def payment_of(payment: str) -> str | None:
    """What ``make_orders`` takes for a ``payment`` setting's value."""
    return "card" if payment == "card" else None


class Scenario(Generic[S]):
    """Subclasses set the class attributes and implement ``drive``; ``Scenario[TheirSettings]`` names their
    settings' dataclass, from which ``settings`` and ``common`` are derived."""

    name: str = ""
    kind: str = "control"  # "control", "duplicate source" or "run_once"
    #: How the event reaches the function, in the words the matrix and the notebooks use ("SQS", "EventBridge").
    source: str = ""
    #: One line: what delivers the duplicate (or, for a control, that nothing does). The README's scenario
    #: table and ``python -m sandbox scenarios --brief`` show it; tests/test_catalogue.py keeps them equal.
    headline: str = ""
    summary: str = ""
    #: The settings' dataclass, from the class's ``Scenario[...]`` base.
    config: type[S]
    #: The scenario's own settings and those of its sources (derived from ``config``).
    settings: tuple[Setting, ...] = ()
    #: Settings of the world itself that every scenario accepts (derived from ``config``'s ``run``).
    common: tuple[Setting, ...] = RunConfig.settings()

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        for base in cls.__dict__.get("__orig_bases__", ()):
            args = get_args(base)
            if args and isinstance(args[0], type) and issubclass(args[0], ScenarioSettings):
                cls.config = cast(Any, args[0])  # S at run time: mypy cannot tie a class's base to its TypeVar
                offered = [s.name for s in cls.config.settings()]
                twice = sorted({name for name in offered if offered.count(name) > 1})
                if twice:  # one name, one setting: --set and the widgets could reach only one of them
                    raise TypeError(f"{cls.__name__} offers settings {twice} twice")
                cls.common = cls.config.__dataclass_fields__["run"].metadata["group"].settings()
                common = {s.name for s in cls.common}
                cls.settings = tuple(s for s in cls.config.settings() if s.name not in common)

    def all_settings(self) -> dict[str, Setting]:
        return {s.name: s for s in (*self.settings, *self.common)}

    def resolve(self, overrides: Mapping[str, Any] | None) -> S:
        """The one place settings are read: ``overrides`` (text from ``--set``, a widget's or a notebook's values)
        parsed and checked against their settings, into the scenario's settings dataclass."""
        known = self.all_settings()
        values = {name: s.default for name, s in known.items()}
        for name, raw in (overrides or {}).items():
            if name not in known:
                close = difflib.get_close_matches(str(name), known, n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise BadInput(f"scenario {self.name} has no setting {name!r}; {hint}its settings are: "
                               f"{', '.join(sorted(known))}")
            values[name] = known[name].parse(raw)
        return self.config.from_settings(values)

    def drive(self, sb: Sandbox, fn: LambdaFunction, cfg: S) -> None:
        raise NotImplementedError

    def environment(self, cfg: S) -> dict[str, str]:
        """The function's own environment variables in this scenario (none unless a scenario sets some)."""
        return {}

    def describe(self) -> str:
        lines = [f"{self.name}  [{self.kind}]", f"  {self.summary}"]
        for s in self.settings + self.common:
            doc = f"  ({s.doc})" if s.doc else ""
            lines.append(f"    --set {s.name}={s.default}  {s.help}{doc}")
        return "\n".join(lines)


class InvocationRow(TypedDict):
    """One invocation in a run's report."""

    id: str
    source: str
    cause: str | None
    prev: str | None
    keys: list[str] | None
    container: str | None
    start: float
    end: float | None
    outcome: str | None
    error: str | None
    where: str | None


class RunReport(TypedDict):
    """``RunResult.report``: what ``python -m sandbox run --json`` prints, and the notebook's summary reads."""

    scenario: str
    seed: int
    settings: dict[str, SettingValue]
    verdict: str
    explanation: str
    effects_per_key: dict[str, dict[str, int]]
    duplicates: list[FindingJson]
    lost: list[FindingJson]
    findings: list[FindingJson]
    invocations: list[InvocationRow]
    dynamodb_calls: dict[str, int]
    virtual_seconds: float


@dataclass
class RunResult:
    """One run: the history, the checker's verdict, and the report the CLI prints."""

    scenario: str
    seed: int
    settings: dict[str, SettingValue]
    history: History
    verdict: Verdict
    wall_seconds: float = field(default=0.0, compare=False)
    #: The handler that ran, as its title names it ("naive_email.py", "handler_fn"); empty if not known.
    handler: str = field(default="", compare=False)

    @property
    def status(self) -> str:
        """valid, invalid or unknown."""
        return self.verdict.status

    @property
    def valid(self) -> bool:
        return self.verdict.status == Status.VALID

    def report(self) -> RunReport:
        invs = self.history.invocation_records()
        calls = Counter(e.op for e in self.history.records(AwsCall) if e.service == "dynamodb" and e.inv)
        return {
            "scenario": self.scenario,
            "seed": self.seed,
            "settings": self.settings,
            "verdict": self.verdict.status,
            "explanation": self.verdict.explain(),
            "effects_per_key": self.verdict.effects_per_key,
            "duplicates": [f.to_dict() for f in self.verdict.duplicates],
            "lost": [f.to_dict() for f in self.verdict.lost],
            "findings": [f.to_dict() for f in self.verdict.findings],
            "invocations": [
                {"id": i, "source": v.start.source, "cause": v.start.cause, "prev": v.start.prev,
                 "keys": list(v.start.keys), "container": v.start.container, "start": v.t, "end": v.ended_at,
                 "outcome": v.outcome, "error": v.error, "where": v.where}
                for i, v in invs.items()
            ],
            "dynamodb_calls": dict(sorted(calls.items())),
            "virtual_seconds": self.history.end_time(),
        }

    def logs(self, inv: str | None = None) -> list[str]:
        """What the handlers printed or logged (one invocation's, or all), as ``inv-1 | line``."""
        return [f"{r['inv']} | {r['text']}" for r in self.history.logs(inv)]

    def errors(self) -> list[str]:
        """Each invocation that failed, in a line: what it raised and, if it is the handler's own, where."""
        out = []
        for inv_id, v in self.history.invocation_records().items():
            if v.outcome not in (None, Outcome.OK):
                where = f" ({v.where})" if v.where else ""
                out.append(f"{inv_id} {v.outcome}: {v.error}{where}")
        return out

    def plot(self, **kw: Any) -> Any:
        return figure("timeline")(self.history, **self._titled(kw))

    def save_plot(self, path: Any, **kw: Any) -> Any:
        return figure("timeline-file")(self.history, path, **self._titled(kw))

    def _titled(self, kw: dict[str, object]) -> dict[str, object]:
        """The default title names the handler too: two runs of one scenario side by side (a naive handler and
        a fixed one) are told apart on a projector."""
        if kw.get("title") is None and self.handler:
            kw = {**kw, "title": f"{self.scenario} · {self.handler} · seed {self.seed}"}
        return kw

    def __repr__(self) -> str:
        return f"<RunResult {self.scenario} seed={self.seed}: {self.verdict.status}>"

    def _repr_html_(self) -> str | None:
        return html_of("run", self)


def open_world(sc: "Scenario[S]", cfg: S, seed: int, policy: Any, watchdog: float,
               isolation: str | None = None) -> Sandbox:
    """The fresh world one run of ``sc`` happens in (not opened yet)."""
    run = cfg.run
    return Sandbox(seed=seed, policy=policy, ttl_lag=run.ttl_lag, ttl_drawn=not run.ttl_exact, watchdog=watchdog,
                   replica_lag=run.replica_lag, aws_latency=run.aws_latency,
                   meta={"scenario": sc.name, "settings": cfg.values()}, isolation=isolation)


def run_in_world(world: Sandbox, scenario: "Scenario[S]", handler: Any, cfg: S,
                 factory: Callable[[], Callable] | None = None,
                 during: Callable[[Sandbox], AbstractContextManager[Any]] | None = None) -> RunResult:
    """The one recipe of a run: open ``world``, deploy ``handler`` as ``scenario``'s function, drive the scenario,
    close the world, and judge its history. ``cfg`` is the scenario's resolved settings. ``during(sb)``, if given,
    is a context the deploy and the drive run in while the world is open (a tracer, a learner's gate)."""
    started = time.perf_counter()
    with world as sb, during(sb) if during else contextlib.nullcontext():
        sb.services.timings.email = cfg.run.email_seconds
        sb.services.timings.charge = cfg.run.charge_seconds
        fn = sb.function(handler, factory=factory, timeout=cfg.run.function_timeout,
                         environment=scenario.environment(cfg))
        scenario.drive(sb, fn, cfg)
    return RunResult(scenario.name, world.seed, cfg.values(), sb.history, check(sb.history),
                     time.perf_counter() - started, handler=handler_title(handler))


def handler_title(handler: Any) -> str:
    """How a title names a handler: its file ("naive_email.py"), with the function when it is not ``handler``."""
    if isinstance(handler, str):
        path, _, func = handler.rpartition(":") if ":" in handler else (handler, "", "handler")
        name = path.replace("\\", "/").rsplit("/", 1)[-1] or handler
        return name if func in ("", "handler") else f"{name}:{func}"
    name = str(getattr(handler, "__name__", "") or "")
    return "" if name.startswith("<") else name  # a lambda has no name worth a title
