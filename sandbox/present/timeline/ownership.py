"""The timeline's words for who holds each idempotency key: a stale write's warning, a refused write's note.

Who owns a key and which writes are stale is decided by :class:`sandbox.verdict.ownership.Ownership`, the rule the
checker's "stale write" note (``verdict/rules/record_notes.py``) also follows, read from the same successful table
writes, so the figure marks what the verdict says.
"""
from __future__ import annotations

from ...verdict.ownership import DELETE, Ownership
from .text import short_key


class Owners:
    """Ownership of every key, told in the timeline's labels."""

    def __init__(self) -> None:
        self.ownership = Ownership()

    def write(self, inv: str, key: str, op: str, status: object, seq: int) -> str | None:
        """A successful write to ``key``; the warning for a stale one, else None."""
        write = self.ownership.write(inv, key, op, status, seq)
        if not write.stale or write.over is None:
            return None
        what = "deleted" if op == DELETE else "overwrote"
        return f"stale write: {what} {write.over.inv}'s {short_key(key)} record"

    def refused(self, inv: str, key: str, op: str) -> str:
        """What an update or delete its condition refused says: "delete refused: inv-2 holds o-1" when another
        invocation has taken the key over (the fencing that a stale write lacks)."""
        what = "delete" if op == DELETE else "update"
        held = self.ownership.holder(key)
        if held is not None and held.inv != inv:
            return f"{what} refused: {held.inv} holds {short_key(key)}"
        return f"{what} of {short_key(key)} refused by its condition"
