"""What each delivery source did besides invoking: ``delivery`` records read into header-row events.

Each ``what`` has its own reader, which returns the :class:`Event` to draw (marker
style and label) or None when the record only adds to the event before it: several
messages dead-lettered at once, or the two halves of a bisected stream batch, make
one marker with one label.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ..vocab import Delivery, SourceKind
from . import fields
from .model import Event, Invocation, Model
from .text import keys_text

SPLIT_PREFIX = "batch split"  # the label of a bisected stream batch; its halves join it
DLQ_SUFFIX = " → DLQ"  # the label of dead-lettered messages; messages moved at once join it
WHERE_PENDING = {SourceKind.STREAM: "in the stream", SourceKind.SQS: "in the queue", SourceKind.ASYNC: "in the queue",
                 SourceKind.DDB_STREAM: "in the stream"}


@dataclass
class DeliveryRecord:
    """The fields of one ``delivery`` record, read defensively."""

    t: float
    seq: int
    source: str
    what: str
    keys: list[str]
    inv: str | None
    detail: dict

    @classmethod
    def read(cls, t: float, seq: int, r: dict) -> DeliveryRecord:
        return cls(t, seq, fields.text(r.get("source")) or SourceKind.DIRECT, fields.text(r.get("what")),
                   fields.str_list(r.get("keys")), fields.optional_text(r.get("inv")), fields.detail(r))

    @property
    def keys_text(self) -> str:
        return keys_text(self.keys)

    def event(self, style: str, label: str | None = None, **kw) -> Event:
        return Event(self.source, self.t, self.seq, style, label, **kw)


class DeliveryReader:
    """Turns delivery records (and the SQS poller's receives) into the model's events."""

    def __init__(self, model: Model, accepted: dict[str, float]):
        self.model = model
        self.accepted = accepted  # order key -> when it entered the system
        self.redelivered: dict[float, set[str]] = {}  # time -> message ids received again then
        self.shards: dict[str, str] = {}  # order key -> shard it was read from

    def read(self, t: float, seq: int, r: dict) -> None:
        d = DeliveryRecord.read(t, seq, r)
        if isinstance(d.detail.get("shard"), str):
            for k in d.keys:
                self.shards.setdefault(k, d.detail["shard"])
        event = _READERS.get(d.what, DeliveryReader.other)(self, d)
        if event is not None:
            self.model.events.append(event)

    def receive(self, t: float, seq: int, got: list[str]) -> None:
        """An SQS poller received messages; those received again are already drawn as "received again"."""
        if set(got) <= self.redelivered.get(t, set()):
            return
        self.model.events.append(Event(SourceKind.SQS, t, seq, "receive"))

    def finish(self) -> None:
        """Put the events in time order, and name a lane's shard when the stream has several."""
        self.model.events.sort(key=lambda e: (e.t, e.seq))
        if len(set(self.shards.values())) <= 1:
            return
        for rec in self.model.invs.values():
            got = {self.shards[k] for k in rec.keys if k in self.shards}
            if len(got) == 1:
                rec.shard = got.pop()

    def _last_event(self, style: str, t: float) -> Event | None:
        """The previous labelled event, if it has this style and time: several records, one marker."""
        prev = self.model.events[-1] if self.model.events else None
        if prev is not None and prev.style == style and prev.t == t and prev.label:
            return prev
        return None

    def _working_on(self, keys: list[str]) -> list[Invocation]:
        """The invocations whose event carried any of ``keys``."""
        return [rec for rec in self.model.invs.values() if set(rec.keys) & set(keys)]

    # -- one reader per ``what``
    def redelivery(self, d: DeliveryRecord) -> Event:
        kt = d.keys_text
        label = f"{kt} received again" if kt else "received again"
        running = [rec.inv for rec in self._working_on(d.keys)
                   if rec.start < d.t and (rec.end is None or rec.end > d.t)]
        if running:
            label += f" while {', '.join(running)} still runs"
        self.redelivered.setdefault(d.t, set()).update(fields.str_list(d.detail.get("messageIds")))
        return d.event(Delivery.REDELIVERY, label, running=running)

    def deleted(self, d: DeliveryRecord) -> Event:
        return d.event(Delivery.DELETED)

    def batch_failed(self, d: DeliveryRecord) -> Event:
        partial = d.detail.get("partial") is True
        if partial and d.inv in self.model.invs:
            self.model.invs[d.inv].failed_items += d.keys or fields.str_list(d.detail.get("messageIds"))
        if partial and isinstance(d.detail.get("checkpoint"), str):
            # a stream: Lambda retries from the lowest failed record, every record after it too
            how = "bisected" if d.detail.get("bisected") is True else "checkpoint"
            again = keys_text(fields.str_list(d.detail.get("retried"))) or "the rest"
            return d.event("batch_checkpoint", f"{how} at {d.keys_text or 'a failed record'}: {again} come again")
        return d.event("batch_partial" if partial else "batch_failed")

    def retry_scheduled(self, d: DeliveryRecord) -> Event | None:
        if not d.detail.get("bisect"):
            return d.event("retry_scheduled")
        # a failed stream batch split in two: name the halves
        prev = self._last_event("retry_scheduled", d.t)
        if prev is not None and prev.label.startswith(SPLIT_PREFIX):
            prev.label += f" | {d.keys_text}"
            return None
        return d.event("retry_scheduled", f"{SPLIT_PREFIX}: {d.keys_text}")

    def dead_lettered(self, d: DeliveryRecord) -> Event | None:
        who = d.keys_text or "an unreadable message"
        prev = self._last_event("dropped", d.t)
        if prev is not None and prev.label.endswith(DLQ_SUFFIX):
            # several messages moved at once: one marker, one label
            prev.label = prev.label[:-len(DLQ_SUFFIX)] + f", {who}{DLQ_SUFFIX}"
            return None
        return d.event("dropped", f"{who}{DLQ_SUFFIX}")

    def discarded(self, d: DeliveryRecord) -> Event:
        who = d.keys_text or "a batch"
        dest = d.detail.get("destination")
        if not dest:
            m = re.search(r"on-failure destination (\S+)", fields.text(d.detail.get("reason")))
            dest = m.group(1) if m else None
        label = f"{who} discarded → {dest}" if dest else f"{who} discarded, no destination: event lost"
        return d.event("dropped", label)

    def pending(self, d: DeliveryRecord) -> Event:
        where = WHERE_PENDING.get(d.source)
        label = f"{d.keys_text or 'orders'} still pending" + (f" ({where})" if where else "")
        starts = [self.accepted[k] for k in d.keys if k in self.accepted]
        starts += [rec.start for rec in self._working_on(d.keys)]
        return d.event(Delivery.PENDING, label, t0=min(starts + [d.t]))

    def producer_resend(self, d: DeliveryRecord) -> Event:
        kt = d.keys_text
        if "sequenceNumbers" in d.detail:  # a stream: two records, each with its own sequence number
            return d.event("resend", f"{kt or 'a record'} written twice (new sequence number)")
        return d.event("resend", f"{kt} sent twice" if kt else "sent twice")

    def spontaneous_duplicate(self, d: DeliveryRecord) -> Event:
        kt = d.keys_text
        return d.event("spont_dup", f"{kt} delivered again" if kt else "delivered again")

    def user_delete(self, d: DeliveryRecord) -> Event:
        return d.event("user_delete", f"{d.keys_text or 'an item'} deleted by the customer")

    def other(self, d: DeliveryRecord) -> Event:
        return d.event("delivery_other", d.what or None)


_READERS: dict[str, Callable[[DeliveryReader, DeliveryRecord], Event | None]] = {
    Delivery.REDELIVERY: DeliveryReader.redelivery,
    Delivery.DELETED: DeliveryReader.deleted,
    Delivery.BATCH_FAILED: DeliveryReader.batch_failed,
    Delivery.RETRY_SCHEDULED: DeliveryReader.retry_scheduled,
    Delivery.DEAD_LETTERED: DeliveryReader.dead_lettered,
    Delivery.DISCARDED: DeliveryReader.discarded,
    Delivery.PENDING: DeliveryReader.pending,
    Delivery.PRODUCER_RESEND: DeliveryReader.producer_resend,
    Delivery.SPONTANEOUS_DUPLICATE: DeliveryReader.spontaneous_duplicate,
    Delivery.USER_DELETE: DeliveryReader.user_delete,
}
