"""Who owns an idempotency key, and when a write to it is stale: the one rule the checker and the timeline share.

A claim (a PutItem of an ``IN_PROGRESS`` record) makes its invocation the key's owner, until that invocation
deletes the record or another one claims the key. Any other write, by an invocation that had already written
the key before the current owner claimed it, is a *stale write*: it changes or deletes a record that is no
longer its own. The checker's "stale write" and "lock overlap" notes (``rules/record_notes.py``) and the
timeline's markers (``timeline/reading.py``) both feed :class:`Ownership` the successful writes to the
idempotency table in history order, so the figure marks exactly what the verdict says.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..vocab import ItemStatus

PUT, DELETE = "PutItem", "DeleteItem"


@dataclass(frozen=True)
class Claim:
    """The claim that holds a key: its invocation, its position in the history, and what the caller passed."""

    inv: str
    seq: int
    record: Any = field(default=None, compare=False)


@dataclass(frozen=True)
class Write:
    """What one successful write meant for the key's ownership."""

    claim: bool  # it claimed the key
    #: Another invocation's claim that this write took the key from (for a claim), or wrote over though the key
    #: had been taken from the writer (a stale write); None when neither.
    over: Claim | None

    @property
    def stale(self) -> bool:
        return not self.claim and self.over is not None


class Ownership:
    """The current owner of each key, and when each invocation first wrote it."""

    def __init__(self) -> None:
        self._owner: dict[str, Claim] = {}
        self._first_write: dict[str, dict[str, int]] = {}  # key -> inv -> seq

    def holder(self, key: str) -> Claim | None:
        """The claim that holds ``key`` now, or None."""
        return self._owner.get(key)

    def write(self, inv: str, key: str, op: str, status: object, seq: int, record: Any = None) -> Write:
        """A write to ``key`` that took effect (``op`` the single-item operation it amounts to, ``status`` the
        record's ``status`` it wrote, if any); ``record`` is kept with a claim, for the caller's own use."""
        claim = op == PUT and status == ItemStatus.IN_PROGRESS
        held = self._owner.get(key)
        mine = self._first_write.setdefault(key, {})
        over = held if held is not None and held.inv != inv else None
        if not claim and over is not None and mine.get(inv, seq) >= over.seq:
            over = None  # the writer never held the key before its owner claimed it: not stale
        mine.setdefault(inv, seq)
        if claim:
            self._owner[key] = Claim(inv, seq, record)
        elif op == DELETE and held is not None and held.inv == inv:
            del self._owner[key]
        return Write(claim, over)
