"""What every rule reads from one history, read once, and the words the rules share for times and invocations.

The facts shared by all are read here: what each order is owed, which effects happened, which orders were still
in flight or were dropped, the invocations and their writes to the idempotency table. A rule about one source
reads that source's own records from ``Facts.records`` itself, so adding a source touches nothing here.
"""
from __future__ import annotations

from collections import defaultdict

from ..core.history import History
from ..core.records import Accept, AwsCall, DeliveryRecord, EffectRecord, Invocation, Record
from ..vocab import DROPPED, IDEMPOTENCY_TABLE, Delivery, EffectStatus

#: Writes that can save an invocation's result in the idempotency table (a delete saves nothing);
#: a write inside a transaction or a batch counts as the single-item call it amounts to.
SAVES = ("PutItem", "UpdateItem")
#: Where the record's expiry is kept.
TTL_ATTRIBUTE = IDEMPOTENCY_TABLE.ttl_attribute


def write_op(record: AwsCall) -> str:
    """The single-item operation a write amounts to (a transaction's or a batch's part says which, as ``as``)."""
    return record.detail.get("as") or record.op


def fmt(t: float) -> str:
    """A time in the checker's words, to the millisecond under two minutes: two events 25 ms apart never read
    as one ("0.35 s" and "0.375 s", where one decimal said "0.3 s" and "0.4 s")."""
    if t < 120:
        text = f"{t:.3f}".rstrip("0")
        return f"{text}0 s" if text.endswith(".") else f"{text} s"
    if t < 3600:
        return f"{t / 60:.1f} min"
    hours, minutes = divmod(round(t / 60), 60)
    return f"{hours} h {minutes} min"


def describe(inv: Invocation | None, inv_id: str | None) -> str:
    if inv is None:
        return inv_id or "outside any invocation"
    return f"{inv_id} ({inv.start.source}, {inv.start.cause})"


def natural(key: str) -> tuple[str, int]:
    head, _, tail = key.rpartition("-")
    return (head, int(tail)) if tail.isdigit() else (key, -1)


class Facts:
    """What the rules need from one history, read once."""

    def __init__(self, history: History):
        self.meta = history.meta
        self.table = self.meta.get("table", "idempotency")
        epoch = self.meta.get("epoch")
        self.epoch = float(epoch) if isinstance(epoch, (int, float)) else 0.0
        #: Every record, for a rule that reads its own source's records (frozen: the rules share them).
        self.records: list[Record] = history.records()
        #: The source kinds the history's records name: they decide which sources' rules judge it.
        self.sources = frozenset(e.get("source") for e in self.records if isinstance(e.get("source"), str))
        # Both by invocation id, looked up with a record's ``inv`` (None for the world's own doings).
        self.invs: dict[str | None, Invocation] = {k: v for k, v in history.invocation_records().items()}
        self.owed: dict[str, set[str]] = defaultdict(set)
        self.effects: dict[tuple[str, str], list[EffectRecord]] = defaultdict(list)
        self.pending: set[str] = set()
        self.dropped: dict[str, list[DeliveryRecord]] = defaultdict(list)
        self.table_writes: dict[str, list[AwsCall]] = defaultdict(list)  # inv -> its writes to the table
        for e in self.records:
            self._read(e)
        self.effects_per_key = self._count()

    def _read(self, e: Record) -> None:
        if isinstance(e, Accept):
            self.owed[e.key].update(e.expects)
        elif isinstance(e, EffectRecord) and EffectStatus(e.status).counted:
            self.effects[(e.kind, e.key)].append(e)
        elif isinstance(e, DeliveryRecord) and e.what == Delivery.PENDING:
            self.pending.update(e.keys)
        elif isinstance(e, DeliveryRecord) and e.what in DROPPED:
            for k in e.keys:
                self.dropped[k].append(e)
        elif isinstance(e, AwsCall) and e.target == self.table and e.inv is not None:
            self.table_writes[e.inv].append(e)

    def _count(self) -> dict[str, dict[str, int]]:
        """Order -> effect -> how many times it happened, for every effect an order is owed or got."""
        kinds_seen = sorted({kind for kind, _ in self.effects} | {k for v in self.owed.values() for k in v})
        return {key: {kind: len(self.effects.get((kind, key), [])) for kind in kinds_seen
                      if kind in self.owed.get(key, set()) or (kind, key) in self.effects}
                for key in sorted(set(self.owed) | {key for _, key in self.effects}, key=natural)}
