"""Rules, and the judges a history gets: the rules shared by all, and those of the sources its records name.

As in Jepsen and Maelstrom, where each workload brings its own checker and the checkers compose, each source's
contract with Lambda is judged by a rule of its own (``rules/``), and a history is judged by the rules of the
source kinds it holds. The choice is made from the history alone (its records' ``source`` fields), never from
live objects, so a saved JSON history gets the same judges as the run that wrote it.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Set
from dataclasses import dataclass

from .facts import Facts
from .findings import Finding


@dataclass(frozen=True)
class Rule:
    """One judge: a callable over the facts of a history that returns its findings."""

    name: str
    #: Where its findings stand in the verdict, lowest first: a verdict reads the same whatever order the
    #: rules were listed in.
    place: int
    judge: Callable[[Facts], list[Finding]]
    #: The source kinds whose histories it judges; None for the rules shared by every history.
    sources: frozenset[str] | None = None

    def __call__(self, facts: Facts) -> list[Finding]:
        return self.judge(facts)

    def judges(self, kinds: Set[str]) -> bool:
        """Does it judge a history whose records name these source kinds?"""
        return self.sources is None or not self.sources.isdisjoint(kinds)


class Judges:
    """A set of rules, each once, in their places."""

    def __init__(self, rules: Iterable[Rule]):
        self.rules = tuple(sorted(set(rules), key=lambda r: (r.place, r.name)))
        spots = [(r.place, r.name) for r in self.rules]
        if len(set(spots)) != len(spots):  # two rules in one spot would stand in an order nothing decides
            raise ValueError(f"two rules share a place and a name: {spots}")

    def adding(self, *rules: Rule) -> Judges:
        """These judges and more (a new source's rule, say)."""
        return Judges((*self.rules, *rules))

    def of(self, kinds: Set[str]) -> tuple[Rule, ...]:
        """The rules that judge a history whose records name these source kinds, in their places."""
        return tuple(r for r in self.rules if r.judges(kinds))

    def by_source(self) -> dict[str, list[str]]:
        """Source kind -> the names of the rules that judge it besides the shared ones."""
        kinds = sorted({k for r in self.rules for k in r.sources or ()})
        return {k: [r.name for r in self.rules if r.sources is not None and k in r.sources] for k in kinds}
