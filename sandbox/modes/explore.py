"""Exhaustive exploration: run a small concurrent case under every interleaving.

Each run uses an ``ExplorationPolicy`` (a ``ReplayPolicy``) that follows a prefix of
choices and then always takes the first option (a task that has not started yet, if any).
After a run we know how many options each decision had, so the next prefix is the last
decision that still has an untried option, bumped by one (depth-first search over the
tree of schedules). For two or three invocations with a few steps each, the tree has tens
to a few thousand leaves. How many is known only once the search is over, so a search is
bounded by ``max_schedules`` instead.

For handler files the search is reduced by default (``dpor.py``: dynamic partial-order
reduction): it runs one schedule of each class of schedules that differ only in the order of
independent steps, which all get the same verdict, instead of every member of every class:
for three copies of the article's handler in concurrent-claims, 9 schedules instead of 1,680.
Each class is a Mazurkiewicz trace; the verdict reads only the history, which two schedules of
one class end with alike but for the order of independent records.
A handler passed as a Python function may share objects with other invocations outside AWS,
where the reduction cannot see, so it always gets the full search.

A broken schedule is reported as its choices (for ``ReplayPolicy``) and, when it has one,
as the steps of a ``ScriptedPolicy`` that replays exactly the same schedule (what
``python -m sandbox run ... --script`` takes).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.policies import ReplayPolicy
from ..errors import BadInput
from ..settings import SettingValue
from ..vocab import Status
from .dpor import FRESH, DporPolicy, Trace, run_traced, search

#: FRESH: the label of a task that has not run yet (the scheduler's word; ScriptedPolicy starts such tasks by itself).
#: Characters a task name or label may not hold if a ``--script`` is to name it (its separators).
_SCRIPT_SEPARATORS = (",", ":")


@dataclass
class Exploration:
    """What a search found: how many schedules, their verdicts, and the broken one to show."""

    schedules: int = 0
    broken: int = 0  # schedules whose verdict was not valid (invalid or unknown)
    verdicts: dict[str, int] = field(default_factory=dict)
    #: The choices that reproduce the broken schedule reported: the first invalid one (the first
    #: unknown one if none is invalid), preferring the first that also has a script.
    first_broken: list[int] | None = None
    truncated: bool = False  # stopped at max_schedules with schedules left untried
    first_broken_verdict: str | None = None
    #: The same schedule as ScriptedPolicy steps ("inv-1:dynamodb.GetItem", ...), or None when it has no
    #: script (a schedule that starts an invocation later than ScriptedPolicy would).
    first_broken_script: list[str] | None = None
    max_schedules: int | None = None
    #: Whether partial-order reduction chose the schedules (one per class of equivalent ones).
    reduction: bool = False
    #: Runs the reduction cut short because their schedule was equivalent to one already run.
    redundant: int = 0

    @property
    def all_valid(self) -> bool:
        return self.broken == 0 and not self.truncated

    @property
    def status(self) -> str:
        """invalid if any schedule was; unknown if any was unknown or some went untried; else valid."""
        if self.verdicts.get(Status.INVALID):
            return Status.INVALID
        if self.broken or self.truncated:
            return Status.UNKNOWN
        return Status.VALID

    def summary(self) -> str:
        extra = f" (stopped at the limit of {self.max_schedules})" if self.truncated else ""
        plural = "" if self.schedules == 1 else "s"
        line = f"{self.schedules} schedule{plural} explored{extra}; {self.broken} broke the invariant"
        unknown = self.verdicts.get(Status.UNKNOWN, 0)
        if unknown:
            line += f" ({self.verdicts.get(Status.INVALID, 0)} invalid, {unknown} unknown)"
        return line

    def _record(self, verdict: str, choices: list[int], script: list[str] | None) -> None:
        self.schedules += 1
        self.verdicts[verdict] = self.verdicts.get(verdict, 0) + 1
        if verdict == Status.VALID:
            return
        self.broken += 1
        reported = _rank(self.first_broken_verdict, self.first_broken_script)
        if self.first_broken is None or _rank(verdict, script) < reported:
            self.first_broken, self.first_broken_verdict, self.first_broken_script = list(choices), verdict, script


def _rank(verdict: str | None, script: list[str] | None) -> tuple[bool, bool]:
    """Which broken schedule to report: an invalid one before an unknown one, then one with a script."""
    return verdict != Status.INVALID, script is None


class _ScriptWriter:
    """Notes a schedule's steps as ``ScriptedPolicy`` steps, and whether they would replay it exactly.

    ScriptedPolicy starts a fresh task whenever one is runnable, and otherwise picks the first
    runnable task that matches its next step's name and label.
    """

    steps: list[str]
    scriptable: bool

    def _start_script(self) -> None:
        self.steps, self.scriptable = [], True

    def _write_step(self, task, runnable) -> None:
        fresh = [t for t in runnable if t.label == FRESH]
        if fresh:  # ScriptedPolicy starts the first fresh task by itself: no step, but it must be this one
            self.scriptable = self.scriptable and task is fresh[0]
        else:
            self.scriptable = self.scriptable and _step_names_only(task, runnable)
            self.steps.append(f"{task.name}:{task.label}")

    @property
    def script(self) -> list[str] | None:
        """The steps, or None if they would not replay this schedule (or there are none to give)."""
        return list(self.steps) if self.scriptable and self.steps else None


class ExplorationPolicy(ReplayPolicy, _ScriptWriter):
    """The explorer's policy: a ReplayPolicy that tries starting a fresh task first, and notes its script.

    ``prefix`` and ``tried`` count options in exploration order: at a decision where some task
    has not started yet, the first such task comes first, then the others in creation order.
    ``taken`` holds the same picks as indices into the runnable list, so ``ReplayPolicy(taken)``
    replays the schedule.

    Trying fresh tasks first makes the first schedules found the ones a ``ScriptedPolicy`` can
    replay. ``script`` holds those steps when they reproduce this schedule exactly.
    """

    def __init__(self, prefix: Sequence[int] = ()):
        super().__init__(prefix)
        self.tried: list[int] = []
        self._start_script()

    def choose(self, runnable):
        fresh = [t for t in runnable if t.label == FRESH]
        order = fresh[:1] + [t for t in runnable if t not in fresh[:1]]
        i = len(self.tried)
        pick = min(self.prefix[i] if i < len(self.prefix) else 0, len(order) - 1)
        task = order[pick]
        self.options.append(len(order))
        self.tried.append(pick)
        self.taken.append(runnable.index(task))
        self._write_step(task, runnable)
        return task


class ReducedPolicy(DporPolicy, _ScriptWriter):
    """The reduced search's policy (``dpor.DporPolicy``), noting its script as it goes."""

    def __init__(self, prefix: Sequence[str] = (), nodes: list | None = None):
        super().__init__(prefix, nodes)
        self._start_script()

    def _chosen(self, task, runnable) -> None:
        self._write_step(task, runnable)


