"""Who holds each idempotency key, so a stale write can be pointed at on the timeline.

A claim (a PutItem of an IN_PROGRESS record) makes its invocation the key's owner; a
write by an invocation that claimed (or wrote) the key before the current owner took it
over is a *stale write*: it changes or deletes a record that is no longer its own. This
follows the checker's "stale write" note (``sandbox/analysis/checker.py``, ``record_notes``), read
from the same successful table writes, so the figure marks what the verdict says.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ...vocab import ItemStatus
from .text import short_key

PUT, DELETE = "PutItem", "DeleteItem"


@dataclass
class Owners:
    """The current owner of each key, and when each invocation first wrote it."""

    owner: dict[str, tuple[str, int]] = field(default_factory=dict)  # key -> (inv, seq of its claim)
    first_write: dict[str, dict[str, int]] = field(default_factory=dict)  # key -> inv -> seq

    def write(self, inv: str, key: str, op: str, status: object, seq: int) -> str | None:
        """A successful write to ``key``; the warning for a stale one, else None."""
        claim = op == PUT and status == ItemStatus.IN_PROGRESS
        held = self.owner.get(key)
        mine = self.first_write.setdefault(key, {})
        warning = None
        if not claim and held is not None and held[0] != inv and mine.get(inv, seq) < held[1]:
            what = "deleted" if op == DELETE else "overwrote"
            warning = f"stale write: {what} {held[0]}'s {short_key(key)} record"
        mine.setdefault(inv, seq)
        if claim:
            self.owner[key] = (inv, seq)
        elif op == DELETE and held is not None and held[0] == inv:
            del self.owner[key]
        return warning

    def refused(self, inv: str, key: str, op: str) -> str:
        """What an update or delete its condition refused says: "delete refused: inv-2 holds o-1" when another
        invocation has taken the key over (the fencing that a stale write lacks)."""
        what = "delete" if op == DELETE else "update"
        held = self.owner.get(key)
        if held is not None and held[0] != inv:
            return f"{what} refused: {held[0]} holds {short_key(key)}"
        return f"{what} of {short_key(key)} refused by its condition"
