"""Exhaustive exploration: run a small concurrent case under every interleaving.

Each run uses a ``ReplayPolicy`` that follows a prefix of choices and then always picks
the first runnable task. After a run we know how many options each decision had, so the
next prefix is the last decision that still has an untried option, bumped by one
(depth-first search over the tree of schedules). For two or three invocations with a
few steps each, the tree has tens to a few thousand leaves.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .policies import ReplayPolicy
from .vocab import Status


@dataclass
class Exploration:
    schedules: int = 0
    broken: int = 0
    verdicts: dict[str, int] = field(default_factory=dict)
    first_broken: list[int] | None = None  # the choices that reproduce the first bad schedule
    truncated: bool = False

    @property
    def all_valid(self) -> bool:
        return self.broken == 0 and not self.truncated

    def summary(self) -> str:
        extra = " (stopped at the schedule limit)" if self.truncated else ""
        return f"{self.schedules} schedules explored{extra}; {self.broken} broke the invariant"


def explore(run_once: Callable[[ReplayPolicy], str], max_schedules: int = 5000) -> Exploration:
    """``run_once(policy)`` runs the case with that policy and returns its verdict."""
    result = Exploration()
    prefix: list[int] = []
    while True:
        policy = ReplayPolicy(prefix)
        verdict = run_once(policy)
        result.schedules += 1
        result.verdicts[verdict] = result.verdicts.get(verdict, 0) + 1
        if verdict != Status.VALID:
            result.broken += 1
            if result.first_broken is None:
                result.first_broken = list(policy.taken)
        # next schedule: deepest decision with an untried option
        taken, options = policy.taken, policy.options
        i = len(taken) - 1
        while i >= 0 and taken[i] + 1 >= options[i]:
            i -= 1
        if i < 0:
            return result
        if result.schedules >= max_schedules:
            result.truncated = True
            return result
        prefix = taken[:i] + [taken[i] + 1]


def explore_scenario(scenario: str, handler: Any, settings: dict[str, Any] | None = None,
                     max_schedules: int = 5000, **kw: Any) -> Exploration:
    """Every interleaving of a scenario (keep it small: concurrent-claims with 2 or 3 copies)."""
    from .loader import check_handler
    from .scenarios import run_scenario
    from .world import Sandbox

    with Sandbox():  # a bad handler is one clear error, not thousands of failed schedules
        check_handler(handler)
    return explore(lambda policy: run_scenario(scenario, handler, settings=settings, policy=policy, **kw).status,
                   max_schedules)