def _step_names_only(task, runnable) -> bool:
    """Would ScriptedPolicy, given ``task``'s step, pick ``task`` among ``runnable``?"""
    name, label = task.name, task.label
    if not label or any(c in name for c in _SCRIPT_SEPARATORS) or "," in label:
        return False
    if name != name.strip() or label != label.strip():  # the CLI strips each step
        return False
    matches = [t for t in runnable if t.name == name and (t.label == label or t.label.endswith("." + label))]
    return matches[0] is task


def _next_prefix(taken: list[int], options: list[int]) -> list[int] | None:
    """The choices that start the next schedule: the deepest decision with an untried option, bumped."""
    i = len(taken) - 1
    while i >= 0 and taken[i] + 1 >= options[i]:
        i -= 1
    return None if i < 0 else taken[:i] + [taken[i] + 1]


def _check_cap(max_schedules: Any) -> None:
    if isinstance(max_schedules, bool) or not isinstance(max_schedules, int) or max_schedules < 1:
        raise BadInput(f"max_schedules must be a whole number of at least 1, got {max_schedules!r}")


def explore(run_once: Callable[[ReplayPolicy], str], max_schedules: int = 5000, *,
            on_schedule: Callable[[str], None] | None = None) -> Exploration:
    """``run_once(policy)`` runs the case with that policy and returns its verdict.

    Stops after ``max_schedules`` schedules (``truncated`` says whether any were left);
    ``on_schedule(verdict)``, if given, hears of each schedule as it ends (a progress bar).
    """
    _check_cap(max_schedules)
    result = Exploration(max_schedules=max_schedules)
    prefix: list[int] | None = []
    while prefix is not None:
        if result.schedules >= max_schedules:
            result.truncated = True
            break
        policy = ExplorationPolicy(prefix)
        verdict = run_once(policy)
        result._record(verdict, policy.taken, policy.script)
        if on_schedule is not None:
            on_schedule(verdict)
        prefix = _next_prefix(policy.tried, policy.options)
    return result


