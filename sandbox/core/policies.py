"""Scheduling policies: who runs next when several tasks could.

The scheduler asks its policy only when more than one task is runnable; the candidates
come sorted by creation order, so a policy's choices repeat exactly for the same seed.
"""
from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TypeVar

from ..errors import BadInput
from ..parts import Turn

T = TypeVar("T", bound=Turn)  # a policy hands back one of the candidates it was given


# -- policies --------------------------------------------------------------------------
class Policy:
    """Chooses the next task among several runnable ones (sorted by creation order)."""

    name = "policy"

    def choose(self, runnable: Sequence[T]) -> T:
        raise NotImplementedError


class RandomPolicy(Policy):
    """Seeded random choice: the default. Same seed, same interleaving."""

    name = "random"

    def __init__(self, seed: int = 0):
        self.rng = random.Random(f"scheduler:{seed}")

    def choose(self, runnable: Sequence[T]) -> T:
        return runnable[self.rng.randrange(len(runnable))]


class RoundRobinPolicy(Policy):
    """Each runnable task in turn, by creation order."""

    name = "round-robin"

    def __init__(self) -> None:
        self.last = -1

    def choose(self, runnable: Sequence[T]) -> T:
        later = [t for t in runnable if t.tid > self.last]
        task = later[0] if later else runnable[0]
        self.last = task.tid
        return task


class ScriptedPolicy(Policy):
    """An explicit order, for lessons that must show one exact interleaving.

    ``steps`` names tasks, optionally with the operation they must be about to do:
    ``["inv-1", "inv-2:dynamodb.GetItem", ...]``. Tasks that have not started yet run
    first (starting does nothing observable). Once the script is used up, the
    remaining choices fall back to round-robin.
    """

    name = "scripted"

    def __init__(self, steps: Sequence[str]):
        self.steps = list(steps)
        self.position = 0
        self.fallback = RoundRobinPolicy()

    def choose(self, runnable: Sequence[T]) -> T:
        fresh = [t for t in runnable if t.label == "start"]
        if fresh:
            return fresh[0]
        if self.position >= len(self.steps):
            return self.fallback.choose(runnable)
        want = self.steps[self.position]
        name, _, op = want.partition(":")
        for t in runnable:
            if t.name == name and (not op or t.label == op or t.label.endswith("." + op)):
                self.position += 1
                return t
        offered = ", ".join(f"{t.name}:{t.label}" for t in runnable)
        raise BadInput(f"scripted schedule step {self.position + 1} wants {want!r}, but the runnable steps are: "
                       f"{offered}")


class ReplayPolicy(Policy):
    """Follows a list of choice indices, then always picks the first; records the options seen.

    The exhaustive explorer drives this to visit every interleaving.
    """

    name = "replay"

    def __init__(self, prefix: Sequence[int] = ()):
        self.prefix = list(prefix)
        self.options: list[int] = []  # how many runnable tasks there were at each decision
        self.taken: list[int] = []

    def choose(self, runnable: Sequence[T]) -> T:
        i = len(self.taken)
        pick = self.prefix[i] if i < len(self.prefix) else 0
        pick = min(pick, len(runnable) - 1)
        self.options.append(len(runnable))
        self.taken.append(pick)
        return runnable[pick]


def make_policy(policy: "str | Policy | list | tuple | None", seed: int) -> Policy:
    if isinstance(policy, Policy):
        return policy
    if policy in (None, "random"):
        return RandomPolicy(seed)
    if policy == "round-robin":
        return RoundRobinPolicy()
    if isinstance(policy, (list, tuple)):
        return ScriptedPolicy(policy)
    raise BadInput(f"unknown scheduling policy {policy!r}: use 'random', 'round-robin', a list of steps, or a Policy")