def explore_reduced(run_once: Callable[[DporPolicy], Trace], max_schedules: int = 5000, *,
                    on_schedule: Callable[[str], None] | None = None) -> Exploration:
    """Like ``explore``, with partial-order reduction: ``run_once(policy)`` returns the run's ``dpor.Trace``.

    Each schedule run stands for every schedule that differs from it only in the order of
    independent steps; they all get its verdict, so the status is the one the full search gives.
    """
    _check_cap(max_schedules)
    result = Exploration(max_schedules=max_schedules, reduction=True)

    def heard(policy: DporPolicy, trace: Trace) -> None:
        result._record(str(trace.verdict), policy.taken, getattr(policy, "script", None))
        if on_schedule is not None:
            assert trace.verdict is not None  # search() reports complete schedules only
            on_schedule(trace.verdict)

    found = search(run_once, max_schedules, on_schedule=heard, policy=ReducedPolicy)
    result.truncated, result.redundant = found.truncated, found.redundant
    return result


def reducible(handler: Any, kw: Mapping[str, object]) -> bool:
    """May the reduction explore this handler? Only a handler file: each container a process of its own.

    A Python function (or a factory) shares its module's globals across every container, so two
    invocations can interact outside AWS, where the reduction sees no conflict.
    """
    return isinstance(handler, str) and kw.get("factory") is None and set(kw) <= {"seed", "watchdog", "factory"}


def explore_scenario(scenario: str, handler: Any, settings: Mapping[str, SettingValue] | None = None,
                     max_schedules: int = 5000, *, on_schedule: Callable[[str], None] | None = None,
                     reduction: bool = True, **kw: Any) -> Exploration:
    """Every interleaving of a scenario (keep it small: concurrent-claims with 2 to 4 copies).

    ``reduction`` (the default) runs one schedule per class of equivalent ones (``dpor.py``) for a
    handler file; a handler passed as a Python function always gets the full search, as does
    ``reduction=False``. ``result.reduction`` says which one ran. Extra keywords (``seed``) go to
    ``run_scenario``.
    """
    from ..runtime.loader import check_handler
    from ..scenarios import run_scenario
    from ..world import Sandbox

    with Sandbox():  # a bad handler is one clear error, not thousands of failed schedules
        check_handler(handler)
    if reduction and reducible(handler, kw):
        extra = {k: v for k, v in kw.items() if k != "factory"}
        return explore_reduced(lambda policy: run_traced(scenario, handler, policy, settings=settings, **extra),
                               max_schedules, on_schedule=on_schedule)
    return explore(lambda policy: run_scenario(scenario, handler, settings=settings, policy=policy, **kw).status,
                   max_schedules, on_schedule=on_schedule)
